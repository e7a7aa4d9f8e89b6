"""`gate merge`: fan-in of per-model reports (one per GPU runner) into one report for one PR comment."""
from __future__ import annotations

import json
from pathlib import Path

import click

from gate.errors import InputError
from gate.untrusted import load_untrusted_report, merge_reports


@click.command("merge")
@click.argument("reports", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--json", "json_out", required=True, type=click.Path(dir_okay=False), help="Where to write the merged report.")
def command(reports: tuple[str, ...], json_out: str) -> None:
    """Merge REPORTS (each validated against the report schema) into one report.json.

    Exit codes: 0 merged (whatever the verdict); 2 a report is unreadable, oversize or off-schema.
    """
    merged = merge_reports([load_untrusted_report(path) for path in reports])
    try:
        Path(json_out).write_text(json.dumps(merged, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write the merged report ({exc.strerror})", path=json_out) from None
    click.echo(f"merged {len(reports)} reports -> {json_out}: {merged.get('verdict')}")
