"""`gate post`: the trusted job judges uploaded result trees itself and publishes the result on the PR.

Runs in the `workflow_run` job that holds the write token, on a GitHub-hosted runner, running no PR
code. Nothing it publishes is read from an uploaded verdict or report:
  1. the candidate tree (and, in A/B mode, the base tree) of ONE model is read as untrusted data
     (gate.untrusted: regular files, caps, the plan's runs), the baseline comes from the trusted
     checkout (`--baseline`: the baseline branch), and compare runs here;
  2. the PR is bound to its trigger through the API (gate.trust.bind_trigger): the run's head is
     the PR's head, and a gate label selecting this model was applied to that head;
  3. a FAIL may have been accepted by a user with write access (gate.trust.find_acceptance);
  4. the model's check run, then ONE sticky comment and the overall check, rebuilt from the latest
     check runs of every model on that commit (gate.publication); duplicates of the comment are
     deleted; the comment is rebuilt again if another model's check appeared meanwhile.
With `--not-run` (the benchmark run measured nothing) only the overall check is set, per the
required-check policy in docs/use-in-sglang-omni.md. `--report --tracking-issue` is the nightly's
path (main's own report, in the same trusted workflow).

Exit codes: 0 published, or nothing to publish and the log says why; 2 bad input or an API error.
"""
from __future__ import annotations

import fnmatch
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import click

from gate import atomic, escape, publication
from gate.config import Suite, load_suite
from gate.errors import InputError
from gate.event import read_trigger
from gate.github import CheckState, Publisher, connect, default_retry
from gate.render import Budget
from gate.report import ModelLooks, Report
from gate.settings import Settings
from gate.trust import Acceptance, bind_trigger, find_acceptance, models_labelled_at_head
from gate.untrusted import (
    UntrustedInputError,
    load_untrusted_report,
    read_side,
    read_untrusted_side,
    recompute_plan,
    render_report,
)
from gate.verdict import Verdict

_TRACKING_TITLE = "ASR regression on main"
_REBUILD_ATTEMPTS = 3

Log = Callable[[str], None]


@dataclass(frozen=True)
class Outcome:
    posted: bool
    acceptance: Acceptance | None = None  # kept with the result (acceptance.json beside --json)


@click.command("post")
@click.option("--trees", "trees", type=click.Path(file_okay=False, path_type=Path),
              help="Downloaded result trees of ONE model (untrusted): candidate/ and, in A/B mode, base/.")
@click.option("--model", help="The model the trees are for.")
@click.option("--baseline", "baseline", type=click.Path(path_type=Path),
              help="Trusted baseline (file on the baseline branch). Default: the trees' base/ side (A/B).")
@click.option("--calibration", "calibration", type=click.Path(dir_okay=False, path_type=Path),
              help="Trusted A/A calibration (a baseline file on the baseline branch), for A/B runs.")
@click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write the trusted report here (an artifact for people and tools).")
@click.option("--not-run", is_flag=True, help="The benchmark run measured nothing: set only the overall check.")
@click.option("--required-paths", "required_paths", default="",
              help="Comma-separated globs of ASR code paths: an unlabelled PR touching one gets 'action required'.")
@click.option("--report", "report_path", type=click.Path(dir_okay=False),
              help="Nightly only (with --tracking-issue): the nightly's own merged report.")
@click.option("--tracking-issue", is_flag=True, help="Nightly: open/update one issue unless the night passed.")
@click.option("--sha", help="Commit (default: the workflow_run head, else GITHUB_SHA).")
@click.option("--pr", type=int, help="PR number (default: from the workflow_run event, else looked up by head).")
@click.option("--suite", "suite_path", type=click.Path(dir_okay=False), help="Suite YAML (default: the bundled asr suite).")
@click.option("--dry-run", is_flag=True, help="Judge and print the model's check as JSON; contact nothing.")
@click.option("--history", "history_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="The nightly history on the baseline branch (trusted): each non-passing row shows main's "
                   "last nights, where the candidate lands against their band, and an open step's issue.")
