"""Slow-mode server starts (issue 36; docs/statistics.md): a mixture, not noise.

The runbook's CI stage 1 reached 43.2–44.7 req/s in a first attempt and 57.0–59.1 after the server restarted: a
server start can land in a slow mode, and then every workload that server serves is slow in that run. Judged as
noise, slow starts inflate σ and, two in six candidate runs, look like an intermittent regression (55% of no-op
PRs WARNed with 20% of starts 8% slow). So a run of the in-job A/B is a slow-mode start when EVERY workload of
the model (two or more) is worse than its arm's median by more than max(SLOW_MODE_SIGMAS·σ, the outlier rule's
3%) in that run, and such runs are set aside in both arms, before σ is estimated (`fast_mode`): the row is
judged on the fast mode, and says so.
Jointly over the workloads the limit can be lower than the one-run outlier rule's 5σ: two independent workloads
beyond 3σ together by chance is a one-in-a-million run. Where the workloads share their server start's effect they
are not independent, so the start's own effect must be as far out in the starts' own spread (`_start_beyond`).

The arm's median decides, so a slow mode is always a minority of an arm's runs: a candidate whose runs are all
(or mostly) slow has a slow median, nothing is set aside, and its shift is a regression. An intermittent
regression of one workload is not a slow mode: the model's other workloads are not slow with it.
"""
from __future__ import annotations

import warnings

import numpy as np

from gate.stats.drift import without_terms
from gate.stats.outlier_rule import OUTLIER_MIN_REL
from gate.stats.outliers import MIN_RUNS_TO_CHOOSE, mad_sigma

SLOW_MODE_SIGMAS = 3.0


