"""Vectorised simulation of whole PRs judged by the gate's own rules (the functions `compare` and the runner call).

One chunk = B simulated PRs of one scenario, all ten workloads. What is here is the noise drawer (`draw_chunk`)
and the facts adapter: everything the verdict needs built as arrays with the gate's batched functions
(`gate.stats.speed.shift_test`, `gate.stats.overdispersion`, `gate.stats.quality.sign_flip_p_batch`): pooling
calibrations over a model's workloads, the family membership, the tests' flags. The decisions are the gate's: the
floors and whether a change reaches them `gate.judging.floors`, each look's α and WARN q the judge's Thresholds
(`gate.stats.looks.thresholds_for`, `gate.judging.judge.one_look_thresholds`, through `gate.judging.rule.levels`), a
calibration known stale left out in one job `gate.judging.freshness.left_out`, the few-session rule
`gate.judging.few_sessions.fires`, whether a row may FAIL `gate.judging.eligibility` (its reasons, which compare keeps
typed), its MDE and whether it is blind `gate.judging.sensitivity`, the verdicts `gate.judging.rule.family`, the first
look's fail /
extend / pass `gate.judging.rule.extension` (the runner's, through gate.judging.look_rule.decide), the run each arm
re-measures `gate.stats.slowmode.deepest_slow_start` and `gate.stats.outliers.run_to_remeasure` (the runner's,
through gate.judging.outliers), the slow-mode starts a speed row and its σ set aside `gate.stats.slowmode.model_slow_set`
and `row_on_fast_mode` (gate.judging.speed_rows'), whether each side's own runs may carry a FAIL and churn is possible
`gate.stats.overdispersion.own_runs_enough` and `churn_possible` (own_runs' and accuracy_rows').
benchmarks/power/validate.py checks the adapter: the same PRs through
`gate.judging.compare.compare`, `decide` and the runner's re-measure functions.

Two designs:
- two-look: an interleaved A/B in one job. First look 3+3 runs at Holm α₁; models the extension rule extends get
  3+3 more runs; the pooled 6+6 decides at Holm α₂. A run flagged by the outlier rule is re-measured once per arm
  (the runner's job); compare sets aside the rest.
- cross-job: 3 candidate runs against a stored 3-run baseline from another job, one decision at the family α;
  a speed row WARNs at most there (gate.judging.eligibility.speed_noise_blockers).
- runbook (issue 39): two trees the runbook wrote by hand, 3 + 3 runs of one job (it alternates the commits), one
  decision at the family α (`gate compare` of two trees without a run log), nothing re-measured; speed σ from the
  trees' own runs, accuracy churn from each side's own runs when there is no A/A record.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from gate.formats.noise_model import churn_excess, churn_widens, sigma_usable
from gate.formats.reasons import UNSTABLE, CannotFail
from gate.formats.report import COMOVING_SUFFIX
from gate.judging import eligibility, few_sessions, floors, freshness, rule, sensitivity
from gate.judging.judge import one_look_thresholds
from gate.stats import looks
from gate.stats.decision import FAIL, WARN, weighted
from gate.stats.drift import arm_positions, interleave_positions
from gate.stats.outliers import flag_sigma, run_to_remeasure
from gate.stats.overdispersion import (
    churn_possible,
    excess_df,
    group_spread,
    group_test,
    own_runs_enough,
    own_runs_sums,
    run_permutation_p,
    widened_p_arrays,
)
from gate.stats.quality import catastrophic_masks, sign_flip_p_batch
from gate.stats.slowmode import deepest_slow_start, model_slow_set, remeasure_depth, row_on_fast_mode
from gate.stats.slowmode import fail_blocker as slowmode_blocker
from gate.stats.speed import (
    ADVISED_PAIRS,
    across_jobs_noise,
    baseline_sigma,
    host_wild_share,
    joint_agreement,
    own_noise,
    own_runs_test,
    shift_test,
    trims,
)
from gate.stats.thresholds import Thresholds

from .calibration import dispersion, speed_calibration
from .matrix import intermittent_slots, neutral_change, standard_noise
from .noise import MODELS, TARGET, WORKLOADS, NoiseModel, Scenario, TestSet

RUNS = 3  # per arm per look
SLOTS = 2 * RUNS + 1  # two looks and one spare run for a re-measure
SPEED_ROWS = ("throughput", "latency_p95_s")  # the gated speed metrics (throughput's name differs per format)
# The Thresholds each look judges at, where the judge takes them: gate run's two looks (gate.stats.looks.thresholds_for),
# one look of two runbook trees or across jobs (gate.judging.judge.one_look_thresholds); their α and WARN q per family
# through gate.judging.rule.levels
FIRST, POOLED = looks.thresholds_for(looks.Look.FIRST), looks.thresholds_for(looks.Look.POOLED)
RUNBOOK, ACROSS_JOBS = one_look_thresholds(True), one_look_thresholds(False)


@dataclass(frozen=True)
class Rules:
    """The decision parameters, read from the gate (benchmarks/power/validate.py checks they agree)."""

    family_alpha: float
    first_alpha: float
    pooled_alpha: float
    warn_q: float
    speed_warn_q: float
    extend_q: float
    floor_thr: float
    floor_p95: float
    quality_floor_abs: float
    quality_floor_rel: float
    small_set_size: int
    small_set_floor_abs: float
    pairs: int  # A/A pairs in the calibration (the advised number)

    @classmethod
    def from_gate(cls, pairs: int = ADVISED_PAIRS) -> "Rules":
        from gate.formats.config import load_suite
        from gate.stats.thresholds import Thresholds

        suite, t = load_suite(), Thresholds()
        metrics = {m.name: m for m in suite.workload("qwen3/asr_en").metrics}
        return cls(family_alpha=looks.FAMILY_ALPHA, first_alpha=looks.FIRST_ALPHA, pooled_alpha=looks.POOLED_ALPHA,
                   warn_q=t.warn_q, speed_warn_q=t.speed_warn_q, extend_q=looks.EXTEND_Q,
                   floor_thr=metrics["throughput_samples_per_s"].floor_rel,
                   floor_p95=metrics["latency_p95_s"].floor_rel, quality_floor_abs=t.quality_floor_abs,
                   quality_floor_rel=t.quality_floor_rel, small_set_size=t.small_set_size,
                   small_set_floor_abs=t.small_set_floor_abs, pairs=pairs)


@dataclass(eq=False)
class Chunk:
    """The raw simulated measurements of B PRs (kept so validate.py can feed the same numbers to compare)."""

    speed: dict  # workload -> {"throughput"/"latency_p95_s": (B, 2 arms, SLOTS) ln values}
    cal_speed: dict  # workload -> {metric: (B, pairs, 2 arms, RUNS) ln values}
    errors: dict  # workload -> {measure: (B, 2 arms, SLOTS, n) error counts}
    cal_errors: dict  # workload -> {measure: (B, pairs, 2, RUNS, n)}
    cross_job_calibration: bool
    noise: NoiseModel | None = None
    one_look: bool = False  # "runbook": two hand-made trees of one job, 3 + 3 runs, one look at the family α
    one_look_runs: int = RUNS  # runs a side of a "runbook" cell (6: the runbook's runs 4-6 added)
    target_hits: np.ndarray | None = None  # (B, SLOTS) the target's candidate runs an intermittent slowdown hit
    # the nightly's runs pooled into the within-job σ (gate.history.noise): workload -> {metric: (B, nights, RUNS)}
    cal_nights: dict | None = None


@dataclass(eq=False)
class Outcome:
    """Per PR: the final verdict, what the target rows got, scored runs per model; plus the row verdicts."""

    any_fail: np.ndarray  # (B,)
    any_warn: np.ndarray  # (B,) WARN shown (and no FAIL)
    target_thr_fail: np.ndarray
    target_thr_warn_or_fail: np.ndarray
    target_wer_fail: np.ndarray
    target_wer_warn_or_fail: np.ndarray
    runs_per_model: np.ndarray  # (B, models)
    slots: dict  # model -> (B, 2 arms, n_used) physical slots used (after re-measure), first look and pooled
    extended: np.ndarray  # (B, models)
    rows_first: dict  # (workload, metric) -> (B,) verdict code at the first (or only) look
    rows_pooled: dict  # (workload, metric) -> (B,) verdict code at the pooled look (-1: model not extended)
    # the target's throughput row: the change it says it detects at its last look (Row.detects: a drop, negative)
    target_thr_detects: np.ndarray | None = None
    # The oracle (issue 36): the target's gated speed rows judged by a test that knows σ, on the same runs
    # and at the same family α (`oracle_fail`); None where it is not modelled (across jobs, runbook trees).
    target_thr_oracle: np.ndarray | None = None
    # intermittent cells: how many of the six planned candidate slots (run1..run6) the slowdown hit, and how many
    # of the candidate runs the gate scored (its last look's, a re-measure included)
    target_hits6: np.ndarray | None = None
    target_hits_scored: np.ndarray | None = None
    # PRs with a row FAILed by the few-session rule (gate.judging.few_sessions) that Holm alone did not FAIL
    few_sessions_fail: np.ndarray | None = None


# --- drawing -----------------------------------------------------------------------------------------------------

def draw_chunk(rng: np.random.Generator, scenario: Scenario, test_sets: dict[str, TestSet], batch: int,
               pairs: int) -> Chunk:
    noise = scenario.noise
    cross = scenario.design == "cross-job"
    speed, cal_speed, errors, cal_errors = {}, {}, {}, {}
    hits = None
    pairs = pairs if noise.calibrated else 0
    for model in MODELS:
        wls = [w for w in WORKLOADS if w.model == model]
        # PR arms: (B, 2, SLOTS, W). Same job for both arms in the two-look design; a job per arm across jobs.
        thr, p95 = _speed_runs(rng, noise, (batch, 2, SLOTS), len(wls), arm_jobs=cross)
        cal_thr, cal_p95 = _speed_runs(rng, noise, (batch, pairs, 2, RUNS), len(wls), arm_jobs=cross,
                                       sigma=noise.calibration_sigma)
        for k, w in enumerate(wls):
            changed = w.workload_id == TARGET or (scenario.whole_model and w.model == TARGET.split("/")[0])
            shift = np.log1p(scenario.throughput_change) if changed else 0.0
            thr_w, p95_w = thr[..., k].copy(), p95[..., k].copy()
            thr_w[:, 1] += shift
            p95_w[:, 1] -= shift
            if w.workload_id == TARGET and noise.intermittent_share:
                hit = (rng.random((batch, SLOTS)) < noise.intermittent_share if noise.intermittent_random else
                       intermittent_slots(rng, batch, noise.intermittent_share))
                hits = np.asarray(hit, dtype=bool)
                slow = np.log(noise.intermittent_factor) * hit
                if not noise.intermittent_p95_only:
                    thr_w[:, 1] += slow
                p95_w[:, 1] -= slow
            speed[w.workload_id] = {"throughput": thr_w, "latency_p95_s": p95_w}
            cal_speed[w.workload_id] = {"throughput": cal_thr[..., k], "latency_p95_s": cal_p95[..., k]}
    for w in WORKLOADS:
        ts = test_sets[w.workload_id]
        churn = _churn(rng, noise, ts, batch)
        runs = churn.draw(rng, (batch, 2, SLOTS))
        cal = churn.draw(rng, (batch, pairs if noise.calibrated else 0, 2, RUNS))
        extra = None
        if w.workload_id == TARGET:
            extra = (_on_group(ts, scenario.wer_change_pp, churn.shared) if noise.wer_on_comoving else
                     _diffuse(rng, ts, scenario.wer_change_pp, batch))
        errors[w.workload_id], cal_errors[w.workload_id] = {}, {}
        for _, measure, _ in w.measures:
            base = ts.errors[measure].astype(np.int16)
            arm_runs = base + runs
            if extra is not None:
                arm_runs[:, 1] += extra[:, None, :]
            if w.workload_id == TARGET and noise.neutral_changes and measure == w.measures[0][1]:
                arm_runs[:, 1] += neutral_change(rng, ts, noise.neutral_changes, batch)[:, None, :]
                np.maximum(arm_runs, 0, out=arm_runs)
            cal_runs = base + cal
            if ts.workload.sessions:  # a Skellam jitter could in principle go below zero
                np.maximum(arm_runs, 0, out=arm_runs)
                np.maximum(cal_runs, 0, out=cal_runs)
            errors[w.workload_id][measure] = arm_runs
            cal_errors[w.workload_id][measure] = cal_runs
    nights = _nights(rng, noise, int(scenario.extra.get("nights", 0)), batch)  # drawn last: other draws stay
    return Chunk(speed, cal_speed, errors, cal_errors, cross, noise, one_look=scenario.design == "runbook",
                 one_look_runs=int(scenario.extra.get("runs", RUNS)), target_hits=hits, cal_nights=nights)


def _nights(rng, noise: NoiseModel, nights: int, batch: int) -> dict | None:
    """The nightly's scored runs of `nights` nights (each its own job, one arm of RUNS runs of the baseline commit,
    one after another), workload -> {metric: (B, nights, RUNS) ln values}; None without. Drift and the warm-up leak
    reach them as they reach any job."""
    if not nights:
        return None
    out = {}
    for model in MODELS:
        wls = [w for w in WORKLOADS if w.model == model]
        thr, p95 = _speed_runs(rng, noise, (batch, nights, 2, RUNS), len(wls), arm_jobs=True, consecutive=True)
        for k, w in enumerate(wls):
            out[w.workload_id] = {"throughput": thr[:, :, 0, :, k], "latency_p95_s": p95[:, :, 0, :, k]}
    return out


def _speed_runs(rng, noise: NoiseModel, shape: tuple, n_wl: int, *, arm_jobs: bool, sigma: float | None = None,
                consecutive: bool = False):
    """ln throughput and ln p95 relative to the truth, shape + (W,). The job axis is shape[-2] (the arm); the
    last axis of `shape` is the run slot (run order for drift: the interleave's, or, `consecutive`, slot k at k)."""
    full = shape + (n_wl,)
    sigma = noise.sigma_run if sigma is None else sigma
    own = noise.p95_own * sigma / noise.sigma_run
    s = sigma * standard_noise(rng, noise.tails, full)
    order = (np.broadcast_to(np.arange(shape[-1], dtype=float)[None, :, None], (2, shape[-1], 1)) if consecutive
             else run_order(shape[-1]))  # (2 arms, slots, 1): when each run sat in its job
    if noise.ar1:  # successive runs of the job in the interleave's order, both arms, correlated
        steps = standard_noise(rng, noise.tails, shape[:-2] + (int(order.max()) + 1, n_wl))
        e = steps.copy()
        for t in range(1, e.shape[-2]):
            e[..., t, :] = noise.ar1 * e[..., t - 1, :] + np.sqrt(1 - noise.ar1 ** 2) * steps[..., t, :]
        s = sigma * np.take(e, order[..., 0].astype(int), axis=-2)
    if noise.run_shared:  # drawn only here, so that the other scenarios' draws stay as they were
        common = sigma * standard_noise(rng, noise.tails, shape + (1,))
        s = np.sqrt(1 - noise.run_shared) * s + np.sqrt(noise.run_shared) * common
    slow = np.where(rng.random(full) < noise.slow_prob, np.log(noise.slow_factor), 0.0)
    job_shape = shape[:-1] + (1, n_wl) if arm_jobs else shape[:-2] + (1, 1, n_wl)
    shared = rng.standard_normal(job_shape[:-1] + (1,))
    job = noise.tau * np.sqrt(0.5) * (shared + rng.standard_normal(job_shape))
    if noise.slow_job_prob:
        job = job - np.where(rng.random(job_shape[:-1] + (1,)) < noise.slow_job_prob, np.log(noise.slow_job_factor), 0.0)
    if noise.drift:
        job = job + noise.drift * order
    if noise.slow_start_prob:  # a server start in the slow mode slows every workload of it
        slow = slow + np.where(rng.random(shape + (1,)) < noise.slow_start_prob, np.log(noise.slow_start_factor), 0.0)
    if noise.warmup_leak:
        slow = slow - noise.warmup_leak * (np.arange(shape[-1]) == 0)[:, None]
    thr = -s - job + slow
    p95 = s + job - slow + own * standard_noise(rng, noise.tails, full)
    return thr, p95


def run_order(slots: int) -> np.ndarray:
    """(2 arms, slots, 1) positions in the job: the runner's interleave (A,B,B,A,A,B then B,A,A,B,B,A:
    gate.stats.drift.interleave_positions) for the scored slots, the spare (re-measure) slot last."""
    scored = min(slots, 2 * RUNS)
    order = np.stack([interleave_positions(scored, a) for a in range(2)]).astype(float)
    spare = 2 * scored + np.arange(2)[:, None] * np.ones((1, slots - scored))
    return np.concatenate([order, spare], axis=1)[..., None]


def slot_positions(slots: np.ndarray, n_wl: int) -> np.ndarray:
    """(B, 2·n_wl, runs) positions of the runs in `slots` ((B, 2 arms, runs)) for arms laid out as the model's
    [base, cand, base, cand, ...] (gate.stats.drift.arm_positions' layout): where the drawer put each slot in the
    job (`run_order`), the re-measure's spare slot last, as the judge places a re-measured run where it ran
    (gate.judging.speed_rows.runs_of_model, from the run log)."""
    order = run_order(SLOTS)[..., 0]  # (2 arms, SLOTS)
    placed = np.stack([order[arm][slots[:, arm]] for arm in range(2)], axis=1)
    return np.tile(placed, (1, n_wl, 1))


@dataclass(frozen=True)
class _Churn:
    unstable: np.ndarray  # (B, n) bool
    shared: np.ndarray  # (B, n) bool
    session_lambda: np.ndarray | None  # (n,) Skellam rate for long sessions

    def draw(self, rng, lead: tuple) -> np.ndarray:
        """Run-to-run error changes, lead + (n,); lead starts with B."""
        n = self.unstable.shape[1]
        expand = (slice(None),) + (None,) * (len(lead) - 1)
        if self.session_lambda is not None:
            lam = self.session_lambda
            return (rng.poisson(lam, lead + (n,)) - rng.poisson(lam, lead + (n,))).astype(np.int16)
        bits = rng.integers(0, 2, lead + (n,), dtype=np.int8).view(bool) & self.unstable[expand]
        bits |= (rng.integers(0, 2, lead + (1,), dtype=np.int8).view(bool) & self.shared[expand])
        return bits.view(np.int8)


def _churn(rng, noise: NoiseModel, ts: TestSet, batch: int) -> _Churn:
    n = ts.ref_len.shape[0]
    if ts.workload.sessions:
        first = next(iter(ts.errors.values()))
        return _Churn(np.ones((batch, n), bool), np.zeros((batch, n), bool),
                      noise.session_jitter * np.maximum(first, 1))
    fraction = rng.uniform(*noise.churn_range, size=(batch, 1))
    rank = np.argsort(rng.random((batch, n)), axis=1).argsort(axis=1)
    unstable = rank < np.rint(fraction * n)
    shared = (~unstable) & (rank < np.rint(fraction * n) + round(noise.shared_churn * n))
    return _Churn(unstable, shared, None)


def _on_group(ts: TestSet, pp: float, group: np.ndarray) -> np.ndarray | None:
    """A WER change put exactly on the utterances that churn together (issue 36): net pp/100·Σn more errors, spread
    as evenly as they go over the group (B, n) of each PR, every candidate run."""
    if pp == 0:
        return None
    net = int(round(pp / 100 * ts.ref_len.sum()))
    size = np.maximum(group.sum(axis=1, keepdims=True), 1)
    rank = np.cumsum(group, axis=1) - 1  # 0.. within the group
    each = net // size + (rank < net % size)
    return np.where(group, each, 0).astype(np.int16)


def _diffuse(rng, ts: TestSet, pp: float, batch: int) -> np.ndarray | None:
    """A real, diffuse WER change: net pp/100·Σn more errors, as 1.5× that many +1s and 0.5× that many −1s."""
    if pp == 0:
        return None
    n = ts.ref_len.shape[0]
    net = int(round(pp / 100 * ts.ref_len.sum()))
    up, down = int(round(1.5 * net)), int(round(1.5 * net)) - net
    base = ts.errors[ts.workload.measures[0][1]]
    keys = rng.random((batch, n))
    order = np.argsort(keys, axis=1)
    extra = np.zeros((batch, n), dtype=np.int16)
    np.put_along_axis(extra, order[:, :up], 1, axis=1)
    worse_keys = np.where((base > 0)[None, :] & (extra == 0), keys, 2.0)
    np.put_along_axis(extra, np.argsort(worse_keys, axis=1)[:, :down], -1, axis=1)
    return extra


# --- judging -------------------------------------------------------------------------------------------------------

def judge(chunk: Chunk, test_sets: dict[str, TestSet], rules: Rules) -> Outcome:
    batch = next(iter(chunk.speed.values()))["throughput"].shape[0]
    by_model = {m: [w.workload_id for w in WORKLOADS if w.model == m] for m in MODELS}
    measure_of = {w.workload_id: [m for _, m, _ in w.measures] for w in WORKLOADS}
    noises = {(m, metric): speed_calibration(chunk.cal_speed, by_model[m], metric, chunk.cross_job_calibration,
                                             chunk.cal_nights)
              for m in MODELS for metric in SPEED_ROWS}
    disp = {(w.workload_id, measure): dispersion(chunk.cal_errors, w.workload_id, measure)
            for w in WORKLOADS for measure in measure_of[w.workload_id]}
    rows = [(w.workload_id, w.model, metric) for w in WORKLOADS for metric in SPEED_ROWS]
    qrows = [(w.workload_id, w.model, measure, metric) for w in WORKLOADS for metric, measure, _ in w.measures]
    # each accuracy row's co-moving group's own row follows them all (NaN p where no group: not in the family)
    qrows = qrows + [(r[0], r[1], r[2], r[3] + COMOVING_SUFFIX) for r in qrows]
    sg = [np.array([i for i, r in enumerate(rows) if r[1] == m]) for m in MODELS]
    qg = [np.array([i for i, r in enumerate(qrows) if r[1] == m]) for m in MODELS]

    # in one job compare leaves a calibration known to be stale out altogether (its wild runs too)
    in_job_cal = None if freshness.left_out(chunk.noise is not None and chunk.noise.stale_known, False) else noises
    if chunk.cross_job_calibration or chunk.one_look:  # one decision at the family α, 3 + 3 runs, nothing re-measured
        width = chunk.one_look_runs if chunk.one_look else RUNS
        slots = {m: np.broadcast_to(np.arange(width), (batch, 2, width)) for m in MODELS}
        if chunk.one_look:  # two runbook trees: one job (the runbook alternates the commits), σ from their runs
            # the order the runs ran in is not recorded: no run-position terms (gate.judging.judge: run_order)
            used = {k: v for m in MODELS for k, v in _in_job(chunk, by_model, noises, slots, m, False).items()}
            sp = _speed_look(chunk, rows, used, slots, rules, cross_job=False, thresholds=RUNBOOK, order_known=False,
                             calibrations=in_job_cal)
        else:
            sp = _speed_look(chunk, rows, _across_jobs(chunk, by_model, noises, slots), slots, rules, cross_job=True,
                             thresholds=ACROSS_JOBS, calibrations=noises)
        one = RUNBOOK if chunk.one_look else ACROSS_JOBS
        qu = _quality_look(chunk, test_sets, qrows, disp, slots, rules, one)
        verdict_s = _family(sp, one, sg)
        verdict_q = _family(qu, one, qg, catastrophic=qu["catastrophic"])
        fail = (verdict_s == FAIL).any(1) | (verdict_q == FAIL).any(1)
        warn = ~fail & ((verdict_s == WARN).any(1) | (verdict_q == WARN).any(1))
        tgt = [i for i, r in enumerate(rows) if r[0] == TARGET]
        tq = [i for i, r in enumerate(qrows) if r[0] == TARGET]  # its row and its co-moving group's
        return Outcome(any_fail=fail, any_warn=warn, target_thr_fail=(verdict_s[:, tgt] == FAIL).any(1),
                       target_thr_warn_or_fail=(verdict_s[:, tgt] >= WARN).any(1),
                       target_wer_fail=(verdict_q[:, tq] == FAIL).any(1),
                       target_wer_warn_or_fail=(verdict_q[:, tq] >= WARN).any(1),
                       runs_per_model=np.full((batch, len(MODELS)), 2 * width), slots=slots,
                       extended=np.zeros((batch, len(MODELS)), bool),
                       rows_first={**{(r[0], r[2]): verdict_s[:, i] for i, r in enumerate(rows)},
                                   **{(r[0], r[3]): verdict_q[:, i] for i, r in enumerate(qrows)}},
                       rows_pooled={}, few_sessions_fail=_few_fired(qu))

    # First look: slots 0-2, a flagged run re-measured once per arm (slot 6 replaces it).
    flag = _runner_sigma(chunk, batch)
    slots1, spare_used = {}, {}
    for m in MODELS:
        start = np.tile(np.arange(RUNS), (batch, 2, 1))
        slots1[m], spare_used[m] = _remeasure(chunk, by_model[m], flag, start, np.zeros((batch, 2), bool))
    used1 = {k: v for m in MODELS for k, v in _in_job(chunk, by_model, noises, slots1, m).items()}
    sp1 = _speed_look(chunk, rows, used1, slots1, rules, cross_job=False, thresholds=FIRST, calibrations=in_job_cal)
    qu1 = _quality_look(chunk, test_sets, qrows, disp, slots1, rules, FIRST)
    vs1 = _family(sp1, FIRST, sg)
    vq1 = _family(qu1, FIRST, qg, catastrophic=qu1["catastrophic"])
    fail1 = np.zeros((batch, len(MODELS)), bool)
    extend = np.zeros((batch, len(MODELS)), bool)
    for k, m in enumerate(MODELS):
        si = [i for i, r in enumerate(rows) if r[1] == m]
        qi = [i for i, r in enumerate(qrows) if r[1] == m]
        fail1[:, k] = (vs1[:, si] == FAIL).any(1) | (vq1[:, qi] == FAIL).any(1)
        # the model's first-look facts as its report holds them (raw p: the report keeps no weights), to the
        # runner's own rule (gate.judging.look_rule.decide calls it too)
        found = rule.extension(np.concatenate([sp1["p"][:, si], qu1["p"][:, qi]], 1),
                               np.concatenate([sp1["half"][:, si], qu1["half"][:, qi]], 1),
                               np.concatenate([_blind(sp1, FIRST, si), _blind(qu1, FIRST, qi)], 1),
                               np.concatenate([sp1["unstable"][:, si], np.zeros((batch, len(qi)), bool)], 1),
                               fail1[:, k], family=["speed"] * len(si) + ["quality"] * len(qi))
        extend[:, k] = found.action == rule.LOOK_EXTEND

    # Pooled look for the extended models: slots 3-5 added, then at most one re-measure per arm in all.
    slots2 = {}
    for m in MODELS:
        more = np.concatenate([slots1[m], np.tile(np.arange(RUNS, 2 * RUNS), (batch, 2, 1))], axis=2)
        slots2[m], _ = _remeasure(chunk, by_model[m], flag, more, spare_used[m])
    ext_rows = np.stack([extend[:, MODELS.index(r[1])] for r in rows], axis=1)
    ext_q = np.stack([extend[:, MODELS.index(r[1])] for r in qrows], axis=1)
    used2 = {k: v for m in MODELS for k, v in _in_job(chunk, by_model, noises, slots2, m).items()}
    sp2 = _speed_look(chunk, rows, used2, slots2, rules, cross_job=False, thresholds=POOLED,
                      calibrations=in_job_cal)
    qu2 = _quality_look(chunk, test_sets, qrows, disp, slots2, rules, POOLED)
    # The pooled report of an extended model compares its 6+6 runs; the other models keep their first
    # look. Holm and BH run over the model's gated rows at both looks: that is what keeps α₁ + α₂ a bound.
    for look, first, member in ((sp2, sp1, ext_rows), (qu2, qu1, ext_q)):
        for key in look:
            if key != "kind":
                look[key] = np.where(member, look[key], first[key])
    vs2 = _family(sp2, POOLED, sg)
    vq2 = _family(qu2, POOLED, qg, catastrophic=qu2["catastrophic"])
    fail = fail1.any(1) | (vs2 == FAIL).any(1) | (vq2 == FAIL).any(1)
    warn = ~fail & ((vs2 == WARN).any(1) | (vq2 == WARN).any(1))
    tgt = [i for i, r in enumerate(rows) if r[0] == TARGET]
    tq = [i for i, r in enumerate(qrows) if r[0] == TARGET]  # its row and its co-moving group's
    runs = np.zeros((batch, len(MODELS)))
    for k, m in enumerate(MODELS):  # both arms' scored runs, a re-measure counting as one more
        remeasured_pooled = (slots2[m] == 2 * RUNS).any(-1).sum(-1)
        remeasured_first = (slots1[m] == 2 * RUNS).any(-1).sum(-1)
        runs[:, k] = np.where(extend[:, k], 4 * RUNS + remeasured_pooled, 2 * RUNS + remeasured_first)
    return Outcome(
        any_fail=fail, any_warn=warn,
        target_thr_fail=(vs1[:, tgt] == FAIL).any(1) | (vs2[:, tgt] == FAIL).any(1),
        target_thr_warn_or_fail=(vs1[:, tgt] == FAIL).any(1) | (vs2[:, tgt] >= WARN).any(1),
        target_wer_fail=((vq1[:, tq] == FAIL) | (vq2[:, tq] == FAIL)).any(1),
        target_wer_warn_or_fail=((vq1[:, tq] == FAIL) | (vq2[:, tq] >= WARN)).any(1),
        runs_per_model=runs, slots={"first": slots1, "pooled": slots2}, extended=extend,
        target_thr_detects=_target_detects(sp1, sp2, rows, extend),
        target_thr_oracle=oracle_fail(chunk, rows, extend, rules),
        target_hits6=None if chunk.target_hits is None else chunk.target_hits[:, :2 * RUNS].sum(axis=1),
        target_hits_scored=_hits_scored(chunk, slots1, slots2, extend),
        rows_first={**{(r[0], r[2]): vs1[:, i] for i, r in enumerate(rows)},
                    **{(r[0], r[3]): vq1[:, i] for i, r in enumerate(qrows)}},
        rows_pooled={**{(r[0], r[2]): vs2[:, i] for i, r in enumerate(rows)},
                     **{(r[0], r[3]): vq2[:, i] for i, r in enumerate(qrows)}},
        few_sessions_fail=_few_fired(qu1) | _few_fired(qu2))


def _few_fired(look: dict) -> np.ndarray:
    """PRs in which the few-session rule FAILs a tested row at this look (gate.judging.few_sessions)."""
    return (look["few"] & ~np.isnan(look["p"])).any(axis=1)


def _hits_scored(chunk: Chunk, slots1: dict, slots2: dict, extend: np.ndarray) -> np.ndarray | None:
    """(B,) the intermittent hits among the target's candidate runs the gate scored at its last look."""
    if chunk.target_hits is None:
        return None
    model = TARGET.split("/")[0]
    hits = [np.take_along_axis(chunk.target_hits, slots[model][:, 1], axis=1).sum(axis=1) for slots in (slots1, slots2)]
    return np.where(extend[:, MODELS.index(model)], hits[1], hits[0])


def _in_job(chunk: Chunk, by_model: dict, calibrations: dict, slots: dict, model: str, order_known: bool = True) -> dict:
    """(model, metric) -> the σ an in-job row uses (gate.stats.speed.own_noise over the model's workloads' runs in
    these slots, pooled with the calibration when it is fresh and agrees)."""
    out = {}
    stale = bool(chunk.noise is not None and chunk.noise.stale_known)
    arms = {metric: np.concatenate([np.take_along_axis(chunk.speed[wid][metric], slots[model], axis=2)
                                    for wid in by_model[model]], axis=1) for metric in SPEED_ROWS}
    # σ after a run-position term, where the order is known (gate run's log; not in two trees by hand)
    at = slot_positions(slots[model], arms[SPEED_ROWS[0]].shape[1] // 2) if order_known else None
    # without a run log and with fewer than 4 runs an arm: σ untrimmed, no slow-mode starts (gate.stats.speed.trims)
    trim = trims(arms[SPEED_ROWS[0]], order_known)
    # σ on the fast mode, the slow-mode starts the judge's rows set aside (gate.judging.speed_rows.model_agreement)
    slow = model_slow_set(arms["throughput"], at, run_order=order_known)
    arms = {metric: row_on_fast_mode(a, at, higher_is_better=metric == "throughput", trim=trim, model_slow=slow)[0]
            for metric, a in arms.items()}
    parts = [(arms[metric], calibrations[(model, metric)]) for metric in SPEED_ROWS]
    joint = joint_agreement(parts, [at] * len(SPEED_ROWS), trim=trim)
    low = joint_agreement(parts, [at] * len(SPEED_ROWS), low_tail=True, trim=trim)
    for metric in SPEED_ROWS:
        cal = calibrations[(model, metric)]
        out[(model, metric)] = own_noise(arms[metric], cal, stale=stale and cal is not None, agreement=joint,
                                         positions=at, agreement_low=low, trim=trim)[0]
    return out


def _across_jobs(chunk: Chunk, by_model: dict, calibrations: dict, slots: dict) -> dict:
    """(model, metric) -> the σ a row across jobs uses (gate.stats.speed.across_jobs_noise: the calibration's, its
    within-job part raised to the sides' own where their spread is larger beyond chance)."""
    out = {}
    for (model, metric), cal in calibrations.items():
        arms = np.concatenate([np.take_along_axis(chunk.speed[wid][metric], slots[model], axis=2)
                               for wid in by_model[model]], axis=1)
        out[(model, metric)] = None if cal is None else across_jobs_noise(arms, cal)[0]
    return out


def _runner_sigma(chunk: Chunk, batch: int) -> dict:
    """(workload, metric) -> (B,) the σ the runner's outlier rule judges a run against: the workload's own A/A
    calibration, unless known stale (gate.judging.outliers.calibration_sigma, as `gate run` loads it); 0 where none
    is usable (the rule's 3% alone)."""
    out = {}
    for w in WORKLOADS:
        for metric in SPEED_ROWS:
            known_stale = chunk.noise is not None and chunk.noise.stale_known
            cal = None if known_stale else speed_calibration(chunk.cal_speed, [w.workload_id], metric,
                                                            chunk.cross_job_calibration, chunk.cal_nights)
            sigma = np.zeros(batch)
            if cal is not None:
                usable = sigma_usable(np.asarray(cal.sigma), np.asarray(cal.sigma_df))
                sigma = np.where(usable, flag_sigma(cal.sigma, cal.sigma_df), 0.0)
            out[(w.workload_id, metric)] = np.broadcast_to(sigma, (batch,))
    return out


def _remeasure(chunk: Chunk, workloads: list[str], flag: dict, slots: np.ndarray,
               used: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """gate run's re-measures (gate.runner.twolooks), once per arm over the whole plan, both arms alike, chosen by the
    runner's own functions at the look's end, in the order the runner asks them there: the arm's deepest slow-mode
    start (gate.stats.slowmode.deepest_slow_start), else the run the outlier rule picks on the gated speed metrics of
    the model's workloads (gate.stats.outliers.run_to_remeasure; none while a run worse in some workloads only
    stays). The runner asks the outlier rule after every scored run too, the simulator at the look's end only."""
    rows = [(wid, metric) for wid in workloads for metric in SPEED_ROWS]
    y = np.stack([np.take_along_axis(chunk.speed[wid][metric], slots, axis=2) for wid, metric in rows], axis=2)
    sigma = np.stack([flag[row] for row in rows], axis=1)[:, None, :]
    outlier = run_to_remeasure(y, sigma, np.array([metric == "throughput" for _, metric in rows]),
                               np.array([wid for wid, _ in rows]), np.array([metric for _, metric in rows]))[0]  # (B, 2)
    arms = np.concatenate([np.take_along_axis(chunk.speed[wid]["throughput"], slots, axis=2) for wid in workloads],
                          axis=1)
    slow = deepest_slow_start(remeasure_depth(arms, arm_positions(arms.shape[1], arms.shape[2]), higher_is_better=True))
    first = np.where(slow >= 0, slow, outlier)
    redo = (first >= 0) & ~used
    slots = slots.copy()
    b, a = np.nonzero(redo)
    slots[b, a, first[b, a]] = 2 * RUNS
    return slots, used | redo


def _speed_look(chunk: Chunk, rows, noises, slots, rules: Rules, *, cross_job: bool, thresholds: Thresholds,
                order_known: bool = True, calibrations: dict | None = None) -> dict:
    """`thresholds`: the look's; `calibrations`: (model, metric) -> the calibration whose wild runs are evidence of the
    host's (gate.stats.speed.host_wild_share); None where compare uses none (no record, or stale in one job)."""
    alpha, _ = rule.levels(thresholds, "speed")
    bonferroni = thresholds.own_runs_bonferroni  # the first look: few runs, and more follow
    p, above, half, can_fail, unstable, se, df, floor_rows = [], [], [], [], [], [], [], []
    own_se: list = []
    own_df: list = []
    batch = slots[rows[0][1]].shape[0]
    speed_rows_of = {model: sum(r[1] == model for r in rows) for _, model, _ in rows}
    model_slow: dict = {}
    for wid, model, metric in rows:
        y = np.take_along_axis(chunk.speed[wid][metric], slots[model], axis=2)
        noise = noises[(model, metric)]
        floor = rules.floor_thr if metric == "throughput" else rules.floor_p95
        floor_rows.append(np.full(batch, floor))
        if noise is None:  # across jobs without a calibration: the ratio policy, WARN at most (not modelled: PASS)
            p.append(np.full(batch, np.nan))
            for lst in (above, half, can_fail, unstable):
                lst.append(np.zeros(batch, bool))
            se.append(np.full(batch, np.nan))
            df.append(np.full(batch, np.nan))
            own_se.append(np.full(batch, np.nan))
            own_df.append(np.full(batch, np.nan))
            continue
        model_arms = np.concatenate([np.take_along_axis(chunk.speed[w][metric], slots[model], axis=2)
                                     for w in chunk.speed if w.split("/")[0] == model], axis=1)
        at = None if cross_job or not order_known else slot_positions(slots[model], model_arms.shape[1] // 2)
        slow, alike = None, np.zeros(batch, bool)
        trim = cross_job or trims(model_arms, order_known)  # gate.judging.speed_rows.judge_speed
        if not cross_job:  # the slow-mode starts set aside, as the judge's row does (speed_rows._set_slow_starts_aside)
            if model not in model_slow:
                thr_arms = np.concatenate([np.take_along_axis(chunk.speed[w]["throughput"], slots[model], axis=2)
                                           for w in chunk.speed if w.split("/")[0] == model], axis=1)
                model_slow[model] = model_slow_set(thr_arms, at, run_order=at is not None)
            model_arms, slow, slower, terms = row_on_fast_mode(model_arms, at, higher_is_better=metric == "throughput",
                                                               trim=trim, model_slow=model_slow[model])
            if terms is not None:  # the difference without the job's position terms (speed_rows._Runs.log)
                y = y - terms
            # an escaped slow mode (candidate runs slower in every workload) still bars a FAIL
            alike = slowmode_blocker(slower, ~np.isnan(model_arms[:, 1::2]).all(axis=1), bonferroni)
        gap_sigma = baseline_sigma(model_arms[:, 0::2], None if at is None else at[:, 0::2], trim=trim)
        test = shift_test(y[:, 0], y[:, 1], noise, higher_is_better=metric == "throughput", cross_job=cross_job,
                          gap_sigma=gap_sigma, slow_mode=slow, more_runs_follow=thresholds.more_runs_follow,
                          wild_share=host_wild_share(model_arms[:, 0::2], noise, None if calibrations is None
                                                     else calibrations[(model, metric)], gap_sigma,
                                                     None if slow is None else slow[:, 0]))
        p.append(test.p)
        reaches = floors.speed_reaches(test.worse_rel, floor)
        above.append(reaches[0])
        half.append(reaches[1])
        # FAIL also needs the A/B's own runs alone to confirm the shift (gate.judging.compare._decide_speed)
        p_own, se_own, df_own = own_runs_test(y[:, 0], y[:, 1], model_arms, higher_is_better=metric == "throughput",
                                              positions=at, trim=trim)
        own_se.append(se_own)
        own_df.append(df_own)
        # whether the σ may be used (SpeedNoise.usable, as speed_rows.speed_blockers asks it)
        usable = np.broadcast_to(sigma_usable(np.asarray(noise.sigma, dtype=float), np.asarray(noise.sigma_df)), (batch,))
        # the facts to the judge's rule (gate.judging.eligibility, which speed_rows and compare call)
        shaky = eligibility.speed_run_blockers(test.favourable_set_aside, test.worse_set_aside, test.intermittent)
        blocked = eligibility.cannot_fail(
            eligibility.speed_noise_blockers(np.ones(batch, bool), usable, np.asarray(y.shape[-1]),
                                             np.asarray(noise.cross_pairs), cross_job=cross_job),
            shaky, eligibility.speed_confirmation_blockers(
                test.p, p_own, alike, alpha=alpha,
                own_level=eligibility.own_runs_level(alpha, speed_rows_of[model], bonferroni)))
        can_fail.append(np.broadcast_to(~blocked, test.p.shape))
        unstable.append(np.logical_or.reduce([mask for reason, mask in shaky.items() if reason in UNSTABLE]))
        se.append(test.se)
        df.append(np.broadcast_to(test.df, test.p.shape))
        # a σ that may not be used (too few df: e.g. slow starts and the position terms took them) leaves the row to
        # the ratio policy, untested (gate.judging.speed_rows.judge_speed), as where there is no σ at all
        for lst in (p, se, df, own_se, own_df):
            lst[-1] = np.where(usable, lst[-1], np.nan)
        for lst in (above, half, can_fail, unstable):
            lst[-1] = np.asarray(lst[-1], dtype=bool) & usable
    return {"p": np.stack(p, 1), "above": np.stack(above, 1), "half": np.stack(half, 1),
            "can_fail": np.stack(can_fail, 1), "unstable": np.stack(unstable, 1), "se": np.stack(se, 1),
            "df": np.stack(df, 1), "floor": np.stack(floor_rows, 1), "kind": "speed",
            "own_se": np.stack(own_se, 1), "own_df": np.stack(own_df, 1)}


def _quality_look(chunk: Chunk, test_sets, qrows, disp, slots, rules: Rules, thresholds: Thresholds) -> dict:
    alpha, _ = rule.levels(thresholds, "quality")
    p, above, half, cat, can_fail, se, floor_rows, deltas = [], [], [], [], [], [], [], []
    groups: list = []  # per row: the co-moving group's own row (accuracy_rows._group_row), or None
    own_sums: list = []  # per row: (ss_total, ss_units, df) on each side's own runs, or None (gate.judging.compare)
    base_rows = [r for r in qrows if not r[3].endswith(COMOVING_SUFFIX)]  # the groups' rows are made with them
    for wid, model, measure, _ in base_rows:
        ts = test_sets[wid]
        e = chunk.errors[wid][measure]  # (B, 2, SLOTS, n)
        idx = slots[model][..., None]
        runs = np.take_along_axis(e, np.broadcast_to(idx, idx.shape[:3] + (e.shape[-1],)), axis=2)
        r_b, r_c = runs.shape[2], runs.shape[2]
        mean_b, mean_c = runs[:, 0].mean(axis=1), runs[:, 1].mean(axis=1)
        scaled = runs[:, 1].sum(axis=1) * r_b - runs[:, 0].sum(axis=1) * r_c  # d × R_b·R_c, integers
        n_total = ts.ref_len.sum()
        delta = (mean_c - mean_b).sum(axis=1) / n_total
        base_rate = mean_b.sum(axis=1) / n_total
        floor_abs = floors.quality_floor_abs(ts.ref_len.shape[0], small_set_size=rules.small_set_size,
                                             small_set_floor_abs=rules.small_set_floor_abs,
                                             floor_abs=rules.quality_floor_abs)
        floor_rows.append(floors.quality_floor(floor_abs, rules.quality_floor_rel, base_rate))
        identical = ~scaled.any(axis=1)
        found = disp[(wid, measure)]
        if found is None:
            # no dispersion record: each side's own runs are its A/A arm (overdispersion.own_runs, accuracy_rows);
            # with too few of them, FAIL only when each side's runs were identical (no churn seen)
            total, units, own_df = own_runs_sums(runs[:, 0], runs[:, 1])
            df = np.full(len(scaled), own_df)
            enough = own_runs_enough(own_df)  # overdispersion.own_runs' condition
            widen = churn_widens(total, units, own_df) & enough
            possible = churn_possible(runs[:, 0], runs[:, 1])  # accuracy_rows._churn_possible
            can_fail.append(~eligibility.churn_blockers(np.zeros(len(scaled), bool), possible,
                                                        np.full(len(scaled), enough))[CannotFail.NO_CHURN_RECORD])
            groups.append(None)
            # rows whose own runs are the evidence, with churn possible (accuracy_rows' own_churn)
            own_sums.append((total, units, own_df, enough & possible,
                             run_permutation_p(runs[:, 0].sum(-1), runs[:, 1].sum(-1))))
        else:
            total, units, df, rest, group_ss = found
            groups.append(_group_look(runs, scaled * ~rest, ~rest, group_ss, df, ts, mean_b, rules, floor_abs))
            scaled = scaled * rest  # utterances that co-move in the A/A runs are not tested (accuracy_rows)
            widen = churn_widens(total, units, df)
            can_fail.append(np.ones(len(scaled), bool))
            own_sums.append(None)
        d = scaled / (r_b * r_c)
        sum_sq = (d ** 2).sum(axis=1)
        held, held_base = delta, base_rate  # the change the floors are held to: the rest's where some were set aside
        if found is not None:
            apart, rest_len = ~rest.all(axis=1), (ts.ref_len * rest).sum(axis=1)
            held = np.where(apart, d.sum(axis=1) / rest_len, delta)
            held_base = np.where(apart, (mean_b * rest).sum(axis=1) / rest_len, base_rate)
        above.append(floors.quality_reaches(held, held_base, floor_abs, rules.quality_floor_rel, 1.0))
        half.append(floors.quality_reaches(held, held_base, floor_abs, rules.quality_floor_rel, floors.WARN_SHARE))
        none_left = ~scaled.any(axis=1) & ~identical  # a change only among the set-aside: p 1 (0.5 widened)
        with np.errstate(all="ignore"):
            approx = stats.norm.sf(d.sum(axis=1) / np.sqrt(sum_sq))
        # The exact null only where it can matter: a p above 0.1 decides nothing (not the row's FAIL, WARN or
        # extension, nor, through Holm or BH, any other row's), and the normal approximation of the
        # sign-flip null is far better than 0.3 vs 0.1 there.
        exact = np.where(none_left, 1.0, approx)
        need = ~identical & ~none_left & ~widen & (approx < 0.3)
        if need.any():
            exact[need] = sign_flip_p_batch(scaled[need])
        a = 1 / r_b + 1 / r_c
        with np.errstate(all="ignore"):
            excess = np.where(widen, churn_excess(total, units, df), 0.0)  # Dispersion.excess
            wide = widened_p_arrays(d.sum(axis=1), sum_sq, excess, excess_df(total, units, df), a)
            se.append(np.sqrt(sum_sq + a * np.maximum(excess, 0.0)) / n_total)
        p.append(np.where(identical, np.nan, np.where(widen, wide, exact)))
        cat.append(catastrophic_masks(runs[:, 0], runs[:, 1], ts.ref_len)[0].sum(axis=1))
        deltas.append(delta)
    batch = len(p[0])
    can_fail, run_p = _hidden_groups(base_rows, own_sums, can_fail, slots, alpha)
    # the co-moving groups' own rows, after the rows (judge's qrows + their COMOVING_SUFFIX twins): NaN p where none
    exact, shares = [], []
    for g in groups:
        shares.append(np.zeros(batch) if g is None else g[6])  # the group's utterances
        deltas.append(np.full(batch, np.nan) if g is None else g[7])
        none = (np.full(batch, np.nan), np.zeros(batch, bool), np.zeros(batch, bool), np.full(batch, np.inf),
                np.full(batch, np.nan), np.full(batch, np.nan))
        gp, ga, gh, ge, gs, gf = none if g is None else g[:6]
        p.append(gp), above.append(ga), half.append(gh), se.append(gs), floor_rows.append(gf)
        can_fail.append(np.ones(batch, bool)), exact.append(ge)
        cat.append(np.zeros(batch))
    # the weights and the runs' exact p a FAIL also needs, to the judge's rule (gate.judging.eligibility: compare's
    # _quality_weights and _hold_to_the_exact_p): a co-moving group's row always has that p, a row on its own runs where
    # the model's runs churn together (_hidden_groups' run_p; 0 elsewhere, which nothing bars)
    tested = ~np.isnan(np.stack(p, 1))
    nb = len(base_rows)
    # the few-session rule (compare._decide_quality), which leaves a co-moving group's own row alone
    n_units = np.stack([np.full(batch, test_sets[r[0]].ref_len.shape[0]) for r in base_rows] + shares, 1)
    few = few_sessions.fires(n_units, np.stack(deltas, 1), np.stack(cat, 1), np.stack(p, 1),
                             whole=np.arange(len(p)) < nb)
    rest, share = eligibility.quality_weights(n_units[:, :nb], np.stack(shares, 1), tested[:, nb:])
    weight = np.concatenate([rest, share], 1)
    models = np.array([r[1] for r in base_rows])
    # the weight a model's family holds: one per tested measure
    total = np.stack([np.maximum(tested[:, :nb][:, models == model].sum(1), 1) for model in models], 1)
    exact_p = eligibility.exact_p_blockers(np.concatenate([np.stack(run_p, 1), np.stack(exact, 1)], 1), weight,
                                           np.concatenate([total, total], 1),
                                           np.arange(2 * nb) < nb, alpha=alpha).blockers[CannotFail.RUNS_EXACT_P]
    can_fail = [c & ~exact_p[:, k] if k < nb else ~exact_p[:, k] for k, c in enumerate(can_fail)]
    return {"p": np.stack(p, 1), "above": np.stack(above, 1), "half": np.stack(half, 1),
            "can_fail": np.stack(can_fail, 1), "catastrophic": np.stack(cat, 1), "weight": weight,
            "unstable": np.zeros((batch, len(p)), bool), "se": np.stack(se, 1), "floor": np.stack(floor_rows, 1),
            "few": few, "kind": "quality"}


def oracle_fail(chunk: Chunk, rows, extend: np.ndarray, rules: Rules) -> np.ndarray:
    """The power limit the gate is held to (issue 36): the target's gated speed rows FAIL by a one-sided z test that
    KNOWS the run-to-run σ (the noise model's bell-shaped σ of each metric), on the runs the gate's plan gave it
    (the first look's 3+3, the pooled 6+6 where the gate extended the model; nothing re-measured), at the same
    family α (Holm's first step over the model's gated speed rows: α₁/m, α₂/m) and the same floors. It knows
    nothing of the noise's shape: a slow start or an intermittent hit is noise to it as to anyone who knows σ."""
    noise = chunk.noise
    assert noise is not None
    model = next(r[1] for r in rows if r[0] == TARGET)
    m = sum(r[1] == model for r in rows)
    ext = extend[:, MODELS.index(model)]
    own = noise.p95_own  # the p95's own noise beside the run's (_speed_runs)
    found = np.zeros(ext.shape, bool)
    for metric, sigma, floor in (("throughput", noise.sigma_run, rules.floor_thr),
                                 ("latency_p95_s", float(np.hypot(noise.sigma_run, own)), rules.floor_p95)):
        y = chunk.speed[TARGET][metric]
        sign = -1.0 if metric == "throughput" else 1.0
        for runs, alpha, at in ((RUNS, FIRST.alpha, ~ext), (2 * RUNS, POOLED.alpha, ext)):
            worse = sign * (y[:, 1, :runs].mean(-1) - y[:, 0, :runs].mean(-1))
            z = worse / (sigma * np.sqrt(2 / runs))
            fail = (z >= stats.norm.isf(alpha / m)) & floors.speed_reaches(np.expm1(worse), floor)[0]
            found |= at & fail
    return found


def _group_look(runs, scaled_group, group, group_ss, aa_df, ts: TestSet, mean_b, rules: Rules,
                floor_abs: np.ndarray) -> tuple:
    """The co-moving group's own row, batched (gate.judging.accuracy_rows._group_row, overdispersion.group_test):
    (p, above, half, exact p, se, floor, size, Δ); p NaN where the A/A runs found no group."""
    r_b = r_c = runs.shape[2]
    n_total = ts.ref_len.sum()
    shift = scaled_group.sum(axis=1) / (r_b * r_c)
    totals = (runs * group[:, None, None, :]).sum(axis=-1).astype(float)  # (B, 2, R)
    own_ss, own_df = group_spread(totals[:, 0], totals[:, 1])
    gp, gse, _ = group_test(shift, own_ss, own_df, group_ss, np.where(group.any(axis=1), aa_df, 0), 1 / r_b + 1 / r_c)
    exact = run_permutation_p(totals[:, 0], totals[:, 1])  # a FAIL needs it at α too (gate.judging.compare)
    present = group.any(axis=1)
    base_rate = mean_b.sum(axis=1) / n_total
    held = shift / n_total
    reaches = [floors.quality_reaches(held, base_rate, floor_abs, rules.quality_floor_rel, share)
               for share in (1.0, floors.WARN_SHARE)]
    return (np.where(present, gp, np.nan), present & reaches[0], present & reaches[1], np.where(present, exact, np.inf),
            np.where(present, gse / n_total, np.nan), floors.quality_floor(floor_abs, rules.quality_floor_rel, base_rate),
            group.sum(axis=1), held)


def _hidden_groups(qrows, own_sums: list, can_fail: list, slots, alpha: float) -> tuple[list, list]:
    """Per model, the rows on their own runs to the judge's hidden-group rule (gate.judging.eligibility.hidden_groups,
    which compare._hidden_groups calls too). Returns can_fail and, per row, the runs' exact p where a FAIL also needs
    it (0 elsewhere)."""
    out = list(can_fail)
    run_p = [np.zeros(len(c)) for c in can_fail]
    for model in dict.fromkeys(r[1] for r in qrows):
        cols = [i for i, r in enumerate(qrows) if r[1] == model and own_sums[i] is not None]
        if not cols:
            continue
        runs = slots[model].shape[-1]
        found = eligibility.hidden_groups(np.stack([own_sums[i][0] for i in cols], 1),
                                          np.stack([own_sums[i][1] for i in cols], 1),
                                          np.array([float(own_sums[i][2]) for i in cols]),
                                          np.stack([own_sums[i][3] for i in cols], 1), runs, runs, alpha=alpha)
        for k, i in enumerate(cols):
            run_p[i] = np.where(found.exact[:, k], own_sums[i][4], 0.0)
            out[i] = out[i] & ~found.blockers[CannotFail.HIDDEN_GROUP][:, k]
    return out, run_p


def _target_detects(first: dict, pooled: dict, rows, extend: np.ndarray) -> np.ndarray:
    """The target throughput row's Row.detects at its last look (gate.judging.sensitivity, as compare's
    _decide_speed asks it over the model's gated speed rows), as a drop."""
    k = next(i for i, r in enumerate(rows) if r[0] == TARGET and r[2] == "throughput")
    cols = [i for i, r in enumerate(rows) if r[1] == rows[k][1]]
    ext = extend[:, MODELS.index(rows[k][1])]
    found = []
    for look, thresholds in ((first, FIRST), (pooled, POOLED)):
        alpha, _ = rule.levels(thresholds, "speed")
        seen = sensitivity.sensitivity(look["se"][:, cols], look["df"][:, cols], look["floor"][:, cols],
                                       np.ones((len(ext), len(cols)), bool), alpha=alpha, family="speed")
        found.append(sensitivity.detects(look["se"][:, [k]], look["df"][:, [k]], seen.level, look["own_se"][:, [k]],
                                         look["own_df"][:, [k]],
                                         eligibility.own_runs_level(alpha, len(cols), thresholds.own_runs_bonferroni)))
    size = np.where(ext, found[1][:, 0], found[0][:, 0])
    return np.asarray(1 / (1 + size) - 1)


def _blind(look: dict, thresholds: Thresholds, cols) -> np.ndarray:
    """Rows (of these columns) blind at this look (gate.judging.sensitivity, compare's `blind`)."""
    p = look["p"][:, cols]
    alpha, _ = rule.levels(thresholds, look["kind"])
    return sensitivity.sensitivity(look["se"][:, cols], look["df"][:, cols] if "df" in look else None,
                                   look["floor"][:, cols], ~np.isnan(p), alpha=alpha, family=look["kind"]).blind


def _family(look: dict, thresholds: Thresholds, groups: list[np.ndarray],
            catastrophic: np.ndarray | None = None) -> np.ndarray:
    """Verdict codes at the look's Thresholds; Holm and BH run within each group of columns (one model: CI compares
    each model in its own job, so each model's report is its own family)."""
    alpha, warn_q = rule.levels(thresholds, look["kind"])
    verdict = np.zeros(look["p"].shape, dtype=int)
    for cols in groups:
        p = look["p"][:, cols] if "weight" not in look else weighted(look["p"][:, cols], look["weight"][:, cols])
        # the judge's own family rule, WARN-at-least rules included (a newly catastrophic utterance, unstable runs)
        verdict[:, cols] = rule.family(p, look["above"][:, cols], look["half"][:, cols], look["can_fail"][:, cols],
                                       alpha=alpha, warn_q=warn_q,
                                       unstable=look["unstable"][:, cols],
                                       catastrophic=None if catastrophic is None else catastrophic[:, cols],
                                       forced=look["few"][:, cols] if "few" in look else None).verdict
    return verdict


def one_job_verdicts(chunk: Chunk, test_sets: dict, by_model: dict[str, list[str]], calibrations: dict,
                     rules: Rules, thresholds: Thresholds,
                     measures: tuple[tuple[str, str], ...] = (("wer", "corpus_wer"),)) -> dict:
    """B one-job comparisons of two trees (`gate.judging.compare.compare` of two result trees, run order known,
    one decision at `thresholds`, nothing re-measured) on workloads the caller chooses, judged by the same facts adapter and
    the batched rule (`gate.judging.rule.family`, through `_family`). For sweeps whose noise is not the committed
    scenarios' (tests/e2e/verdict/test_compare_sweeps.py), which check it against `compare` on a few of their pairs.

    chunk: `speed` and `errors` for the workloads of `by_model` (model -> its workloads), every arm `RUNS` runs
    (no spare slot); test_sets: workload -> anything with `ref_len`; calibrations: (model, metric) -> the model's
    pooled SpeedNoise (B,) for each of SPEED_ROWS; measures: (measure, metric) of each workload's accuracy rows,
    judged on each side's own runs (no dispersion record). Returns (workload, metric) -> (B,) verdict codes, gated
    rows only (a co-moving group's row never exists without a dispersion record)."""
    batch = next(iter(chunk.speed.values()))["throughput"].shape[0]
    models = list(by_model)
    rows = [(wid, m, metric) for m in models for wid in by_model[m] for metric in SPEED_ROWS]
    qrows = [(wid, m, measure, metric) for m in models for wid in by_model[m] for measure, metric in measures]
    qrows = qrows + [(r[0], r[1], r[2], r[3] + COMOVING_SUFFIX) for r in qrows]
    slots = {m: np.broadcast_to(np.arange(RUNS), (batch, 2, RUNS)) for m in models}
    used = {k: v for m in models for k, v in _in_job(chunk, by_model, calibrations, slots, m).items()}
    sp = _speed_look(chunk, rows, used, slots, rules, cross_job=False, thresholds=thresholds, calibrations=calibrations)
    disp = {(r[0], r[2]): None for r in qrows}
    qu = _quality_look(chunk, test_sets, qrows, disp, slots, rules, thresholds)
    sg = [np.array([i for i, r in enumerate(rows) if r[1] == m]) for m in models]
    qg = [np.array([i for i, r in enumerate(qrows) if r[1] == m]) for m in models]
    verdict_s = _family(sp, thresholds, sg)
    verdict_q = _family(qu, thresholds, qg, catastrophic=qu["catastrophic"])
    out = {(r[0], r[2]): verdict_s[:, i] for i, r in enumerate(rows)}
    out.update({(r[0], r[3]): verdict_q[:, i] for i, r in enumerate(qrows) if not r[3].endswith(COMOVING_SUFFIX)})
    return out
