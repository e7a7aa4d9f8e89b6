"""The noise models of the power benchmark. COMMITTED BEFORE THE RULES WERE TUNED; do not change them to
make a figure look better (issue 10). Every number is an assumption, named here once.

Workloads: the suite's ten, with their sizes, reference lengths and true error rates (sglang-omni CI
reference values, as in the first benchmark). Speed: every workload's runs wobble with σ_run = 1%
(the headline), for throughput and p95 latency alike (p95 adds its own 1% on top of the run effect).

Per arm (one job) and run r of workload w:
    run effect     s_r ~ N(0, σ_run²);  slow restart: with probability slow_prob the run is in the
                   runbook's slow mode (throughput × slow_factor, latency ÷ slow_factor)
    job effect     j_w = τ·(√½·u_job + √½·u_w): half shared by the job's workloads, half per workload
    ln throughput  = ln T0 − s_r − j_w + ln(slow)
    ln p95         = ln P0 + s_r + j_w − ln(slow) + N(0, p95_own²)
An interleaved A/B runs both arms in ONE job (the same j_w on both sides: it cancels); a comparison
against a stored baseline or between nightlies has a different job per arm.

Accuracy, per utterance i: reference length n_i, baseline errors e_i (overdispersed Poisson around the
true corpus rate, drawn once: a real test set is fixed). Run to run:
    independent churn  a fraction f (per PR and workload, uniform in churn_range) of utterances each
                       take e_i or e_i + 1 with probability ½ in every run, independently;
    correlated churn   a further shared_churn fraction moves TOGETHER: in each run all of them take
                       +1 with probability ½ (run-level nondeterminism: batch composition, kernels);
    long sessions      (20/25-session sets) every session jitters by a Skellam count, 0.5% of its errors.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np


@dataclass(frozen=True)
class WorkloadTruth:
    workload_id: str
    model: str
    n: int  # utterances (sessions)
    unit_len: float  # mean reference length, words (EN) or characters
    measures: tuple[tuple[str, str, float], ...]  # (metric, per-sample measure, true corpus rate)
    throughput_metric: str
    sessions: bool = False


def _seedtts(model: str, lang: str, n: int, unit_len: float, wer: float) -> WorkloadTruth:
    return WorkloadTruth(f"{model}/asr_{lang}", model, n, unit_len, (("corpus_wer", "wer", wer),),
                         "throughput_samples_per_s")


def _moss(name: str, n: int, unit_len: float, cer: float, cp_cer: float, sessions: bool = False) -> WorkloadTruth:
    return WorkloadTruth(f"moss_td/{name}", "moss_td", n, unit_len, (("cer", "cer", cer), ("cp_cer", "cp_cer", cp_cer)),
                         "throughput_qps", sessions)


WORKLOADS: tuple[WorkloadTruth, ...] = (
    _seedtts("qwen3", "en", 1088, 11.0, 0.0122),
    _seedtts("qwen3", "zh", 2020, 22.0, 0.0060),
    _seedtts("whisper", "en", 1088, 11.0, 0.0138),
    _seedtts("whisper", "zh", 2020, 22.0, 0.0667),
    _seedtts("fun", "en", 1088, 11.0, 0.0172),
    _seedtts("fun", "zh", 2020, 22.0, 0.0138),
    _moss("movies800times", 800, 40.0, 0.05914, 0.13177),
    _moss("movies800times_stream", 800, 40.0, 0.05828, 0.13069),
    _moss("aishell4_long", 20, 8000.0, 0.13860, 0.14147, sessions=True),
    _moss("googletime", 25, 6000.0, 0.33002, 0.33817, sessions=True),
)
MODELS = tuple(dict.fromkeys(w.model for w in WORKLOADS))
TARGET = "qwen3/asr_en"  # the workload a regression scenario changes


@dataclass(frozen=True)
class NoiseModel:
    name: str
    sigma_run: float = 0.01
    p95_own: float = 0.01
    tau: float = 0.0
    slow_prob: float = 0.0
    slow_factor: float = 0.80
    churn_range: tuple[float, float] = (0.01, 0.01)
    shared_churn: float = 0.0
    session_jitter: float = 0.005
    # The issue-21 noise matrix (benchmarks/power/matrix.py); the defaults leave the models above unchanged.
    tails: str = "normal"  # "t3": Student-t with 3 df, scaled to SD sigma_run
    drift: float = 0.0  # ln change per run slot, in run order (A and B interleaved: slot k of arm a at 2k + a)
    slow_job_prob: float = 0.0  # a whole job is slow (every run of it ÷ slow_job_factor), per job
    slow_job_factor: float = 0.90
    calibration_sigma: float | None = None  # the A/A calibration's runs drawn at this σ (stale calibration)
    stale_known: bool = False  # the freshness check says the calibration is stale
    intermittent_share: float = 0.0  # share of the TARGET's candidate runs that are slow ...
    intermittent_factor: float = 1.0  # ... by this factor (throughput × it, latency ÷ it)
    intermittent_p95_only: bool = False
    neutral_changes: int = 0  # TARGET's candidate: this many utterances +1 error and as many −1 (Δ 0), every run
    calibrated: bool = True  # False: no A/A calibration and no dispersion record at all
    # share of a run's run-to-run variance common to all the model's workloads: one server cycle serves them
    # all, so a slow server start slows every workload of it (issue 21, item 8)
    run_shared: float = 0.0
    # Issue 36's host noise: the runbook's slow-mode server starts (a server start, shared by the model's workloads,
    # lands in a slow mode), an arm's first scored run slower (warm-up leak), AR(1) between successive runs in job
    # order, intermittent candidate runs hit at random (not one per look), a WER change on the co-moving utterances.
    slow_start_prob: float = 0.0
    slow_start_factor: float = 0.92
    warmup_leak: float = 0.0  # each arm's first scored run this much slower (ln)
    ar1: float = 0.0  # ρ between successive runs of the job (both arms, in the interleave's order)
    intermittent_random: bool = False
    wer_on_comoving: bool = False


CLEAN = NoiseModel("clean")
HOSTILE = NoiseModel("hostile τ 0.5%", tau=0.005, slow_prob=0.02, churn_range=(0.02, 0.40), shared_churn=0.03)
HOSTILE_TAU1 = NoiseModel("hostile τ 1%", tau=0.01, slow_prob=0.02, churn_range=(0.02, 0.40), shared_churn=0.03)
NOISE_MODELS = {"clean": CLEAN, "hostile": HOSTILE, "hostile-tau1": HOSTILE_TAU1}


@dataclass(frozen=True)
class Scenario:
    key: str
    label: str
    noise: NoiseModel
    design: str  # "two-look" (interleaved A/B in one job, gate run's plan) or "cross-job" (vs a stored baseline)
    throughput_change: float = 0.0  # relative throughput change on TARGET (−0.03 = 3% slower; latency ÷ the same)
    wer_change_pp: float = 0.0  # diffuse corpus WER change on TARGET, percentage points
    whole_model: bool = False  # the throughput change on every workload of TARGET's model: a build slower everywhere
    extra: dict = field(default_factory=dict)


def scenarios() -> tuple[Scenario, ...]:
    out = []
    for noise in (CLEAN, HOSTILE):
        tag = "clean" if noise is CLEAN else "hostile"
        out.append(Scenario(f"noop-{tag}", f"no-op PR, {noise.name}", noise, "two-look"))
        for change in (0.03, 0.04, 0.05):
            out.append(Scenario(f"thr-{int(change * 100)}-{tag}", f"throughput −{change:.0%}, {noise.name}", noise,
                                "two-look", throughput_change=-change))
        for pp in (0.15, 0.3, 0.5):
            out.append(Scenario(f"wer+{pp}-{tag}", f"WER +{pp} pp diffuse, {noise.name}", noise, "two-look",
                                wer_change_pp=pp))
    for noise in (CLEAN, HOSTILE, HOSTILE_TAU1):
        tag = {CLEAN: "clean", HOSTILE: "tau05", HOSTILE_TAU1: "tau1"}[noise]
        out.append(Scenario(f"cross-noop-{tag}", f"no-op PR vs stored baseline, {noise.name}", noise, "cross-job"))
    out.append(Scenario("cross-thr-5-tau1", f"throughput −5% vs stored baseline, {HOSTILE_TAU1.name}", HOSTILE_TAU1,
                        "cross-job", throughput_change=-0.05))
    return tuple(out)


@dataclass(frozen=True, eq=False)
class TestSet:
    workload: WorkloadTruth
    ref_len: np.ndarray  # (n,)
    errors: dict  # measure -> (n,) baseline errors


def draw_test_sets(seed: int, target_factor: float = 1.0) -> dict[str, TestSet]:
    """The fixed utterances of every workload (drawn once per benchmark seed). `target_factor` scales the
    TARGET workload's number of utterances (how many a change needs: verdict_power.py --target-factor)."""
    rng = np.random.default_rng([seed, 0xA5])
    out = {}
    for w in WORKLOADS:
        if w.workload_id == TARGET and target_factor != 1.0:
            w = replace(w, n=int(round(w.n * target_factor)))
        if w.sessions:
            ref_len = np.maximum(1, rng.normal(w.unit_len, 0.3 * w.unit_len, w.n)).astype(np.int64)
            shape = 8.0
        else:
            ref_len = 1 + rng.negative_binomial(4, 4 / (4 + w.unit_len - 1), w.n).astype(np.int64)
            shape = 0.3
        errors, first = {}, None
        for _metric, measure, rate in w.measures:
            if measure == "cp_cer":  # cpCER = the CER errors plus speaker-attribution errors
                extra_rate = max(rate - w.measures[0][2], 0.0)
                errors[measure] = first + rng.poisson(ref_len * extra_rate * rng.gamma(shape, 1 / shape, w.n))
            else:
                errors[measure] = rng.poisson(ref_len * rate * rng.gamma(shape, 1 / shape, w.n)).astype(np.int64)
                first = errors[measure]
        out[w.workload_id] = TestSet(w, ref_len, errors)
    return out
