"""`gate compare BASE CANDIDATE`: judge a candidate against a baseline and print the report."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from gate.commands._options import calibration_option, history_dir_option, json_path_option, models_option, suite_option
from gate.formats import atomic
from gate.formats.verdict import Verdict
from gate.judging.swap_check import RowOutcome, order_unknown, recorded, swap_warnings
from gate.reading import comparability
from gate.reading.side_loader import require_present

if TYPE_CHECKING:  # the library loads in the command's body: --help and usage errors never import scipy
    from gate.formats.config import Suite
    from gate.formats.report import Report


@click.command("compare")
@click.argument("base", type=click.Path(path_type=Path))
@click.argument("candidate", type=click.Path(path_type=Path))
@models_option("the models the candidate has; against a baseline file, those of them it holds (the others are "
               "named)")
@click.option("--allow-diff", "allow_diff", multiple=True, type=click.Choice(comparability.KINDS),
              help="Accept a fingerprint difference of this kind (repeatable); it is still shown.")
@calibration_option("Take the A/A calibration from this baseline file (default: BASE's, when BASE is a baseline file).")
@click.option("--cross-job/--same-job", "cross_job", default=None,
              help="The sides ran in different jobs (a job effect adds to speed noise) or in one interleaved job. "
                   "Default: across jobs when either side is a baseline file, one job for two trees.")
@json_path_option("Write the report (JSON, gate/schemas/report.schema.json) to this file ('-': stdout).")
@click.option("--comment", "comment_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the PR comment markdown to this file ('-': stdout).")
@click.option("--summary", "summary_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the job-summary markdown to this file ('-': stdout).")
@click.option("--format", "output_format", type=click.Choice(["terminal", "markdown", "json", "none"]),
              default="terminal", show_default=True, help="What to print on stdout (on stderr when --json, --comment or --summary is '-').")
@click.option("--all", "show_all", is_flag=True, default=False,
              help="Terminal: print every row, every note and the changed utterances of all workloads "
                   "(default: only the rows that are not a pass).")
@click.option("--no-cache", "no_cache", is_flag=True, default=False,
              help="Neither read nor write the per-utterance cache beside result trees (TREE/.gate-cache/); "
                   "for trees from an untrusted source, whose cache could have been written by anyone.")
@history_dir_option("Nightly history of main (gate history): markdown shows each non-passing row's last nights "
                    "with the candidate placed on them.")
@click.option("--checkout", "checkouts", multiple=True, type=click.Path(file_okay=False, path_type=Path),
              help="A git checkout holding both sides' commits (repeatable): the swap warning asks it whether "
                   "CANDIDATE's commit precedes BASE's (the folder the command runs in is asked last).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap resampling.")
@suite_option
def command(base: Path, candidate: Path, models: tuple[str, ...], allow_diff: tuple[str, ...],
            calibration_path: Path | None, json_path: Path | None, comment_path: Path | None,
            summary_path: Path | None, output_format: str, show_all: bool, no_cache: bool, history_dir: Path | None,
            seed: int, suite_path: Path | None, cross_job: bool | None, checkouts: tuple[Path, ...]) -> None:
    """Compare CANDIDATE against BASE; each is a result tree or a baseline JSON file.

    One verdict per workload × gated metric (pass, warn, fail, incomplete, not comparable) and an
    overall verdict: incomplete > not comparable > fail > warn > pass.

    \b
    Exit codes:
      0  pass or warn (warn: a possible regression; rerun to confirm)
      1  fail: a regression beyond noise and above the floors
      2  usage error; a side that cannot be opened as a tree or baseline (a baseline with
         any invalid value); a malformed calibration stamp or gate-run.json; an output that
         cannot be written
      3  incomplete: a workload is missing or incomplete on either side, including a
         result file that is missing, malformed or unreadable
      4  not comparable: GPU, driver, packages, dataset, model or token budget differ

    A tree is scored once: per-utterance error counts are kept in TREE/.gate-cache/ (keyed by the
    content of the run's files) and reused; --no-cache turns that off. A warning is printed when
    BASE and CANDIDATE look swapped; it never changes the verdict.

    The calibration's stamp (FILE.calibration-stamp.json beside the calibration file) is compared
    with the GPU, driver and packages the candidate's env.json and freeze.txt record: a stale
    calibration is reported; speed rows compared across jobs can then WARN at most, and inside one job
    it is not used. Two trees from `gate run --ab` are judged by its two-look rule, recomputed from the
    trees as the trusted CI job does, and the report shows both looks.

    \b
    Examples:
      gate compare baselines/h200-qwen3.json results/candidate --json out/report.json
      gate compare results/base results/candidate --format markdown > comment.md
      gate compare results/base results/candidate --json - --format none | jq .verdict
      gate compare baseline.json candidate --history history --comment comment.md
    """
    for path in (base, candidate):
        require_present(path)  # a missing side is a usage error, answered before the heavy imports
    from gate.formats.config import check_models, load_suite

    suite = load_suite(suite_path)
    chosen = models or None
    check_models(chosen, suite)  # a typo is answered before the statistics are imported
    from gate.judging.judge import Request, judge_scoped
    from gate.render.renderer import render_comment, render_summary, render_terminal

    report, left_out = judge_scoped(Request(base=base, candidate=candidate, suite=suite, models=chosen,
                                            allow_diff=allow_diff, calibration=calibration_path, cross_job=cross_job,
                                            seed=seed, cache=not no_cache))
    if left_out:
        click.echo(f"gate: note: {candidate}: model(s) {', '.join(left_out)} not judged: the baseline {base} holds "
                   f"{', '.join(report.models)} only (compare each against its own baseline, "
                   f"baselines/<class>-<model>.json)", err=True)
    # the checkouts given, then the folder the command runs in (runbook users run it in their sglang-omni clone)
    given = (*(str(c) for c in checkouts), os.getcwd())
    sides = recorded(base, git=not no_cache, checkouts=given), recorded(candidate, git=not no_cache, checkouts=given)
    warnings = swap_warnings(*sides, _row_outcomes(report))
    for warning in warnings:
        click.echo(f"gate: warning: {warning}", err=True)
    unknown = None if warnings else order_unknown(*sides)
    if unknown:
        click.echo(f"gate: note: {unknown}", err=True)
    gpu = next((d for d in report.environment_diff if d.kind == "gpu" and d.blocking and not d.within), None)
    if gpu is not None and base.is_file():
        click.echo(f"gate: warning: {base}: a baseline stored on {gpu.baseline}, the candidate ran on {gpu.candidate}: "
                   f"give the baseline stored for the candidate's runner class (baselines/<class>-<model>.json; "
                   f"runner-class in the callers), or --allow-diff gpu to compare across GPUs anyway", err=True)
    # A --calibration file given without its stamp (a baseline's own calibration is checked, and said, in the report)
    unstamped = {c.reasons[0] for c in report.calibration_checks if calibration_path is not None
                 and c.status == "unknown" and c.reasons and c.reasons[0].endswith("where it was measured is unknown")}
    for reason in sorted(unstamped):
        click.echo(f"gate: warning: --calibration {calibration_path}: {reason}; the calibration is used as if "
                   f"measured here: put the stamp the calibration workflow stored with it beside it, under that name",
                   err=True)
    _write(json_path, json.dumps(report.to_json(), indent=2, ensure_ascii=False) + "\n", "report")
    trends = _trends(history_dir, report, suite)
    if comment_path is not None:  # rendered only when asked: a comment takes ~0.3 s
        _write(comment_path, render_comment(report, trends=trends), "comment")
    if summary_path is not None:
        _write(summary_path, render_summary(report, trends=trends), "summary")
    # When a file goes to stdout ('-'), the --format output goes to stderr, so stdout stays one document for a pipe.
    to_stderr = any(str(p) == "-" for p in (json_path, comment_path, summary_path) if p is not None)
    if output_format == "terminal":
        click.echo(render_terminal(report, show_all=show_all), nl=False, err=to_stderr)
    elif output_format == "markdown":
        click.echo(render_comment(report, trends=trends), nl=False, err=to_stderr)
    elif output_format == "json":
        click.echo(json.dumps(report.to_json(), indent=2, ensure_ascii=False), err=to_stderr)
    raise SystemExit(report.exit_code)


def _trends(history_dir: Path | None, report: Report, suite: Suite) -> dict[tuple[str, str], str] | None:
    if history_dir is None:
        return None
    from gate.history.pr import row_trends  # imported here: only --history needs the history modules

    return row_trends(history_dir, report, suite)


def _row_outcomes(report: Report) -> list[RowOutcome]:
    tested = (Verdict.PASS, Verdict.WARN, Verdict.FAIL)  # incomplete and not-comparable rows were not tested
    return [RowOutcome(gated=row.kind in ("accuracy", "speed") and row.verdict in tested, improved=row.improved)
            for row in report.rows]


def _write(path: Path | None, text: str, what: str) -> None:
    if path is None:
        return
    if str(path) == "-":
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        sys.stdout.flush()
        return
    atomic.write_text(path, text, what=what)
