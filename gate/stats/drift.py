"""Run-to-run σ that drift cannot inflate (issue 36; docs/statistics.md).

A GPU host drifts through a job (clocks, heat, caches): each run a little slower than the last. The interleave
cancels drift in the A/B's mean difference (A,B,B,A,A,B then B,A,A,B,B,A: at 6+6 both arms sit at the same mean
position), but the spread of an arm's runs about its own mean then holds the drift too: at 0.5% a run a σ 1%
host looked like σ 2.2%, and a −3% regression FAILed 4% of the time. A warm-up leak (each arm's first scored run
slower) does the same. So σ is taken from the residuals after the position terms:
ln(value) = arm mean + β·position + γ·[run 1] + noise, with one β and one γ per job (the model's workloads share
their server starts, so they share the job's drift and warm-up), fitted on the within-arm deviations. Both arms
have a run 1 and the interleave balances position, so neither term moves the A/B's difference much (at 6+6 not
at all); each costs one degree of freedom, so they are taken out only where found (at SCREEN_P), and the σ's df
say so.

`positions` gives where each run of a two-arm interleave sat in the job (`interleave_positions`); a run that
was re-measured keeps its slot's position, though it ran later: after the run that showed it an outlier, or at the
look's end for a slow-mode start (gate.runner.twolooks). Under drift its residual then holds the steps between,
and σ comes out larger: in the power benchmark's drift cell, where the re-measure runs at the job's end, the 4.0%
of PRs re-measured FAILed 20% of the time at −3% against 88% (benchmarks/remeasured.py; docs/statistics.md).
"""
from __future__ import annotations

from collections import OrderedDict

import numpy as np

from gate.stats.distributions import f_sf
from gate.stats.levels import SCREEN_P
from gate.stats.outliers import robust_sd

TERMS = 2  # the position terms fitted: drift (a slope in position) and the first-run effect
# The terms are taken out when their partial F test has p at most SCREEN_P (gate.stats.levels): drift 0.5% a run at
# σ 1% is found at a 3+3 first look with p about 0.02, and a no-op host pays their df one time in twenty.


def interleave_positions(runs: int, arm: int) -> np.ndarray:
    """Positions in the job of an arm's scored runs 0..runs−1 (arm 0 = baseline/A, 1 = candidate/B) under the
    runner's interleave: pair i runs A,B when i is even and B,A when odd (gate.formats.abplan)."""
    i = np.arange(runs)
    return 2 * i + (arm ^ (i % 2))


def arm_positions(n_arms: int, runs: int) -> np.ndarray:
    """(n_arms, runs) positions for arms laid out as [base, cand, base, cand, ...] (gate.judging.speed_rows'
    arms_of_model order): each workload's two arms are one interleave."""
    return np.stack([interleave_positions(runs, k % 2) for k in range(n_arms)]).astype(float)


