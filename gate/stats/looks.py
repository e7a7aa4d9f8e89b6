"""Two looks inside `gate run`'s A/B plan (issue 10; docs/statistics.md).

First look: 3+3 runs, FAIL at Holm α₁ = 0.0001 (with the floors). A model is extended (3+3 more runs in
the same job) when one of its gated rows has a change of at least half its floor and a Benjamini-Hochberg
q, within its family (speed or accuracy) of the model's first-look rows, at most EXTEND_Q: 0.12 for speed,
0.1 for accuracy, whose widened first look is the weakest under correlated churn; when a gated row is blind
or unstable at the first look; never otherwise. (The issue's rule was a raw p <= 0.05: with six to sixteen
gated rows a model, 13-26% of no-op models were extended and the hostile no-op PR averaged 7.7 scored runs a
model; benchmarks/verdict_power.py measures this rule.) The pooled 6+6 then decides at Holm α₂ = 0.0015.
α₁ + α₂ = 0.0016, so the two looks of four models together false-FAIL at most 0.64% of no-op PRs (union
bound) even when every model is extended, as every model is at σ ≥ 2% (issue 21: at 0.0005 + 0.002 the
noise matrix's cells sat at the 1% bound, 0.9-1.6% per 1,000 PRs). A comparison of finished trees (by hand,
or after the second look) is one FINAL decision at the family α.

`decide` and `decide_pooled` are pure: they read a report that `compare` made with
`thresholds_for(Look.FIRST)` / `thresholds_for(Look.POOLED)` and return what the runner should do.
"""
from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass
from typing import Any, Iterable

from gate.stats.multiplicity import benjamini_hochberg
from gate.stats.thresholds import Thresholds

FAMILY_ALPHA = Thresholds.alpha  # one look (FINAL): a comparison of finished trees or against a stored baseline
# The two-look plan spends under a third of it per model and family: at σ ≥ 2% every model is extended, and four
# models at 0.005 each false-FAILed 2-3% of all-model no-op PRs, at 0.0025 0.9-1.6% (benchmarks/results/verdict_power.md).
# The first look spends little: a −3% regression at σ 1% is caught at the pooled look anyway (its first-look FAIL
# buys runs, not power), and α₁ 0.0005 took half a point of false FAIL per PR at σ ≥ 2% for no power.
FIRST_ALPHA = 0.0001
POOLED_ALPHA = 0.0015
# What the two looks spend together: the level of rows whose floors no longer hold a no-op's noise back, in any
# comparison (gate.judging.judge.one_look_thresholds; gate.judging.compare._hidden_groups)
TWO_LOOKS_ALPHA = FIRST_ALPHA + POOLED_ALPHA
# BH q within the family of the model's first-look rows. Speed at 0.05 left 7% of −3% regressions at σ 1% unextended
# (their first look saw 1-1.8%), so they passed; 0.12 extends them at 0.26 more scored runs a no-op model at σ 1%.
EXTEND_Q = {"speed": 0.12, "quality": 0.1}
EXTEND_FLOOR_SHARE = 0.5


class Look(enum.Enum):
    FIRST = "first"
    POOLED = "pooled"
    FINAL = "final"

    @property
    def alpha(self) -> float:
        return {Look.FIRST: FIRST_ALPHA, Look.POOLED: POOLED_ALPHA, Look.FINAL: FAMILY_ALPHA}[self]


def thresholds_for(look: Look, base: Any = None) -> Any:
    """`compare`'s Thresholds with both families' FAIL level set to this look's α (and, at the first look, the
    own-runs confirmation over the model's speed rows, Thresholds.own_runs_bonferroni, and one worse run enough
    to make a speed row unstable, Thresholds.more_runs_follow)."""
    if base is None:
        base = Thresholds()
    return dataclasses.replace(base, alpha=look.alpha, quality_alpha=look.alpha, own_runs_bonferroni=look is Look.FIRST,
                               more_runs_follow=look is Look.FIRST)


@dataclass(frozen=True)
class LookDecision:
    action: str  # "pass" (stop; no FAIL), "fail" (stop; a row FAILs), "extend" (3+3 more runs), "undecided" (stop;
    # a row could not be judged: NOT COMPARABLE)
    reasons: tuple[str, ...]


