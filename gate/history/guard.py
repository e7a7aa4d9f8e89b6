"""The drift guard: may tonight become the baseline?

A baseline that follows main night by night walks onto a regression: tonight's compare against
yesterday's baseline sees only tonight's share of a slow drift, and a step PASSes once the baseline has
moved to it. So before the nightly moves the baseline, tonight is also judged against main's own recent
level, and against the steps the history has recorded:

- level: for each gated metric, tonight's value against the median of the last LEVEL_NIGHTS nightly
  records since the last change point; worse by more than max(the gate's floor, the nights' ±2σ band) blocks;
- steps: a stored change point on a gated metric, in the worse direction, blocks until a maintainer
  accepts it, by the rule a PR's FAIL is accepted (gate.publish.trust.find_acceptance): on the step's tracking
  issue, a comment whose first line is `/asr-gate accept <model|all> <reason>` or the label
  `asr-gate-accept`, by a user with write access, withdrawn when the comment is deleted or the label
  removed. A record of kind "accepted" for that workload from the step's night on counts too
  (`gate history import --kind accepted TREE`).

Nothing here writes. `gate store baselines --tonight` runs the guard against the baseline branch's own
history before it moves a stored baseline (gate.publish.branch), and refuses while it holds.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

from gate.formats.acceptance import Acceptance
from gate.formats.config import Suite
from gate.history.analysis import Trend, trends
from gate.history.records import ChangePoint, Record
from gate.history.steps import format_change
from gate.history.store import History, mean_of_runs
from gate.history.svg import display_value, floor_of

LEVEL_NIGHTS = 14
# A worse step on a gated metric with this many nights on its new level is confirmed: main's nightly check FAILs
# until it is accepted or reverted (issue 39). One or two nights could still be a slow job; three are a level.
CONFIRM_NIGHTS = 3
IssueAcceptance = Callable[[ChangePoint], "Acceptance | None"]  # the step's tracking issue, read through the API


@dataclass(frozen=True)
class Finding:
    workload: str
    metric: str
    kind: str  # "level" or "step"
    text: str  # one line, for the log and the tracking issue

    def to_json(self) -> dict:
        return {"workload": self.workload, "metric": self.metric, "kind": self.kind, "text": self.text}


def accepted(cp: ChangePoint, history: History) -> bool:
    return any(r.kind == "accepted" and r.workload == cp.workload and r.time >= cp.night for r in history.records)


def level_finding(t: Trend, tonight: Record, suite: Suite, nights: int = LEVEL_NIGHTS) -> Finding | None:
    """Tonight's value against the last `nights` nights of main (tonight's own record excluded)."""
    floor, relative = floor_of(t, suite)
    value = mean_of_runs(tonight.values.get(t.metric.name, ()), log=relative)
    since = max((cp.night for cp in t.change_points), default="")  # the level since the last step
    before = [n.value for n in t.nights if n.value is not None and since <= n.time < tonight.time][-nights:]
    if value is None or len(before) < 3 or (relative and (value <= 0 or min(before) <= 0)):
        return None
    level = sorted(before)[len(before) // 2]
    xs = [math.log(v) for v in before] if relative else before
    mean = sum(xs) / len(xs)
    band = 2 * math.sqrt(sum((x - mean) ** 2 for x in xs) / (len(xs) - 1))
    change = value / level - 1 if relative else value - level
    limit = max(floor, math.expm1(band) if relative else band)
    worse = change > 0 if t.metric.direction == "lower" else change < 0
    if not worse or abs(change) <= limit:
        return None
    amount = f"{change:+.1%}" if relative else f"{change * 100:+.2f} pp"
    bound = f"±{limit:.1%}" if relative else f"±{limit * 100:.2f} pp"
    return Finding(t.workload, t.metric.name, "level",
                   f"{t.workload} {t.metric.name}: tonight {display_value(value, t.metric.unit)} is {amount} against "
                   f"the last {len(before)} nights' level {display_value(level, t.metric.unit)} (beyond {bound})")


def guard(history: History, tonight: Sequence[Record], suite: Suite, *, runner_class: str | None = None,
          nights: int = LEVEL_NIGHTS, models: Sequence[str] | None = None,
          on_issue: IssueAcceptance | None = None, log: Callable[[str], None] = lambda _: None) -> list[Finding]:
    """Why tonight must not become the baseline (empty: it may). `models`: only their workloads;
    `on_issue`: a maintainer's acceptance on a step's tracking issue (None: only "accepted" records count)."""
    found = []
    by_workload = {r.workload: r for r in tonight}
    for t in trends(history, suite, runner_class=runner_class):
        if not t.metric.gated or (models is not None and suite.workload(t.workload).model not in models):
            continue
        if t.workload in by_workload:
            level = level_finding(t, by_workload[t.workload], suite, nights)
            if level is not None:
                found.append(level)
        for cp in t.change_points:
            if not cp.worse or accepted(cp, history):
                continue
            on = on_issue(cp) if on_issue is not None and cp.issue is not None else None
            step = f"{cp.workload} {cp.metric}: step {format_change(cp).split(' (')[0]} from {cp.night[:10]}"
            if on is not None:
                log(f"{step} accepted by @{on.by} on #{cp.issue} ({on.at}): {on.reason}")
                continue
            where = f" (#{cp.issue})" if cp.issue else " (its tracking issue is not filed yet)"
            found.append(Finding(cp.workload, cp.metric, "step", f"{step}{where} not accepted"))
    return found


@dataclass(frozen=True)
class Confirmed:
    """A worse step on a gated metric, on its new level for `nights` nights, not accepted."""

    step: ChangePoint
    nights: int


def confirmed_steps(history: History, points: Sequence[ChangePoint], *, runner_class: str | None = None,
                    on_issue: IssueAcceptance | None = None, min_nights: int = CONFIRM_NIGHTS) -> list[Confirmed]:
    """The stored change points that make main's nightly check FAIL: worse, gated, not accepted (an "accepted"
    record, or a maintainer on the tracking issue), and measured for `min_nights` nights or more since the step
    (a later night back on the old level is a revert: the step is no longer main's level)."""
    out = []
    for cp in points:
        if not cp.worse or not cp.gated or accepted(cp, history):
            continue
        nights = sorted((r for r in history.select(workload=cp.workload, runner_class=runner_class)
                         if r.time >= cp.night), key=lambda r: r.time)
        if len(nights) < min_nights or _reverted(cp, nights):
            continue
        if on_issue is not None and cp.issue is not None and on_issue(cp) is not None:
            continue  # accepted on its tracking issue (read last: it costs API calls)
        out.append(Confirmed(cp, len(nights)))
    return out


def _reverted(cp: ChangePoint, nights: Sequence[Record]) -> bool:
    """The last night is back nearer the old level than the new one."""
    value = mean_of_runs(nights[-1].values.get(cp.metric, ()), log=cp.log)
    if value is None:
        return False
    if cp.log:
        if value <= 0 or cp.before <= 0 or cp.after <= 0:
            return False
        return abs(math.log(value / cp.before)) < abs(math.log(value / cp.after))
    return abs(value - cp.before) < abs(value - cp.after)