def command(trees, model, baseline, calibration, json_out, not_run, required_paths, report_path, tracking_issue,
            sha, pr, suite_path, dry_run, history_dir=None) -> None:
    """Judge uploaded result trees and publish the check runs and the one sticky comment.

    Run in the trusted workflow only: the trees are untrusted data and are judged here (their
    per-utterance cache, if any, is never read).

    \b
    Exit codes:
      0    published, or nothing to publish and the log says why
      2    bad input, or an API error

    \b
    Examples:
      gate post --trees untrusted/qwen3 --model qwen3 --baseline store/h100/qwen3.json
      gate post --trees untrusted/qwen3 --model qwen3 --calibration store/h100/qwen3.json --dry-run
      gate post --report nightly/report.json --tracking-issue
    """
    settings = Settings.from_environ(os.environ)
    suite = load_suite(suite_path)
    if sum(bool(x) for x in (trees, not_run, report_path)) != 1:
        raise InputError("give exactly one of --trees DIR (with --model), --not-run, or --report FILE --tracking-issue")
    if report_path and not tracking_issue:
        raise InputError("--report is the nightly's path and needs --tracking-issue; PR results are judged from --trees")

    trigger = None
    if settings.event_name == "workflow_run" and settings.event_path:
        trigger = read_trigger("workflow_run", settings.event_path, suite=suite)
    sha = sha or (trigger.sha if trigger else None) or settings.sha
    # Link the checks to the benchmark run (its logs and artifacts), else to this run.
    details_url = settings.run_url
    if trigger is not None and trigger.run_id is not None and settings.repository:
        details_url = f"{settings.server_url}/{settings.repository}/actions/runs/{trigger.run_id}"
    log: Log = lambda line: click.echo(f"gate: {line}")  # noqa: E731

    required = tuple(g.strip() for g in required_paths.split(",") if g.strip())
    if report_path:  # nightly
        publisher = _publisher(settings)
        _nightly(publisher, load_untrusted_report(report_path), sha=sha or settings.require("sha"),
                 details_url=details_url, log=log)
        return

    if trees:
        if not model or model not in suite.models:
            raise InputError(f"--model: expected one of {', '.join(suite.models)}", path=trees)
        report: Report | None = None
        refused: str | None = None
        try:
            if not trees.exists():
                raise UntrustedInputError(f"the benchmark job uploaded no result trees for {model} (it failed or was "
                                          "cancelled before uploading; its log says why)")
            report = judge(trees, model, suite, baseline=baseline, calibration=calibration)
        except UntrustedInputError as exc:  # published as a refusal (after binding), never as a pass
            refused = str(exc)
            log(f"result trees refused: {escape.plain(refused, 500)}")
        if report is not None and json_out:
            _write_json(json_out, report)
        trends = _history_trends(history_dir, report, suite) if report is not None else None
        section = render_section(report, trends) if report is not None else publication.refused_section(refused or "")
        if dry_run and report is None:
            raise UntrustedInputError(refused or "the result trees were refused")
        if dry_run:
            assert report is not None
            plan = publication.model_check(model, report, section, None)
            click.echo(json.dumps({"verdict": report.verdict.value, "check": plan.__dict__}, indent=2,
                                  ensure_ascii=False))
            return
    elif dry_run:
        raise InputError("--dry-run needs --trees")
    if sha is None:
        raise InputError("no commit: run under workflow_run or give --sha")

    publisher = _publisher(settings)
    number = pr or (trigger.pr if trigger else None)
    if number is None and trigger is not None:
        number = publisher.find_pull_for_head(trigger.head_repository, trigger.head_branch, sha)
    if number is None:
        log(f"no open pull request has head {sha[:12]}; nothing posted")
        return
    if not_run:
        post_not_run(publisher, suite, number, sha=sha, required_paths=required, details_url=details_url, log=log)
    else:
        outcome = post_model(publisher, suite, number, sha=sha, model=model, report=report, section=section,
                             details_url=details_url, log=log, refused=refused)
        if outcome.acceptance is not None and json_out:
            _write_acceptance(json_out.with_name("acceptance.json"), outcome.acceptance, model=model, sha=sha)


def judge(trees: Path, model: str, suite: Suite, *, baseline: Path | None, calibration: Path | None) -> Report:
    """The trusted compare of one model: candidate from the uploaded trees, baseline from a trusted path.

    In A/B mode the report carries the looks recomputed here (never the uploaded log's). A calibration whose
    stamp does not match the candidate's GPU, driver or packages is reported stale (gate.freshness)."""
    import dataclasses

    from gate.baseline import read_baseline
    from gate.compare import compare
    from gate.freshness import check_calibration

    looks: tuple[ModelLooks, ...] = ()
    if baseline is not None:
        candidate = read_untrusted_side(trees / "candidate", suite, model)
        base = read_side(baseline, suite, model)  # trusted: the baseline branch
    else:  # A/B, both measured by the labelled job: the runs it made must be the ones the two-look plan asks for
        plan = recompute_plan(trees, suite, model, calibration)
        candidate = read_untrusted_side(trees / "candidate", suite, model, plan.expected)
        base = read_untrusted_side(trees / "base", suite, model, plan.expected)
        looks = (plan.looks,)
    calib = read_baseline(calibration, suite, models=(model,)).calibration if calibration else None
    source = calibration or (baseline if base.kind == "baseline" and base.calibration else None)
    check = check_calibration(source, trees / "candidate", suite, (model,)) if source is not None else None
    report = compare(base, candidate, suite, models=(model,), calibration=calib, calibration_check=check)
    return dataclasses.replace(report, looks=looks)


