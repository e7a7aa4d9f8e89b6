"""The one outlier rule: which runs of one arm are wild (set aside by `compare`; the runner applies the same
rule to choose what to re-measure). docs/statistics.md, issue 21.

A run further than max(OUTLIER_SIGMAS·σ, ln(1 + OUTLIER_MIN_REL)) from its arm's PLAIN median, measured in
ln(value), is flagged, σ being the run-to-run SD of ln(value) in use for the row. The distance is taken on the
log scale σ lives on: a relative distance (e^d − 1) is lopsided at large σ (at σ 20% it flagged fast runs
3.5σ out and slow ones never), which biased both the arm means and σ. The plain median (with an even count, the midpoint of
the two middle runs) is what the runner uses too: the lower median put an intermittent regression's centre
in the fast cluster and hid half its slow runs. When flagging would leave an arm with fewer than
MIN_KEPT runs, nothing is flagged in it (two clusters of equal size: neither is "the" wild one) and the
caller learns from `split_arms` that the arm disagrees with itself.

`robust_sd` is the scale-free σ of a set of arms: an iterated 5σ trim about each arm's median, started
from a robust scale (the median absolute deviation from the arm medians), so neither a fixed window (the
old 8% first pass that made σ̂/σ 0.36 at σ 20%) nor one wild run decides what is wild.
"""
from __future__ import annotations

import warnings

import numpy as np

OUTLIER_SIGMAS = 5.0
OUTLIER_MIN_REL = 0.03  # below this a run is never wild, however small σ is (3% is a real slowdown's size)
MIN_RUNS_TO_FLAG = 3  # with two runs neither can be told to be the wild one
MIN_KEPT = 2
# The median of |x − arm median| over the runs not at it, for arms of 3 normal runs, in σ (simulated once,
# 10^6 arms): the robust start divides by it. With longer arms it starts low; the iterations correct it.
_START_SCALE = 0.689
_TRIM_ITERATIONS = 4


def outlier_limit(sigma: float | np.ndarray) -> np.ndarray:
    """The relative distance (e^limit − 1) from the arm's median beyond which a run is flagged: shown to people."""
    return np.asarray(np.expm1(log_limit(sigma)), dtype=float)


def log_limit(sigma: float | np.ndarray) -> np.ndarray:
    """The distance in ln(value) from the arm's median beyond which a run is flagged."""
    sigma = np.asarray(sigma, dtype=float)
    return np.maximum(OUTLIER_SIGMAS * np.where(np.isnan(sigma), 0.0, sigma), np.log1p(OUTLIER_MIN_REL))


def _median(y: np.ndarray) -> np.ndarray:
    """The plain median along the last axis, ignoring absent (NaN) runs; NaN for an arm without runs."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.asarray(np.nanmedian(y, axis=-1, keepdims=True))


def flag_runs(log_values: np.ndarray, sigma: float | np.ndarray = 0.0) -> np.ndarray:
    """Boolean mask (same shape) of flagged runs along the last axis of ln(value); NaN entries are absent runs.

    `sigma` is the run-to-run SD of ln(value) in use (0 when unknown: the OUTLIER_MIN_REL limit applies),
    broadcast against the batch axes.
    """
    y = np.asarray(log_values, dtype=float)
    if y.shape[-1] == 0:
        return np.zeros(y.shape, dtype=bool)
    present = ~np.isnan(y)
    n = present.sum(axis=-1, keepdims=True)
    with np.errstate(all="ignore"):
        distance = np.abs(y - _median(y))
    limit = log_limit(sigma)
    limit = limit[..., None] if limit.ndim else limit
    flagged = present & (n >= MIN_RUNS_TO_FLAG) & (distance > limit)
    enough = (n - flagged.sum(axis=-1, keepdims=True)) >= MIN_KEPT
    return np.asarray(flagged & enough)


def split_arms(log_values: np.ndarray, sigma: float | np.ndarray = 0.0) -> np.ndarray:
    """Arms (batch axes) with runs beyond the limit that were all kept because too few would remain."""
    y = np.asarray(log_values, dtype=float)
    if y.shape[-1] == 0:
        return np.zeros(y.shape[:-1], dtype=bool)
    present = ~np.isnan(y)
    with np.errstate(all="ignore"):
        distance = np.abs(y - _median(y))
    limit = log_limit(sigma)
    limit = limit[..., None] if limit.ndim else limit
    beyond = present & (present.sum(axis=-1, keepdims=True) >= MIN_RUNS_TO_FLAG) & (distance > limit)
    return np.asarray(beyond.any(axis=-1) & ~flag_runs(y, sigma).any(axis=-1))


def robust_sd(log_values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Scale-free pooled SD of ln(value) over arms: (..., arms, runs), NaN = absent run.

    Returns (sigma, df, kept mask): the pooled within-arm SD of the runs the outlier rule keeps at that same
    σ (iterated from a robust start), and its degrees of freedom Σ(kept − 1) over arms with two kept runs or
    more. NaN σ (df 0) when no arm has two runs.
    """
    y = np.asarray(log_values, dtype=float)
    present = ~np.isnan(y)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        deviation = np.abs(y - _median(y))
        # Robust start: the median absolute deviation from the arm medians over the runs not at them,
        # pooled; one wild run moves it little.
        flat = np.where(present & (deviation > 0), deviation, np.nan).reshape(y.shape[:-2] + (-1,))
        sigma = np.nanmedian(flat, axis=-1) / _START_SCALE
    keep, df = present, np.zeros(y.shape[:-2], dtype=int)
    for _ in range(_TRIM_ITERATIONS):
        keep = present & ~flag_runs(y, np.where(np.isnan(sigma), np.inf, sigma)[..., None])
        n = keep.sum(axis=-1)
        with np.errstate(all="ignore"):
            mean = np.where(keep, y, 0.0).sum(axis=-1) / n
            squares = np.where(keep, (y - mean[..., None]) ** 2, 0.0).sum(axis=-1)
        usable = n >= 2
        ss = np.where(usable, squares, 0.0).sum(axis=-1)
        df = np.where(usable, n - 1, 0).sum(axis=-1)
        with np.errstate(all="ignore"):
            sigma = np.where(df > 0, np.sqrt(ss / np.where(df > 0, df, 1)), np.nan)
    return sigma, df, keep
