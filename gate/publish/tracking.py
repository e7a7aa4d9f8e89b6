"""One GitHub issue per step on main and workload, listing every metric that moved with it.

A step usually moves several metrics of one workload at once (a throughput step moves mean latency,
p95 and RTF too): their change points within SAME_STEP_DAYS of each other are one step, one issue.
Only a step that moved a gated metric opens an issue (mean latency and RTF are shown, never gated);
the issue lists the gated metrics first, then the others.

The issue is found again by a hidden marker naming the step (workload and first night), among the
bot's issues in any state: a step a maintainer closed stays closed. Its number is stored with the
change points (gate.history.changes), so a step whose issue could not be filed one night (a GitHub
error) is filed the next night, and a filed one costs no API call. Markdown built here contains only
trusted values (numbers, commit hashes, suite names).
"""
from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass
from typing import Callable, Sequence

from gate.formats import github_limits
from gate.formats.acceptance import Acceptance
from gate.formats.config import Suite
from gate.history.guard import CONFIRM_NIGHTS, Confirmed
from gate.history.records import ChangePoint
from gate.history.steps import format_change, format_level, group_steps
from gate.publish.github import Publisher, api_call
from gate.publish.trust import ACCEPT_LABEL, find_acceptance
from gate.render import escape

MARKER = "<!-- asr-gate-step: {key} -->"


@dataclass(frozen=True)
class Filed:
    key: str
    action: str  # opened, updated, unchanged, closed-by-maintainer
    number: int | None


_HEX = re.compile(r"[0-9a-f]{7,40}")


def step_key(step: Sequence[ChangePoint]) -> str:
    first = min(cp.night for cp in step)
    return f"{step[0].workload}:{first[:10]}"


def issue_title(step: Sequence[ChangePoint]) -> str:
    lead = step[0]
    what = "regression" if lead.worse else "improvement"
    moved = ", ".join(f"{escape.plain(cp.metric, 60)} {format_change(cp).split(' (')[0]}" for cp in step if cp.gated)
    since = escape.plain(min(cp.night for cp in step)[:10])
    return f"ASR {what} on main: {escape.plain(lead.workload, 80)} {moved} since {since}"  # a title is plain text


def issue_body(step: Sequence[ChangePoint], *, repository: str | None, server_url: str, chart_url: str | None,
               run_url: str | None) -> str:
    def commit(sha: str | None) -> str:
        if not sha:
            return "unknown"
        if not _HEX.fullmatch(sha):  # the history's commit is data: anything but a hash is shown escaped, unlinked
            return escape.md(sha, 60)
        return f"[`{sha[:10]}`]({server_url}/{repository}/commit/{sha})" if repository else f"`{sha[:10]}`"

    lead = step[0]
    compare = ""
    if repository and lead.previous_commit and lead.commit and _HEX.fullmatch(lead.previous_commit) \
            and _HEX.fullmatch(lead.commit):
        compare = f" ([diff]({server_url}/{repository}/compare/{lead.previous_commit}...{lead.commit}))"
    lines = [
        f"## {'📉' if lead.worse else '📈'} Step on main: {escape.md(lead.workload, 80)}, from {escape.md(lead.night[:10], 20)}",
        "",
        f"Commit range: {commit(lead.previous_commit)} (last night on the old level) … {commit(lead.commit)} "
        f"(first night on the new level){compare}",
        "",
        "| Metric | Change (95% CI) | Level before → after | First night | p |",
        "|---|---|---|---|---|",
    ]
    for cp in step:
        role = "gated" if cp.gated else "shown, not gated"
        lines.append(f"| {escape.md(cp.metric, 60)} ({role}) | **{format_change(cp)}** {'worse' if cp.worse else 'better'} | "
                     f"{format_level(cp.before, cp)} → {format_level(cp.after, cp)} | "
                     f"{escape.md(cp.night[:16].replace('T', ' '), 20)} "
                     f"UTC | {cp.p_value:.1g} |")
    lines.append("")
    if chart_url:
        lines += [f"[Charts of {escape.md(lead.workload, 80)} on the dashboard]({chart_url})", ""]
    if run_url:
        lines += [f"Detected by [this nightly run]({run_url}).", ""]
    if lead.worse and any(cp.gated for cp in step):
        model = escape.md(lead.workload.split("/")[0], 40)
        lines += [f"**This step holds the nightly baseline of {model}** (the drift guard): the stored baseline stays at "
                  "the level before the step, and every night's `update-baseline` job says so, until a maintainer "
                  "accepts the step here, by the rule a PR's FAIL is accepted: a comment whose first line is "
                  f"`/asr-gate accept <model> <reason>` (model: {model}, or `all`), or the label `{ACCEPT_LABEL}`, "
                  "by a user with write access. Deleting that comment or removing the label withdraws the "
                  "acceptance.", ""]
    if lead.worse and any(cp.gated for cp in step):
        lines += [f"**Main's nightly check FAILs** once the step has held for {CONFIRM_NIGHTS} nights, and stays red "
                  "until the step is accepted here or reverted on main (a night back on the old level). Closing this "
                  "issue without accepting changes neither: the baseline stays held at the level before the step, "
                  "and a PR judged against it is told that the step is main's, not the PR's.", ""]
    lines += ["E-divisive means places the step, a winsorized Student t test decides it (`gate history`; docs/reference.md, "
              "\"History and charts\"). Close this issue once the change is understood; it is not reopened.", ""]
    return "\n".join(lines)


