"""The verdict over one family of gated rows (docs/design.md §Decision).

FAIL: Holm-adjusted p <= alpha AND the change reaches the row's floor AND the row is allowed to fail.
WARN: not FAIL, Benjamini-Hochberg q <= warn_q AND the change reaches half the floor. A row that meets
      the FAIL rule but may not fail (one run per side, no calibration, a speed row across jobs) lands
      here too, since its q <= its Holm p.
PASS: everything else. Improvements are reported, never gated.

Batched along the last axis (the family), so the power benchmark runs exactly this on thousands of PRs.
Rows outside the family (no test: NaN p) are PASS here; the caller decides what they are.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gate.stats.multiplicity import bh_array, holm_array

PASS, WARN, FAIL = 0, 1, 2


@dataclass(frozen=True)
class FamilyDecision:
    verdict: np.ndarray  # PASS / WARN / FAIL codes
    p_adjusted: np.ndarray  # Holm
    q_value: np.ndarray  # BH


def decide_family(p: np.ndarray, above_floor: np.ndarray, above_half_floor: np.ndarray, can_fail: np.ndarray, *,
                  alpha: float, warn_q: float) -> FamilyDecision:
    p = np.asarray(p, dtype=float)
    adjusted, q = holm_array(p), bh_array(p)
    tested = ~np.isnan(p)
    fail = tested & (np.nan_to_num(adjusted, nan=1.0) <= alpha) & np.asarray(above_floor) & np.asarray(can_fail)
    warn = tested & ~fail & (np.nan_to_num(q, nan=1.0) <= warn_q) & np.asarray(above_half_floor)
    verdict = np.where(fail, FAIL, np.where(warn, WARN, PASS))
    return FamilyDecision(verdict=verdict, p_adjusted=adjusted, q_value=q)


def weighted(p: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Weighted Holm and Benjamini-Hochberg (Genovese, Roeder & Wasserman 2006) through the plain ones: with
    weights w_i over the tested rows, p_i / w̃_i where w̃_i = w_i · m / Σw (mean 1 over the tested rows), so Holm's
    first step is p_i ≤ α·w_i/Σw and the family's error rate is kept. Untested rows (NaN p) stay NaN."""
    p, w = np.asarray(p, dtype=float), np.asarray(weights, dtype=float)
    tested = ~np.isnan(p)
    m = tested.sum(axis=-1, keepdims=True)
    total = np.where(tested, w, 0.0).sum(axis=-1, keepdims=True)
    with np.errstate(all="ignore"):
        scale = np.where(tested & (total > 0), w * m / np.where(total > 0, total, 1.0), 1.0)
        return np.where(tested, np.minimum(p / scale, 1.0), np.nan)
