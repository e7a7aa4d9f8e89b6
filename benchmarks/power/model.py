"""The simulated truth: what each of the ten workloads measures, and how its numbers wobble from run to run.

One comparison ("pair") is a baseline arm and a candidate arm, each the runbook's 3 scored runs of every
workload. Everything here is a documented assumption (benchmarks/README.md, "Noise model"); the true values
are the sglang-omni CI reference values (sglang-omni-asr.md §4.4-4.5: gate / slack) so that the CI's absolute
thresholds are applied to the numbers they were calibrated for.

Speed, per workload and arm (one job), run r = 1..3:
  s_r = exp(sigma_run * z_r) * slow_r          run slowdown; slow_r > 1 on run 1 with prob. slow_first_prob
  latency_i,r = c * d_i * s_r * exp(jitter * e_i,r)   d_i: the utterance's own cost (lognormal, fixed)
  latency_mean_r, latency_p95_r = mean, 95th percentile of latency_.,r over the workload's samples
  throughput_r = T0 / s_r * exp(0.3 * sigma_run * u_r)  (closed loop: throughput ~ concurrency / latency)
  rtf_mean_r = R0 * latency_mean_r / L0 * exp(0.2 * sigma_run * v_r)
Accuracy, per workload: n_i reference words (chars), baseline errors e_i ~ Poisson(n_i * w * g_i) with
g_i ~ Gamma (overdispersed: most utterances error-free). Run to run, a fixed 1% of utterances are unstable
(each run takes e_i or e_i + 1 with probability 1/2); long sessions jitter by a Skellam count. cp_cer =
cer errors + speaker-attribution errors.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Mapping

import numpy as np

RUNS = 3
SEEDTTS_SPEED = ("throughput_samples_per_s", "latency_mean_s", "latency_p95_s", "rtf_mean")
MOSS_SPEED = ("throughput_qps", "latency_mean_s", "latency_p95_s", "rtf_mean")


@dataclass(frozen=True)
class WorkloadTruth:
    workload_id: str
    n: int  # utterances (or sessions)
    unit_len: float  # mean reference length of one utterance, in words (EN) or characters
    accuracy: Mapping[str, float]  # metric name -> true corpus error rate (fraction)
    speed: Mapping[str, float]  # metric name -> true value (samples/s, req/s, s, ratio)
    sigma_run: float  # run-to-run SD of log speed (0.5%-3%)
    sessions: bool = False  # long multi-speaker sessions: every session jitters a little

    @property
    def throughput_metric(self) -> str:
        return "throughput_qps" if "throughput_qps" in self.speed else "throughput_samples_per_s"


@dataclass(frozen=True)
class NoiseModel:
    slow_first_prob: float = 0.05  # an arm's run 1 is slow (cold caches) ...
    slow_first_range: tuple[float, float] = (0.02, 0.05)  # ... by this much (uniform)
    utterance_cost_sigma: float = 0.35  # lognormal SD of d_i (some utterances are long)
    request_jitter_sigma: float = 0.10  # lognormal SD of one request's latency around its utterance's cost
    unstable_fraction: float = 0.01  # utterances whose transcript flips between runs
    session_jitter: float = 0.005  # sessions: per-run Skellam jitter with mean rate * errors on each side


def _seedtts(model: str, lang: str, n: int, unit_len: float, wer: float, thr: float, lat: float, p95: float,
             rtf: float, sigma: float) -> WorkloadTruth:
    return WorkloadTruth(
        workload_id=f"{model}/asr_{lang}", n=n, unit_len=unit_len, accuracy={"corpus_wer": wer},
        speed={"throughput_samples_per_s": thr, "latency_mean_s": lat, "latency_p95_s": p95, "rtf_mean": rtf},
        sigma_run=sigma)


def _moss(name: str, n: int, unit_len: float, cer: float, cp_cer: float, qps: float, lat: float, p95: float,
          rtf: float, sigma: float, sessions: bool = False) -> WorkloadTruth:
    return WorkloadTruth(
        workload_id=f"moss_td/{name}", n=n, unit_len=unit_len, accuracy={"cer": cer, "cp_cer": cp_cer},
        speed={"throughput_qps": qps, "latency_mean_s": lat, "latency_p95_s": p95, "rtf_mean": rtf},
        sigma_run=sigma, sessions=sessions)


# SeedTTS EN references (asr_ci_config 0d34b501); ZH speed has no CI reference: [assumed] EN-like values.
# MOSS references = gate / slack from the MOSS table in §4.5 (1.1/0.9 for movies800, 1.2/0.8 for long sets).
# sigma_run spans 0.5%-3%: SeedTTS 0.5-2%, MOSS movies 1.5-2%, the long 20/25-session sets 3%.
DEFAULT_TRUTHS: tuple[WorkloadTruth, ...] = (
    _seedtts("qwen3", "en", 1088, 11.0, 0.0122, 248.599, 0.127, 0.190, 0.02753, 0.010),
    _seedtts("qwen3", "zh", 2020, 22.0, 0.0060, 260.0, 0.125, 0.190, 0.0270, 0.005),
    _seedtts("whisper", "en", 1088, 11.0, 0.0138, 108.049, 0.2942, 0.434, 0.0640, 0.015),
    _seedtts("whisper", "zh", 2020, 22.0, 0.0667, 110.0, 0.290, 0.430, 0.0640, 0.010),
    _seedtts("fun", "en", 1088, 11.0, 0.0172, 213.044, 0.1470, 0.3285, 0.03234, 0.020),
    _seedtts("fun", "zh", 2020, 22.0, 0.0138, 215.0, 0.145, 0.330, 0.0320, 0.010),
    _moss("movies800times", 800, 40.0, 0.05914, 0.13177, 46.309, 0.2991, 0.6127, 0.03291, 0.015),
    _moss("movies800times_stream", 800, 40.0, 0.05828, 0.13069, 47.826, 0.2764, 0.5700, 0.03018, 0.020),
    _moss("aishell4_long", 20, 8000.0, 0.13860, 0.14147, 0.07375, 159.14, 207.10, 0.06958, 0.030, sessions=True),
    _moss("googletime", 25, 6000.0, 0.33002, 0.33817, 0.0475, 251.87, 273.36, 0.09783, 0.030, sessions=True),
)


def truths_by_id(truths: tuple[WorkloadTruth, ...] = DEFAULT_TRUTHS) -> dict[str, WorkloadTruth]:
    return {truth.workload_id: truth for truth in truths}


def with_sigma(truths: tuple[WorkloadTruth, ...], workload_id: str, sigma_run: float) -> tuple[WorkloadTruth, ...]:
    return tuple(replace(t, sigma_run=sigma_run) if t.workload_id == workload_id else t for t in truths)


@dataclass(frozen=True, eq=False)
class TestSet:
    """The utterances of one workload as the baseline build transcribes them (shared by both arms)."""

    ref_len: np.ndarray  # (n,) int64
    errors: Mapping[str, np.ndarray]  # accuracy metric -> (n,) int64 baseline errors per utterance
    unstable: np.ndarray  # (n,) bool: flips between e and e + 1 from run to run
    cost: np.ndarray  # (n,) relative latency cost d_i


@dataclass(frozen=True, eq=False)
class Effect:
    """What a PR changes on one workload. Absent keys mean no change."""

    speed_factor: Mapping[str, float] = field(default_factory=dict)  # metric -> multiplier on its run values
    extra_errors: Mapping[str, np.ndarray] = field(default_factory=dict)  # accuracy metric -> (n,) added errors


@dataclass(frozen=True, eq=False)
class ArmRuns:
    """One arm of one workload: the 3 scored runs."""

    speed: Mapping[str, np.ndarray]  # metric -> (RUNS,) values
    errors: Mapping[str, np.ndarray]  # accuracy metric -> (RUNS, n) errors per utterance

    def rates(self, metric: str, ref_len: np.ndarray) -> np.ndarray:
        """Corpus error rate of each run (Σ errors / Σ reference length)."""
        return self.errors[metric].sum(axis=1) / ref_len.sum()


def draw_test_set(rng: np.random.Generator, truth: WorkloadTruth, noise: NoiseModel) -> TestSet:
    n = truth.n
    if truth.sessions:
        ref_len = np.maximum(1, rng.normal(truth.unit_len, 0.3 * truth.unit_len, n)).astype(np.int64)
        shape = 8.0  # sessions vary around the corpus rate
    else:
        ref_len = 1 + rng.negative_binomial(4, 4 / (4 + truth.unit_len - 1), n).astype(np.int64)
        shape = 0.3  # utterances: overdispersed, most are error-free
    errors: dict[str, np.ndarray] = {}
    cer_like = None
    for metric, rate in truth.accuracy.items():
        if metric == "cp_cer" and cer_like is not None:
            # cpCER counts the CER errors plus speaker-attribution errors.
            extra_rate = max(rate - truth.accuracy["cer"], 0.0)
            extra = _exact_total(rng, ref_len * extra_rate * rng.gamma(shape, 1 / shape, n),
                                 int(round(extra_rate * ref_len.sum())))
            errors[metric] = cer_like + extra
            continue
        errors[metric] = _exact_total(rng, ref_len * rate * rng.gamma(shape, 1 / shape, n),
                                      int(round(rate * ref_len.sum())))
        cer_like = errors[metric]
    unstable = np.ones(n, bool) if truth.sessions else rng.random(n) < noise.unstable_fraction
    cost = np.exp(noise.utterance_cost_sigma * rng.standard_normal(n))
    return TestSet(ref_len=ref_len, errors=errors, unstable=unstable, cost=cost)


def _exact_total(rng: np.random.Generator, mean: np.ndarray, total: int) -> np.ndarray:
    """Poisson counts with these means, then nudged so they sum to `total`: the test set's corpus rate is
    the truth's (the CI's references were measured on this very set)."""
    counts = rng.poisson(mean).astype(np.int64)
    gap = total - int(counts.sum())
    if gap > 0:
        counts += rng.multinomial(gap, mean / mean.sum())
    elif gap < 0:
        counts -= rng.multivariate_hypergeometric(counts, -gap)
    return counts


def simulate_arm(rng: np.random.Generator, truth: WorkloadTruth, test_set: TestSet, noise: NoiseModel,
                 effect: Effect | None = None, speed_only: bool = False) -> ArmRuns:
    effect = effect or Effect()
    sigma = truth.sigma_run
    slow = np.ones(RUNS)
    if rng.random() < noise.slow_first_prob:
        slow[0] = 1 + rng.uniform(*noise.slow_first_range)
    s = np.exp(sigma * rng.standard_normal(RUNS)) * slow

    n = truth.n
    jitter = np.exp(noise.request_jitter_sigma * rng.standard_normal((RUNS, n)))
    per_request = test_set.cost[None, :] * jitter * s[:, None]  # relative latency of each request
    lat_rel = per_request.mean(axis=1)
    p95_rel = np.quantile(per_request, 0.95, axis=1)
    # Expected relative values with no run effect, so the truth's figures are the arm's centre.
    centre_mean = test_set.cost.mean() * np.exp(noise.request_jitter_sigma ** 2 / 2)
    centre_p95 = np.quantile(test_set.cost, 0.95) * np.exp(noise.request_jitter_sigma ** 2 / 2)

    thr_name = truth.throughput_metric
    speed = {
        thr_name: truth.speed[thr_name] / s * np.exp(0.3 * sigma * rng.standard_normal(RUNS)),
        "latency_mean_s": truth.speed["latency_mean_s"] * lat_rel / centre_mean,
        "latency_p95_s": truth.speed["latency_p95_s"] * p95_rel / centre_p95,
        "rtf_mean": truth.speed["rtf_mean"] * lat_rel / centre_mean * np.exp(0.2 * sigma * rng.standard_normal(RUNS)),
    }
    for metric, factor in effect.speed_factor.items():
        speed[metric] = speed[metric] * factor

    errors: dict[str, np.ndarray] = {}
    if speed_only:  # an A/A calibration job: only its speed values are used
        return ArmRuns(speed=speed, errors=errors)
    flips = _run_flips(rng, truth, test_set, noise)
    for metric, base in test_set.errors.items():
        runs = base[None, :] + flips
        extra = effect.extra_errors.get(metric)
        if extra is not None:
            runs = runs + extra[None, :]
        errors[metric] = np.maximum(runs, 0).astype(np.int64)
    return ArmRuns(speed=speed, errors=errors)


def _run_flips(rng: np.random.Generator, truth: WorkloadTruth, test_set: TestSet, noise: NoiseModel) -> np.ndarray:
    """Run-to-run transcript changes, (RUNS, n); the same in every accuracy measure of the workload."""
    n = truth.n
    if truth.sessions:
        base = next(iter(test_set.errors.values()))
        lam = noise.session_jitter * np.maximum(base, 1)
        return rng.poisson(lam, (RUNS, n)) - rng.poisson(lam, (RUNS, n))
    coin = rng.random((RUNS, n)) < 0.5
    return (coin & test_set.unstable[None, :]).astype(np.int64)
