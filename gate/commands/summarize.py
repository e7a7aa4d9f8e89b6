"""`gate summarize TREE`: coverage and mean/min/max of every workload of one result tree."""
from __future__ import annotations

import json
from pathlib import Path

import click

from gate.commands._options import json_path_option, models_option, suite_option
from gate.formats import atomic
from gate.formats.config import load_suite
from gate.reading.results import read_tree


@click.command("summarize")
@click.argument("tree", type=click.Path(path_type=Path))
@click.option("--format", "output_format", type=click.Choice(["table", "runbook"]), default="table", show_default=True,
              help="table: per workload, runs, coverage reasons per run and per-sample cross-check. "
                   "runbook: byte-identical to the runbook's Step 7 summarize.py.")
@json_path_option("Also write the summary as JSON (schema_version 1) to this file ('-': stdout, instead of the table).")
@models_option()
@suite_option
@click.option("--no-samples", is_flag=True, help="Skip the per-sample cross-check (faster).")
def command(tree: Path, output_format: str, json_path: Path | None, models: tuple[str, ...],
            suite_path: Path | None, no_samples: bool) -> None:
    """Summarize one result tree TREE (runbook layout, or CI artifact files).

    TREE is <TREE>/run<R>/... as the runbook writes it, or a downloaded CI artifact.

    \b
    Exit codes:
      0  coverage complete: every workload, every scored run, all samples, no failures
      3  coverage incomplete (the reasons are printed per workload and run), including a
         result or per-sample file that is truncated, not JSON, NaN/Infinity, of the wrong
         types or schema_version, with duplicate or missing per-sample ids (named on stderr)
      2  TREE cannot be opened as a tree: missing, not a directory, no scored run; or its runs
         mix client settings (run2 at concurrency 8, the others at 32: the run and setting named)

    \b
    Examples:
      gate summarize results/main
      gate summarize results/main --format runbook
      gate summarize results/main --models qwen3 --json -
    """
    suite = load_suite(suite_path)
    chosen = models or None
    if output_format == "runbook":
        from gate.reading.summarize import runbook_summary  # imported here: usage errors answer before numpy loads

        result = runbook_summary(tree)
        click.echo(result.text, nl=False)
        exit_code = result.exit_code
        if json_path is None:
            raise SystemExit(exit_code)
    read = read_tree(tree, suite, models=chosen)  # a bad path fails here, before the per-sample readers load
    from gate.reading.summarize import render_table, summarize_tree, summary_json

    summary = summarize_tree(read, suite, samples=not no_samples)
    if output_format == "table":
        if str(json_path) != "-":
            click.echo(render_table(summary), nl=False)
        exit_code = summary.exit_code
    for problem in summary.input_problems:
        click.echo(f"gate: error: {problem}", err=True)
    if json_path is not None and str(json_path) == "-":
        click.echo(json.dumps(summary_json(summary), indent=2))
    elif json_path is not None:
        atomic.write_text(json_path, json.dumps(summary_json(summary), indent=2) + "\n", what="summary")
    raise SystemExit(exit_code)
