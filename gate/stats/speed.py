"""The speed test of docs/statistics.md: calibrated σ pooled over a model's
workloads, a between-job variance for comparisons across jobs, and arms summarized without wild runs.

Everything works on batches (leading axes) so that `gate compare` (a batch of one row) and the power
benchmark (thousands of simulated PRs) run the same arithmetic.

Per gated row, on y = ln(value) of the runs kept by `gate.stats.outliers`:
  worse  = s·(ȳ_cand − ȳ_base), s = −1 when higher is better (throughput), +1 for latency
  same job (interleaved A/B):   SE² = σ²·(1/n_b + 1/n_c),                   df = df_σ
  across jobs (baseline file):  SE² = msd + σ²·(1/n_b + 1/n_c − h̄)  (never below the same-job SE²)
      msd: mean square of the cross-job A/A pairs' log-mean differences about ZERO (an order or job effect
      is variance here, not a nuisance to subtract), pooled over the model's workloads; h̄ their mean
      1/n_a + 1/n_b. For a 3+3 comparison against 3+3 pairs that is msd itself: the A/A differences are
      what a no-op difference across jobs looks like. df by Satterthwaite, with msd counted on as many
      degrees of freedom as there are independent PAIRS (a job effect is shared by the job's workloads,
      so workloads of one pair are not independent evidence). Never clipped at zero: an estimate of
      2τ² that happens to come out small must not turn into a σ-only test with σ's many df.
  p = one-sided t tail of worse/SE.
In one job (interleaved A/B) the A/B's own runs carry a valid estimate of σ (issue 21): their pooled
within-arm spread over the model's workloads (`own_noise`). With a fresh calibration whose σ agrees with
it (a one-sided F test at SCREEN_P over the model's gated speed metrics together: `joint_agreement`; and
not far noisier than them, at STRONG_P: gate.stats.levels), the two are pooled (more df); without a
calibration, with a stale one, or when the A/B's spread is larger than the calibration's beyond chance, the row
stands on its own runs alone and says so. Across jobs the calibration stays required (the job effect needs A/A pairs), and the
row WARNs at most: a whole job running slower cannot be told from a regression there
(gate.judging.speed_rows.speed_blockers).

A row may FAIL only in one job, with at least MIN_CALIBRATION_DF degrees of freedom behind its σ, at least two
runs per side, when no candidate run better than the others was set aside, and when the same shift on σ from
the A/B's own runs alone (`own_runs_p`) has p at most the look's α, or, at the first look of `gate run`, the
look's α over the model's gated speed rows (gate.judging.compare applies it;
gate.stats.thresholds.Thresholds.own_runs_bonferroni says why); otherwise it can WARN at most
(gate.judging.speed_rows.speed_blockers and gate.judging.compare say why). The row is unstable (WARN at least,
never FAIL) when two or more of the candidate's runs were set aside as worse, or when its runs split across a gap
with as many in a cluster far worse than the baseline's median (`_intermittent`): an intermittent regression must
not pass silently, and one wild run is heavy-tailed noise, not a pattern. At `gate run`'s first look one such run
of three is enough: the unstable row extends the model, and the pooled look needs two of six. At a look that ends
the comparison the pattern must also be unlikely
on this host: P(that many of the candidate's runs | the host's wild-run share) at most STRONG_P (`host_wild_share`).

`mde` is the smallest worsening the row could have caught with 80% power at its level, from the σ and df
in use; above SENSITIVITY_FACTOR × the floor the row is blind there and says so.
"""
from __future__ import annotations

import dataclasses
import math
import warnings
from dataclasses import dataclass
from typing import Any, Sequence, cast

import numpy as np

from gate.formats.noise_model import MIN_CALIBRATION_DF, Calibration, sigma_usable
from gate.stats.distributions import binom_sf, f_cdf, f_sf, t_isf, t_ppf, t_sf
from gate.stats.drift import detrended_sd
from gate.stats.levels import SCREEN_P, STRONG_P
from gate.stats.outlier_rule import OUTLIER_MIN_REL
from gate.stats.outliers import MIN_RUNS_TO_CHOOSE, flag_runs, flag_sigma, plain_sd, robust_sd

