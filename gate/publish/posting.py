"""The trusted post (`gate post`): judge uploaded trees with the one judge, bind the post to one label event,
publish the model check, the overall check, the sticky comment and the labels, in that order.

The click command lives in gate/commands/post.py and imports this module only when it runs, so `--help` and
usage errors never load PyGithub or scipy.

Runs in the `workflow_run` job that holds the write token, on a GitHub-hosted runner, running no PR
code. Nothing it publishes is read from an uploaded verdict or report:
  1. the candidate tree (and, in A/B mode, the base tree) of ONE model is read as untrusted data
     (gate.publish.untrusted: regular files, caps, the plan's runs), the baseline comes from the trusted
     checkout (`--baseline`: the baseline branch), and compare runs here;
  2. the trees must be consistent with GitHub's records (gate.publish.untrusted.check_consistency): the
     candidate measured the PR head, the base its merge base, no run copied across sides, no
     re-measure the outlier rule did not ask for;
  3. the post is bound to ONE `labeled` event through the API (gate.publish.trust.bind_label): a writer's gate
     label selecting this model, after the head arrived (server times only), still on the PR, and not
     judged already by another run; the head that cannot be placed in time fails closed;
  4. a FAIL may have been accepted by a writer (gate.publish.trust.find_acceptance);
  5. the model's check run (stamped with an external_id naming the run and the label event, and tagged with
     the stamp key's HMAC when one is configured), then the overall check from the gate's OWN check runs only
     (proven by that tag or a dedicated App; without either, only this run's judgement), then ONE sticky
     comment, then the label.
With `--not-run` (the benchmark run measured nothing) only the overall check is set, per the
required-check policy in docs/use-in-sglang-omni.md. `--report --tracking-issue` is the nightly's
path (main's own report, in the same trusted workflow). The trust model: docs/trust-model.md.

Exit codes: 0 published (or, for a head that moved on, kept on the commit measured); 2 bad input, an
API error, or a post refused (the overall check says why).
"""
from __future__ import annotations

import fnmatch
import json
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

import click

from gate.formats import atomic
from gate.formats.config import Suite, load_suite
from gate.formats.errors import GateError, InputError
from gate.formats.github_limits import Limit
from gate.formats.report import Report
from gate.formats.verdict import Verdict
from gate.publish import publication, setup
from gate.publish.event import Trigger, read_trigger
from gate.publish.github import CheckResult, Publisher, connect, default_retry
from gate.publish.post_request import PostMode, PostRequest
from gate.publish.settings import Settings
from gate.publish.trust import (
    ACTIONS_APP,
    WRITE_PERMISSIONS,
    Acceptance,
    Authority,
    BenchmarkRun,
    CheckStamp,
    CheckState,
    JudgementSeq,
    OwnChecks,
    PullInfo,
    bind_label,
    find_acceptance,
    head_arrival,
    labelled_models,
    own_checks,
)
from gate.publish.untrusted import (
    UntrustedInputError,
    check_consistency,
    load_untrusted_report,
)
from gate.render import escape

_TRACKING_TITLE = "ASR regression on main"
_REBUILD_ATTEMPTS = 3

Log = Callable[[str], None]


@dataclass(frozen=True)
class Outcome:
    posted: bool
    acceptance: Acceptance | None = None  # kept with the result (acceptance.json beside --json)
    refused: str | None = None  # why the post was not bound (the overall check says it too)
    stale: bool = False  # the head moved: kept on the commit measured only


class PostRefused(GateError):
    """The post could not be bound to a label event at the measured head; nothing counted was published."""




@dataclass(frozen=True)
class _Context:
    """What every mode reads from the environment: the trigger, the commit, where the checks link to."""

    settings: Settings
    authority: Authority
    suite: Suite
    trigger: Trigger | None
    sha: str | None
    run: BenchmarkRun | None
    details_url: str | None
    log: Log
    judged_in: tuple[int, int] = (0, 0)  # this report run and its attempt (GITHUB_RUN_ID, GITHUB_RUN_ATTEMPT)