def render_section(report: Report, trends: dict | None = None) -> str:
    """The judged model's markdown section: the check summary rendering (no marker), within its budget;
    `trends` (gate.history.pr.row_trends) adds the nightly trend beside each non-passing row."""
    if trends:
        from gate.render import render_check_summary

        return render_check_summary(report, budget=Budget(publication.SECTION_BUDGET, "characters"), trends=trends)
    rendered = render_report(report, section_budget=Budget(publication.SECTION_BUDGET, "characters"))
    return rendered.summary


def _history_trends(history_dir: Path | None, report: Report, suite: Suite) -> dict | None:
    """The trusted store's trends for the PR comment (history helper, issue 25 item 7); None without --history."""
    if history_dir is None or not history_dir.is_dir():
        return None
    from gate.history.pr import row_trends

    return row_trends(history_dir, report, suite)


def post_model(publisher: Publisher, suite: Suite, number: int, *, sha: str, model: str, report: Report | None,
               section: str, details_url: str | None, log: Log, refused: str | None = None) -> Outcome:
    """Bind, accept, publish the model's check, then the sticky comment and the overall check.

    `report` is the trusted compare's; None with `refused` when the uploaded trees were refused.
    """
    pull = publisher.pull_request(number)
    timeline = publisher.timeline(number)
    binding = bind_trigger(run_sha=sha, pull=pull, timeline=timeline, models=(model,), suite=suite)
    log(binding.reason)
    if not binding.ok:
        return Outcome(posted=False)
    expected = models_labelled_at_head(pull, timeline, suite)
    if report is None:
        check = publication.refused_check(model, refused or "unreadable")
        _publish(publisher, number, sha=sha, model=model, check=check, section=section, labels=binding.labels,
                 expected=expected, details_url=details_url, log=log)
        return Outcome(posted=True)
    acceptance: Acceptance | None = None
    if report.verdict is Verdict.FAIL:
        acceptance, refusals = find_acceptance(timeline, sha=sha, model=model, permission_of=publisher.permission)
        for line in refusals:
            log(line)
        if acceptance is not None:
            log(f"FAIL of {model} accepted by @{escape.plain(acceptance.by, 39)}")
    check = publication.model_check(model, report, section, acceptance)
    _publish(publisher, number, sha=sha, model=model, check=check, labels=binding.labels,
             section=publication.acceptance_note(acceptance, report.verdict) + section,
             expected=expected, details_url=details_url, log=log)
    return Outcome(posted=True, acceptance=acceptance)


def _publish(publisher: Publisher, number: int, *, sha: str, model: str, check: publication.CheckPlan, section: str,
             labels: tuple[str, ...], expected: tuple[str, ...], details_url: str | None, log: Log) -> None:
    result = publisher.publish_check(sha, name=check.name, conclusion=check.conclusion, status_state=check.status_state,
                                     title=check.title, summary=check.summary, details_url=details_url)
    log(f"{check.name}: {result.kind.replace('_', ' ')} {result.conclusion}")
    states = _rebuild(publisher, number, sha=sha, model=model, section=section, own=check, expected=expected, log=log)
    overall = publication.overall_check(states, sha=sha, expected=expected)
    result = publisher.publish_check(sha, name=overall.name, conclusion=overall.conclusion,
                                     status_state=overall.status_state, title=overall.title, summary=overall.summary,
                                     details_url=details_url)
    log(f"{overall.name}: {result.conclusion}")
    for label in labels:
        removed = publisher.remove_label(number, label)
        log(f"label {label} {'removed' if removed else 'already gone'}")