# A/A pairs the docs advise per runner class: the job-to-job spread a speed row across jobs WARNs on.
ADVISED_PAIRS = 3
# The A/B's own spread disagrees with the calibration when F = σ²_own/σ²_cal is unlikely under equal σ at SCREEN_P;
# and the calibration disagrees, the other way, when it is noisier than the runs at STRONG_P (issue 36): an A/A
# with slow-mode starts in it made σ 3.4% on a σ 1% host, and pooled into every row. Stricter one way than the
# other: a calibration a little noisier than one A/B's runs is ordinary, and pooling it only costs power.
POWER = 0.8
# A row is unstable when at least UNSTABLE_MIN_RUNS of the candidate's runs were set aside as worse (two of three,
# two of six). One wild run is what heavy-tailed GPU noise shows
# (Student-t₃ runs at σ 2% set one aside in ~1% of row-looks, which made a fifth of no-op PRs WARN; across jobs,
# with 2% of runs 20% slow, one of three made 42.7% of no-op PRs WARN); two are a pattern. Where more runs
# follow (`gate run`'s first look) one worse run of three is enough: it extends the model
# (gate.judging.look_rule.decide), so none passes unseen, and the pooled look needs two of six.
UNSTABLE_MIN_RUNS = 2
# ... and, at a look that ends the comparison, when the host's own wild runs make that many unlikely: P(at least k
# of the candidate's n runs wild | the share of wild runs in the calibration and the baseline's arms) at most
# STRONG_P. With 5% of runs 6% slow, two of six in one of a PR's eight workloads made 17.7% of no-op PRs WARN.
# A host whose calibration and baseline showed no wild run keeps the rule as it was (share 0: the intermittent cells).
# (Issue 49 removed a share of at least a third of the candidate's runs: the binomial bound asks how many of n
# are wild, and up to six runs an arm, all `gate run` and the runbook make, the third never bound.)
# A candidate run this far (or 3%) worse than the baseline's median, and this far from the better cluster, is
# "far" (intermittent). σ here is the baseline arms' own spread (`baseline_sigma`): a split candidate arm would
# inflate the pooled σ and hide itself. With the pooled σ the multiple was 2 (WARN on 7.2% of no-op PRs at
# σ 2% with t₃ tails); with the baseline's σ, 4 keeps both intermittent cells at ≥ 97% and that WARN at 3.4%.
INTERMITTENT_SIGMAS = 4.0
# A row is blind when its MDE exceeds this multiple of its floor. FAIL also needs the estimate past the floor,
# so a change AT the floor is caught at most half the time at any σ (docs/statistics.md); the gate's
# stated goals sit at 1.5× the floor over the whole two-look plan, and a first look at σ 1% (α₁ 0.0001 over a
# model's rows) reaches about 2.3× (benchmarks/results/verdict_power.md). Past 3× the look says it is blind, and
# the first look extends; at 2.5× a σ̂ a little high made a fifth of σ 1% no-op models "blind" (8.2 scored runs).
SENSITIVITY_FACTOR = 3.0

# Where the σ of an in-job row came from (own_noise); the codes batch.
POOLED, OWN_NO_CALIBRATION, OWN_STALE, OWN_DISAGREES = 0, 1, 2, 3
SOURCE_TEXT = {POOLED: "calibration and the A/B's own runs pooled",
               OWN_NO_CALIBRATION: "the A/B's own runs (no usable calibration)",
               OWN_STALE: "the A/B's own runs (calibration stale)",
               OWN_DISAGREES: "the A/B's own runs (their spread disagrees with the calibration's σ)"}