def slow_mode_runs(arms: np.ndarray, *, higher_is_better: bool) -> np.ndarray:
    """(..., 2W, runs) ln values of the model's W workloads, [w0 base, w0 cand, w1 base, ...] (NaN = absent) ->
    (..., 2, runs) bool: the runs (base, candidate) that are slow-mode starts. None are with fewer than two
    workloads, or where a workload lacks the run.

    A slow mode is a mixture: an arm's runs split into a fast mode and at most as many slow-mode starts. For
    k = 1 .. ⌊n/2⌋ the k runs slowest over the model's workloads (their mean deviation from the arm's median) are
    slow-mode starts when every one of them is worse, in every workload, than the median of the arm's OTHER runs
    by more than max(SLOW_MODE_SIGMAS·σ, the outlier rule's 3%), and its start effect is as far out in the other
    starts' spread (`_start_beyond`), and none of the other runs is; the largest such k is taken. The other runs are
    the reference because the arm's median is not: with half an arm's runs slow (3 of 6 on a host with 20% of
    starts slow, one model in twelve) the median sat between the modes and no start was found. σ is the median
    absolute deviation of the runs left (gate.stats.outliers.mad_sigma): the slow starts must not widen the limit
    that finds them. At most half: a candidate whose runs are mostly or all slow is a regression."""
    y = np.asarray(arms, dtype=float)
    lead, runs = y.shape[:-2], y.shape[-1]
    if y.shape[-2] < 4 or y.shape[-2] % 2 or runs < 2:
        return np.zeros(lead + (2, runs), dtype=bool)
    sign = -1.0 if higher_is_better else 1.0
    by = y.reshape(lead + (y.shape[-2] // 2, 2, runs)) * sign  # (..., W, 2, runs): larger is worse
    present, effect = _slowness(y, higher_is_better)  # (..., 2, runs)
    n = present.sum(axis=-1, keepdims=True)
    rank = np.argsort(np.argsort(np.where(present, -effect, np.inf), axis=-1), axis=-1)  # 0 = slowest
    found = np.zeros(lead + (2, runs), dtype=bool)
    for k in range(1, runs // 2 + 1):
        chosen = present & (rank < k) & (2 * k <= n)
        rest = np.where(_per_row(chosen, y.shape[-2]), np.nan, y)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            reference = np.nanmedian(np.where(chosen[..., None, :, :], np.nan, by), axis=-1, keepdims=True)
        s = np.nan_to_num(mad_sigma(rest))
        limit = np.reshape(np.maximum(SLOW_MODE_SIGMAS * s, np.log1p(OUTLIER_MIN_REL)), np.shape(s) + (1, 1, 1))
        with np.errstate(invalid="ignore"):
            beyond = np.where(np.isnan(by), False, by - reference > limit).all(axis=-3)  # (..., 2, runs)
        beyond &= _start_beyond(by, reference, chosen, np.asarray(present), limit[..., 0, :, :], s)
        # every chosen run beyond, and none of the others: a slow mode that is half the arm or more is no minority
        accepted = ((beyond & chosen).sum(axis=-1, keepdims=True) == k) & ~(beyond & ~chosen & present).any(
            axis=-1, keepdims=True)
        found = np.where(accepted, chosen, found)
    return np.asarray(found, dtype=bool)


def _start_beyond(by: np.ndarray, reference: np.ndarray, chosen: np.ndarray, present: np.ndarray,
                  limit: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    """(..., 2, runs): the run's start effect (its mean deviation over the model's W workloads from `reference`) is
    beyond √W times the limit measured in the spread of the OTHER starts' effects (their MAD about each arm's median),
    or, where the workloads are independent, what "every workload beyond the limit" already implies.

    "Every workload beyond 3σ" is rare only while the workloads are independent: one server start serves them all,
    and where it carries most of a run's variance (issue 36: 80% shared, σ 2%) a start 3σ slow is slow in every
    workload at once, one run in a few hundred, and setting it aside took the slow tail of the runs out of σ and of
    an arm's mean (1.5% of no-op PRs FAILed). The mean of W independent deviations has σ/√W, so every workload beyond
    L puts it √W·L/σ of its own σ out; asked of the starts' effects in their own spread, the rule keeps that rarity
    when the workloads share the start too (a shared σ_u makes the starts' spread σ_u, not σ/√W), and asks no more
    of independent ones. `limit`: the rows' limit, max(SLOW_MODE_SIGMAS·σ, 3%); `sigma`: their MAD σ; the starts'
    limit is the same multiple of the starts' own spread."""
    workloads = by.shape[-3]
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        effect = np.nanmean(by - reference, axis=-3)  # (..., 2, runs): the start's effect
        others = np.where(present & ~chosen, np.nanmean(by, axis=-3), np.nan)  # the other starts, per arm
        spread = np.reshape(np.nan_to_num(mad_sigma(others)), np.shape(sigma) + (1, 1))
        sigma = np.reshape(sigma, np.shape(sigma) + (1, 1))
        ratio = np.where(sigma > 0, limit / np.where(sigma > 0, sigma, 1.0), SLOW_MODE_SIGMAS)
        start_limit = np.sqrt(workloads) * ratio * spread
        return np.asarray(np.where(np.isnan(effect), False, effect > start_limit), dtype=bool)


def find_slow_starts(arms: np.ndarray, positions: np.ndarray | None, *,
                     higher_is_better: bool) -> tuple[np.ndarray, np.ndarray]:
    """The slow-mode starts of an in-job A/B ((..., 2W, runs) as slow_mode_runs reads them) and the arms less the
    job's position terms (gate.stats.drift.without_terms), the terms fitted on the fast mode.

    Drift and a warm-up leak are not a slow mode, so the starts are looked for after the position terms; but a
    slow start is not drift either, and fitted together with the terms it is taken for one (a slow start in an
    arm's first run is a warm-up leak to the fit, and was then taken out of itself; under drift of 0.5% a run the
    fit absorbed enough of an 8% slow start that a 6+6 look found 38% of them). So the terms are fitted as the
    mixture is looked for: on the runs left after each arm's slowest runs are set aside in turn (none, then one
    more at a time up to ⌊n/2⌋, each ranked in the previous fit's residuals, after any slow starts already found
    in the raw runs; no more once two of an arm remain), and the most slow starts any of those fits shows are the
    candidates. They stand as far as the terms fitted on every other run show them again: a fit that leaves
    ordinary runs out can make them look slow, the fit that leaves out only the slow starts cannot. Returns
    ((..., 2, runs) slow-mode starts, (..., 2W, runs) the arms less the terms fitted without them)."""
    y = np.asarray(arms, dtype=float)
    rows = y.shape[-2]
    found = slow_mode_runs(y, higher_is_better=higher_is_better)
    if positions is None:
        return found, y
    left = found
    for _ in range(y.shape[-1] // 2 + 1 if rows >= 4 else 0):  # two workloads or more
        steady = without_terms(y, positions, left_out=_per_row(left, rows))
        seen = slow_mode_runs(steady, higher_is_better=higher_is_better)
        found = np.where(seen.sum(axis=-1, keepdims=True) > found.sum(axis=-1, keepdims=True), seen, found)
        left = left | _slowest(np.where(_per_row(left, rows), np.nan, steady), higher_is_better)
    slow = slow_mode_runs(without_terms(y, positions, left_out=_per_row(found, rows)), higher_is_better=higher_is_better)
    return slow, without_terms(y, positions, left_out=_per_row(slow, rows))


def _slowest(arms: np.ndarray, higher_is_better: bool) -> np.ndarray:
    """(..., 2, runs): each arm's slowest present run over the model's workloads (`_slowness`), where the arm has
    at least three: an arm with one left in the fit was fitted exactly, its residuals tied to 1e-17, and round-off
    chose the slow starts."""
    present, effect = _slowness(arms, higher_is_better)
    top = np.where(present, effect, -np.inf).argmax(axis=-1)
    return np.asarray((np.arange(present.shape[-1]) == top[..., None]) & present
                      & (present.sum(axis=-1, keepdims=True) >= 3), dtype=bool)


def _slowness(arms: np.ndarray, higher_is_better: bool) -> tuple[np.ndarray, np.ndarray]:
    """(..., 2W, runs) as slow_mode_runs reads them -> ((..., 2, runs) the run is there in every workload, (..., 2,
    runs) how much slower it is than its arm's median, the mean over the model's workloads)."""
    y = np.asarray(arms, dtype=float)
    by = y.reshape(y.shape[:-2] + (y.shape[-2] // 2, 2, y.shape[-1])) * (-1.0 if higher_is_better else 1.0)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        effect = np.nanmean(by - np.nanmedian(by, axis=-1, keepdims=True), axis=-3)
    return np.asarray(~np.isnan(by).any(axis=-3), dtype=bool), np.asarray(effect, dtype=float)


def steady_given(arms: np.ndarray, positions: np.ndarray | None, slow: np.ndarray) -> np.ndarray:
    """The arms ((..., 2W, runs)) less the job's position terms fitted on the runs that are not slow-mode starts
    (`slow`, (..., 2, runs), found on another metric of the same server starts: `find_slow_starts`' steady arms)."""
    y = np.asarray(arms, dtype=float)
    if positions is None:
        return y
    return without_terms(y, positions, left_out=_per_row(slow, y.shape[-2]))


def on_fast_mode(arms: np.ndarray, positions: np.ndarray | None, *, higher_is_better: bool,
                 slow: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """An in-job A/B's arms ((..., 2W, runs)) judged on the fast mode: the slow-mode starts (`slow`, found on another
    metric of the same server starts, else found here: `find_slow_starts`), the arms with them absent (`fast_mode`),
    and the candidate runs slower in every workload beside them, on the arms less the job's position terms
    (`whole_model_slower`). Returns (fast arms, slow (..., 2, runs), slower (..., runs), terms (..., 2, runs)): the
    position terms taken out of each run of the base and candidate arms (one β and γ for the model's workloads, so
    the same in each of them; 0 where they are not found), which the A/B's difference is taken without
    (gate.stats.speed.shift_test's callers): a re-measured run sits where it ran, late in the job, and the interleave
    no longer balances the arms' positions. gate.judging.speed_rows calls it with one A/B, the power benchmark with
    B at once."""
    y = np.asarray(arms, dtype=float)
    if slow is None:
        slow, steady = find_slow_starts(y, positions, higher_is_better=higher_is_better)
    else:
        steady = steady_given(y, positions, slow)
    terms = np.nan_to_num(y[..., :2, :] - steady[..., :2, :])
    return fast_mode(y, slow), slow, whole_model_slower(fast_mode(steady, slow), higher_is_better=higher_is_better), terms


def model_slow_set(throughput_arms: np.ndarray, positions: np.ndarray | None, *,
                   run_order: bool) -> np.ndarray | None:
    """The model's one set of slow-mode starts (..., 2, runs), found on its throughput rows (the arms of its
    workloads' speed metric where higher is better, (..., 2W, runs)) and set aside from EVERY speed row of the model
    (issue 36: a server start is slow or not for all it serves), where the job's run order is known (`gate run`'s
    log). None without the order (two trees by hand: each metric finds its own, `row_on_fast_mode`) or without
    runs. gate.judging.speed_rows.model_slow_starts calls it with one A/B, the power benchmark with B at once."""
    y = np.asarray(throughput_arms, dtype=float)
    if not run_order or not y.size:
        return None
    return find_slow_starts(y, positions, higher_is_better=True)[0]


def row_on_fast_mode(arms: np.ndarray, positions: np.ndarray | None, *, higher_is_better: bool, trim: bool,
                     model_slow: np.ndarray | None = None
                     ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray, np.ndarray | None]:
    """The model's arms ((..., 2W, runs)) as a speed row of an in-job A/B uses them: where they are not trimmed
    (gate.stats.speed.trims) no slow-mode start is looked for, and the arms stay as they are; else `on_fast_mode`
    with the model's set (`model_slow_set`) where it is given and matches the arms' runs, else the starts found on
    the row's own metric. Returns (arms, slow (..., 2, runs) or None where none was looked for, the candidate runs
    slower in every workload (..., runs): `whole_model_slower`, the position terms (..., 2, runs) or None).
    gate.judging.speed_rows calls it for a row and for the σ the rows' agreement test uses, the power benchmark
    with B A/Bs at once."""
    y = np.asarray(arms, dtype=float)
    if not trim:
        return y, None, whole_model_slower(y, higher_is_better=higher_is_better), None
    given = (model_slow if model_slow is not None and np.shape(model_slow) == y.shape[:-2] + (2, y.shape[-1])
             else None)
    return on_fast_mode(y, positions, higher_is_better=higher_is_better, slow=given)


def fast_mode(arms: np.ndarray, slow: np.ndarray) -> np.ndarray:
    """The arms ((..., 2W, runs), as slow_mode_runs reads them) with the slow-mode runs ((..., 2, runs)) absent
    (NaN) in every workload: what σ is estimated on."""
    y = np.asarray(arms, dtype=float)
    if y.shape[-2] == 0:
        return y
    return np.where(_per_row(slow, y.shape[-2]), np.nan, y)


def whole_model_slower(arms: np.ndarray, *, higher_is_better: bool) -> np.ndarray:
    """(..., 2W, runs) as slow_mode_runs reads them (slow-mode runs already absent: `fast_mode`) -> (..., runs)
    bool: the candidate runs in which EVERY workload (two or more) is worse than that workload's baseline median by
    more than max(SLOW_MODE_SIGMAS·σ, 3%). Some such runs among others are a slow mode that escaped slow_mode_runs
    (a slow arm median hides it), so the row may not FAIL on them (`fail_blocker`).

    Only as a mixture, though: beside a slow mode the candidate's other runs sit with the baseline. Where they
    are themselves worse than the baseline's median by more than half that limit, in every workload, the whole
    build is slower and the runs past the limit are its own spread straddling it, not a slow mode: none is
    counted (a −3% build on a σ 0.4% H100 had 4 of its 6 runs past the limit and was barred from FAILing).
    With fewer than MIN_RUNS_TO_CHOOSE candidate runs there is no fast mode to stand apart from, no telling, and every run past the limit counts (at a
    first look the model then extends)."""
    y = np.asarray(arms, dtype=float)
    lead, runs = y.shape[:-2], y.shape[-1]
    if y.shape[-2] < 4 or y.shape[-2] % 2:
        return np.zeros(lead + (runs,), dtype=bool)
    by = y.reshape(lead + (y.shape[-2] // 2, 2, runs))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        worse = (by[..., 1, :] - np.nanmedian(by[..., 0, :], axis=-1, keepdims=True)) * (-1.0 if higher_is_better else 1.0)
    s = np.nan_to_num(mad_sigma(y))
    limit = np.reshape(np.maximum(SLOW_MODE_SIGMAS * s, np.log1p(OUTLIER_MIN_REL)), np.shape(s) + (1, 1))
    with np.errstate(invalid="ignore"):
        slow = np.where(np.isnan(worse), False, worse > limit).all(axis=-2)  # (..., runs)
    rest = ~slow & ~np.isnan(worse).any(axis=-2)  # the candidate's runs not past the limit
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        rest_shift = np.nanmean(np.where(rest[..., None, :], worse, np.nan), axis=-1)  # (..., W)
    shifted = np.where(np.isnan(rest_shift), False, rest_shift > limit[..., 0] / 2).all(axis=-1)
    shifted &= (~np.isnan(worse).any(axis=-2)).sum(axis=-1) >= MIN_RUNS_TO_CHOOSE
    return np.asarray(slow & ~shifted[..., None], dtype=bool)


def remeasure_depth(arms: np.ndarray, positions: np.ndarray | None, *, higher_is_better: bool) -> np.ndarray:
    """(..., 2W, runs) ln values as slow_mode_runs reads them, with their positions in the job (None: unknown) ->
    (..., 2, runs): how far each run is a slow-mode start worth a fresh server (the mean, over the model's
    workloads, of how much worse it is than the OTHER arm's median, after the job's position terms), NaN where it
    is not one. A run is one when EVERY workload (two or more) is worse than the other arm's median by more than
    max(SLOW_MODE_SIGMAS·σ, the outlier rule's 3%), σ the median absolute deviation of all the runs.

    The runner re-measures the deepest such run of each arm, within its one re-measure per arm and model, in
    both arms alike (gate.runner.twolooks; `deepest_slow_start` picks it, for the power benchmark too). Against the other arm's median,
    because its own arm's can sit in the slow mode: with 4 of a candidate's 6 starts slow (1.5% of models where 20%
    of starts are slow) nothing is a minority to set aside, and the row judged them a regression. A uniform
    regression moves every candidate run alike: the re-measure is slow too, and nothing changes but one run more.
    A slowdown of one workload is no slow start (the model's other workloads are not slower with it): it stays.

    The position terms are fitted with only the raw runs' slow-mode minority left out, not on `find_slow_starts`'
    fast mode: that fit sets aside at most half an arm, and where most of an arm's starts are slow (what this looks
    past) the fit on the rest took the slow starts for drift (3+3 runs, two of the baseline's 20-25% slow: 7% a run)
    and nothing was re-measured."""
    y = np.asarray(arms, dtype=float)
    lead, runs = y.shape[:-2], y.shape[-1]
    if y.shape[-2] < 4 or y.shape[-2] % 2 or runs < 2:
        return np.full(lead + (2, runs), np.nan)
    steady = without_terms(y, positions, left_out=_per_row(slow_mode_runs(y, higher_is_better=higher_is_better), y.shape[-2]))
    sign = -1.0 if higher_is_better else 1.0
    by = steady.reshape(lead + (y.shape[-2] // 2, 2, runs)) * sign  # (..., W, 2, runs): larger is worse
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        other = np.flip(np.nanmedian(by, axis=-1, keepdims=True), axis=-2)  # (..., W, 2, 1): the other arm's median
        worse = by - other
    s = np.nan_to_num(mad_sigma(steady))
    limit = np.reshape(np.maximum(SLOW_MODE_SIGMAS * s, np.log1p(OUTLIER_MIN_REL)), np.shape(s) + (1, 1, 1))
    with np.errstate(invalid="ignore"):
        every = np.where(np.isnan(worse), False, worse > limit).all(axis=-3)  # (..., 2, runs)
        depth = worse.mean(axis=-3)
    return np.where(every, depth, np.nan)


def deepest_slow_start(depth: np.ndarray) -> np.ndarray:
    """(..., runs) `remeasure_depth` of arms -> (...,) the index of each arm's deepest slow-mode start, -1 for none:
    the run the runner re-measures at a look's end (gate.judging.outliers.slow_starts_to_remeasure; the power
    benchmark's simulated arms too), the first on a tie."""
    d = np.asarray(depth, dtype=float)
    found = np.isfinite(d).any(axis=-1)
    return np.asarray(np.where(found, np.where(np.isfinite(d), d, -np.inf).argmax(axis=-1), -1))


def fail_blocker(slower: np.ndarray, present: np.ndarray, first_look: bool) -> np.ndarray:
    """Whether whole-model-slower candidate runs (`whole_model_slower`) bar a FAIL: at a first look any (three
    starts all in the host's slow mode happen on 0.8% of models with 20% of starts slow; more runs tell), at the
    pooled look some but not all (a mixture of fast and slow starts; six slow of six are a regression)."""
    count, n = np.asarray(slower).sum(axis=-1), np.asarray(present).sum(axis=-1)
    return np.asarray((count >= 1) if first_look else ((count >= 1) & (count < n)), dtype=bool)


def _per_row(per_arm: np.ndarray, rows: int) -> np.ndarray:
    """(..., 2, runs) per arm -> (..., rows, runs) per workload row of the (..., 2W, runs) layout: row k is arm k % 2."""
    return np.take(np.asarray(per_arm, dtype=bool), np.arange(rows) % 2, axis=-2)