def _number(value: str | None) -> int:
    return int(value) if value is not None and value.isdigit() else 0


def post(request: PostRequest) -> None:
    """The body of `gate post` (see its --help): one mode, decided by the command from its options."""
    settings = Settings.from_environ(os.environ)
    authority = Authority(settings.app_slug, settings.stamp_key.encode() if settings.stamp_key else None)
    suite = load_suite(request.suite_path)
    history_dir = request.history_dir
    if history_dir is not None and not history_dir.is_dir():  # given means expected: never a quiet comment without it
        raise InputError("--history: expected the nightly history directory (missing)", path=history_dir)
    if request.mode is PostMode.REPORT and not request.tracking_issue:
        raise InputError("--report is the nightly's path and needs --tracking-issue; PR results are judged from --trees")

    trigger = None
    if settings.event_name == "workflow_run" and settings.event_path:
        trigger = read_trigger("workflow_run", settings.event_path, suite=suite)
    run = (BenchmarkRun(trigger.run_id, trigger.run_attempt or 1, trigger.created_at)
           if trigger is not None and trigger.run_id is not None else None)
    # Link the checks to the benchmark run (its logs and artifacts), else to this run.
    details_url = settings.run_url
    if trigger is not None and trigger.run_id is not None and settings.repository:
        details_url = f"{settings.server_url}/{settings.repository}/actions/runs/{trigger.run_id}"
    log: Log = lambda line: click.echo(f"gate: {line}")  # noqa: E731
    context = _Context(settings=settings, authority=authority, suite=suite, trigger=trigger,
                       sha=request.sha or (trigger.sha if trigger else None) or settings.sha, run=run,
                       details_url=details_url, log=log,
                       judged_in=(_number(settings.run_id), _number(settings.run_attempt)))
    if request.mode is PostMode.REPORT:
        _post_report(request, context)
    elif request.mode is PostMode.CHECK_SETUP:
        _check_setup(context)
    elif request.mode is PostMode.TREES:
        _post_trees(request, context)
    else:
        _post_nothing_run(request, context)


def _post_report(request: PostRequest, context: _Context) -> None:
    """PostMode.REPORT: the nightly's own report (main's), its tracking issue."""
    assert request.report is not None
    publisher = _publisher(context.settings)
    _nightly(publisher, load_untrusted_report(request.report), sha=context.sha or context.settings.require("sha"),
             details_url=context.details_url, log=context.log)


def _run_setup_check(publisher: Publisher, context: _Context) -> tuple[setup.SetupFinding, ...]:
    """The set-up check of a PR post (gate.publish.setup): logged, in the job summary, and (via the authority)
    on every overall check this run writes."""
    settings, authority = context.settings, context.authority
    app = authority.app != ACTIONS_APP
    findings = setup.check(environment=settings.environment,
                           policy=publisher.environment_policy(settings.environment) if settings.environment else None,
                           default_branch=publisher.default_branch(), key=authority.key is not None, app=app,
                           exposed=settings.exposed_secrets,
                           installed=publisher.installation_covers_repository() if app else None)
    for finding in findings:
        context.log(f"set-up{' (fails closed)' if finding.closed else ''}: {finding.line}")
    if findings and settings.step_summary:
        lines = "".join(f"- {'⛔' if f.closed else '⚠️'} {escape.md(f.line, 400)}\n" for f in findings)
        with open(settings.step_summary, "a", encoding="utf-8") as summary:
            summary.write(f"### ASR gate set-up\n\n{lines}\n")
    return findings


