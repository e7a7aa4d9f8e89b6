"""Multiple-comparison adjustments over a family of one-sided p-values (statistics.md §1.7, §4.3).

Holm controls the family-wise error rate under any dependence: it decides FAIL. Benjamini-Hochberg
controls the false discovery rate (valid for positively dependent tests, which ours are): it only
ever raises a WARN. Missing p-values (None / NaN: no test was run) are left out of the family and
come back as None.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from scipy import stats


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
    """Benjamini-Hochberg q-values (scipy.stats.false_discovery_control, method 'bh')."""
    index, values = _family(pvalues)
    adjusted: list[float | None] = [None] * len(pvalues)
    if len(values) == 0:
        return adjusted
    for position, q in zip(index, stats.false_discovery_control(values, method="bh")):
        adjusted[position] = float(q)
    return adjusted
