"""Every judge of the benchmark, built for one scenario's truths (anchors.md §1-2; issue 6 "Rules compared").

Main table: the gate (calibrated, uncalibrated), the oracle, and the other tools' rules. Second table: design
alternatives of the gate, run on a few scenarios only, to price what each goal costs.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Mapping

from scipy import stats

from gate.compare import Thresholds
from gate.config import Suite, load_suite
from power.experiment import Judge, RuleJudge, gated_rows, true_null_sd
from power.model import NoiseModel, TestSet, WorkloadTruth, truths_by_id
from power.rules import (Row, Rule, asv_rule, maintainers_rule, oracle_rule, ratio_rule, sglang_ci_rule,
                         sglang_ci_thresholds, welch_rule)
from power.scenarios import HEADLINE_WORKLOAD, Scenario

ALTERNATIVE_SCENARIOS = ("aa", "thr-3", "wer+0.15")
# The bootstrap only draws the CI shown in the report; verdicts use the exact sign-flip p and the floors, so a
# short bootstrap gives identical verdicts (checked by tests/benchmarks/test_power_smoke.py) in a tenth of the time.
N_BOOT = 50


def oracle_z(rows: tuple[Row, ...], alpha: float, quality_alpha: float | None = None) -> dict[str, float]:
    """Bonferroni critical z per family (accuracy, speed): the gate's family-wise levels over the same rows."""
    levels = {"accuracy": alpha if quality_alpha is None else quality_alpha, "speed": alpha}
    sizes = {kind: sum(r.kind == kind for r in rows) for kind in levels}
    return {kind: float(stats.norm.isf(levels[kind] / max(m, 1))) for kind, m in sizes.items()}


def competing_rules(suite: Suite, truths: tuple[WorkloadTruth, ...], true_sd: Mapping[tuple[str, str], float],
                    rows: tuple[Row, ...], alpha: float, quality_alpha: float | None = None) -> tuple[Rule, ...]:
    z = oracle_z(rows, alpha, quality_alpha)
    return (
        Rule("oracle", "oracle z (true sigma)", oracle_rule(true_sd, z)),
        Rule("oracle_floor", "oracle z + floor", oracle_rule(true_sd, z, use_floor=True)),
        Rule("maintainers", "maintainers 0.97/1.03", maintainers_rule(suite.policy.speed_ratio,
                                                                    suite.policy.accuracy_tolerance_abs)),
        Rule("welch", "Welch t p<0.05", batch=welch_rule(0.05)),
        Rule("asv", "asv 1.1 + stats", asv_rule(1.1)),
        Rule("codspeed", "CodSpeed 10%", ratio_rule(1.10)),
        Rule("gab", "GAB 200%", ratio_rule(2.0)),
        Rule("sglang_ci", "sglang CI x0.9/x1.1", sglang_ci_rule(sglang_ci_thresholds(truths_by_id(truths)))),
    )


@dataclass(frozen=True)
class JudgeFactory:
    """Picklable recipe for a scenario's judges (each worker process builds its own)."""

    seed: int
    noise: NoiseModel
    oracle_pairs: int
    calibration_pairs: int
    with_gate: bool = True
    alternatives: bool = True

    def __call__(self, scenario: Scenario, truths: tuple[WorkloadTruth, ...],
                 test_sets: Mapping[str, TestSet]) -> tuple[Judge, ...]:
        suite = _suite()
        rows = gated_rows(suite, truths)
        thresholds = Thresholds(n_boot=N_BOOT)
        true_sd = _cached_sd(truths, self.noise, test_sets, rows, self.oracle_pairs, self.seed)
        judges: list[Judge] = []
        if self.with_gate:
            from power.gate_rule import GateJudge, with_floor  # imported late: --no-gate runs without them

            def gate(key, label, *, suite=suite, calibration_pairs=self.calibration_pairs, **kw):
                return GateJudge(key=key, label=label, suite=suite, truths=truths, noise=self.noise,
                                 test_sets=test_sets, calibration_pairs=calibration_pairs, seed=self.seed,
                                 thresholds=kw.pop("thresholds", thresholds), **kw)

            judges.append(gate("gate", "gate (calibrated)"))
            judges.append(gate("gate_uncal", "gate (uncalibrated)", calibration_pairs=0))
            if self.alternatives and scenario.key in ALTERNATIVE_SCENARIOS:
                qwen3 = ("qwen3",)
                judges += [
                    gate("alt_qwen3", "gate, run-qwen3-asr PR (speed family 8 rows)", models=qwen3, alternative=True),
                    gate("alt_qwen3_floor2", "gate, run-qwen3-asr PR, speed floor 2%", models=qwen3,
                         suite=with_floor(suite, 0.02), alternative=True),
                    gate("alt_floor2", "gate, speed floor 2%", suite=with_floor(suite, 0.02), alternative=True),
                    gate("alt_floor0", "gate, no speed floor", suite=with_floor(suite, 0.0), alternative=True),
                    gate("alt_alpha05", "gate, speed family alpha 0.05",
                         thresholds=Thresholds(alpha=0.05, n_boot=N_BOOT), alternative=True),
                    gate("alt_qalpha05", "gate, accuracy family alpha 0.05",
                         thresholds=Thresholds(quality_alpha=0.05, n_boot=N_BOOT), alternative=True),
                ]
        judges.extend(RuleJudge(rule) for rule in competing_rules(suite, truths, true_sd, rows, thresholds.alpha,
                                                                  thresholds.quality_alpha))
        if self.alternatives and scenario.key in ALTERNATIVE_SCENARIOS:
            qwen3_rows = tuple(r for r in rows if r.workload_id.startswith("qwen3/"))
            z = oracle_z(qwen3_rows, thresholds.alpha, thresholds.quality_alpha)
            judges.append(RuleJudge(Rule("alt_oracle_qwen3", "oracle z, run-qwen3-asr PR family",
                                         oracle_rule(true_sd, z)), workloads=("qwen3/asr_en", "qwen3/asr_zh"),
                                    alternative=True))
            z05 = oracle_z(rows, 0.05, thresholds.quality_alpha)
            judges.append(RuleJudge(Rule("alt_oracle_alpha05", "oracle z, speed family alpha 0.05",
                                         oracle_rule(true_sd, z05)), alternative=True))
        return tuple(judges)


@lru_cache(maxsize=1)
def _suite() -> Suite:
    return load_suite()


_SD_CACHE: dict[tuple, dict[tuple[str, str], float]] = {}


def _cached_sd(truths: tuple[WorkloadTruth, ...], noise: NoiseModel, test_sets: Mapping[str, TestSet],
               rows: tuple[Row, ...], pairs: int, seed: int) -> dict[tuple[str, str], float]:
    # Scenarios that share the truths (all but the sigma sweep) share the oracle's SD.
    key = (tuple((t.workload_id, t.sigma_run) for t in truths), pairs, seed)
    if key not in _SD_CACHE:
        _SD_CACHE[key] = true_null_sd(truths, noise, test_sets, rows, pairs, seed)
    return _SD_CACHE[key]


assert HEADLINE_WORKLOAD.startswith("qwen3/")  # the qwen3-label alternatives assume the headline is a qwen3 workload