def _check_setup(context: _Context) -> None:
    """`gate post --check-setup`: the same checks for a maintainer, from the secrets' names where the token may
    list them (an admin's token); exit 2 when the proof could be read by a branch workflow."""
    settings = context.settings
    publisher = _publisher(settings)
    environment = settings.environment or "asr-gate"
    in_environment = publisher.secret_names(f"environments/{environment}/secrets")
    outside = (publisher.secret_names("actions/secrets") or set()) | (
        publisher.secret_names("actions/organization-secrets") or set())
    gate_secrets = ("ASR_GATE_STAMP_KEY", "ASR_GATE_APP_PRIVATE_KEY", "ASR_GATE_APP_CLIENT_ID")
    key = "ASR_GATE_STAMP_KEY" in (in_environment or set()) or context.authority.key is not None
    app = "ASR_GATE_APP_PRIVATE_KEY" in (in_environment or set()) or context.authority.app != ACTIONS_APP
    findings = setup.check(environment=environment, policy=publisher.environment_policy(environment),
                           default_branch=publisher.default_branch(), key=key, app=app,
                           exposed=tuple(name for name in gate_secrets[:2] if name in outside),
                           installed=publisher.installation_covers_repository() if context.authority.app != ACTIONS_APP
                           else None)
    if in_environment is None:
        click.echo("gate: set-up: the token cannot list the secrets (an admin's token can); key and App taken from "
                   "GATE_STAMP_KEY and GATE_APP_SLUG")
    for finding in findings:
        click.echo(f"gate: set-up{' (fails closed)' if finding.closed else ''}: {finding.line}")
    if setup.blocking(findings):
        raise PostRefused("set-up: a branch workflow could read the gate's proof; see the lines above")
    click.echo(f"gate: set-up: {'ok' if not findings else 'holds, with the warnings above'} (environment {environment}, "
               f"{'App' if app else 'no App'}, {'stamp key' if key else 'no stamp key'})")


def _pull_number(request: PostRequest, context: _Context) -> tuple[Publisher, str, int | None, Authority]:
    """The publisher, the commit and the PR the post is for (None: no open PR has that head), and the authority
    with what the set-up check found (run inside GitHub Actions, or where an environment is named)."""
    sha = context.sha
    if sha is None:
        raise InputError("no commit: run under workflow_run or give --sha")
    publisher = _publisher(context.settings)
    authority = context.authority
    if context.settings.in_actions or context.settings.environment:
        authority = replace(authority, setup=_run_setup_check(publisher, context))
    trigger = context.trigger
    number = request.pr or (trigger.pr if trigger else None)
    if number is None and trigger is not None:
        number = publisher.find_pull_for_head(trigger.head_repository, trigger.head_branch, sha)
    if number is None:
        context.log(f"no open pull request has head {sha[:12]}; nothing posted")
    return publisher, sha, number, authority


def _post_nothing_run(request: PostRequest, context: _Context) -> None:
    """PostMode.NOT_RUN: the benchmark run measured nothing; only the overall check is set."""
    if request.dry_run:
        raise InputError("--dry-run needs --trees")
    publisher, sha, number, authority = _pull_number(request, context)
    if number is None:
        return
    post_not_run(publisher, context.suite, number, sha=sha, required_paths=request.required_paths,
                 details_url=context.details_url, log=context.log, authority=authority, judged_in=context.judged_in)