def detrend(log_values: np.ndarray, positions: np.ndarray, kept: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Remove the job's position terms from (..., arms, runs) ln values (NaN = absent run): one common slope in
    position and one common first-run effect (each arm's run 1: a warm-up leak).

    The terms are the least-squares fit of the within-arm deviations, over the runs in `kept` (all present runs
    when None), pooled over the arms of a batch entry. Returns the values less the fitted terms and the
    coefficients (batch shape + (TERMS,): slope per position, first-run effect; 0 where they cannot be fitted)."""
    y = np.asarray(log_values, dtype=float)
    t = np.broadcast_to(np.asarray(positions, dtype=float), y.shape)
    first = np.broadcast_to((np.arange(y.shape[-1]) == 0).astype(float), y.shape)
    x = np.stack([t, first], axis=-1)  # (..., arms, runs, TERMS)
    use = ~np.isnan(y) if kept is None else (np.asarray(kept, dtype=bool) & ~np.isnan(y))
    n = use.sum(axis=-1, keepdims=True)
    with np.errstate(all="ignore"):
        use = use & (n >= 2)
        y_mean = np.where(use, y, 0.0).sum(axis=-1, keepdims=True) / n
        x_mean = np.where(use[..., None], x, 0.0).sum(axis=-2, keepdims=True) / n[..., None]
        dx = np.where(use[..., None], x - x_mean, 0.0)
        dy = np.where(use, y - y_mean, 0.0)
    sxx = np.einsum("...arp,...arq->...pq", dx, dx)
    sxy = np.einsum("...arp,...ar->...p", dx, dy)
    coef = np.einsum("...pq,...q->...p", np.linalg.pinv(sxx), sxy)
    return y - np.einsum("...arp,...p->...ar", x, coef), coef


# One `gate compare` asks detrended_sd of the same runs about nine times (each speed row's σ, the model's joint
# agreement, its slow starts, the own-runs test): the answers are remembered for small inputs, bit for bit.
_REMEMBERED: OrderedDict[tuple[object, ...], tuple[np.ndarray, ...]] = OrderedDict()
_REMEMBER_AT_MOST = 256
_REMEMBER_SIZE = 4096  # values: the power benchmark's batches are larger and asked once


def detrended_sd(log_values: np.ndarray, positions: np.ndarray, *,
                 shared_starts: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """_detrended_sd, remembered for inputs of at most _REMEMBER_SIZE values (copies are returned)."""
    y, pos = np.asarray(log_values, dtype=float), np.asarray(positions)
    if y.size > _REMEMBER_SIZE:
        return _detrended_sd(y, positions, shared_starts)
    key = (y.shape, y.tobytes(), pos.shape, pos.dtype.str, pos.tobytes(), shared_starts)
    if (found := _REMEMBERED.get(key)) is None:
        found = _REMEMBERED[key] = _detrended_sd(y, positions, shared_starts)
        if len(_REMEMBERED) > _REMEMBER_AT_MOST:
            _REMEMBERED.popitem(last=False)
    sigma, df, kept, fitted = (np.array(a, copy=True) for a in found)
    return sigma, df, kept, fitted


def _detrended_sd(log_values: np.ndarray, positions: np.ndarray,
                  shared_starts: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """robust_sd of the runs, after the position terms where they are found.

    The terms are fitted on all runs, then again on the runs the outlier rule keeps (so neither a wild run nor
    the drift itself decides the terms or what is wild). They are found when they explain the arms' spread
    beyond chance: the partial F test of the within-arm sum of squares with and without them, over the kept
    runs, at SCREEN_P. Only then are they taken out, at a df each; otherwise σ is the plain robust_sd with all
    its df (three runs an arm leave few: two terms fitted on no drift cost a 3+3 first look a quarter of its
    df and much of its power). Returns (σ, df, kept, found) like robust_sd, `found` per batch entry.

    `shared_starts`: the arms are one model's workloads in one job, so the runs at one position are ONE server start
    (issue 36, m-noop-runshared-s2). The terms are common to the workloads, so under no drift their sum of squares
    is as large as the starts' own effect, which the workloads share: against the pooled within-arm spread, whose
    df count the workloads as independent, the test found "drift" in 21% (two workloads) to 44% (four) of no-op
    6+6 models with 80% of a run's variance shared, and fitting it took that shared noise out of σ (σ̂ low: 1.5%
    false FAIL). The error term is then the larger of the pooled one and the starts' own residual mean square (the
    workload-mean residual of each start, on its own df: `_start_ms`), each exact when its assumption holds, so the
    test keeps its level either way; with independent workloads the two agree and little is lost."""
    y = np.asarray(log_values, dtype=float)
    first, _ = detrend(y, positions)
    second, _ = detrend(y, positions, robust_sd(first)[2])
    sigma_fit, df_fit, kept_fit = robust_sd(second)
    ss_raw, ss_fit = _within_ss(y, kept_fit), _within_ss(second, kept_fit)
    df_left = df_fit - TERMS
    with np.errstate(all="ignore"):
        error, error_df = ss_fit / np.where(df_left > 0, df_left, 1), df_left
        if shared_starts:
            ms_start, df_start = _start_ms(second, kept_fit, positions)
            wider = (df_start > 0) & (ms_start > error)
            error, error_df = np.where(wider, ms_start, error), np.where(wider, df_start, error_df)
        f = ((ss_raw - ss_fit) / TERMS) / error
        p = np.where((error_df > 0) & (ss_fit > 0), f_sf(f, TERMS, np.maximum(error_df, 1)), 1.0)
    found = p <= SCREEN_P
    sigma_raw, df_raw, kept_raw = robust_sd(y)
    with np.errstate(all="ignore"):
        sigma_fitted = sigma_fit * np.sqrt(df_fit / np.where(df_left > 0, df_left, 1))
    sigma = np.where(found, sigma_fitted, sigma_raw)
    df = np.where(found, df_left, df_raw)
    kept = np.where(np.asarray(found)[..., None, None], kept_fit, kept_raw)
    return sigma, df, kept, np.asarray(found)


def _start_ms(y: np.ndarray, kept: np.ndarray, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The server starts' residual mean square and its df: each start's (position's) mean within-arm deviation of
    the kept runs over the arms that ran in it, squared times their count, summed; df = starts − position patterns
    (one arm mean each: baseline, candidate) − TERMS. Under no drift it estimates what the terms' mean square does,
    σ_e² + W·σ_u² with σ_u² the starts' shared variance (W workloads), independent workloads or not.

    `positions` is one (arms, runs) layout for the whole batch, or one per batch entry ((..., arms, runs): the power
    benchmark's PRs, whose re-measured runs sit where each ran); each entry is then taken on its own layout, with
    the same result as alone. df 0 where `positions` has fewer than two axes."""
    pos = np.asarray(positions, dtype=float)
    if pos.ndim < 2:
        return np.zeros(y.shape[:-2]), np.zeros(y.shape[:-2])
    kept = np.asarray(kept, dtype=bool) & ~np.isnan(y)
    n = kept.sum(axis=-1, keepdims=True)
    with np.errstate(all="ignore"):
        dev = np.where(kept & (n >= 2), y - np.where(kept, y, 0.0).sum(axis=-1, keepdims=True) / n, 0.0)
    # every position any entry has: a start no run of an entry sat at counts nothing there (count 0)
    at = np.broadcast_to(pos, y.shape)[..., None] == np.unique(pos)  # (..., arms, runs, starts)
    use = (kept & (n >= 2))[..., None] & at
    count = use.sum(axis=(-3, -2))
    total = np.einsum("...ar,...ars->...s", dev, use.astype(float))
    with np.errstate(all="ignore"):
        ss = np.where(count > 0, total ** 2 / np.where(count > 0, count, 1), 0.0).sum(axis=-1)
    df = (count > 0).sum(axis=-1) - _patterns(pos) - TERMS
    with np.errstate(all="ignore"):
        return np.where(df > 0, ss / np.where(df > 0, df, 1), 0.0), np.maximum(df, 0)


