"""The one outlier rule: which runs of one arm are wild (set aside by `compare`; the runner applies the same
rule to choose what to re-measure). docs/statistics.md, issue 21.

A run further than max(OUTLIER_SIGMAS·σ, ln(1 + OUTLIER_MIN_REL)) from its arm's PLAIN median, measured in
ln(value), is flagged in an arm of FEWEST_RUNS runs or more (gate.stats.levels: with two runs neither can be told
to be the wild one), σ being the run-to-run SD of ln(value) in use for the row. The distance is taken on the
log scale σ lives on: a relative distance (e^d − 1) is lopsided at large σ (at σ 20% it flagged fast runs
3.5σ out and slow ones never), which biased both the arm means and σ. The plain median (with an even count, the
midpoint of the two middle runs) is what the runner uses too: the lower median put an intermittent regression's
centre in the fast cluster and hid half its slow runs. When flagging would leave an arm with fewer than
FEWEST_RUNS − 1 runs (two: a spread), nothing is flagged in it (two clusters of equal size: neither is "the" wild
one; a worse cluster is what gate.stats.speed's intermittent test finds).

`robust_sd` is the scale-free σ of a set of arms: an iterated 5σ trim about each arm's median, started
from a robust scale (the median absolute deviation from the arm medians), so neither a fixed window (the
old 8% first pass that made σ̂/σ 0.36 at σ 20%) nor one wild run decides what is wild.

`robust_sd`'s trim, `compare` (gate.stats.speed.shift_test) and the runner's re-measure all judge a run
against `flag_sigma`: σ's one-sided 80% upper bound from its degrees of freedom, not σ̂
itself. A σ̂ from 8 df comes out at half the truth one time in fifty; 5 × that is 2.5 true σ, where ordinary runs
were set aside, which shrank σ̂ further (the trim fed on itself) and moved the kept means. With 3 runs an arm
the robust σ's 1% quantile was twice the χ² one. Judged against a 95% bound, no-op PRs false-FAILed less: σ 10%
with t₃ tails 1.05% → 0.65%, 5% of runs 6% slow 0.70% → 0.40% (2,000 PRs, benchmarks/verdict_power.py). The 80%
bound does as well there (0.6% and 0.2% with the other issue-21 changes of that commit), and unlike the 95% one it still sets
aside a −25% run among five others 2% apart (×2.37 at 4 df) and keeps 4 more points of power where 5% of the
runs are slow restarts.
"""
from __future__ import annotations

import warnings

import numpy as np

from gate.formats.noise_model import FEWEST_RUNS
from gate.stats.distributions import chi2_ppf
from gate.stats.outlier_rule import OUTLIER_MIN_REL, OUTLIER_SIGMAS

# Arms of fewer runs than this give σ only untrimmed (plain_sd) where nothing but those runs carries σ and no later
# look or re-measure follows: two trees without a run log (gate.stats.speed.spread, issue 39). Three runs an arm
# leave the trim choosing among the very runs σ̂ is made of: σ̂ fell below the χ² 1% quantile 1.3% of the time. The
# slow-mode finder's choice among a candidate's runs needs as many (gate.stats.slowmode).
MIN_RUNS_TO_CHOOSE = FEWEST_RUNS + 1
# The median of |x − arm median| over the runs not at it, for arms of 3 normal runs, in σ (simulated once,
# 10^6 arms): the robust start divides by it. With longer arms it starts low; the iterations correct it.
_START_SCALE = 0.689
_TRIM_ITERATIONS = 4
FLAG_SIGMA_QUANTILE = 0.2  # flag_sigma: σ's one-sided upper bound at 1 − this


def flag_sigma(sigma: float | np.ndarray, df: float | np.ndarray) -> np.ndarray:
    """The σ a run is judged wild against: σ's one-sided 80% upper bound from its df, σ · sqrt(df / χ²₀.₂(df))
    (×1.56 at 4 df, ×1.32 at 8, ×1.11 at 44); σ itself where the df are unknown (0)."""
    sigma, df = np.asarray(sigma, dtype=float), np.asarray(df, dtype=float)
    with np.errstate(all="ignore"):
        factor = np.where(df > 0, np.sqrt(df / _chi2_low(np.where(df > 0, df, 1.0))), 1.0)
    return np.asarray(sigma * factor, dtype=float)


_CHI2_LOW: dict[float, float] = {}


def _chi2_low(df: np.ndarray) -> np.ndarray:
    """χ²_FLAG_SIGMA_QUANTILE(df), remembered per df: the df are a few small numbers, and scipy's ppf, asked
    thousands of times in one `gate compare` (robust_sd iterates), was a quarter of its time."""
    if df.ndim == 0 and float(df) in _CHI2_LOW:  # gate compare's usual case: one row's σ
        return np.asarray(_CHI2_LOW[float(df)])
    values, where = np.unique(df, return_inverse=True)
    if len(_CHI2_LOW) > 65536:  # the power benchmark's Satterthwaite df are many: never grow without bound
        _CHI2_LOW.clear()
    missing = [v for v in values.tolist() if v not in _CHI2_LOW]
    if missing:
        _CHI2_LOW.update(zip(missing, chi2_ppf(FLAG_SIGMA_QUANTILE, np.asarray(missing)).tolist(), strict=True))
    low = np.asarray([_CHI2_LOW[v] for v in values.tolist()], dtype=float)
    return low[where].reshape(df.shape)