def _post_trees(request: PostRequest, context: _Context) -> None:
    """PostMode.TREES: judge one model's uploaded trees here, then bind, publish and comment (or --dry-run)."""
    trees, model, suite, log = request.trees, request.model, context.suite, context.log
    assert trees is not None
    if not model or model not in suite.models:
        raise InputError(f"--model: expected one of {', '.join(suite.models)}", path=trees)
    report: Report | None = None
    refused: str | None = None
    try:
        if not trees.exists():
            raise UntrustedInputError(f"the benchmark job uploaded no result trees for {model} (it failed or was "
                                      "cancelled before uploading; its log says why)")
        report = judge_uploaded(trees, model, suite, baseline=request.baseline, calibration=request.calibration)
    except UntrustedInputError as exc:  # published as a refusal (after binding), never as a pass
        refused = relative(str(exc), trees)
        log(f"result trees refused: {escape.plain(refused, 500)}")
    if request.dry_run:
        _dry_run(request, context, report, refused)
        return
    publisher, sha, number, authority = _pull_number(request, context)
    if number is None:
        return
    if report is not None:
        try:  # the trees must be what GitHub says was measured
            pull = publisher.pull_request(number)
            base_sha = publisher.merge_base(pull.base_sha, sha) if request.baseline is None and pull.base_sha else None
            check_consistency(trees, suite, model, head_sha=sha, base_sha=base_sha, ab=request.baseline is None,
                              calibration=request.calibration)
        except UntrustedInputError as exc:
            report, refused = None, relative(str(exc), trees)
            log(f"result trees refused: {escape.plain(refused, 500)}")
    if report is not None and request.json_path:
        _write_json(request.json_path, report)
    trends = _history_trends(request.history_dir, report, suite, request.runner_class) if report is not None else None
    section = render_section(report, trends) if report is not None else publication.refused_section(refused or "")
    outcome = post_model(publisher, suite, number, sha=sha, model=model, report=report, section=section,
                         details_url=context.details_url, log=log, refused=refused, run=context.run,
                         authority=authority, judged_in=context.judged_in)
    if outcome.acceptance is not None and request.json_path:
        _write_acceptance(request.json_path.with_name("acceptance.json"), outcome.acceptance, model=model, sha=sha)
    if outcome.refused is not None:
        raise PostRefused(escape.plain(outcome.refused, 300))


def _dry_run(request: PostRequest, context: _Context, report: Report | None, refused: str | None) -> None:
    """`--trees --dry-run`: judge and print the model's check as JSON; contact nothing."""
    assert request.trees is not None and request.model is not None
    if report is None:
        raise UntrustedInputError(refused or "the result trees were refused")
    if context.sha:  # the commit given: the candidate must be it
        check_consistency(request.trees, context.suite, request.model, head_sha=context.sha, base_sha=None,
                          ab=request.baseline is None, calibration=request.calibration)
    if request.json_path:
        _write_json(request.json_path, report)
    trends = _history_trends(request.history_dir, report, context.suite, request.runner_class)
    plan = publication.model_check(request.model, report, render_section(report, trends), None)
    click.echo(json.dumps({"verdict": report.verdict.value, "check": plan.__dict__}, indent=2, ensure_ascii=False))


def relative(text: str, trees: Path) -> str:
    """A refusal names files relative to the uploaded trees, never by the runner's absolute path."""
    for root in sorted({str(trees.resolve()), str(trees.absolute()), str(trees)}, key=len, reverse=True):
        text = text.replace(root.rstrip("/") + "/", "").replace(root, ".")
    return text


def judge_uploaded(trees: Path, model: str, suite: Suite, *, baseline: Path | None, calibration: Path | None) -> Report:
    """The trusted judgement of one model by the one judge (gate.judging.judge): the candidate from the uploaded trees,
    the baseline from a trusted path (the baseline branch) or, in A/B mode, the uploaded base tree. Uploaded
    trees are read without their cache, and must hold exactly the runs the recomputed two-look plan asks for."""
    from gate.judging.judge import Design, Request
    from gate.judging.judge import judge as one_judge
    from gate.publish.untrusted import check_plan, check_tree_files
    from gate.reading.baseline_file import read_baseline

    if baseline is not None:
        read_baseline(baseline, suite, models=(model,))  # trusted: its errors are ours (exit 2), never a refusal
        check_tree_files(trees / "candidate")
        check_plan(trees / "candidate", suite, model)
        request = Request(base=baseline, candidate=trees / "candidate", suite=suite, models=(model,),
                          calibration=calibration, cache=False, design=Design.ONE_LOOK)
    else:  # A/B, both measured by the labelled job
        for side in (trees / "base", trees / "candidate"):
            check_tree_files(side)
        request = Request(base=trees / "base", candidate=trees / "candidate", suite=suite, models=(model,),
                          calibration=calibration, cache=False, design=Design.TWO_LOOKS,
                          check_side=lambda tree, expected: check_plan(tree, suite, model, expected))
    try:
        return one_judge(request)
    except UntrustedInputError:
        raise
    except GateError as exc:  # the reader's own one-line errors name the file already
        raise UntrustedInputError(str(exc)) from None


