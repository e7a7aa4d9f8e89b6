"""What a gated row could have seen, over B comparisons at once (issue 49): its minimum detectable effect at Holm's
first step over its family, whether it is blind, and the change it says it detects. `compare` calls these with
B = 1 (gate.judging.compare._decide_quality, _decide_speed); the power benchmark with thousands
(benchmarks/power/simulate.py: the first look's blind rows extend a model; the target row's `detects`)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from gate.stats.speed import POWER, SENSITIVITY_FACTOR, mde


@dataclass(frozen=True)
class Sensitivity:
    mde: np.ndarray  # (B, rows) the worsening a single regressed row catches with POWER (NaN: none)
    blind: np.ndarray  # (B, rows) that MDE exceeds SENSITIVITY_FACTOR × the row's floor


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
            size = (stats.norm.isf(level) + stats.norm.ppf(POWER)) * np.asarray(se, dtype=float)
        floor = np.asarray(floor, dtype=float)
        blind = tested & np.isfinite(size) & (floor > 0) & (size > SENSITIVITY_FACTOR * floor)
    return Sensitivity(mde=np.asarray(size, dtype=float), blind=blind)


def detects(size: np.ndarray, own_se: np.ndarray, own_df: np.ndarray, own_level: np.ndarray | float) -> np.ndarray:
    """What a speed row detects: its MDE (`sensitivity`), bounded by the MDE of the own-runs confirmation a FAIL also
    needs at `own_level` (gate.judging.eligibility) where that is finite (NaN own se or df: none). The blind rule
    keeps the t test's alone: the own runs' few df at a first look would make every row blind."""
    own = mde(own_se, own_df, own_level)
    return np.where(np.isfinite(own), np.maximum(size, own), size)
