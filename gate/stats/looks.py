"""Two looks inside `gate run`'s A/B plan (issue 10; statistics.md §9 "Two looks").

First look: 3+3 runs, FAIL at Holm α₁ = 0.001 (with the floors). A model is extended (3+3 more runs in
the same job) when any of its gated rows has first-look p <= 0.05 and a change of at least half its
floor. The pooled 6+6 then decides at Holm α₂ = 0.004. α₁ + α₂ = the family α (0.005), so the two looks
together false-FAIL no more often than one look at the family α (union bound). A comparison of finished
trees (by hand, or after the second look) is one FINAL decision at the family α.

`decide` and `decide_pooled` are pure: they read a report that `compare` made with
`thresholds_for(Look.FIRST)` / `thresholds_for(Look.POOLED)` and return what the runner should do.
"""
from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass
from typing import Any, Iterable

FAMILY_ALPHA = 0.005
FIRST_ALPHA = 0.001
POOLED_ALPHA = FAMILY_ALPHA - FIRST_ALPHA
EXTEND_P = 0.05
EXTEND_FLOOR_SHARE = 0.5


class Look(enum.Enum):
    FIRST = "first"
    POOLED = "pooled"
    FINAL = "final"

    @property
    def alpha(self) -> float:
        return {Look.FIRST: FIRST_ALPHA, Look.POOLED: POOLED_ALPHA, Look.FINAL: FAMILY_ALPHA}[self]


def thresholds_for(look: Look, base: Any = None) -> Any:
    """`compare`'s Thresholds with both families' FAIL level set to this look's α."""
    if base is None:
        from gate.compare import Thresholds  # late: compare imports the stats package

        base = Thresholds()
    return dataclasses.replace(base, alpha=look.alpha, quality_alpha=look.alpha)


@dataclass(frozen=True)
class LookDecision:
    action: str  # "pass" (stop; no FAIL), "fail" (stop; a row FAILs), "extend" (3+3 more runs)
    reasons: tuple[str, ...]


def decide(first_look: Any, model: str) -> LookDecision:
    """After the first 3+3: fail, extend, or pass for one model of a first-look report."""
    rows = _rows(first_look, model)
    failed = [_name(r) for r in rows if _verdict(r) == "fail"]
    if failed:
        return LookDecision("fail", tuple(f"{n}: FAIL at Holm α₁ = {FIRST_ALPHA}" for n in failed))
    close = [r for r in rows if r.family is not None and r.p_value is not None and r.p_value <= EXTEND_P
             and floor_share(r) >= EXTEND_FLOOR_SHARE]
    if close:
        return LookDecision("extend", tuple(
            f"{_name(r)}: p = {r.p_value:.3g} ≤ {EXTEND_P} with {floor_share(r):.0%} of its floor" for r in close))
    return LookDecision("pass", (f"{model}: no gated row near a regression at the first look",))


def decide_pooled(pooled: Any, model: str) -> LookDecision:
    """After the pooled 6+6: fail or pass (never extend again)."""
    failed = [_name(r) for r in _rows(pooled, model) if _verdict(r) == "fail"]
    if failed:
        return LookDecision("fail", tuple(f"{n}: FAIL on the pooled runs at Holm α₂ = {POOLED_ALPHA}" for n in failed))
    return LookDecision("pass", (f"{model}: no FAIL on the pooled runs",))


def floor_share(row: Any) -> float:
    """How much of its floor a gated row's worsening reaches (1.0 = at the floor; <= 0 for no worsening)."""
    if row.family == "speed":
        return (row.worse_rel or 0.0) / row.floor_rel if row.floor_rel else 0.0
    if row.delta_abs is None or not row.floor_abs:
        return 0.0
    shares = [row.delta_abs / row.floor_abs]
    if row.delta_rel is not None and row.floor_rel:
        shares.append(row.delta_rel / row.floor_rel)
    return min(shares)


def _rows(report: Any, model: str) -> Iterable[Any]:
    return [r for r in report.rows if r.model == model]


def _verdict(row: Any) -> str:
    return str(getattr(row.verdict, "value", row.verdict))


def _name(row: Any) -> str:
    return f"{row.workload} {row.metric}"