def render_section(report: Report, trends: dict | None = None) -> str:
    """The judged model's markdown section: the check summary rendering (no marker), within its budget;
    `trends` (gate.history.pr.row_trends) adds the nightly trend beside each non-passing row."""
    from gate.render import renderer as render  # imported here: Jinja is needed only when something is rendered

    return render.render_check_summary(report, budget=Limit(publication.SECTION_BUDGET, "characters"),
                                       **({"trends": trends} if trends else {}))


def _history_trends(history_dir: Path | None, report: Report, suite: Suite,
                    runner_class: str | None = None) -> dict | None:
    """The trusted store's trends for the PR comment (history helper, issue 25 item 7); None without --history."""
    if history_dir is None:
        return None
    from gate.history.pr import row_trends

    return row_trends(history_dir, report, suite, runner_class=runner_class)


def post_model(publisher: Publisher, suite: Suite, number: int, *, sha: str, model: str, report: Report | None,
               section: str, details_url: str | None, log: Log, refused: str | None = None,
               run: BenchmarkRun | None = None, authority: Authority = Authority(),  # noqa: B008 (frozen)
               judged_in: tuple[int, int] = (0, 0)) -> Outcome:
    """Bind to one label event, accept, then publish: model check, overall check, comment, labels.

    `report` is the trusted compare's; None with `refused` when the uploaded trees were refused. A post
    that cannot be bound publishes nothing but the overall check, which says why (Outcome.refused).
    `judged_in`: this report run and attempt, which order this judgement after the gate's earlier ones.
    """
    pull = publisher.pull_request(number)
    timeline = publisher.timeline(number)
    plan = (publication.refused_check(model, refused or "unreadable") if report is None
            else publication.model_check(model, report, section, None))
    if sha != pull.head_sha:
        return _post_stale(publisher, suite, pull, timeline, sha=sha, model=model, plan=plan,
                           details_url=details_url, log=log, run=run, authority=authority, judged_in=judged_in)
    own = _read_own(publisher, sha, authority)
    arrival, placed = head_arrival(sha, pull, timeline, publisher.head_runs(sha))
    log(placed)
    if arrival is None:
        return _refuse(publisher, sha, own, (), placed, details_url=details_url, log=log, run=run, authority=authority,
                       judged_in=judged_in)
    expected = labelled_models(pull, timeline, arrival, suite)
    binding = bind_label(pull=pull, timeline=timeline, arrival=arrival, model=model, suite=suite,
                         permission_of=publisher.permission, run=run, own=_replay_evidence(own),
                         check_name=publication.check_name(model),
                         claimed=None if own.configured else own.claimed)
    for line in binding.refusals:
        log(escape.plain(line, 300))
    log(escape.plain(binding.reason, 300))
    if not binding.ok or binding.event is None:
        return _refuse(publisher, sha, own, expected, binding.reason, details_url=details_url, log=log, run=run,
                       authority=authority, judged_in=judged_in)
    acceptance: Acceptance | None = None
    if report is not None and report.verdict is Verdict.FAIL:
        acceptance, refusals = find_acceptance(timeline, arrival=arrival, model=model, labels_now=pull.labels,
                                               permission_of=publisher.permission)
        for line in refusals:
            log(escape.plain(line, 300))
        if acceptance is not None:
            log(f"FAIL of {model} accepted by @{escape.plain(acceptance.by, 39)}")
            plan = publication.model_check(model, report, section, acceptance)
            section = publication.acceptance_note(acceptance, report.verdict) + section
    plan = publication.fitted(plan)  # the stamp signs exactly what the check run shows
    sequence = JudgementSeq(own.next_counter(plan.name), *judged_in)
    stamp = authority.sign(CheckStamp("model", model, run.key if run is not None else "local", binding.event.id or 0,
                                      sequence=sequence),
                           sha=sha, conclusion=plan.conclusion, title=plan.title, summary=plan.summary)
    _publish(publisher, suite, number, sha=sha, model=model, check=plan, stamp=stamp, section=section,
             label=binding.event.label, expected=expected, details_url=details_url, log=log, authority=authority)
    return Outcome(posted=True, acceptance=acceptance)


