"""Multiple-comparison adjustments over a family of one-sided p-values (docs/statistics.md).

Holm controls the family-wise error rate under any dependence: it decides FAIL. Benjamini-Hochberg
controls the false discovery rate (valid for positively dependent tests, which ours are): it only
ever raises a WARN. Missing p-values (None / NaN: no test was run) are left out of the family and
come back as None.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np


def _family(pvalues: Sequence[float | None]) -> tuple[list[int], np.ndarray]:
    index = [i for i, p in enumerate(pvalues) if p is not None and not math.isnan(p)]
    values = np.array([pvalues[i] for i in index], dtype=float)
    if ((values < 0) | (values > 1)).any():
        raise ValueError("p-values must lie in [0, 1]")
    return index, values


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm step-down adjusted p-values: reject at family level alpha iff adjusted <= alpha."""
    index, values = _family(pvalues)
    adjusted: list[float | None] = [None] * len(pvalues)
    m = len(values)
    if m == 0:
        return adjusted
    order = np.argsort(values, kind="stable")
    stepped = values[order] * (m - np.arange(m))
    stepped = np.minimum(np.maximum.accumulate(stepped), 1.0)
    for rank, position in enumerate(order):
        adjusted[index[position]] = float(stepped[rank])
    return adjusted


def benjamini_hochberg(pvalues: Sequence[float | None]) -> list[float | None]:
    """Benjamini-Hochberg q-values (`bh_array` on the family: scipy.stats.false_discovery_control's arithmetic)."""
    index, values = _family(pvalues)
    adjusted: list[float | None] = [None] * len(pvalues)
    for position, q in zip(index, bh_array(values), strict=True):
        adjusted[position] = float(q)
    return adjusted


def holm_array(pvalues: np.ndarray) -> np.ndarray:
    """Holm adjusted p-values along the last axis of a batch; NaN entries are outside the family (stay NaN).

    The same numbers as `holm`, for many families at once (the power benchmark judges thousands of PRs).
    """
    p = np.asarray(pvalues, dtype=float)
    missing = np.isnan(p)
    m = (~missing).sum(axis=-1, keepdims=True)
    order = np.argsort(np.where(missing, np.inf, p), axis=-1, kind="stable")
    ranked = np.take_along_axis(p, order, axis=-1)
    rank = np.arange(p.shape[-1])
    stepped = np.where(np.isnan(ranked), 0.0, ranked * (m - rank))
    stepped = np.minimum(np.maximum.accumulate(stepped, axis=-1), 1.0)
    out = np.empty_like(p)
    np.put_along_axis(out, order, stepped, axis=-1)
    out[missing] = np.nan
    return out


def bh_array(pvalues: np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg q-values along the last axis of a batch (scipy.stats.false_discovery_control's numbers);
    NaN entries stay NaN."""
    p = np.asarray(pvalues, dtype=float)
    missing = np.isnan(p)
    m = (~missing).sum(axis=-1, keepdims=True)
    order = np.argsort(np.where(missing, np.inf, p), axis=-1, kind="stable")
    ranked = np.take_along_axis(p, order, axis=-1)
    rank = np.arange(1, p.shape[-1] + 1)
    scaled = np.where(np.isnan(ranked), np.inf, ranked * (m / rank))  # p·(m/i), as scipy.stats computes it
    scaled = np.minimum(np.minimum.accumulate(scaled[..., ::-1], axis=-1)[..., ::-1], 1.0)
    out = np.empty_like(p)
    np.put_along_axis(out, order, scaled, axis=-1)
    out[missing] = np.nan
    return out
