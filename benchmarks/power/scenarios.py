"""What a simulated pull request changes (issue 6, "Scenarios"), and which rows must catch it.

Speed changes multiply one metric's run values on one workload. Accuracy changes add errors to chosen
utterances in all three candidate runs (a code change is deterministic); "diffuse" means many utterances get
one more error and some get one fewer, net +delta (the worked example of statistics.md §1.5: 30 up, 12 down).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np

from power.model import Effect, TestSet

HEADLINE_WORKLOAD = "qwen3/asr_en"  # SeedTTS EN, sigma_run = 1%
MOSS_800 = "moss_td/movies800times"
MOSS_20 = "moss_td/aishell4_long"
CHURN = 0.4  # diffuse changes: utterances that lose an error per utterance that gains one

EffectMaker = Callable[[np.random.Generator, Mapping[str, TestSet]], Mapping[str, Effect]]


@dataclass(frozen=True)
class Scenario:
    key: str
    label: str  # row label of the table
    family: str  # "none", "throughput", "p95", "accuracy": groups the plot's curves
    size: float  # effect size on the plot's x axis (%, or pp)
    targets: tuple[tuple[str, str], ...]  # (workload, metric) rows; detected = any of them flagged
    make_effects: EffectMaker
    sigma_override: float | None = None  # sigma_run of HEADLINE_WORKLOAD for this scenario

    @property
    def is_null(self) -> bool:
        return not self.targets


def _speed(workload: str, metric: str, factor: float) -> EffectMaker:
    def make(rng: np.random.Generator, test_sets: Mapping[str, TestSet]) -> Mapping[str, Effect]:
        return {workload: Effect(speed_factor={metric: factor})}
    return make


def diffuse_errors(rng: np.random.Generator, test_set: TestSet, metric: str, delta: float,
                   churn: float = CHURN) -> np.ndarray:
    """Per-utterance extra errors adding `delta` (fraction) to the corpus rate: +1s and some -1s."""
    net = int(round(delta * test_set.ref_len.sum()))
    n = len(test_set.ref_len)
    up = int(round(net / (1 - churn)))
    down = up - net
    extra = np.zeros(n, np.int64)
    if up <= n:
        extra[rng.choice(n, size=up, replace=False)] += 1
    else:  # long sessions: spread the net change proportionally to their length
        extra += rng.multinomial(net, test_set.ref_len / test_set.ref_len.sum())
        return extra
    fixable = np.flatnonzero((test_set.errors[metric] > 0) & (extra == 0))
    if down:
        extra[rng.choice(fixable, size=min(down, len(fixable)), replace=False)] -= 1
    return extra


def _accuracy(workload: str, metrics: tuple[str, ...], delta: float, churn: float = CHURN) -> EffectMaker:
    def make(rng: np.random.Generator, test_sets: Mapping[str, TestSet]) -> Mapping[str, Effect]:
        test_set = test_sets[workload]
        extra = diffuse_errors(rng, test_set, metrics[0], delta, churn)
        # cp_cer counts every cer error too, so a transcription change moves both by the same errors.
        return {workload: Effect(extra_errors={metric: extra for metric in metrics})}
    return make


def _hallucination(workload: str, metric: str, insertions: int) -> EffectMaker:
    def make(rng: np.random.Generator, test_sets: Mapping[str, TestSet]) -> Mapping[str, Effect]:
        n = len(test_sets[workload].ref_len)
        extra = np.zeros(n, np.int64)
        extra[rng.integers(n)] = insertions
        return {workload: Effect(extra_errors={metric: extra})}
    return make


def _nothing(rng: np.random.Generator, test_sets: Mapping[str, TestSet]) -> Mapping[str, Effect]:
    return {}


def default_scenarios() -> tuple[Scenario, ...]:
    thr = (HEADLINE_WORKLOAD, "throughput_samples_per_s")
    p95 = (HEADLINE_WORKLOAD, "latency_p95_s")
    wer = (HEADLINE_WORKLOAD, "corpus_wer")
    scenarios = [Scenario("aa", "A/A (no change)", "none", 0.0, (), _nothing)]
    for pct in (1, 3, 6, 10):
        scenarios.append(Scenario(f"thr-{pct}", f"throughput -{pct}% (qwen3 EN, sigma 1%)", "throughput", pct,
                                  (thr,), _speed(*thr, 1 - pct / 100)))
    for sigma in (0.005, 0.02, 0.03):
        scenarios.append(Scenario(f"thr-3-s{sigma * 1000:g}", f"throughput -3% at sigma_run {sigma:.1%}", "sigma",
                                  sigma * 100, (thr,), _speed(*thr, 0.97), sigma_override=sigma))
    for pct in (5, 10):
        scenarios.append(Scenario(f"p95+{pct}", f"p95 latency +{pct}% (qwen3 EN)", "p95", pct,
                                  (p95,), _speed(*p95, 1 + pct / 100)))
    for pp in (0.05, 0.15, 0.30):
        scenarios.append(Scenario(f"wer+{pp:g}", f"WER +{pp:.2f} pp diffuse (SeedTTS EN)", "accuracy", pp,
                                  (wer,), _accuracy(HEADLINE_WORKLOAD, ("corpus_wer",), pp / 100)))
    scenarios.append(Scenario("wer+0.15-nochurn", "WER +0.15 pp, errors only added (no churn)", "other", 0.15,
                              (wer,), _accuracy(HEADLINE_WORKLOAD, ("corpus_wer",), 0.0015, churn=0.0)))
    scenarios.append(Scenario("halluc", "one hallucinated utterance (+40 ins., EN)", "other", 0.0,
                              (wer,), _hallucination(HEADLINE_WORKLOAD, "corpus_wer", 40)))
    scenarios.append(Scenario("moss800-cer+0.1", "CER +0.10 pp diffuse (MOSS 800)", "other", 0.1,
                              ((MOSS_800, "cer"),), _accuracy(MOSS_800, ("cer", "cp_cer"), 0.001)))
    scenarios.append(Scenario("moss20-cer+1", "CER/cpCER +1.0 pp (aishell4, 20 sessions)", "other", 1.0,
                              ((MOSS_20, "cer"), (MOSS_20, "cp_cer")), _accuracy(MOSS_20, ("cer", "cp_cer"), 0.01)))
    scenarios.append(Scenario("moss20-thr-10", "throughput -10% (aishell4, 20 sessions, sigma 3%)", "other", 10,
                              ((MOSS_20, "throughput_qps"),), _speed(MOSS_20, "throughput_qps", 0.90)))
    return tuple(scenarios)
