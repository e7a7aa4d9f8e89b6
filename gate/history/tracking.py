"""One GitHub issue per change point on main: opened when first reported, updated (never duplicated) after.

The issue is found again by a hidden marker naming the change point (workload, metric, first night),
among the bot's issues in any state: a change point a maintainer closed stays closed.
Markdown built here contains only trusted values (numbers, commit hashes, suite names).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from gate import escape
from gate.github import COMMENT_MAX_CHARS, Publisher, api_call, fit_chars
from gate.history.analysis import ChangePoint

MARKER = "<!-- asr-gate-changepoint: {key} -->"


@dataclass(frozen=True)
class Filed:
    key: str
    action: str  # opened, updated, unchanged, closed-by-maintainer
    number: int | None


def format_change(cp: ChangePoint) -> str:
    if cp.log:
        return f"{cp.change:+.1%} (95% CI {cp.ci[0]:+.1%} to {cp.ci[1]:+.1%})"
    return f"{cp.change * 100:+.2f} pp (95% CI {cp.ci[0] * 100:+.2f} to {cp.ci[1] * 100:+.2f} pp)"


def format_level(value: float, cp: ChangePoint) -> str:
    return f"{value * 100:.2f}%" if cp.unit == "fraction" else f"{value:.4g} {cp.unit}"


def issue_title(cp: ChangePoint) -> str:
    what = "regression" if cp.worse else "improvement"
    return f"ASR {what} on main: {cp.workload} {cp.metric} {format_change(cp).split(' (')[0]} since {cp.night[:10]}"


_HEX = re.compile(r"[0-9a-f]{7,40}")


def issue_body(cp: ChangePoint, *, repository: str | None, server_url: str, chart_url: str | None,
               run_url: str | None) -> str:
    def commit(sha: str | None) -> str:
        if not sha:
            return "unknown"
        if not _HEX.fullmatch(sha):  # the history's commit is data: anything but a hash is shown escaped, unlinked
            return escape.md(sha, 60)
        return f"[`{sha[:10]}`]({server_url}/{repository}/commit/{sha})" if repository else f"`{sha[:10]}`"

    compare = ""
    if repository and cp.previous_commit and cp.commit and _HEX.fullmatch(cp.previous_commit) and _HEX.fullmatch(cp.commit):
        compare = f" ([diff]({server_url}/{repository}/compare/{cp.previous_commit}...{cp.commit}))"
    lines = [
        f"## {'📉' if cp.worse else '📈'} Change point on main: {escape.md(cp.workload, 80)} · {escape.md(cp.metric, 60)}",
        "",
        "| | |",
        "|---|---|",
        f"| Change | **{format_change(cp)}** ({'worse' if cp.worse else 'better'}) |",
        f"| Level | {format_level(cp.before, cp)} → {format_level(cp.after, cp)} |",
        f"| First night on the new level | {escape.md(cp.night, 40)} |",
        f"| Commit range | {commit(cp.previous_commit)} (last night before) … {commit(cp.commit)} (first night after){compare} |",
        f"| Reported | {escape.md(cp.reported, 40)} (p = {cp.p_value:.1g}) |",
        "",
    ]
    if chart_url:
        lines += [f"![{cp.workload} {cp.metric} over the nights]({chart_url})", "", f"[Chart]({chart_url})", ""]
    if run_url:
        lines += [f"Detected by [this nightly run]({run_url}).", ""]
    lines += ["E-divisive means places the step, a winsorized Student t test decides it (`gate history`, README "
              "\"History and charts\"). Close this issue once the change is understood; it is not reopened.", ""]
    return "\n".join(lines)


def file_change_points(publisher: Publisher, change_points: Sequence[ChangePoint], *, server_url: str,
                       chart_urls: dict[str, str] | None = None, run_url: str | None = None) -> list[Filed]:
    """Open or update one issue per change point."""
    if not change_points:
        return []
    with api_call("listing the bot's issues"):
        existing = [i for i in publisher.repo.get_issues(state="all", creator=publisher.bot_login)  # type: ignore[arg-type]
                    if i.pull_request is None]
    filed = []
    for cp in change_points:
        marker = MARKER.format(key=cp.key)
        body = fit_chars(issue_body(cp, repository=publisher.repository, server_url=server_url,
                                    chart_url=(chart_urls or {}).get(cp.key), run_url=run_url),
                         COMMENT_MAX_CHARS - len(marker) - 1) + "\n" + marker
        issue = next((i for i in existing if marker in (i.body or "")), None)
        if issue is None:
            with api_call(f"opening the issue for {cp.key}"):
                created = publisher.repo.create_issue(title=issue_title(cp)[:250], body=body)
            filed.append(Filed(cp.key, "opened", created.number))
        elif issue.state == "closed":
            filed.append(Filed(cp.key, "closed-by-maintainer", issue.number))
        elif issue.body == body:
            filed.append(Filed(cp.key, "unchanged", issue.number))
        else:
            with api_call(f"updating issue #{issue.number} for {cp.key}"):
                issue.edit(title=issue_title(cp)[:250], body=body)
            filed.append(Filed(cp.key, "updated", issue.number))
    return filed