@dataclass(frozen=True)
class SpeedNoise:
    """One metric's noise for one model: the workloads' calibrations pooled (σ has far more df that way)."""

    sigma: float  # within-job run-to-run SD of ln(value)
    sigma_df: int
    cross_pairs: int = 0  # independent A/A pairs whose arms ran in different jobs
    cross_msd: float = 0.0  # mean square of their log-mean differences, about zero
    cross_h: float = 0.0  # mean of 1/n_a + 1/n_b over those differences
    cross_df: int = 0  # differences pooled (pairs × workloads)
    wild_runs: int = 0  # the calibration's runs the outlier rule set aside ...
    runs_seen: int = 0  # ... of all its runs (host_wild_share)

    @property
    def usable(self) -> bool:
        return bool(sigma_usable(self.sigma, self.sigma_df))

    @classmethod
    def pooled(cls, calibrations: Sequence[Calibration]) -> "SpeedNoise | None":
        """Pool the workloads' calibrations of one metric of one model; None when there are none."""
        cals = [c for c in calibrations if c is not None]
        if not cals:
            return None
        df = sum(c.df for c in cals)
        ss = sum(c.sigma ** 2 * c.df for c in cals)
        diffs = sum(c.cross_diffs for c in cals)
        return cls(sigma=math.sqrt(ss / df) if df else math.nan, sigma_df=df,
                   cross_pairs=min(c.cross_pairs for c in cals),
                   cross_msd=sum(c.cross_sum_sq for c in cals) / diffs if diffs else 0.0,
                   cross_h=sum(c.cross_sum_h for c in cals) / diffs if diffs else 0.0, cross_df=diffs,
                   wild_runs=sum(c.set_aside for c in cals),
                   runs_seen=sum(c.df + c.groups + c.set_aside for c in cals))


