"""Noise statistics of a series of A/A runs, on y = ln(metric) (docs/statistics.md works on the log scale).

Each function takes the runs in the order they were made. Pure numpy/scipy, no torch, so the study's
raw runs can be re-analysed anywhere (`gpu_noise.py --reanalyse`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

# docs/statistics.md: minimum detectable effect at 80% power, 3 + 3 runs, one-sided z = 3.09, known σ.
MDE_3V3_FACTOR = 3.21


@dataclass(frozen=True)
class SigmaEstimate:
    """Sample SD with its chi-square confidence interval: (n-1)s²/σ² ~ χ²(n-1) for normal runs."""
    n: int
    df: int
    sd: float
    ci_low: float
    ci_high: float
    confidence: float


@dataclass(frozen=True)
class Shift:
    """A difference on the log scale with a t statistic and its two-sided p-value."""
    n: int
    delta: float
    se: float
    t: float
    df: int
    p_two_sided: float

    @property
    def percent(self) -> float:
        return 100.0 * math.expm1(self.delta)


@dataclass(frozen=True)
class Autocorrelation:
    """Lag-1 sample autocorrelation; under independence it is about N(-1/n, 1/n)."""
    n: int
    r1: float
    band95: float
    p_two_sided: float


@dataclass(frozen=True)
class PairSummary:
    """Consecutive non-overlapping A/A pairs (runs 1-2, 3-4, ...): d = second − first."""
    n_pairs: int
    mean: float
    sd: float
    sigma_implied: float  # SD(d)/√2, the σ_run the pairs imply
    max_abs: float


def sigma_with_ci(values, confidence: float = 0.95) -> SigmaEstimate:
    y = np.asarray(values, dtype=float)
    if y.size < 2:
        raise ValueError(f"σ needs at least 2 runs, got {y.size}")
    df = y.size - 1
    sd = float(np.std(y, ddof=1))
    tail = (1.0 - confidence) / 2.0
    low = sd * math.sqrt(df / stats.chi2.ppf(1.0 - tail, df))
    high = sd * math.sqrt(df / stats.chi2.ppf(tail, df))
    return SigmaEstimate(n=int(y.size), df=df, sd=sd, ci_low=low, ci_high=high, confidence=confidence)


def robust_sigma(values) -> float:
    """1.4826·MAD: the SD a normal sample would have, unmoved by a few slow runs."""
    y = np.asarray(values, dtype=float)
    if y.size < 3:
        raise ValueError(f"a robust σ needs at least 3 runs, got {y.size}")
    return float(1.4826 * np.median(np.abs(y - np.median(y))))


def first_run_effect(values) -> Shift:
    """Run 1 against the rest, as a prediction-interval t: (y₁ − ȳ_rest) / (s_rest·√(1 + 1/m)), df m − 1."""
    y = np.asarray(values, dtype=float)
    rest = y[1:]
    if rest.size < 2:
        raise ValueError(f"the first-run effect needs at least 3 runs, got {y.size}")
    delta = float(y[0] - rest.mean())
    se = float(np.std(rest, ddof=1) * math.sqrt(1.0 + 1.0 / rest.size))
    return _shift(n=int(y.size), delta=delta, se=se, df=rest.size - 1)


def mean_shift(differences) -> Shift:
    """One-sample t on paired differences (e.g. scored pass minus warm-up pass, per process)."""
    d = np.asarray(differences, dtype=float)
    if d.size < 2:
        raise ValueError(f"a mean shift needs at least 2 differences, got {d.size}")
    se = float(np.std(d, ddof=1) / math.sqrt(d.size))
    return _shift(n=int(d.size), delta=float(d.mean()), se=se, df=d.size - 1)


def trend(values, index=None) -> Shift:
    """OLS slope of y on the run index (delta = slope per run), with its t test on n − 2 df."""
    y = np.asarray(values, dtype=float)
    x = np.arange(y.size, dtype=float) if index is None else np.asarray(index, dtype=float)
    if y.size < 3:
        raise ValueError(f"a trend needs at least 3 runs, got {y.size}")
    xc = x - x.mean()
    sxx = float(xc @ xc)
    slope = float(xc @ (y - y.mean()) / sxx)
    residuals = y - y.mean() - slope * xc
    se = math.sqrt(float(residuals @ residuals) / (y.size - 2) / sxx)
    return _shift(n=int(y.size), delta=slope, se=se, df=y.size - 2)


def lag1_autocorrelation(values) -> Autocorrelation:
    """r₁ = Σ(y_t − ȳ)(y_{t+1} − ȳ) / Σ(y_t − ȳ)² (the usual ACF estimator); p from N(−1/n, 1/n)."""
    y = np.asarray(values, dtype=float)
    if y.size < 3:
        raise ValueError(f"an autocorrelation needs at least 3 runs, got {y.size}")
    dev = y - y.mean()
    denominator = float(dev @ dev)
    r1 = float(dev[:-1] @ dev[1:] / denominator) if denominator > 0 else 0.0
    z = (r1 + 1.0 / y.size) * math.sqrt(y.size)
    return Autocorrelation(n=int(y.size), r1=r1, band95=1.96 / math.sqrt(y.size),
                           p_two_sided=float(2.0 * stats.norm.sf(abs(z))))


def consecutive_pairs(values) -> PairSummary:
    y = np.asarray(values, dtype=float)
    n_pairs = y.size // 2
    if n_pairs < 2:
        raise ValueError(f"pair statistics need at least 4 runs, got {y.size}")
    d = y[1:2 * n_pairs:2] - y[0:2 * n_pairs:2]
    sd = float(np.std(d, ddof=1))
    return PairSummary(n_pairs=n_pairs, mean=float(d.mean()), sd=sd, sigma_implied=sd / math.sqrt(2.0),
                       max_abs=float(np.abs(d).max()))


def _shift(n: int, delta: float, se: float, df: int) -> Shift:
    if se > 0:
        t = delta / se
        p = float(2.0 * stats.t.sf(abs(t), df))
    else:  # no spread: any nonzero difference is exact
        t = 0.0 if delta == 0 else math.copysign(math.inf, delta)
        p = 1.0 if delta == 0 else 0.0
    return Shift(n=n, delta=delta, se=se, t=t, df=df, p_two_sided=p)