def decide(first_look: Any, model: str) -> LookDecision:
    """After the first 3+3: fail, extend, or pass for one model of a first-look report."""
    rows = _rows(first_look, model)
    failed = [_name(r) for r in rows if _verdict(r) == "fail"]
    if failed:
        return LookDecision("fail", tuple(f"{n}: FAIL at Holm α₁ = {FIRST_ALPHA}" for n in failed))
    if (unjudged := _not_comparable(rows)):
        return unjudged
    close = []
    for family, level in EXTEND_Q.items():
        gated = [r for r in rows if r.family == family and r.p_value is not None]
        for row, q in zip(gated, benjamini_hochberg([r.p_value for r in gated]), strict=True):
            if q is not None and q <= level and floor_share(row) >= EXTEND_FLOOR_SHARE:
                close.append(f"{_name(row)}: p = {row.p_value:.3g}, BH q = {q:.3g} ≤ {level} over the model's "
                             f"{len(gated)} {family} rows, with {floor_share(row):.0%} of its floor")
    # A model that could not have seen a change of twice its floor at this look extends too (issue 21): a PASS
    # from a blind first look says little (gate.judging.compare marks such rows `blind`).
    close += [f"{_name(r)}: blind below {r.mde:.2%} at the first look" if r.family == "speed" else
              f"{_name(r)}: blind below {r.mde * 100:.2g} pp at the first look"
              for r in rows if r.family and getattr(r, "blind", False) and r.mde is not None]
    # A candidate run set aside as worse makes the row unstable: more runs tell a wild run from an intermittent
    # regression (at the pooled look a row is unstable only with two worse runs of six: gate.stats.speed).
    close += [f"{_name(r)}: unstable at the first look (a candidate run set aside as worse)"
              for r in rows if r.family == "speed" and getattr(r, "unstable", False)]
    if close:
        return LookDecision("extend", tuple(close))
    return LookDecision("pass", (f"{model}: no gated row near a regression at the first look",))


def decide_pooled(pooled: Any, model: str) -> LookDecision:
    """After the pooled 6+6: fail or pass (never extend again)."""
    rows = _rows(pooled, model)
    failed = [_name(r) for r in rows if _verdict(r) == "fail"]
    if failed:
        return LookDecision("fail", tuple(f"{n}: FAIL on the pooled runs at Holm α₂ = {POOLED_ALPHA}" for n in failed))
    if (unjudged := _not_comparable(rows)):
        return unjudged
    return LookDecision("pass", (f"{model}: no FAIL on the pooled runs",))


def _not_comparable(rows: Iterable[Any]) -> LookDecision | None:
    """A row the looks could not judge (NOT COMPARABLE) is undecided, never a pass (issue 39); more runs on the
    same setups would not judge it either, so the model stops there."""
    found = [r for r in rows if _verdict(r) == "not comparable"]
    if not found:
        return None
    differs = getattr(found[0], "differs", ())
    why = f"not comparable: {', '.join(differs)} differ" if differs else "not comparable"
    more = f" (+{len(found) - 1} more rows)" if len(found) > 1 else ""
    return LookDecision("undecided", (f"{_name(found[0])}: {why}{more}; a row that could not be judged is "
                                      "undecided, never a pass",))


def floor_share(row: Any) -> float:
    """How much of its floor a gated row's worsening reaches (1.0 = at the floor; <= 0 for no worsening)."""
    if row.family == "speed":
        return (row.worse_rel or 0.0) / row.floor_rel if row.floor_rel else 0.0
    if row.delta_abs is None or not row.floor_abs:
        return 0.0
    shares = [row.delta_abs / row.floor_abs]
    if row.delta_rel is not None and row.floor_rel:
        shares.append(row.delta_rel / row.floor_rel)
    return float(min(shares))


def _rows(report: Any, model: str) -> Iterable[Any]:
    return [r for r in report.rows if r.model == model]


def _verdict(row: Any) -> str:
    return str(getattr(row.verdict, "value", row.verdict))


def _name(row: Any) -> str:
    return f"{row.workload} {row.metric}"
