"""`gate compare BASE CANDIDATE`: judge a candidate against a baseline and print the report."""
from __future__ import annotations

import json
from pathlib import Path

import click

from gate import comparability
from gate.baseline import read_baseline
from gate.compare import compare
from gate.config import load_suite
from gate.errors import InputError
from gate.render import render_comment, render_summary, render_terminal
from gate.sides import load_side


@click.command("compare")
@click.argument("base", type=click.Path(path_type=Path))
@click.argument("candidate", type=click.Path(path_type=Path))
@click.option("--models", "models", multiple=True,
              help="Only these suite models (repeat or comma-separate). Default: the models the candidate has.")
@click.option("--allow-diff", "allow_diff", multiple=True, type=click.Choice(comparability.KINDS),
              help="Accept a fingerprint difference of this kind (repeatable); it is still shown.")
@click.option("--calibration", "calibration_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Take the A/A calibration from this baseline file (default: BASE's, when BASE is a baseline file).")
@click.option("--cross-job/--same-job", "cross_job", default=None,
              help="The sides ran in different jobs (a job effect adds to speed noise) or in one interleaved job. "
                   "Default: across jobs when either side is a baseline file, one job for two trees.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the report (JSON, gate/schemas/report.schema.json) to this file.")
@click.option("--comment", "comment_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the PR comment markdown to this file.")
@click.option("--summary", "summary_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the job-summary markdown to this file.")
@click.option("--format", "output_format", type=click.Choice(["terminal", "markdown", "json", "none"]),
              default="terminal", show_default=True, help="What to print on stdout.")
@click.option("--all", "show_all", is_flag=True, default=False,
              help="Terminal: print every row, every note and the changed utterances of all workloads "
                   "(default: only the rows that are not a pass).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap resampling.")
@click.option("--suite", "suite_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Suite YAML (default: the packaged gate/suites/asr.yaml).")
def command(base: Path, candidate: Path, models: tuple[str, ...], allow_diff: tuple[str, ...],
            calibration_path: Path | None, json_path: Path | None, comment_path: Path | None,
            summary_path: Path | None, output_format: str, show_all: bool, seed: int, suite_path: Path | None,
            cross_job: bool | None) -> None:
    """Compare CANDIDATE against BASE; each is a result tree or a baseline JSON file.

    One verdict per workload × gated metric (pass, warn, fail, incomplete, not comparable) and an
    overall verdict: incomplete > not comparable > fail > warn > pass.

    \b
    Exit codes:
      0  pass or warn (warn: a possible regression; rerun to confirm)
      1  fail: a regression beyond noise and above the floors
      2  usage error or unreadable input (bad path, malformed file, wrong schema or suite)
      3  incomplete: a workload is missing or incomplete on either side
      4  not comparable: GPU, driver, packages, dataset, model or token budget differ
    """
    suite = load_suite(suite_path)
    chosen = tuple(m for item in models for m in item.split(",") if m) or None
    base_side = load_side(base, suite, chosen)
    cand_side = load_side(candidate, suite, chosen)
    calibration = read_baseline(calibration_path, suite).calibration if calibration_path else None
    report = compare(base_side, cand_side, suite, models=chosen, allow_diff=allow_diff, seed=seed,
                     calibration=calibration, cross_job=cross_job)
    _write(json_path, json.dumps(report.to_json(), indent=2, ensure_ascii=False) + "\n", "report")
    _write(comment_path, render_comment(report), "comment")
    _write(summary_path, render_summary(report), "summary")
    if output_format == "terminal":
        click.echo(render_terminal(report, show_all=show_all), nl=False)
    elif output_format == "markdown":
        click.echo(render_comment(report), nl=False)
    elif output_format == "json":
        click.echo(json.dumps(report.to_json(), indent=2, ensure_ascii=False))
    raise SystemExit(report.exit_code)


def _write(path: Path | None, text: str, what: str) -> None:
    if path is None:
        return
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write the {what} ({exc.strerror})", path=path) from None