def _publish_overall(publisher: Publisher, authority: Authority, sha: str, plan: publication.CheckPlan, run: str,
                     event: int, *, own: OwnChecks, judged_in: tuple[int, int], details_url: str | None) -> CheckResult:
    """The overall check, stamped (and, with a key, tagged) so that the gate can tell it from any other check
    named like it and name those; its sequence continues the gate's own overall checks on `sha` (`own`), so an
    earlier one re-posted later is told from the newest."""
    plan = publication.fitted(publication.with_setup(plan, authority.setup))
    sequence = JudgementSeq(own.next_overall_counter(), *judged_in)
    stamp = authority.sign(CheckStamp("overall", "all", run, event, sequence=sequence), sha=sha,
                           conclusion=plan.conclusion, title=plan.title, summary=plan.summary)
    return publisher.publish_check(sha, name=plan.name, conclusion=plan.conclusion, status_state=plan.status_state,
                                   title=plan.title, summary=plan.summary, details_url=details_url,
                                   external_id=stamp.text())


def _refuse(publisher: Publisher, sha: str, own: OwnChecks, expected: tuple[str, ...], reason: str, *,
            details_url: str | None, log: Log, run: BenchmarkRun | None, authority: Authority,
            judged_in: tuple[int, int]) -> Outcome:
    """The post is not bound: the overall check stays what the gate's own checks say (or action required),
    and names the refusal in one escaped line."""
    if own.states:
        plan = publication.overall_check(own.states, sha=sha, expected=expected, foreign=own.foreign,
                                         notes=(f"refused: {reason}",), unproven=own.unproven,
                                         configured=own.configured, others=own.others, gate_app=authority.app)
    else:
        plan = publication.not_run_check(reason=f"refused: {reason}", required=True, foreign=own.foreign,
                                         unproven=own.unproven, configured=own.configured, others=own.others,
                                         gate_app=authority.app)
    result = _publish_overall(publisher, authority, sha, plan, run.key if run is not None else "local", 0,
                              own=own, judged_in=judged_in, details_url=details_url)
    log(f"{plan.name}: {result.conclusion} ({escape.plain(plan.title, 200)})")
    return Outcome(posted=False, refused=reason)


def _post_stale(publisher: Publisher, suite: Suite, pull: PullInfo, timeline: list, *, sha: str, model: str,
                plan: publication.CheckPlan, details_url: str | None, log: Log, run: BenchmarkRun | None,
                authority: Authority, judged_in: tuple[int, int]) -> Outcome:
    """The head moved after the run measured `sha`: the result goes on `sha` marked "not the PR head" (never
    counted), and the new head gets an action-required overall check unless the gate judged it already."""
    labelled = [e for e in timeline if e.event == "labeled" and e.label in suite.labels and model in suite.labels[e.label]
                and e.created_at is not None and (run is None or run.created_at is None or e.created_at <= run.created_at)
                and publisher.permission(e.actor or "") in WRITE_PERMISSIONS]
    reason = (f"stale: the run measured {sha[:12]}, but PR #{pull.number}'s head is now {pull.head_sha[:12]}; "
              "label again to measure the new head")
    log(reason)
    if labelled:
        stale = publication.stale_check(plan, pull.head_sha)
        stamp = CheckStamp("stale", model, run.key if run is not None else "local", labelled[-1].id or 0)
        result = publisher.publish_check(sha, name=stale.name, conclusion=stale.conclusion,
                                         status_state=stale.status_state, title=stale.title, summary=stale.summary,
                                         details_url=details_url, external_id=stamp.text())
        log(f"{stale.name} on {sha[:12]} (not the PR head): {result.conclusion}")
    else:
        log(f"no writer's gate label selecting {model} before the run started; nothing posted on {sha[:12]}")
    own = _read_own(publisher, pull.head_sha, authority)
    if not own.states:
        waiting = publication.not_run_check(reason=reason, required=True, foreign=own.foreign, unproven=own.unproven,
                                            configured=own.configured, others=own.others, gate_app=authority.app)
        _publish_overall(publisher, authority, pull.head_sha, waiting, run.key if run else "local", 0,
                         own=own, judged_in=judged_in, details_url=details_url)
        log(f"{waiting.name} on {pull.head_sha[:12]}: {waiting.conclusion}")
    return Outcome(posted=False, stale=True)


