"""The tail areas and quantiles the tests use, from `scipy.special`, the functions scipy.stats calls underneath.

scipy.stats takes about half a second to import, in every `gate` command that judges (most of a night's `gate
compare`); scipy.special a third of that. The answers are scipy.stats' own, to the bit, edges included (x at or
below a support's lower end, df ≤ 0, NaN): tests/unit/verdict/test_distributions.py checks them against scipy.stats
on a grid. The binomial differs in round-off only: its upper tail is the incomplete beta (`bdtrc`, within 1e-16
of scipy.stats' Boost), its pmf at p ½ the exact C(m, k)/2^m, correctly rounded. Scalars in give numpy scalars out,
arrays give arrays, as scipy.stats does (typed Any, as scipy's are)."""
from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import special


def _valid(*shapes: ArrayLike) -> np.ndarray:
    """Where every shape parameter is > 0 (scipy.stats' argcheck; NaN fails it)."""
    ok = np.asarray(True)
    for s in shapes:
        ok = ok & (np.asarray(s, dtype=float) > 0)
    return ok


def _out(value: ArrayLike, valid: ArrayLike) -> Any:
    result = np.where(valid, value, np.nan)
    return result[()] if result.ndim == 0 else result


def norm_sf(x: ArrayLike) -> Any:
    return special.ndtr(-np.asarray(x, dtype=float))


def norm_cdf(x: ArrayLike) -> Any:
    return special.ndtr(np.asarray(x, dtype=float))


def norm_ppf(q: ArrayLike) -> Any:
    return special.ndtri(np.asarray(q, dtype=float))


def norm_isf(q: ArrayLike) -> Any:
    return -special.ndtri(np.asarray(q, dtype=float))


def t_sf(x: ArrayLike, df: ArrayLike) -> Any:
    with np.errstate(invalid="ignore"):
        return _out(special.stdtr(df, -np.asarray(x, dtype=float)), _valid(df))


def t_ppf(q: ArrayLike, df: ArrayLike) -> Any:
    return _quantile(special.stdtrit(df, q), q, df, low=-np.inf, high=np.inf)


def t_isf(q: ArrayLike, df: ArrayLike) -> Any:
    return _quantile(-special.stdtrit(df, q), q, df, low=np.inf, high=-np.inf)


def _quantile(inside: ArrayLike, q: ArrayLike, df: ArrayLike, *, low: float, high: float) -> Any:
    """A quantile as scipy.stats returns it: the support's end at q 0 and 1, NaN outside [0, 1] or where df ≤ 0."""
    q = np.asarray(q, dtype=float)
    with np.errstate(invalid="ignore"):
        value = np.where(q == 0, low, np.where(q == 1, high, inside))
        return _out(np.where((q < 0) | (q > 1), np.nan, value), _valid(df))


def f_sf(x: ArrayLike, dfn: ArrayLike, dfd: ArrayLike) -> Any:
    """Upper tail of F(dfn, dfd); 1 at x ≤ 0 (the support's lower end), as scipy.stats.f.sf."""
    x = np.asarray(x, dtype=float)
    with np.errstate(invalid="ignore"):
        inside = special.fdtrc(dfn, dfd, np.maximum(x, 0.0))
        return _out(np.where(x <= 0, np.where(np.isnan(x), np.nan, 1.0), inside), _valid(dfn, dfd))


def f_cdf(x: ArrayLike, dfn: ArrayLike, dfd: ArrayLike) -> Any:
    x = np.asarray(x, dtype=float)
    with np.errstate(invalid="ignore"):
        inside = special.fdtr(dfn, dfd, np.maximum(x, 0.0))
        return _out(np.where(x <= 0, np.where(np.isnan(x), np.nan, 0.0), inside), _valid(dfn, dfd))


def chi2_sf(x: ArrayLike, df: ArrayLike) -> Any:
    """Upper tail of χ²(df); 1 at x ≤ 0 and 0 at x = ∞, as scipy.stats.chi2.sf."""
    x = np.asarray(x, dtype=float)
    with np.errstate(invalid="ignore"):
        inside = special.chdtrc(df, np.clip(x, 0.0, np.finfo(float).max))
        value = np.where(x <= 0, 1.0, np.where(x == np.inf, 0.0, inside))
        return _out(np.where(np.isnan(x), np.nan, value), _valid(df))


def chi2_ppf(q: ArrayLike, df: ArrayLike) -> Any:
    df = np.asarray(df, dtype=float)
    with np.errstate(invalid="ignore"):
        return _quantile(2 * special.gammaincinv(df / 2, q), q, df, low=0.0, high=np.inf)


def binom_half_pmf(m: int) -> np.ndarray:
    """P(K = k), k = 0..m, for K ~ Binomial(m, ½): C(m, k) / 2^m, each correctly rounded."""
    whole = 1 << m
    return np.array([math.comb(m, k) / whole for k in range(m + 1)])


def binom_sf(k: ArrayLike, n: ArrayLike, p: ArrayLike) -> Any:
    """P(K > k) for K ~ Binomial(n, p) (scipy.special.bdtrc, the regularised incomplete beta: within about 1e-16
    of scipy.stats.binom.sf, which uses Boost's): 1 below the support, 0 at its top, NaN outside n ≥ 0, 0 ≤ p ≤ 1."""
    runs, n_arr, share = (np.asarray(v, dtype=float) for v in (k, n, p))
    valid = (n_arr >= 0) & np.isfinite(n_arr) & (share >= 0) & (share <= 1) & ~np.isnan(runs)
    runs = np.floor(runs)
    whole = np.where(valid, n_arr, 0).astype(np.int64)  # counts: bdtrc takes integers
    below = np.clip(np.nan_to_num(runs), 0, np.maximum(whole - 1, 0)).astype(np.int64)
    with np.errstate(invalid="ignore"):
        inside = special.bdtrc(below, whole, np.where(valid, share, 0.5))
        return _out(np.where(runs < 0, 1.0, np.where(runs >= n_arr, 0.0, inside)), valid)
