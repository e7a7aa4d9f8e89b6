"""What a gated row could have seen, over B comparisons at once (issue 49): its minimum detectable effect at Holm's
first step over its family, whether it is blind, and the change it says it detects. `compare` calls these with
B = 1 (gate.judging.compare._decide_quality, _decide_speed); the power benchmark with thousands
(benchmarks/power/simulate.py: the first look's blind rows extend a model; the target row's `detects`)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gate.stats.distributions import chi2_ppf, norm_cdf, norm_isf, norm_ppf, t_isf
from gate.stats.speed import POWER, SENSITIVITY_FACTOR, mde


@dataclass(frozen=True)
class Sensitivity:
    mde: np.ndarray  # (B, rows) the worsening a single regressed row catches with POWER (NaN: none)
    blind: np.ndarray  # (B, rows) that MDE exceeds SENSITIVITY_FACTOR × the row's floor
    level: np.ndarray  # (B, 1) Holm's first step over the tested rows: what a single regressed row must reach


def sensitivity(se: np.ndarray, df: np.ndarray | None, floor: np.ndarray, tested: np.ndarray, *, alpha: float,
                family: str) -> Sensitivity:
    """One model's family of rows (B, rows), `tested` where a row has a test: the MDE at Holm's first step (α over
    the tested rows), by the t test on the row's se and df (speed: a relative worsening) or the normal one on its se
    (quality: an absolute one); blind where that MDE is finite and above SENSITIVITY_FACTOR × a positive floor."""
    tested = np.asarray(tested, dtype=bool)
    level = alpha / np.maximum(tested.sum(axis=-1, keepdims=True), 1)  # what a single regressed row must reach
    with np.errstate(all="ignore"):
        if family == "speed":
            size = mde(se, df if df is not None else np.nan, level)
        else:
            size = (norm_isf(level) + norm_ppf(POWER)) * np.asarray(se, dtype=float)
        floor = np.asarray(floor, dtype=float)
        blind = tested & np.isfinite(size) & (floor > 0) & (size > SENSITIVITY_FACTOR * floor)
    return Sensitivity(mde=np.asarray(size, dtype=float), blind=blind, level=level)


# Quantiles at which each σ estimate's sampling spread (σ̂/σ ~ √(χ²_df/df)) is read in `detects`.
_SPREAD_QUANTILES = (np.arange(32) + 0.5) / 32


def detects(se: np.ndarray, df: np.ndarray, level: np.ndarray | float, own_se: np.ndarray, own_df: np.ndarray,
            own_level: np.ndarray | float) -> np.ndarray:
    """What a speed row detects: the worsening it FAILs with POWER. Its t test at `level` and, where the own runs have
    a se and df, the own-runs confirmation a FAIL also needs at `own_level` (gate.judging.eligibility) must both
    reach, on the one difference d ~ N(δ, se²), each against its own σ estimate. Their joint power is read on a grid
    of the two estimates' quantiles and solved for δ; with one test it is the noncentral t's. The larger of the two
    tests' MDEs alone (what this was until issue 49) printed 0.96-0.99 of the drop caught 80% of the time at σ 2-10%:
    the two thresholds vary apart, and d must clear the larger (benchmarks/results/detects_power.md). The blind rule
    keeps the t test's MDE alone: the own runs' few df at a first look would make every row blind."""
    se, df, own_se, own_df = (np.asarray(v, dtype=float) for v in (se, df, own_se, own_df))
    own = np.isfinite(own_se) & np.isfinite(own_df) & (own_df > 0)
    known = np.isfinite(se) & (se > 0) & np.isfinite(df) & (df > 0)
    with np.errstate(all="ignore"):
        cut = _cut(np.where(known, se, 1.0), np.where(known, df, 1.0), level)[..., :, None]
        own_cut = np.where(own[..., None], _cut(np.where(own, own_se, 0.0), np.where(own, own_df, 1.0), own_level), 0.0)
        threshold = np.maximum(cut, own_cut[..., None, :])  # (B, rows, K, K): d must clear both tests' cuts
        scale = np.where(known, se, 1.0)[..., None, None]
        low, high = np.zeros(se.shape), threshold.max(axis=(-2, -1)) + 4 * np.where(known, se, 1.0)
        for _ in range(40):  # bisection: the joint power rises with δ
            mid = (low + high) / 2
            short = norm_cdf((mid[..., None, None] - threshold) / scale).mean(axis=(-2, -1)) < POWER
            low, high = np.where(short, mid, low), np.where(short, high, mid)
        return np.where(known, np.expm1((low + high) / 2), np.nan)  # overflow: inf, a change no run count can see


def _cut(se: np.ndarray, df: np.ndarray, level: np.ndarray | float) -> np.ndarray:
    """(B, rows, K): the difference a one-sided t test at `level` needs, at each quantile of its σ estimate."""
    spread = np.sqrt(chi2_ppf(_SPREAD_QUANTILES, df[..., None]) / df[..., None])
    return (t_isf(level, df) * se)[..., None] * spread