def _publish(publisher: Publisher, suite: Suite, number: int, *, sha: str, model: str, check: publication.CheckPlan,
             stamp: CheckStamp, section: str, label: str | None, expected: tuple[str, ...], details_url: str | None,
             log: Log, authority: Authority) -> None:
    """Model check, then the overall check, then the comment, then labels: a failed comment write leaves an
    overall check that already agrees with the model checks."""
    result = publisher.publish_check(sha, name=check.name, conclusion=check.conclusion, status_state=check.status_state,
                                     title=check.title, summary=check.summary, details_url=details_url,
                                     external_id=stamp.text())
    log(f"{check.name}: {result.kind.replace('_', ' ')} {result.conclusion}")

    def write_overall(own: OwnChecks) -> None:
        overall = publication.overall_check(own.states, sha=sha, expected=expected, foreign=own.foreign,
                                            unproven=own.unproven, configured=own.configured, others=own.others,
                                            gate_app=authority.app)
        done = _publish_overall(publisher, authority, sha, overall, stamp.run, stamp.event, own=own,
                                judged_in=(stamp.sequence.report_run, stamp.sequence.report_attempt),
                                details_url=details_url)
        log(f"{overall.name}: {done.conclusion}")

    own = _own(publisher, sha, check, stamp, authority)
    write_overall(own)
    for _ in range(_REBUILD_ATTEMPTS):  # again while another model's check changed meanwhile
        body = publication.sticky_body(own.states, sha=sha, model=model, section=section, expected=expected,
                                       foreign=own.foreign, unproven=own.unproven, configured=own.configured,
                                       others=own.others, gate_app=authority.app)
        comment = publisher.upsert_comment(number, body, marker=publication.STICKY_MARKER)
        log(f"comment {comment.action} on #{number}: {comment.url}")
        again = _own(publisher, sha, check, stamp, authority)
        if again == own:
            break
        own = again
        write_overall(own)
    if label is not None and label in suite.labels and _all_judged(own, suite.labels[label], stamp.event):
        removed = publisher.remove_label(number, label)
        log(f"label {label} {'removed' if removed else 'already gone'}")


def _all_judged(own: OwnChecks, models: tuple[str, ...], event: int) -> bool:
    """Every model the label selects has a check bound to this label event: the one-shot label is spent.
    Without a key or App the other models' checks cannot be proven; their stamps still count here, because
    removing a label can only make a later run refuse, never pass."""
    checks = {**own.claimed, **own.states} if not own.configured else own.states
    stamps = [CheckStamp.parse(checks[publication.check_name(m)].external_id) if publication.check_name(m) in checks
              else None for m in models]
    return all(s is not None and s.event == event for s in stamps)


def _read_own(publisher: Publisher, sha: str, authority: Authority) -> OwnChecks:
    """The gate's own model and overall checks on `sha`, from every check run on it (filter=all), proven by
    `authority`; with the commit statuses under its names, which never count and are named."""
    return own_checks(publisher.check_runs(sha, prefix=publication.CHECK_PREFIX), prefix=publication.MODEL_PREFIX,
                      sha=sha, authority=authority, overall=publication.CHECK_PREFIX,
                      statuses=publisher.commit_statuses(sha, prefix=publication.CHECK_PREFIX))


