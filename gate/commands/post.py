"""`gate post`: publish a report on GitHub: sticky PR comment, check run (or status), one-shot label removal.

Run in the trusted workflow (workflow_run), never in the job that executed PR code. The report is
read as untrusted data and re-rendered; the commit comes from the trusted event, and a PR number
taken from the artifact is only used after GitHub confirms that PR's head is the run's head.
Exit codes: 0 published (whatever the verdict: the check run carries it); 2 bad input or an API error.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass

import click

from gate import render
from gate.actions_io import normalise_verdict
from gate.config import load_suite
from gate.errors import InputError
from gate.event import Trigger, read_trigger
from gate.github import Publisher, connect, default_retry
from gate.settings import Settings
from gate.report import Report
from gate.verdict import Verdict
from gate.untrusted import Rendered, load_untrusted_meta, load_untrusted_report, render_report

DEFAULT_CHECK_NAME = "ASR regression gate"
_TRACKING_TITLE = "ASR regression on main"
NO_REPORT_TITLE = "ERROR: the benchmark run ended without a report"


@dataclass(frozen=True)
class Plan:
    """Everything `gate post` would send; printed as JSON by --dry-run."""

    verdict: str
    pr: int | None  # the PR the comment goes to and labels come off
    comment: bool
    sha: str | None
    labels: tuple[str, ...]
    check_name: str
    check_title: str
    details_url: str | None
    rendered: Rendered
    tracking_issue: bool

    @property
    def check_summary(self) -> str:
        """The comment without its marker: already folded to fit, unlike the full job summary."""
        return self.rendered.comment.replace(self.rendered.marker, "", 1).lstrip("\n")

    def as_json(self) -> dict:
        return {
            "verdict": self.verdict,
            "comment": None if self.pr is None or not self.comment else {"pr": self.pr, "marker": self.rendered.marker, "body": self.rendered.comment},
            "check": None if self.sha is None else {"name": self.check_name, "head_sha": self.sha, "title": self.check_title,
                                                    "details_url": self.details_url, "summary": self.check_summary},
            "remove_labels": list(self.labels),
            "tracking_issue": self.tracking_issue,
        }


@click.command("post")
@click.option("--report", "report_path", type=click.Path(dir_okay=False), help="report.json (untrusted).")
@click.option("--no-report", is_flag=True,
              help="The benchmark run left no report: say so (neutral check, short comment) and remove the label.")
@click.option("--meta", "meta_path", type=click.Path(dir_okay=False), help="run metadata written by `gate event --write-meta`.")
@click.option("--pr", type=int, help="PR number (default: from the workflow_run event, else from --meta).")
@click.option("--sha", help="Commit for the check run (default: the workflow_run head, else GITHUB_SHA).")
@click.option("--label", "labels", multiple=True, help="One-shot label to remove after posting (repeatable).")
@click.option("--check-name", default=DEFAULT_CHECK_NAME, show_default=True)
@click.option("--details-url", help="Link for the check run (default: the benchmark's workflow run).")
@click.option("--no-comment", is_flag=True, help="Do not post the PR comment.")
@click.option("--no-check", is_flag=True, help="Do not create a check run or status.")
@click.option("--no-status-fallback", is_flag=True, help="Fail instead of setting a commit status when check runs are refused.")
@click.option("--tracking-issue", is_flag=True, help="Nightly: open/update one issue while main regresses, close it on recovery.")
@click.option("--suite", "suite_path", type=click.Path(dir_okay=False), help="Suite YAML (default: the bundled asr suite).")
@click.option("--dry-run", is_flag=True, help="Print what would be sent, as JSON; contact nothing.")
def command(report_path, no_report, meta_path, pr, sha, labels, check_name, details_url, no_comment, no_check,
            no_status_fallback, tracking_issue, suite_path, dry_run) -> None:
    """Post REPORT as one sticky comment, a check run on the head commit, and remove the one-shot label."""
    settings = Settings.from_environ(os.environ)
    suite = load_suite(suite_path)
    if bool(report_path) == bool(no_report):
        raise InputError("give exactly one of --report FILE or --no-report")
    report = load_untrusted_report(report_path) if report_path else None
    meta = load_untrusted_meta(meta_path) if meta_path else None
    trigger = None
    if settings.event_name == "workflow_run" and settings.event_path:
        trigger = read_trigger("workflow_run", settings.event_path, suite=suite)

    pr_from_artifact = pr is None and (trigger is None or trigger.pr is None) and meta is not None and meta["pr"] is not None
    pr = pr if pr is not None else (trigger.pr if trigger and trigger.pr else (meta or {}).get("pr"))
    sha = sha or (trigger.sha if trigger else None) or settings.sha
    if meta is not None and trigger is not None and meta["sha"] != trigger.sha:
        raise InputError(f"run metadata is for commit {meta['sha'][:12]}, but the benchmark run measured "
                         f"{trigger.sha[:12]}; refusing to post", path=meta_path)
    chosen_labels = tuple(labels) or tuple((meta or {}).get("labels", ()))
    unknown = [label for label in chosen_labels if label not in suite.labels]
    if unknown:  # the artifact may only ask to remove the gate's own labels
        raise InputError(f"label {unknown[0]!r} is not a gate label of suite {suite.name!r}", path=meta_path or "--label")
    if details_url is None and trigger is not None and trigger.run_id is not None and settings.repository:
        details_url = f"{settings.server_url}/{settings.repository}/actions/runs/{trigger.run_id}"
    details_url = details_url or settings.run_url

    plan = Plan(
        verdict=report.verdict.value if report else "error",
        pr=pr,
        comment=not (no_comment or tracking_issue),
        sha=None if no_check else sha,
        labels=chosen_labels if pr is not None else (),
        check_name=check_name,
        check_title=check_title(report) if report else NO_REPORT_TITLE,
        details_url=details_url,
        rendered=render_report(report) if report else no_report_rendered(suite.name, details_url),
        tracking_issue=tracking_issue,
    )
    if dry_run:
        click.echo(json.dumps(plan.as_json(), indent=2))
        return

    publisher = Publisher(
        connect(api_url=settings.api_url, token=settings.require("token"), retry=default_retry()),
        settings.require("repository"),
        bot_login=settings.bot_login,
    )
    if pr is not None and pr_from_artifact:
        _verify_pr_binding(publisher, pr, trigger)
    publish(publisher, plan, fallback_to_status=not no_status_fallback)


def publish(publisher: Publisher, plan: Plan, *, fallback_to_status: bool = True) -> None:
    """Send the plan; one line per thing done."""
    if plan.pr is not None and plan.comment:
        result = publisher.upsert_comment(plan.pr, plan.rendered.comment, marker=plan.rendered.marker)
        click.echo(f"comment {result.action} on #{plan.pr}: {result.url}")
    if plan.sha is not None:
        check = publisher.publish_check(plan.sha, name=plan.check_name, verdict=plan.verdict, title=plan.check_title,
                                        summary=plan.check_summary, details_url=plan.details_url,
                                        fallback_to_status=fallback_to_status)
        click.echo(f"{check.kind.replace('_', ' ')} {check.conclusion} on {plan.sha[:12]}")
    for label in plan.labels if plan.pr is not None else ():
        removed = publisher.remove_label(plan.pr, label)
        click.echo(f"label {label} {'removed' if removed else 'already gone'}")
    if plan.tracking_issue:
        regressed = plan.verdict != "error" and Verdict(plan.verdict).blocks
        note = (f"Nightly verdict **{plan.verdict.upper()}** at {plan.sha or 'unknown commit'}"
                + (f" ([run]({plan.details_url}))" if plan.details_url else "") + ".")
        action = publisher.upsert_tracking_issue(title=_TRACKING_TITLE, body=plan.check_summary,
                                                 marker=plan.rendered.marker.replace("-->", "nightly -->"),
                                                 regressed=regressed, note=note)
        click.echo(f"tracking issue: {action}")


def _verify_pr_binding(publisher: Publisher, pr: int, trigger: Trigger | None) -> None:
    """A PR number from the artifact is believed only if GitHub says that PR's head is the run's head."""
    if trigger is None:
        return  # explicit --meta outside workflow_run: the caller vouches for it
    _, head_repo, head_ref = publisher.pull_request_head(pr)  # the branch, not the SHA: it may have moved on
    same_head = head_repo == trigger.head_repository and head_ref == trigger.head_branch
    if not same_head:
        raise InputError(f"run metadata names PR #{pr}, whose head ({head_repo}:{head_ref}) is not the benchmark run's "
                         f"head ({trigger.head_repository}:{trigger.head_branch}); refusing to post")


def no_report_rendered(suite_name: str, run_url: str | None) -> Rendered:
    """What the PR sees when the benchmark run ended without a report; only trusted text in it."""
    marker = render.marker(suite_name)
    run = f"[The benchmark run]({run_url})" if run_url else "The benchmark run"
    body = (f"## ⚠️ ASR regression gate: no result\n\n{run} ended without a report: it failed or was cancelled "
            "before the comparison. Its log says why. Add the label again to retry.\n")
    return Rendered(comment=f"{marker}\n{body}", summary=body, marker=marker)


def check_title(report: Report) -> str:
    """'FAIL: 2 fail, 1 warn of 30 rows (qwen3, whisper)': the line GitHub shows next to the check."""
    counts = report.counts
    shown = [f"{n} {v.word.lower()}" for v, n in counts.items() if n and not v.is_pass]
    total = sum(counts.values())
    names = [re.sub(r"[^A-Za-z0-9_]", "", str(m))[:40] for m in report.models[:10]]
    scope = f" ({', '.join(names)})" if names else ""
    detail = ", ".join(shown) + f" of {total} rows" if shown else f"{total} rows"
    return f"{report.verdict.word.upper()}: {detail}{scope}"[:250]