@dataclass(frozen=True)
class ShiftTest:
    """Batch results (arrays shaped like the batch axes)."""

    worse: np.ndarray  # s·Δ mean ln(value) over kept runs; positive = the candidate is worse
    worse_rel: np.ndarray  # e^worse − 1
    se: np.ndarray
    df: np.ndarray
    p: np.ndarray  # one-sided, H1: the candidate is worse
    kept_base: np.ndarray  # masks over runs
    kept_cand: np.ndarray
    # A candidate run better than the kept ones was set aside: the verdict would rest on discarding evidence
    # in the candidate's favour (two slow restarts out of three make the one good run look wild). Such a
    # row can WARN at most.
    favourable_set_aside: np.ndarray
    worse_set_aside: np.ndarray  # a pattern of the candidate's runs set aside as worse: unstable, WARN at least
    # A pattern of the candidate's runs are worse than the baseline's median by more than the outlier
    # limit while others are not: an intermittent regression (half the runs slow makes a split arm whose own
    # median sits between the clusters, so neither cluster is "wild" by the candidate's own median). Unstable.
    intermittent: np.ndarray
    # Runs set aside as slow-mode server starts (gate.stats.slowmode), per arm: the row is judged on the fast mode.
    slow_mode_base: np.ndarray | None = None
    slow_mode_cand: np.ndarray | None = None

    def ratio_ci(self, higher_is_better: bool, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
        """Two-sided CI of the ratio candidate / baseline (natural direction)."""
        half = t_ppf(0.5 + level / 2, self.df) * self.se
        shift = -self.worse if higher_is_better else self.worse
        return np.exp(shift - half), np.exp(shift + half)


def shift_test(base_log: np.ndarray, cand_log: np.ndarray, noise: SpeedNoise, *, higher_is_better: bool,
               cross_job: bool, gap_sigma: np.ndarray | None = None, slow_mode: np.ndarray | None = None,
               more_runs_follow: bool = False, wild_share: np.ndarray | float = 0.0) -> ShiftTest:
    """ln(value) per run along the last axis (NaN = absent run) -> one-sided test per batch entry.

    `gap_sigma`: the σ the intermittent test measures a gap against (`baseline_sigma`: the baseline arms'
    own spread, which a split candidate arm cannot inflate); where it is None or NaN, the σ in use.
    `slow_mode`: (..., 2, runs) the base and candidate runs that are slow-mode server starts
    (gate.stats.slowmode.slow_mode_runs): set aside before anything else, so the row is judged on the fast mode
    and a slow start is neither a wild run nor an intermittent regression.
    `more_runs_follow`: `gate run`'s first look, where one worse run makes the row unstable (UNSTABLE_MIN_RUNS).
    `wild_share`: the host's share of wild runs (`host_wild_share`); elsewhere a pattern of worse runs is unstable
    only when that share makes it unlikely (STRONG_P)."""
    yb, yc = np.asarray(base_log, dtype=float), np.asarray(cand_log, dtype=float)
    slow_b = np.zeros(yb.shape, dtype=bool)
    slow_c = np.zeros(yc.shape, dtype=bool)
    if slow_mode is not None:
        slow_b = np.asarray(slow_mode, dtype=bool)[..., 0, :yb.shape[-1]]
        slow_c = np.asarray(slow_mode, dtype=bool)[..., 1, :yc.shape[-1]]
        yb, yc = np.where(slow_b, np.nan, yb), np.where(slow_c, np.nan, yc)
    sigma = np.asarray(noise.sigma, dtype=float)  # flag_runs broadcasts it against the batch axes
    wild = flag_sigma(sigma, noise.sigma_df)  # a wild run is wild even for the largest σ its df allow
    kb = ~np.isnan(yb) & ~flag_runs(yb, wild)
    kc = ~np.isnan(yc) & ~flag_runs(yc, wild)
    nb, nc = kb.sum(axis=-1), kc.sum(axis=-1)
    with np.errstate(all="ignore"):
        shift = np.where(kc, yc, 0.0).sum(axis=-1) / nc - np.where(kb, yb, 0.0).sum(axis=-1) / nb
    worse = -shift if higher_is_better else shift
    se, df = standard_error(noise, 1 / nb + 1 / nc, cross_job=cross_job)
    with np.errstate(all="ignore"):
        p = np.where(se > 0, t_sf(worse / np.where(se > 0, se, 1.0), df), np.where(worse > 0, 0.0, 1.0))
        kept_mean = np.where(kc, yc, 0.0).sum(axis=-1, keepdims=True) / nc[..., None]
        better = (yc > kept_mean) if higher_is_better else (yc < kept_mean)
    aside = ~kc & ~np.isnan(yc)
    favourable = (aside & better).any(axis=-1)
    def pattern(k: np.ndarray, n: np.ndarray) -> np.ndarray:  # k of the candidate's n runs worse: unstable?
        if more_runs_follow:
            return np.asarray(k >= 1)
        share = np.asarray(wild_share, dtype=float)
        unlikely = binom_sf(k - 1, n, share[..., None] if share.ndim and np.ndim(k) > share.ndim else share)
        return np.asarray((k >= UNSTABLE_MIN_RUNS) & (unlikely <= STRONG_P))

    # Across jobs (three runs a side, no second look to settle it) one run in three apart is a job's or a run's
    # noise as often as a regression: the split test ran there too and WARNed on 22-55% of no-op PRs.

    intermittent = (np.zeros(np.shape(worse), dtype=bool) if cross_job
                    else _intermittent(yb, yc, _gap_or(gap_sigma, sigma), higher_is_better, pattern))
    return ShiftTest(worse=worse, worse_rel=np.expm1(worse), se=se, df=df, p=p, kept_base=kb, kept_cand=kc,
                     favourable_set_aside=favourable,
                     worse_set_aside=pattern((aside & ~better).sum(axis=-1), (~np.isnan(yc)).sum(axis=-1)),
                     intermittent=intermittent,
                     slow_mode_base=slow_b.sum(axis=-1), slow_mode_cand=slow_c.sum(axis=-1))


def _intermittent(yb: np.ndarray, yc: np.ndarray, sigma: np.ndarray, higher_is_better: bool,
                  pattern: Any) -> np.ndarray:
    """The candidate's runs fall in two clusters, a gap of more than max(INTERMITTENT_SIGMAS·σ, 3%) apart, with
    the worse cluster a `pattern` (shift_test's: its count of the candidate's runs is unstable), and that far worse
    than the baseline's median too. A constant change has no gap; a wild run is one run. σ is the baseline arms' spread where
    the caller gives it (shift_test's `gap_sigma`), else the σ in use."""
    worse = yc * (-1.0 if higher_is_better else 1.0)
    present = ~np.isnan(worse)
    n = present.sum(axis=-1)
    ordered = np.sort(np.where(present, worse, np.inf), axis=-1)  # absent runs last
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        gaps = np.diff(ordered, axis=-1)  # gap k lies between the k+1 better runs and the rest
        base = np.nanmedian(yb, axis=-1, keepdims=True) * (-1.0 if higher_is_better else 1.0)
    limit = _far_limit(sigma)
    limit = limit[..., None] if limit.ndim else limit
    k = np.arange(1, worse.shape[-1])  # runs below the gap
    in_worse = n[..., None] - k
    valid = (k < n[..., None]) & pattern(in_worse, np.broadcast_to(n[..., None], in_worse.shape))
    with np.errstate(all="ignore"):
        split = valid & (gaps > limit) & (ordered[..., 1:] - base > limit)
    return np.asarray(split.any(axis=-1), dtype=bool)


def _gap_or(gap_sigma: np.ndarray | None, sigma: np.ndarray) -> np.ndarray:
    """The σ a gap is measured against: the baseline arms' own (`gap_sigma`) where known, else the σ in use."""
    return sigma if gap_sigma is None else np.where(np.isfinite(gap_sigma), gap_sigma, sigma)


def _far_limit(sigma: np.ndarray) -> np.ndarray:
    """How far (ln) a run lies from the others before `_intermittent` calls it far: max(INTERMITTENT_SIGMAS·σ, 3%)."""
    return np.asarray(np.maximum(INTERMITTENT_SIGMAS * np.nan_to_num(np.asarray(sigma, dtype=float)),
                                 np.log1p(OUTLIER_MIN_REL)))


def standard_error(noise: SpeedNoise, a: np.ndarray | float, *, cross_job: bool) -> tuple[np.ndarray, np.ndarray]:
    """SE and df of a difference of log-means with a = 1/n_b + 1/n_c (see the module docstring).

    The noise's fields may be arrays (one calibration per simulated PR); they broadcast against `a`.
    """
    a = np.asarray(a, dtype=float)
    sigma2 = np.asarray(noise.sigma, dtype=float) ** 2
    sigma_df = np.asarray(noise.sigma_df, dtype=float)
    var_within = sigma2 * a
    df_within = np.broadcast_to(sigma_df, var_within.shape).astype(float)
    if not cross_job:
        return np.sqrt(var_within), df_within
    msd, h = np.asarray(noise.cross_msd, dtype=float), np.asarray(noise.cross_h, dtype=float)
    pairs = np.asarray(noise.cross_pairs, dtype=float)
    usable = (np.asarray(noise.cross_df) > 0) & (pairs > 0)
    part_sigma = (a - h) * sigma2
    var = np.maximum(msd + part_sigma, var_within)
    with np.errstate(all="ignore"):
        df = var ** 2 / (part_sigma ** 2 / sigma_df + msd ** 2 / np.where(pairs > 0, pairs, 1.0))
    # Without cross-job pairs the within-job SE is all there is (the row says so: gate.judging.speed_rows.speed_blockers).
    return np.sqrt(np.where(usable, var, var_within)), np.where(usable, df, df_within)


def spread(arms: np.ndarray, positions: np.ndarray | None = None, *, trim: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The A/B's own σ, df and kept runs: robust_sd of its arms, after a run-position term where `positions` are
    known (gate.stats.drift: drift through the job must not inflate σ). Without `trim` (`trims`: two trees without a
    run log, fewer than MIN_RUNS_TO_CHOOSE runs an arm) the plain pooled SD of every run (gate.stats.outliers.plain_sd);
    such trees record no positions."""
    arms = np.asarray(arms, dtype=float)
    if not trim:
        return plain_sd(arms)
    return robust_sd(arms) if positions is None else detrended_sd(arms, positions, shared_starts=True)[:3]


def trims(arms: np.ndarray, run_log: bool) -> bool:
    """Whether σ from these arms ((..., arms, runs), NaN = absent) is trimmed and slow-mode starts are looked for in
    them (gate.stats.slowmode): always where the job's run log is there (`gate run`: a later look or a re-measure
    checks what a 3-run look set aside), and otherwise (two trees by hand, judged at one look on these runs alone)
    only when every arm has MIN_RUNS_TO_CHOOSE runs or more. With three runs an arm the trim and the slow-mode finder
    choose among the very runs σ̂ is made of, so σ̂ comes out low (below the χ² 1% quantile 1.3% of the time with
    the trim), and one slow run in three is what the slowest of three ordinary runs looks like often enough
    (docs/statistics.md, issue 39)."""
    if run_log:
        return True
    y = np.asarray(arms, dtype=float)
    present = (~np.isnan(y)).sum(axis=-1)
    return bool(y.size == 0 or present[present > 0].min(initial=MIN_RUNS_TO_CHOOSE) >= MIN_RUNS_TO_CHOOSE)


def joint_agreement(parts: Sequence[tuple[np.ndarray, SpeedNoise | None]],
                    positions: Sequence[np.ndarray | None] | None = None, *, low_tail: bool = False,
                    trim: bool = True) -> np.ndarray:
    """One F test of the A/B's own spread against the calibration's σ over several metrics of one model together
    (its gated speed metrics): Σ ss_own/σ²_cal over Σ df_own, against Σ df_cal. A calibration goes stale for the
    machine, not for one metric, and one metric's 8 first-look degrees of freedom told σ 2% from a calibration's
    1% only 78% of the time (the rest pooled a σ half the truth: 4.8% false FAIL per no-op PR). The metrics
    share the run effect, so their df overstate the evidence: the test then rejects more often, which only
    pools less. NaN where no part has a usable calibration. `arms` as for own_noise. `low_tail`: the p that the
    calibration is NOT noisier than the runs (the F test's lower tail), held to STRONG_P. `trim`: as for
    `spread`."""
    u = d_own = d_cal = np.zeros(())
    for k, (arms, cal) in enumerate(parts):
        if cal is None:
            continue
        sigma_own, df_own, _ = spread(arms, None if positions is None else positions[k], trim=trim)
        sigma_cal = np.asarray(cal.sigma, dtype=float)
        df_cal = np.asarray(cal.sigma_df, dtype=float)
        usable = (df_cal >= MIN_CALIBRATION_DF) & np.isfinite(sigma_cal) & (sigma_cal > 0) & (df_own > 0)
        with np.errstate(all="ignore"):
            ss_own = np.nan_to_num(sigma_own) ** 2 * df_own
            u = u + np.where(usable, ss_own / np.where(usable, sigma_cal, 1.0) ** 2, 0.0)
        d_own = d_own + np.where(usable, df_own, 0)
        d_cal = d_cal + np.where(usable, df_cal, 0)
    with np.errstate(all="ignore"):
        return np.where((d_own > 0) & (d_cal > 0), _agreement_p(u / np.maximum(d_own, 1), d_own, d_cal, low_tail),
                        np.nan)


def _agreement_p(ratio: np.ndarray, df_own: np.ndarray, df_cal: np.ndarray, low_tail: bool = False) -> np.ndarray:
    """The F test of the A/B's own spread against the calibration's σ: its upper tail (the runs noisier than
    calibrated: a stale calibration), or with `low_tail` its lower tail (the calibration noisier than the runs:
    an A/A measured with slow-mode starts in it, issue 36)."""
    d_own, d_cal = np.maximum(np.asarray(df_own, dtype=float), 1), np.maximum(np.asarray(df_cal, dtype=float), 1)
    tail = f_cdf if low_tail else f_sf
    return np.asarray(tail(ratio, d_own, d_cal), dtype=float)


def own_noise(arms: np.ndarray, calibration: SpeedNoise | None, *, stale: bool = False,
              agreement: np.ndarray | None = None, positions: np.ndarray | None = None,
              agreement_low: np.ndarray | None = None, trim: bool = True) -> tuple[SpeedNoise, np.ndarray, np.ndarray]:
    """The σ an in-job row uses: the A/B's own runs, pooled with a fresh calibration that agrees with them.

    `arms`: ln(value) as (..., arms, runs), NaN = absent run: both arms of every workload of the model, for
    one metric. Returns (noise, source code, agreement p): `noise.sigma`/`sigma_df` batch like the leading
    axes; the source says which of SOURCE_TEXT applies; the agreement p is NaN without a calibration.
    `agreement`: the model's joint_agreement p, used in place of this metric's own F test where it is finite.
    `positions`: where each run sat in the job (gate.stats.drift.arm_positions); σ is then taken after a
    run-position term. `agreement_low`: the model's joint_agreement lower-tail p (in one job): a calibration
    far noisier than the runs (p below STRONG_P) is not pooled either. `trim`: as for `spread`.
    """
    sigma_own, df_own, _ = spread(arms, positions, trim=trim)
    ss_own = np.where(df_own > 0, np.nan_to_num(sigma_own) ** 2 * df_own, 0.0)
    if calibration is None or stale:
        code = np.full(np.shape(df_own), OWN_STALE if calibration is not None else OWN_NO_CALIBRATION)
        # sigma and sigma_df batch like the leading axes (arrays), as the power benchmark's SpeedNoise do
        return SpeedNoise(sigma=cast(Any, sigma_own), sigma_df=cast(Any, df_own)), code, np.full(np.shape(df_own), np.nan)
    sigma_cal = np.asarray(calibration.sigma, dtype=float)
    df_cal = np.asarray(calibration.sigma_df, dtype=float)
    usable = (df_cal >= MIN_CALIBRATION_DF) & np.isfinite(sigma_cal) & (sigma_cal > 0)
    with np.errstate(all="ignore"):
        ratio = ss_own / np.where(df_own > 0, df_own, 1) / np.where(usable, sigma_cal, 1.0) ** 2
        own_p = np.where(usable & (df_own > 0), _agreement_p(ratio, df_own, df_cal),
                         np.where(usable, 1.0, np.nan))
    if agreement is not None:
        joint = np.asarray(agreement, dtype=float)
        own_p = np.where(usable & np.isfinite(joint), joint, own_p)
    agreement = own_p
    pool = usable & (agreement >= SCREEN_P)
    if agreement_low is not None:
        low = np.asarray(agreement_low, dtype=float)
        pool = pool & ~(np.isfinite(low) & (low < STRONG_P))
        agreement = np.where(usable & np.isfinite(low) & (low < STRONG_P), low, agreement)
    df = np.where(pool, df_cal + df_own, df_own)
    with np.errstate(all="ignore"):
        sigma = np.where(pool, np.sqrt((np.where(usable, sigma_cal, 0.0) ** 2 * df_cal + ss_own)
                                       / np.where(df > 0, df, 1)), sigma_own)
    code = np.where(pool, POOLED, np.where(usable, OWN_DISAGREES, OWN_NO_CALIBRATION))
    return SpeedNoise(sigma=cast(Any, sigma), sigma_df=cast(Any, df.astype(int))), code, agreement


def host_wild_share(base_arms: np.ndarray | None, noise: SpeedNoise, calibration: SpeedNoise | None,
                    gap_sigma: np.ndarray | None = None, slow_base: np.ndarray | None = None) -> np.ndarray:
    """The host's share of wild runs: the calibration's runs set aside, and the baseline arms' runs ((..., arms,
    runs), NaN = absent) that the outlier rule flags at the σ in use (`noise`) or that lie as far from their arm's
    median as `_intermittent` calls far (`gap_sigma` as for shift_test), over all their runs. `slow_base`
    (..., runs): the baseline's runs set aside as slow-mode server starts (absent from `base_arms`, one per arm
    each); they are the host's wild runs too. 0 without any."""
    wild = np.asarray(calibration.wild_runs if calibration is not None else 0, dtype=float)
    seen = np.asarray(calibration.runs_seen if calibration is not None else 0, dtype=float)
    if slow_base is not None and base_arms is not None and np.size(base_arms):
        starts = np.asarray(slow_base, dtype=bool).sum(axis=-1) * np.shape(base_arms)[-2]
        wild, seen = wild + starts, seen + starts
    if base_arms is not None and np.size(base_arms):
        sigma = np.asarray(noise.sigma, dtype=float)
        limit = flag_sigma(sigma, noise.sigma_df)
        arms = np.asarray(base_arms, dtype=float)
        far = _far_limit(_gap_or(gap_sigma, sigma))
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            distance = np.abs(arms - np.nanmedian(arms, axis=-1, keepdims=True))
        flagged = flag_runs(arms, limit[..., None] if limit.ndim else limit) | \
            (distance > (far[..., None, None] if far.ndim else far))
        wild = wild + flagged.sum(axis=(-2, -1))
        seen = seen + (~np.isnan(arms)).sum(axis=(-2, -1))
    with np.errstate(all="ignore"):
        return np.asarray(np.where(seen > 0, wild / np.where(seen > 0, seen, 1.0), 0.0))


