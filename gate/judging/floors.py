"""Whether a gated row's change reaches its floor, and half of it, over B comparisons at once (issue 49). `compare`
calls these with B = 1 (gate.judging.compare._decide_speed, gate.judging.accuracy_rows); the power benchmark with
thousands (benchmarks/power/simulate.py), so the two hold a change to the same floors."""
from __future__ import annotations

import numpy as np

# The share of its floor a change needs to WARN: half. The first look extends a model for a row past it (with a BH
# q at most EXTEND_Q, gate.judging.rule.extension), and a change smaller than it is not called an improvement.
WARN_SHARE = 0.5


def speed_reaches(worse_rel: np.ndarray, floor_rel: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
    """(above the floor, above WARN_SHARE of it): the relative worsening against the row's relative floor (NaN: neither)."""
    worse, floor = np.asarray(worse_rel, dtype=float), np.asarray(floor_rel, dtype=float)
    return worse >= floor, worse >= floor * WARN_SHARE


def quality_reaches(delta: np.ndarray | float, base_rate: np.ndarray | float, floor_abs: np.ndarray | float,
                    floor_rel: float, share: float) -> np.ndarray:
    """An accuracy row's change reaches `share` of its floors: the absolute one (less a rounding slack, so a change of
    exactly the floor counts) and the relative one of the baseline's rate, where that rate is not 0."""
    delta, base_rate = np.asarray(delta, dtype=float), np.asarray(base_rate, dtype=float)
    return np.asarray((delta >= share * np.asarray(floor_abs, dtype=float) - 1e-15)
                      & ((base_rate == 0) | (delta >= share * floor_rel * base_rate)))


def quality_floor_abs(n: np.ndarray | int, *, small_set_size: int, small_set_floor_abs: float,
                      floor_abs: float) -> np.ndarray:
    """An accuracy row's absolute floor over its n utterances (sessions): the small sets' where n ≤ small_set_size
    (Thresholds)."""
    return np.where(np.asarray(n) <= small_set_size, small_set_floor_abs, floor_abs)


def quality_floor(floor_abs: np.ndarray | float, floor_rel: np.ndarray | float,
                  base_rate: np.ndarray | float) -> np.ndarray:
    """The change an accuracy row's floors come to, as a rate: the larger of the absolute floor and the relative one
    of the baseline's rate (a NaN rate: the absolute, as Python's max gives)."""
    return np.fmax(floor_abs, np.asarray(floor_rel, dtype=float) * np.asarray(base_rate, dtype=float))
