"""Two looks inside `gate run`'s A/B plan (issue 10; docs/statistics.md).

First look: 3+3 runs, FAIL at Holm α₁ = 0.0001 (with the floors). A model is extended (3+3 more runs in
the same job) when one of its gated rows has a change of at least half its floor and a Benjamini-Hochberg
q, within its family (speed or accuracy) of the model's first-look rows, at most EXTEND_Q = 0.12 (one level for
both families); when a gated row is blind or unstable at the first look; never otherwise. (The issue's rule was a raw p <= 0.05: with six to sixteen
gated rows a model, 13-26% of no-op models were extended and the hostile no-op PR averaged 7.7 scored runs a
model; benchmarks/verdict_power.py measures this rule.) The pooled 6+6 then decides at Holm α₂ = 0.0015.
α₁ + α₂ = 0.0016, so the two looks of four models together false-FAIL at most 0.64% of no-op PRs (union
bound) even when every model is extended, as every model is at σ ≥ 2% (issue 21: at 0.0005 + 0.002 the
noise matrix's cells sat at the 1% bound, 0.9-1.6% per 1,000 PRs). A comparison of finished trees (by hand,
or after the second look) is one FINAL decision at the family α.

The levels live here; what a look decides for a model of a report is gate.judging.look_rule (`decide`,
`decide_pooled`), by the batched rule gate.judging.rule.extension.
"""
from __future__ import annotations

import dataclasses
import enum
from typing import Any

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
# BH q within the family of the model's first-look rows (EXTEND_FAMILIES: speed rows and accuracy rows apart), one
# level for both. Speed at 0.05 left 7% of −3% regressions at σ 1% unextended (their first look saw 1-1.8%), so they
# passed; 0.12 extends them at 0.26 more scored runs a no-op model at σ 1%. Accuracy had 0.1 of its own until issue
# 49: at 0.12 no cell of the noise matrix moved (docs/statistics.md, "Rule ablation").
EXTEND_Q = 0.12
EXTEND_FAMILIES = ("speed", "quality")


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