def across_jobs_noise(arms: np.ndarray, calibration: SpeedNoise) -> tuple[SpeedNoise, np.ndarray]:
    """The σ a row across jobs uses: the calibration's (its A/A pairs across jobs hold the job effect), with the
    within-job part raised to the sides' own σ and df where their spread is larger than the calibration's beyond
    chance (the F test at SCREEN_P, `own_noise`). A calibration that understated σ (σ 2% on the host, 1% in the
    record) made 24% of no-op PRs against a stored baseline WARN (benchmarks/verdict_power.py,
    m-cross-noop-stale-unknown). `arms` as for own_noise; returns the noise and the agreement p (NaN without one)."""
    own, code, p = own_noise(arms, calibration)
    # never below the df a calibration needs: a row must not lose its test for want of runs
    larger = (np.asarray(code) == OWN_DISAGREES) & (np.asarray(own.sigma_df) >= MIN_CALIBRATION_DF)
    sigma = np.where(larger, np.asarray(own.sigma, dtype=float), np.asarray(calibration.sigma, dtype=float))
    df = np.where(larger, np.asarray(own.sigma_df), np.asarray(calibration.sigma_df))
    if sigma.ndim == 0:
        return dataclasses.replace(calibration, sigma=float(sigma), sigma_df=int(df)), p
    return dataclasses.replace(calibration, sigma=cast(Any, sigma), sigma_df=cast(Any, df)), p