def _replay_evidence(own: OwnChecks) -> dict[str, CheckState]:
    """The judgements a replay is checked against: the proven ones only. Without a key or App nothing earlier is
    proven, so a planted stamp naming the real label event cannot make the honest post refuse itself; the
    one-shot label, removed once judged, is what refuses a second run of it then."""
    return dict(own.states)


def _own(publisher: Publisher, sha: str, check: publication.CheckPlan, stamp: CheckStamp, authority: Authority) -> OwnChecks:
    own = _read_own(publisher, sha, authority)
    listed = own.states.get(check.name)
    listed_stamp = CheckStamp.parse(listed.external_id) if listed is not None else None
    # Not read back (no key or App, check runs refused, or a listing that lags): this run's judgement, known here,
    # counts unless a proven later one (by label event and run) is listed.
    if listed_stamp is None or listed_stamp.order < stamp.order:
        own = own.with_judgement(CheckState(check.name, check.conclusion, check.title, "", 0, stamp.text(),
                                            authority.app))
    return own


def post_not_run(publisher: Publisher, suite: Suite, number: int, *, sha: str, required_paths: tuple[str, ...],
                 details_url: str | None, log: Log, authority: Authority = Authority(),  # noqa: B008 (frozen)
                 judged_in: tuple[int, int] = (0, 0)) -> None:
    """The required-check policy for a commit the benchmark run did not measure (docs: required-check policy).
    Only the gate's own check runs count; a head that moved on gets nothing from this run."""
    pull = publisher.pull_request(number)
    if pull.head_sha != sha:
        log(f"the run was for {sha[:12]}, the head is now {pull.head_sha[:12]}; its own run sets its check")
        return
    own = _read_own(publisher, sha, authority)
    timeline = publisher.timeline(number)
    arrival, _ = head_arrival(sha, pull, timeline, publisher.head_runs(sha))
    expected = labelled_models(pull, timeline, arrival, suite)
    if own.states:  # this commit was judged by an earlier run: keep the overall check as the models say
        plan = publication.overall_check(own.states, sha=sha, expected=expected, foreign=own.foreign,
                                         unproven=own.unproven, configured=own.configured, others=own.others,
                                         gate_app=authority.app)
    elif own.unproven:  # judged, as far as anyone can tell, but not provably by the gate: never a pass
        names = ", ".join(publication.model_of(name) for name in own.unproven)
        why = ("no stamp key or dedicated App is configured to authenticate it" if not own.configured
               else "its stamp does not authenticate")
        plan = publication.not_run_check(reason=f"not authenticated: a judgement of {names} on {sha[:12]} cannot be "
                                                f"counted: {why}; add a gate label to judge it in this run",
                                         required=True, foreign=own.foreign, unproven=own.unproven,
                                         configured=own.configured, others=own.others,
                                         gate_app=authority.app)
    elif expected:  # labelled, but no results arrived (still running, or the run uploaded none)
        plan = publication.not_run_check(
            reason=f"labelled for {', '.join(expected)} on {sha[:12]}, but no result yet", required=True,
            foreign=own.foreign, others=own.others, gate_app=authority.app)
    elif publisher.find_sticky(number, publication.STICKY_MARKER) is not None:
        plan = publication.not_run_check(
            reason=f"stale: the gate ran on an earlier head of this PR, not on {sha[:12]}; add a gate label again",
            required=True, foreign=own.foreign, others=own.others, gate_app=authority.app)
    else:
        touched = _touched(publisher, number, required_paths)
        reason = (f"not run: this PR changes ASR code ({touched}); add a gate label (run-*-asr)" if touched
                  else "not run: no gate label on this PR")
        plan = publication.not_run_check(reason=reason, required=bool(touched), foreign=own.foreign, others=own.others, gate_app=authority.app)
    result = _publish_overall(publisher, authority, sha, plan, "not-run", 0, own=own, judged_in=judged_in,
                              details_url=details_url)
    log(f"{plan.name}: {result.conclusion} ({escape.plain(plan.title, 200)})")


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