def outlier_limit(sigma: float | np.ndarray) -> np.ndarray:
    """The relative distance (e^limit − 1) from the arm's median beyond which a run is flagged: shown to people."""
    return np.asarray(np.expm1(log_limit(sigma)), dtype=float)


def log_limit(sigma: float | np.ndarray) -> np.ndarray:
    """The distance in ln(value) from the arm's median beyond which a run is flagged."""
    sigma = np.asarray(sigma, dtype=float)
    return np.maximum(OUTLIER_SIGMAS * np.where(np.isnan(sigma), 0.0, sigma), np.log1p(OUTLIER_MIN_REL))


def _median(y: np.ndarray) -> np.ndarray:
    """The plain median along the last axis, ignoring absent (NaN) runs; NaN for an arm without runs (kept dims).

    Equal to np.nanmedian(y, axis=-1, keepdims=True) bit for bit (tests/unit/verdict/test_outlier_median.py),
    without its masked-array path for short rows, which took a third of `gate compare`'s time."""
    y = np.asarray(y, dtype=float)
    if y.shape[-1] == 0:
        return np.full(y.shape[:-1] + (1,), np.nan)
    ordered = np.sort(y, axis=-1)  # NaN sort last
    n = (~np.isnan(y)).sum(axis=-1, keepdims=True)
    low = np.take_along_axis(ordered, np.maximum((n - 1) // 2, 0), axis=-1)
    high = np.take_along_axis(ordered, np.minimum(n // 2, y.shape[-1] - 1), axis=-1)
    with np.errstate(all="ignore"):
        middle = np.where(low == high, low, (low + high) / 2)
    return np.asarray(np.where(n > 0, middle, np.nan))


def flag_runs(log_values: np.ndarray, sigma: float | np.ndarray = 0.0) -> np.ndarray:
    """Boolean mask (same shape) of flagged runs along the last axis of ln(value); NaN entries are absent runs.

    `sigma` is the run-to-run SD of ln(value) in use (0 when unknown: the OUTLIER_MIN_REL limit applies),
    broadcast against the batch axes.
    """
    y = np.asarray(log_values, dtype=float)
    if y.shape[-1] == 0:
        return np.zeros(y.shape, dtype=bool)
    with np.errstate(all="ignore"):
        distance = np.abs(y - _median(y))
    return _flags(y, distance, sigma)


def _flags(y: np.ndarray, distance: np.ndarray, sigma: float | np.ndarray) -> np.ndarray:
    """flag_runs given each run's distance from its arm's median (robust_sd asks it four times of one arm set)."""
    present = ~np.isnan(y)
    n = present.sum(axis=-1, keepdims=True)
    limit = log_limit(sigma)
    limit = limit[..., None] if limit.ndim else limit
    flagged = present & (n >= FEWEST_RUNS) & (distance > limit)
    enough = (n - flagged.sum(axis=-1, keepdims=True)) >= FEWEST_RUNS - 1
    return np.asarray(flagged & enough)


def mad_sigma(log_values: np.ndarray) -> np.ndarray:
    """robust_sd's start alone: the median absolute deviation from the arm medians over the runs not at them,
    pooled over the arms ((..., arms, runs), NaN = absent), in σ. A fifth of the runs far off moves it little."""
    y = np.asarray(log_values, dtype=float)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        deviation = np.abs(y - _median(y))
        flat = np.where(~np.isnan(y) & (deviation > 0), deviation, np.nan).reshape(y.shape[:-2] + (-1,))
        return np.asarray(_median(flat)[..., 0] / _START_SCALE)


def plain_sd(log_values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """robust_sd without the trim: the pooled within-arm SD of every present run ((..., arms, runs), NaN = absent),
    its degrees of freedom Σ(n − 1) over arms with two runs or more, and the present runs as the kept mask. Where
    σ comes from arms of fewer than MIN_RUNS_TO_CHOOSE runs and nothing else (gate.stats.speed.spread): there σ̂²·df/σ²
    is χ² on df, so the t test holds its level, and a wild run can only widen σ̂."""
    y = np.asarray(log_values, dtype=float)
    present = ~np.isnan(y)
    sigma, df = _pooled_sd(y, present)
    return sigma, df, present


def _pooled_sd(y: np.ndarray, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The pooled within-arm SD of the kept runs ((..., arms, runs)) and its df Σ(n − 1) over arms with two kept
    runs or more; NaN σ where the df is 0."""
    n = keep.sum(axis=-1)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mean = np.where(keep, y, 0.0).sum(axis=-1) / n
        squares = np.where(keep, (y - mean[..., None]) ** 2, 0.0).sum(axis=-1)
    usable = n >= 2
    ss = np.where(usable, squares, 0.0).sum(axis=-1)
    df = np.where(usable, n - 1, 0).sum(axis=-1)
    with np.errstate(all="ignore"):
        sigma = np.where(df > 0, np.sqrt(ss / np.where(df > 0, df, 1)), np.nan)
    return sigma, df


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
        sigma = _median(flat)[..., 0] / _START_SCALE
    keep = present
    # the start's df: every present run less one per arm that has any
    df = np.maximum(present.sum(axis=(-1, -2)) - present.any(axis=-1).sum(axis=-1), 0)
    for _ in range(_TRIM_ITERATIONS):
        wild = flag_sigma(np.where(np.isnan(sigma), np.inf, sigma), df)
        keep = present & ~_flags(y, deviation, wild[..., None])
        sigma, df = _pooled_sd(y, keep)
    return sigma, df, keep


def run_to_remeasure(log_values: np.ndarray, sigma: np.ndarray, higher_is_better: np.ndarray,
                     workload: np.ndarray, metric: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Which run of one arm the runner re-measures on this rule (gate.judging.outliers.find_outlier, and the power
    benchmark for thousands of arms): (..., rows, runs) ln values of the model's speed rows (NaN: absent), the σ
    each row is judged against (..., rows; 0 unknown), each row's direction and workload (rows,) -> the run's and
    the deciding row's index (...,), -1 for none. The run farthest beyond the limit on any row, in relative distance
    from its arm's median (the first row, then run, on a tie), unless a run is flagged WORSE in some of the model's
    workloads only: then none, as a slowdown of one workload may be an intermittent regression, which must not be
    re-measured away. A run worse in every workload (two or more) is a slow server start: a fresh start measures it.

    Where a row's σ is unknown (0: no usable calibration, or one known stale), it is the arm's own σ, as `compare`
    judges the row on the A/B's own runs there (`own_sigma`): `metric` (rows,) names each row's metric, whose rows
    over the model's workloads are pooled (each row alone without it). With the 3% alone, a σ 2% host re-measured an
    ordinary run (1.5σ out) in half of its no-op models, and only runs better than the median or worse in every
    workload: the replacement moved the arm's mean by a third of a σ toward worse (candidate) or better (baseline),
    variance the row's SE does not hold, and the pooled look's speed test sat at 1.3-1.8× its α
    (benchmarks/results/noop_level_diagnosis.md)."""
    y = np.asarray(log_values, dtype=float)
    if y.shape[-2] == 0 or y.shape[-1] == 0:
        return np.full(y.shape[:-2], -1), np.full(y.shape[:-2], -1)
    s = np.nan_to_num(np.asarray(sigma, dtype=float))
    if (s <= 0).any():  # the arm's own σ only where a row's is unknown (the simulator calls this on every look)
        s = np.where(s > 0, s, own_sigma(y, metric))
    flags = flag_runs(y, s)
    centre = _median(y)
    with np.errstate(invalid="ignore"):
        excess = np.abs(np.expm1(y - centre)) - outlier_limit(s)[..., None]
        worse = flags & np.where(np.asarray(higher_is_better, dtype=bool)[:, None], y < centre, y > centre)
    workloads = np.asarray(workload)
    names = list(dict.fromkeys(workloads.tolist()))
    worse_in = np.stack([worse[..., workloads == w, :].any(axis=-2) for w in names], axis=-2)  # (..., W, runs)
    slow_start = np.asarray(worse_in.all(axis=-2) & (len(names) >= 2))
    stays = (worse & ~slow_start[..., None, :]).any(axis=(-2, -1))
    runs = y.shape[-1]
    best = np.where(flags, excess, -np.inf).reshape(y.shape[:-2] + (-1,)).argmax(axis=-1)
    chosen = flags.any(axis=(-2, -1)) & ~stays
    return np.where(chosen, best % runs, -1), np.where(chosen, best // runs, -1)


def own_sigma(log_values: np.ndarray, metric: np.ndarray | None = None) -> np.ndarray:
    """(..., rows, runs) ln values of one arm -> (..., rows) the σ a run of each row is judged wild against from the
    arm's own runs: flag_sigma of robust_sd over the rows of the same `metric` (rows,) (every row alone without it);
    0 where they have no degrees of freedom (the rule's 3% alone)."""
    y = np.asarray(log_values, dtype=float)
    labels = np.arange(y.shape[-2]) if metric is None else np.asarray(metric)
    out = np.zeros(y.shape[:-1])
    for name in dict.fromkeys(labels.tolist()):
        rows = labels == name
        sigma, df, _ = robust_sd(y[..., rows, :])
        bound = np.where((df > 0) & np.isfinite(sigma), flag_sigma(np.nan_to_num(sigma), df), 0.0)
        out[..., rows] = np.asarray(bound)[..., None]
    return out