def to_file(points: Sequence[ChangePoint]) -> list[tuple[ChangePoint, ...]]:
    """Steps that need an issue: one of their metrics is gated and one of their change points has none yet."""
    return [s for s in group_steps(points) if any(cp.gated for cp in s) and any(cp.issue is None for cp in s)]


def file_steps(publisher: Publisher, points: Sequence[ChangePoint], *, server_url: str,
               chart_urls: dict[str, str] | None = None, run_url: str | None = None
               ) -> tuple[list[Filed], dict[str, int]]:
    """Open or update one issue per step that needs one; returns what was done and change-point key ->
    issue number (to be stored with the change points)."""
    steps = to_file(points)
    if not steps:
        return [], {}
    with api_call("listing the bot's issues"):
        existing = [i for i in publisher.repo.get_issues(state="all", creator=publisher.bot_login)  # type: ignore[arg-type]
                    if i.pull_request is None]
    filed, numbers = [], {}
    for step in steps:
        key = step_key(step)
        marker = MARKER.format(key=key)
        body = github_limits.with_marker(issue_body(step, repository=publisher.repository, server_url=server_url,
                                                    chart_url=(chart_urls or {}).get(key), run_url=run_url), marker)
        known = next((cp.issue for cp in step if cp.issue is not None), None)
        issue = next((i for i in existing if (known is not None and i.number == known)
                      or marker in (i.body or "")), None)
        if issue is None:
            with api_call(f"opening the issue for {key}"):
                created = publisher.repo.create_issue(title=issue_title(step)[:250], body=body)
            filed.append(Filed(key, "opened", created.number))
        elif issue.state == "closed":
            filed.append(Filed(key, "closed-by-maintainer", issue.number))
        elif issue.body == body:
            filed.append(Filed(key, "unchanged", issue.number))
        else:
            with api_call(f"updating issue #{issue.number} for {key}"):
                issue.edit(title=issue_title(step)[:250], body=body)
            filed.append(Filed(key, "updated", issue.number))
        numbers.update({cp.key: filed[-1].number for cp in step if filed[-1].number is not None})
    return filed, numbers


def step_acceptance(publisher: Publisher, suite: Suite, log: Callable[[str], None]
                    ) -> Callable[[ChangePoint], Acceptance | None]:
    """A maintainer's acceptance of a step, read from its tracking issue (gate.publish.trust.find_acceptance: a writer's
    `/asr-gate accept <model|all> <reason>` first line, or the accept label while it is on the issue). Any comment
    on the issue is after the step was found, so every entry of its timeline counts."""
    seen: dict[tuple[int, str], Acceptance | None] = {}
    since = _dt.datetime.min.replace(tzinfo=_dt.timezone.utc)

    def read(cp: ChangePoint) -> Acceptance | None:
        assert cp.issue is not None
        model = suite.workload(cp.workload).model
        if (cp.issue, model) not in seen:
            timeline = publisher.timeline(cp.issue)
            with api_call(f"reading the labels of issue #{cp.issue}"):
                labels = [label.name for label in publisher.repo.get_issue(cp.issue).labels]
            found, refused = find_acceptance(timeline, arrival=since, model=model, labels_now=labels,
                                             permission_of=publisher.permission)
            for line in refused:
                log(f"issue #{cp.issue}: {line}")
            seen[(cp.issue, model)] = found
        return seen[(cp.issue, model)]

    return read


def step_check(confirmed: Sequence[Confirmed], *, repository: str | None, server_url: str) -> tuple[str, str]:
    """The title and summary of main's nightly check while confirmed steps are not accepted: which step, since when,
    its issue, how to accept it and what to revert (gate.history.guard.confirmed_steps)."""
    lead = confirmed[0].step
    first = f"{escape.plain(lead.workload, 80)} {escape.plain(lead.metric, 60)} {format_change(lead).split(' (')[0]}"
    more = f" (+{len(confirmed) - 1} more)" if len(confirmed) > 1 else ""
    title = f"main regressed: {first} since {escape.plain(lead.night[:10])}, {confirmed[0].nights} nights{more}"
    lines = ["## ❌ A step on main is confirmed and not accepted", ""]
    for c in confirmed:
        cp = c.step
        model = escape.md(cp.workload.split("/")[0], 40)
        issue = f"#{cp.issue}" if cp.issue else "its tracking issue (filed tonight or next night)"
        revert = ""
        if cp.previous_commit and cp.commit and _HEX.fullmatch(cp.previous_commit) and _HEX.fullmatch(cp.commit):
            revert = (f" The commits that made it are in `{cp.previous_commit[:10]}..{cp.commit[:10]}`"
                      + (f" ([diff]({server_url}/{repository}/compare/{cp.previous_commit}...{cp.commit}))"
                         if repository else "") + ".")
        lines += [f"- **{escape.md(cp.workload, 80)} {escape.md(cp.metric, 60)} {format_change(cp)}** worse, from "
                  f"{escape.md(cp.night[:10], 20)}, held {c.nights} nights. Accept it on {issue}: a comment whose "
                  f"first line is `/asr-gate accept {model} <reason>` (a user with write access), or the label "
                  f"`{ACCEPT_LABEL}`; the baseline then moves to the new level. Or revert it on main: this check "
                  f"clears on the first night back on the old level.{revert}"]
    lines += ["", "Closing the issue without accepting keeps the baseline held at the old level and this check red."]
    return title, "\n".join(lines)