def _rebuild(publisher: Publisher, number: int, *, sha: str, model: str, section: str,
             own: publication.CheckPlan, expected: tuple[str, ...], log: Log) -> dict[str, CheckState]:
    """Write the sticky comment from the latest check runs; again while another model's check changed meanwhile."""
    states = _states(publisher, sha, own)
    for _ in range(_REBUILD_ATTEMPTS):
        body = publication.sticky_body(states, sha=sha, model=model, section=section, expected=expected)
        result = publisher.upsert_comment(number, body, marker=publication.STICKY_MARKER)
        log(f"comment {result.action} on #{number}: {result.url}")
        again = _states(publisher, sha, own)
        if again == states:
            break
        states = again
    return states


def _states(publisher: Publisher, sha: str, own: publication.CheckPlan) -> dict[str, CheckState]:
    states = publisher.check_states(sha, prefix=publication.CHECK_PREFIX + " / ")
    if own.name not in states:  # check runs refused (status fallback): the judged model still counts
        states[own.name] = CheckState(own.name, own.conclusion, own.title, "", 0)
    return states


def post_not_run(publisher: Publisher, suite: Suite, number: int, *, sha: str, required_paths: tuple[str, ...],
                 details_url: str | None, log: Log) -> None:
    """The required-check policy for a commit the benchmark run did not measure (docs: required-check policy)."""
    states = publisher.check_states(sha, prefix=publication.CHECK_PREFIX + " / ")
    pull = publisher.pull_request(number)
    expected = models_labelled_at_head(pull, publisher.timeline(number), suite) if pull.head_sha == sha else ()
    if states:  # this commit was judged by an earlier run: keep the overall check as the models say
        plan = publication.overall_check(states, sha=sha, expected=expected)
    elif expected:  # labelled, but no results arrived (still running, or the run uploaded none)
        plan = publication.not_run_check(
            reason=f"labelled for {', '.join(expected)} on {sha[:12]}, but no result yet", required=True)
    elif publisher.find_sticky(number, publication.STICKY_MARKER) is not None:
        plan = publication.not_run_check(
            reason=f"stale: the gate ran on an earlier head of this PR, not on {sha[:12]}; add a gate label again",
            required=True)
    else:
        touched = _touched(publisher, number, required_paths)
        reason = (f"not run: this PR changes ASR code ({touched}); add a gate label (run-*-asr)" if touched
                  else "not run: no gate label on this PR")
        plan = publication.not_run_check(reason=reason, required=bool(touched))
    result = publisher.publish_check(sha, name=plan.name, conclusion=plan.conclusion, status_state=plan.status_state,
                                     title=plan.title, summary=plan.summary, details_url=details_url)
    log(f"{plan.name}: {result.conclusion} ({plan.title})")


def _touched(publisher: Publisher, number: int, patterns: tuple[str, ...]) -> str | None:
    if not patterns:
        return None
    for path in publisher.changed_files(number):
        if any(fnmatch.fnmatch(path, pattern) for pattern in patterns):
            return path[:120]
    return None


def _nightly(publisher: Publisher, report: Report, *, sha: str, details_url: str | None, log: Log) -> None:
    """Nightly on main: a check on the measured commit, and the tracking issue open unless the night PASSED
    (a WARN night is kept and looked at; only PASS nights move the baseline)."""
    plan = publication.model_check("nightly", report, render_section(report), None)
    result = publisher.publish_check(sha, name=publication.CHECK_PREFIX + " nightly", conclusion=plan.conclusion,
                                     status_state=plan.status_state, title=plan.title, summary=plan.summary,
                                     details_url=details_url)
    log(f"nightly check: {result.conclusion}")
    note = (f"Nightly verdict **{report.verdict.word.upper()}** at {sha}"
            + (f" ([run]({details_url}))" if details_url else "") + ".")
    action = publisher.upsert_tracking_issue(title=_TRACKING_TITLE, body=plan.summary,
                                             marker="<!-- asr-regression-gate: nightly -->",
                                             regressed=not report.verdict.is_pass, note=note)
    log(f"tracking issue: {action}")


def _publisher(settings: Settings) -> Publisher:
    return Publisher(connect(api_url=settings.api_url, token=settings.require("token"), retry=default_retry()),
                     settings.require("repository"), bot_login=settings.bot_login)


def _write_acceptance(path: Path, acceptance: Acceptance, *, model: str, sha: str) -> None:
    """The acceptance, kept beside the trusted report in the judged artifact."""
    atomic.write_text(path, json.dumps({"model": model, "sha": sha, **acceptance.to_json()}, indent=2) + "\n",
                      what="acceptance record")


def _write_json(path: Path, report: Report) -> None:
    atomic.write_text(path, json.dumps(report.to_json(), indent=2, ensure_ascii=False) + "\n", what="report")
