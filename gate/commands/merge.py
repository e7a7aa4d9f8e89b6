"""`gate merge`: fan-in of per-model reports (one per GPU runner) into one report for one PR comment."""
from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from gate.commands._options import json_path_option, suite_option
from gate.formats import atomic, inputs
from gate.formats.config import load_suite
from gate.formats.errors import InputError

if TYPE_CHECKING:
    from gate.formats.report import Report


@click.command("merge")
@click.argument("reports", nargs=-1, required=True, type=click.Path())
@json_path_option("Where to write the merged report ('-': stdout).", required=True)
@click.option("--expect-models", default="", help="Comma-separated models that should have a report; a missing one makes the verdict INCOMPLETE.")
@suite_option
def command(reports: tuple[str, ...], json_path: Path, expect_models: str, suite_path: Path | None) -> None:
    """Merge REPORTS (each validated against the report schema) into one report.json.

    A directory stands for the report.json files in it and one level below (the layout
    actions/download-artifact leaves for several artifacts).

    \b
    Exit codes:
      0    merged (whatever the verdict)
      2    a report is unreadable, oversize or off-schema (a value out of its range, e.g. a p-value
           above 1, included), not a regular file (a FIFO, a directory, a link), or no report was found

    \b
    Example:
      gate merge reports/ --expect-models qwen3,moss_td --json out/report.json
    """
    from gate.publish.untrusted import load_untrusted_report  # here: usage errors answer before scipy loads

    suite = load_suite(suite_path)
    expected = tuple(m for m in expect_models.replace(",", " ").split() if m)
    suite.workloads_for(expected)  # unknown model names are one line, not a silent pass
    files = [found for path in reports for found in _report_files(Path(path))]
    loaded = [load_untrusted_report(path) for path in files]
    present = {model for report in loaded for model in report.models}
    missing = {m: tuple(w.id for w in suite.workloads_for((m,))) for m in expected if m not in present}
    merged = merge_reports(loaded, missing=missing)
    if str(json_path) == "-":
        click.echo(json.dumps(merged.to_json(), indent=2, ensure_ascii=False))
        for model in missing:
            click.echo(f"gate: warning: no report for {model}; the merged verdict is INCOMPLETE", err=True)
        return
    atomic.write_text(json_path, json.dumps(merged.to_json(), indent=2, ensure_ascii=False) + "\n",
                      what="merged report")
    click.echo(f"merged {len(files)} reports -> {json_path}: {merged.verdict.value}")
    for model in missing:
        click.echo(f"gate: warning: no report for {model}; the merged verdict is INCOMPLETE", err=True)


def _report_files(path: Path) -> list[Path]:
    """Every report.json found, whatever it is: the strict reader names one that is a FIFO, a directory or a
    link (exit 2) rather than this listing skipping it silently."""
    if not path.is_dir():
        return [path]
    found = sorted(p for p in [path / "report.json", *path.glob("*/report.json")] if inputs.is_present(p))
    if not found:
        raise InputError("expected report.json in this directory or one level below", path=path)
    return found


def merge_reports(reports: list[Report], *, missing: dict[str, tuple[str, ...]] | None = None) -> Report:
    """Fan-in of per-model reports (one per GPU runner) into one, validated again (bounds may be exceeded).

    `missing` maps a model whose job produced no report to its workload ids: they are recorded as
    incomplete coverage on both sides, so the verdict becomes INCOMPLETE instead of silently
    covering fewer models.
    """
    from gate.formats.report import Report
    from gate.formats.typedjson import SchemaMismatch
    from gate.publish.untrusted import UntrustedInputError

    try:
        merged = Report.merge(reports, expected_models=tuple(missing or ()), missing_workloads=missing or {})
        Report.from_json(merged.to_json())
    except SchemaMismatch as exc:
        raise UntrustedInputError(f"the merged report does not match the schema at {' '.join(exc.where.split())[:160]}",
                                  path="<merged report>") from None
    except ValueError as exc:
        raise UntrustedInputError(f"reports cannot be merged ({exc})", path="<merged report>") from None
    return merged