def _patterns(pos: np.ndarray) -> np.ndarray:
    """The distinct arms' position rows of each (arms, runs) layout in `pos` (len(np.unique(layout, axis=0)) each)."""
    same = (pos[..., :, None, :] == pos[..., None, :, :]).all(axis=-1)  # (..., arms, arms)
    earlier = np.tril(np.ones(same.shape[-2:], dtype=bool), k=-1)
    return np.asarray((~(same & earlier).any(axis=-1)).sum(axis=-1))


def _within_ss(y: np.ndarray, kept: np.ndarray) -> np.ndarray:
    """The within-arm sum of squares of the kept runs about their arm's mean (arms with two kept runs or more)."""
    n = kept.sum(axis=-1, keepdims=True)
    with np.errstate(all="ignore"):
        mean = np.where(kept, y, 0.0).sum(axis=-1, keepdims=True) / n
    return np.asarray(np.where(kept & (n >= 2), (y - mean) ** 2, 0.0).sum(axis=(-1, -2)), dtype=float)


def without_terms(log_values: np.ndarray, positions: np.ndarray | None, left_out: np.ndarray | None = None) -> np.ndarray:
    """The runs less the position terms where detrended_sd finds them (as they are elsewhere, or without
    `positions`): what slow-mode starts are looked for in (gate.stats.slowmode), so that a drifting job's last
    runs or a warm-up leak's first run, slower in every workload alike, are not taken for a slow mode.

    `left_out` (same shape, True = not in the fit): runs the terms are neither found nor fitted on, but taken out
    of all the same. Slow-mode starts must be left out of the fit (gate.stats.slowmode.find_slow_starts): a slow
    start in an arm's first run looks like a warm-up leak and, fitted, hid itself (a fifth of the slow starts of
    a σ 1% host with 20% of starts 8% slow went unseen that way)."""
    y = np.asarray(log_values, dtype=float)
    if positions is None or y.shape[-1] == 0:
        return y
    fit_on = y if left_out is None else np.where(np.asarray(left_out, dtype=bool), np.nan, y)
    found = detrended_sd(fit_on, positions, shared_starts=True)[3]  # the model's arms in one job
    first, _ = detrend(fit_on, positions)
    _, coef = detrend(fit_on, positions, robust_sd(first)[2])
    t = np.broadcast_to(np.asarray(positions, dtype=float), y.shape)
    run1 = np.broadcast_to((np.arange(y.shape[-1]) == 0).astype(float), y.shape)
    fitted = y - np.einsum("...arp,...p->...ar", np.stack([t, run1], axis=-1), coef)
    return np.where(np.asarray(found)[..., None, None], fitted, y)
