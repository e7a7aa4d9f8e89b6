"""A history's steps in words: a change point's size, a level in its unit, and change points grouped into steps.

Pure functions shared by the dashboard, the drift guard, the terminal and the tracking issues (gate.publish.tracking).
"""
from __future__ import annotations

import datetime as _dt
from typing import Sequence

from gate.history.changes import SAME_STEP_DAYS
from gate.history.records import ChangePoint
from gate.render import escape


def format_change(cp: ChangePoint) -> str:
    if cp.log:
        return f"{cp.change:+.1%} (95% CI {cp.ci[0]:+.1%} to {cp.ci[1]:+.1%})"
    return f"{cp.change * 100:+.2f} pp (95% CI {cp.ci[0] * 100:+.2f} to {cp.ci[1] * 100:+.2f} pp)"


def format_level(value: float, cp: ChangePoint) -> str:
    return f"{value * 100:.2f}%" if cp.unit == "fraction" else f"{value:.4g} {escape.md(cp.unit, 20)}"


def group_steps(points: Sequence[ChangePoint]) -> list[tuple[ChangePoint, ...]]:
    """Change points of one workload within SAME_STEP_DAYS of the step's first night: one step each."""
    steps: list[list[ChangePoint]] = []
    for cp in sorted(points, key=lambda c: (c.workload, c.night, not c.gated, c.metric)):
        here = steps[-1] if steps and steps[-1][0].workload == cp.workload else None
        if here is not None and _days(here[0].night, cp.night) <= SAME_STEP_DAYS:
            here.append(cp)
        else:
            steps.append([cp])
    return [tuple(sorted(s, key=lambda c: (not c.gated, c.metric))) for s in steps]


def _days(a: str, b: str) -> float:
    return abs((_dt.datetime.fromisoformat(b) - _dt.datetime.fromisoformat(a)).total_seconds()) / 86400
