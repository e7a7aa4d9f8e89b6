"""The trend a PR comment shows beside each row that is not a pass: where the candidate lands against the
nightly band of main, as words and as a Unicode sparkline (renders in any GitHub comment, no images).

    `▅▆▅▆▅▆▅▅▆▅▆▅▅▆│▁` −5.9% vs the last 14 nights' band of ±1.6% · baseline ▅ · step since 2026-09-25 #12

The sparkline has a fixed scale: the nights' median ± max(2 × the gate's floor, the farthest point),
so 1% of nightly noise stays about one bar tall instead of filling the height. The baseline's level is
given as the bar it would have on that scale. A change point of that workload inside the nights shown
names its tracking issue (`#12`: GitHub links it in a comment). Only trusted values (numbers, dates,
issue numbers) go into the cell.
"""
from __future__ import annotations

import math
from pathlib import Path

from gate.formats.config import Suite
from gate.formats.report import Report
from gate.history.analysis import trend
from gate.history.sparkline import sparkline
from gate.history.store import History, HistoryStore
from gate.history.svg import floor_of
from gate.render import escape

NIGHTS = 14


def row_trends(history_dir: str | Path | None, report: Report, suite: Suite, *, runner_class: str | None = None,
               nights: int = NIGHTS, history: History | None = None) -> dict[tuple[str, str], str]:
    """(workload, metric) -> the trend cell of every row that is not a pass and has nightly history.
    `history`: an already read store (else it is read from `history_dir`; bad lines are named on stderr)."""
    if history is None:
        if history_dir is None:
            return {}
        history = HistoryStore(history_dir, suite=suite).read(runner_class=runner_class)
    present = set(history.workloads())
    out: dict[tuple[str, str], str] = {}
    for row in report.rows:
        if row.verdict.is_pass or row.candidate.mean is None or row.workload not in present:
            continue
        try:
            found = trend(history, suite, row.workload, row.metric, runner_class=runner_class)
        except KeyError:  # a workload or metric the suite does not know
            continue
        shown = [n for n in found.nights if n.value is not None][-nights:]
        if len(shown) < 2:
            continue
        out[(row.workload, row.metric)] = _cell(found, shown, row, floor_of(found, suite),
                                                history.select(workload=row.workload, kinds=("accepted",)))
    return out


def _cell(found, shown, row, floor: tuple[float, bool], accepted=()) -> str:
    values = [n.value for n in shown]
    center = sorted(values)[len(values) // 2]
    limit, relative = floor
    candidate, base = row.candidate.mean, row.baseline.mean
    points = values + [candidate] + ([base] if base is not None else [])
    if relative and center > 0:
        half = max(2 * limit, *(abs(v / center - 1) for v in points if v > 0)) * 1.05
        low, high = center * (1 - half), center * (1 + half)
        logs = [math.log(v) for v in values if v > 0]
        mean = sum(logs) / len(logs)
        band = 2 * math.sqrt(sum((x - mean) ** 2 for x in logs) / (len(logs) - 1))
        where = f"{candidate / center - 1:+.1%} vs the last {len(values)} nights' band of ±{math.expm1(band):.1%}"
    else:
        half = max(2 * limit, *(abs(v - center) for v in points)) * 1.05
        low, high = center - half, center + half
        mean = sum(values) / len(values)
        band = 2 * math.sqrt(sum((x - mean) ** 2 for x in values) / (len(values) - 1))
        where = f"{(candidate - center) * 100:+.2f} pp vs the last {len(values)} nights' band of ±{band * 100:.2f} pp"
    line = sparkline([*values, candidate], breaks=[len(values)], low=low, high=high)
    parts = [f"`{line}` {where}"]
    if base is not None:
        parts.append(f"baseline {sparkline([base], low=low, high=high)}")
    first = shown[0].time
    held = {(cp.night[:10], cp.issue) for cp in found.change_points if cp.worse and cp.gated and cp.issue
            and not any(r.kind == "accepted" and r.workload == cp.workload and r.time >= cp.night for r in accepted)}
    steps = sorted({(cp.night[:10], cp.issue) for cp in found.change_points if cp.night >= first and cp.issue} | held)
    # A worse step main has not accepted holds the baseline before it: the PR inherits it (issue 39).
    # night: history data, escaped; issue: an int
    parts += [f"main's step since {escape.md(night, 10)} #{int(issue)}, not accepted: the baseline is held before it, "
              "so this change is main's, not the PR's" if (night, issue) in held
              else f"step since {escape.md(night, 10)} #{int(issue)}" for night, issue in steps]
    return " · ".join(parts)
