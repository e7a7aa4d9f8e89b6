"""`gate action`: what action.yml runs. One gate command, then summary, annotations and step outputs.

The composite action passes its inputs through `env:` (GATE_COMMAND, GATE_ARGS, GATE_REPORT,
GATE_FAIL_ON_REGRESSION) and runs only `gate action`, so no `${{ }}` ever reaches a shell and the
logic lives here, in Python, where it is tested.
"""
from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from pathlib import Path

import click

from gate.formats import atomic, github_limits
from gate.formats.errors import GateError
from gate.formats.report import Report
from gate.formats.verdict import Verdict
from gate.publish.actions_io import append_file, format_outputs, row_annotations
from gate.publish.settings import Settings, SettingsError

ACTION_COMMANDS = ("run", "compare", "post", "merge", "summarize", "event", "baseline", "store")
# Exit codes that mean "the gate judged: regression / incomplete / not comparable" (gate compare).
VERDICT_EXIT_CODES = tuple(sorted({v.exit_code for v in Verdict if v.exit_code}))


@click.command("action")
def command() -> None:
    """Run GATE_COMMAND with GATE_ARGS; then write the job summary, annotations and outputs.

    What action.yml runs: the inputs arrive as GATE_COMMAND, GATE_ARGS, GATE_REPORT and
    GATE_FAIL_ON_REGRESSION; the report at GATE_REPORT (when written) fills the job summary,
    annotations and step outputs.

    \b
    Exit codes:
      the command's own (see gate COMMAND --help); for compare, 1/3/4 become 0 when
      GATE_FAIL_ON_REGRESSION is false
      2    a bad input (GATE_COMMAND not one of run, compare, post, merge, summarize, event)

    \b
    Example:
      GATE_COMMAND=compare GATE_ARGS="base.json results/candidate --json out/report.json" \\
        GATE_REPORT=out/report.json gate action
    """
    settings = Settings.from_environ(os.environ)
    if settings.command not in ACTION_COMMANDS:
        raise SettingsError(f"command input: expected one of {', '.join(ACTION_COMMANDS)}, got {settings.command!r}")
    try:
        args = shlex.split(settings.args)
    except ValueError as exc:
        raise SettingsError(f"args input: cannot split ({exc})") from None
    click.echo(f"gate {settings.command} {shlex.join(args)}", err=True)
    if settings.report:  # commands write the report where they are told; the folder may not exist yet
        try:
            Path(settings.report).parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise GateError(f"cannot create the report's folder ({exc.strerror})", path=settings.report) from None
    code = _invoke([settings.command, *args])

    outputs = {"exit-code": str(code), "verdict": "", "report-json": "", "comment-markdown": ""}
    if settings.report and Path(settings.report).is_file():
        outputs.update(report_outputs(settings.report, settings=settings))
    elif settings.report and code == 0 and settings.command in ("compare", "merge"):
        raise GateError("the command succeeded but wrote no report where the report input says", path=settings.report)
    if settings.output:
        append_file(settings.output, format_outputs(outputs), what="step outputs")
    # Only `compare` speaks in verdict exit codes; `run` uses 3 and 4 for failed runs and a busy GPU.
    if settings.command == "compare" and code in VERDICT_EXIT_CODES and not settings.fail_on_regression:
        click.echo(f"gate: verdict exit code {code} not failing the step (fail-on-regression: false)", err=True)
        code = 0
    raise SystemExit(code)


def report_outputs(report_path: str, *, settings: Settings) -> dict[str, str]:
    """Render the report's summary into GITHUB_STEP_SUMMARY, print annotations, and return the outputs."""
    from gate.publish.untrusted import load_untrusted_report  # here: usage errors answer before scipy loads

    report = load_untrusted_report(report_path)
    rendered = render_report(report)
    comment_path = Path(report_path).with_suffix(".comment.md")
    atomic.write_text(comment_path, rendered.comment, what="comment markdown")
    if settings.step_summary:
        append_file(settings.step_summary, github_limits.fit(rendered.summary, github_limits.JOB_SUMMARY), what="job summary")
    for annotation in row_annotations(report.rows):
        click.echo(annotation.command())
    return {
        "verdict": report.verdict.value,
        "report-json": str(Path(report_path).resolve()),
        "comment-markdown": str(comment_path.resolve()),
    }


def _invoke(argv: list[str]) -> int:
    """Run one gate command in this process and return its exit code (errors already printed, one line each)."""
    from gate.cli import run  # imported here: gate.cli imports this module

    return run(argv)


@dataclass(frozen=True)
class Rendered:
    comment: str  # markdown for the sticky PR comment, marker included
    summary: str  # markdown for the job summary / check-run summary
    marker: str  # hidden HTML comment that identifies this suite's sticky comment


def render_report(report: Report) -> Rendered:
    """Comment and summary markdown re-rendered from a validated report (never from uploaded markdown)."""
    from gate.render import renderer as render  # imported here: Jinja is needed only when something is rendered

    return Rendered(comment=render.render_comment(report), summary=render.render_check_summary(report),
                    marker=render.marker(report.suite))
