"""Two-level runs (issue 37): P timed passes (the client's `--repeats`) in each of K server starts a side.

On y = ln(metric) a pass is y_kp = μ + a_k + e_kp, a_k ~ N(0, σ_start²) per server start, e_kp ~ N(0, σ_pass²)
per pass. A start's mean of its P passes is ONE observation, with variance σ_start² + σ_pass²/P; passes never
count as independent runs, so an A/B of K starts a side has 2(K − 1) degrees of freedom from its own runs,
whatever P is (the gate's FAIL must also show on the A/B's own runs: gate.stats.speed.own_runs_p).

A start costs c_start seconds of GPU time (load, warm-up pass, stop) and a pass c_pass; the plan picks K and P
that reach a target detectable change at the least GPU time (Kalibera & Jones, ISMM 2013, as anchor). The
components come from a nested A/A study (benchmarks/noise/nested.py measures them; docs/benchmarks.md).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from gate.formats.noise_model import Components
from gate.stats.speed import mde
from gate.stats.thresholds import Thresholds

# Passes per start the planner considers; past 8 a start's mean is within 6% of σ_start at any measured ratio.
MAX_PASSES = 8
# The plan's warm-up: one unscored cycle a side, as today (runbook: warm A, warm B).
WARM_CYCLES = 2


@dataclass(frozen=True)
class NestedDesign:
    starts: int  # scored server starts per side
    passes: int  # timed passes per start
    detectable: float  # relative change caught with POWER at alpha (one-sided), on the A/B's own runs
    gpu_minutes: float  # both sides, warm-up cycles included


def start_means(passes_per_start: Sequence[Sequence[float]]) -> np.ndarray:
    """The observations of a two-level arm: each start's mean of ln(pass value)."""
    return np.array([float(np.mean(np.log(np.asarray(p, dtype=float)))) for p in passes_per_start])


def estimate(passes_per_start: Sequence[Sequence[float]]) -> tuple[float, float, int, int]:
    """One-way ANOVA on ln values of an A/A arm, K starts × P passes (balanced): σ_start, σ_pass and their df."""
    y = np.log(np.asarray(passes_per_start, dtype=float))
    if y.ndim != 2 or y.shape[0] < 2 or y.shape[1] < 2:
        raise ValueError(f"need at least 2 starts × 2 passes, got shape {y.shape}")
    k, p = y.shape
    means = y.mean(axis=1)
    msw = float(((y - means[:, None]) ** 2).sum() / (k * (p - 1)))
    msb = float(p * ((means - means.mean()) ** 2).sum() / (k - 1))
    return math.sqrt(max(0.0, (msb - msw) / p)), math.sqrt(msw), k - 1, k * (p - 1)


def design(c: Components, starts: int, passes: int, alpha: float = Thresholds().alpha) -> NestedDesign:
    if starts < 2 or passes < 1:
        raise ValueError("a design needs at least 2 starts a side and 1 pass")
    se = c.start_mean_sigma(passes) * math.sqrt(2.0 / starts)
    change = float(mde(se, 2 * (starts - 1), alpha))
    seconds = WARM_CYCLES * (c.start_cost_s + c.pass_cost_s) + 2 * starts * (c.start_cost_s + passes * c.pass_cost_s)
    return NestedDesign(starts, passes, change, seconds / 60.0)


def cheapest_for(c: Components, target: float, *, max_starts: int = 64, alpha: float = Thresholds().alpha,
                 max_passes: int = MAX_PASSES, passes: int | None = None) -> NestedDesign | None:
    """The least-GPU-time design whose detectable change is at most `target`; None if none within max_starts.
    `passes` fixes P (1: today's design)."""
    best: NestedDesign | None = None
    for p in ([passes] if passes else range(1, max_passes + 1)):
        for k in range(2, max_starts + 1):
            d = design(c, k, p, alpha)
            if d.detectable <= target:
                if best is None or d.gpu_minutes < best.gpu_minutes:
                    best = d
                break
    return best


def best_within(c: Components, minutes: float, *, alpha: float = Thresholds().alpha, max_passes: int = MAX_PASSES,
                passes: int | None = None) -> NestedDesign | None:
    """The smallest detectable change a GPU budget buys; None if even 2 starts a side do not fit."""
    best: NestedDesign | None = None
    for p in ([passes] if passes else range(1, max_passes + 1)):
        k = 2
        while design(c, k + 1, p, alpha).gpu_minutes <= minutes:
            k += 1
        d = design(c, k, p, alpha)
        if d.gpu_minutes <= minutes and (best is None or d.detectable < best.detectable):
            best = d
    return best


def pooled_estimate(arms: Sequence[Sequence[Sequence[float]]]) -> tuple[float, float, int, int, int] | None:
    """σ_start, σ_pass, their df and P from several A/A arms (each K starts × P passes, one P throughout): the
    one-way ANOVA's sums of squares pooled over arms, since each arm may sit at its own level (a job, a day).
    None when fewer than one start's df or one pass's df results, or the arms' P differ."""
    ss_within = ss_between = 0.0
    df_within = df_between = 0
    passes = {len(start) for arm in arms for start in arm}
    if len(passes) != 1 or min(passes) < 2:
        return None
    (p,) = passes
    for arm in arms:
        if len(arm) < 2:
            continue
        y = np.log(np.asarray(arm, dtype=float))
        means = y.mean(axis=1)
        ss_within += float(((y - means[:, None]) ** 2).sum())
        df_within += y.shape[0] * (p - 1)
        ss_between += float(p * ((means - means.mean()) ** 2).sum())
        df_between += y.shape[0] - 1
    if df_within == 0 or df_between == 0:
        return None
    msw, msb = ss_within / df_within, ss_between / df_between
    return math.sqrt(max(0.0, (msb - msw) / p)), math.sqrt(msw), df_between, df_within, p