def baseline_sigma(base_arms: np.ndarray, positions: np.ndarray | None = None, *, trim: bool = True) -> np.ndarray:
    """The robust σ of the baseline's arms alone ((..., arms, runs) of the model's workloads, NaN = absent),
    after a run-position term where `positions` are known; untrimmed without `trim` (`spread`)."""
    return spread(base_arms, positions, trim=trim)[0]


def own_runs_p(base_log: np.ndarray, cand_log: np.ndarray, arms: np.ndarray, *,
               higher_is_better: bool, positions: np.ndarray | None = None, trim: bool = True) -> np.ndarray:
    """p of the same shift with σ from the A/B's own runs alone (`arms` as for own_noise); NaN without their df.
    Across jobs this σ leaves out the job effect, so the check can only be passed more easily than the test."""
    return own_runs_test(base_log, cand_log, arms, higher_is_better=higher_is_better, positions=positions,
                         trim=trim)[0]


def own_runs_test(base_log: np.ndarray, cand_log: np.ndarray, arms: np.ndarray, *, higher_is_better: bool,
                  positions: np.ndarray | None = None, trim: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """own_runs_p's p, with its SE and df: a FAIL needs this test too, so what a row can detect is bounded by it
    (gate.judging.compare: the row's `detects`)."""
    own, _, _ = own_noise(arms, None, positions=positions, trim=trim)
    test = shift_test(base_log, cand_log, own, higher_is_better=higher_is_better, cross_job=False)
    usable = np.asarray(own.sigma_df) > 0
    return np.where(usable, test.p, np.nan), np.where(usable, test.se, np.nan), np.where(usable, test.df, np.nan)


def mde(se: np.ndarray | float, df: np.ndarray | float, alpha: np.ndarray | float) -> np.ndarray:
    """The relative worsening a one-sided t test at level `alpha` catches with POWER, for this SE and df."""
    se, df = np.asarray(se, dtype=float), np.asarray(df, dtype=float)
    with np.errstate(all="ignore"):
        shift = (t_isf(alpha, df) + t_ppf(POWER, df)) * se
    return np.where(np.isfinite(shift) & (df > 0), np.expm1(shift), np.nan)
