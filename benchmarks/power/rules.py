"""The competing decision rules (anchors.md §1-2, sglang-omni-asr.md §4.4-4.5, §7.8), each a plain function of
one row's 3 baseline and 3 candidate run values.

A row is one (workload, gated metric). A rule returns the set of rows it flags as a regression; all rules see
the identical simulated pair. Run values of accuracy rows are the per-run corpus error rates (what the result
files report); a "value" is the mean of the 3 runs (what the runbook's summary reports).
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np
from scipy import stats

from power.model import ArmRuns, TestSet, WorkloadTruth

# asv's `compare` decision (asv 0.6: asv.commands.compare._is_result_better with its default factor 1.1): a
# private function, used as is so that the rule is asv's own and not our reading of it.
from asv.commands.compare import _is_result_better as asv_is_result_better
from asv_runner.statistics import compute_stats as asv_compute_stats


@dataclass(frozen=True)
class Row:
    workload_id: str
    metric: str
    kind: str  # accuracy or speed
    higher_is_better: bool
    floor_rel: float | None


@dataclass(frozen=True, eq=False)
class Pair:
    """One simulated comparison: both arms of every workload, over the same utterances."""

    truths: Mapping[str, WorkloadTruth]
    test_sets: Mapping[str, TestSet]
    base: Mapping[str, ArmRuns]
    cand: Mapping[str, ArmRuns]
    key: tuple[int, ...] = ()  # (scenario hash, replicate): seeds what judges simulate on their own

    def runs(self, row: Row, side: str) -> np.ndarray:
        arm = (self.base if side == "base" else self.cand)[row.workload_id]
        if row.kind == "accuracy":
            return arm.rates(row.metric, self.test_sets[row.workload_id].ref_len)
        return arm.speed[row.metric]


def worse_ratio(base: float, cand: float, higher_is_better: bool) -> float:
    """> 1 when the candidate is worse; how many times worse."""
    if higher_is_better:
        return base / cand if cand > 0 else math.inf
    if base <= 0:
        return math.inf if cand > 0 else 1.0
    return cand / base


RowTest = Callable[[Row, np.ndarray, np.ndarray], bool]
BatchTest = Callable[[tuple[Row, ...], np.ndarray, np.ndarray], np.ndarray]  # (rows, base (R, runs), cand) -> bool (R,)


@dataclass(frozen=True)
class Rule:
    key: str
    label: str
    test: RowTest | None = None  # (row, base runs, cand runs) -> flagged
    batch: BatchTest | None = None  # the same, for all rows at once (when a per-row call is too slow)

    def flags(self, pair: Pair, rows: tuple[Row, ...]) -> frozenset[tuple[str, str]]:
        if self.batch is not None:
            base = np.stack([pair.runs(row, "base") for row in rows])
            cand = np.stack([pair.runs(row, "cand") for row in rows])
            flagged = self.batch(rows, base, cand)
            return frozenset((row.workload_id, row.metric) for row, hit in zip(rows, flagged) if hit)
        assert self.test is not None
        return frozenset((row.workload_id, row.metric) for row in rows
                         if self.test(row, pair.runs(row, "base"), pair.runs(row, "cand")))


def ratio_rule(threshold: float) -> RowTest:
    """github-action-benchmark (alert-threshold 200%) and CodSpeed (10%): one value against one value."""
    def test(row: Row, base: np.ndarray, cand: np.ndarray) -> bool:
        return worse_ratio(base.mean(), cand.mean(), row.higher_is_better) > threshold
    return test


def maintainers_rule(speed_ratio: float, accuracy_tolerance_abs: Mapping[str, float]) -> RowTest:
    """asr_hill_climbing.md (§7.8): throughput >= 0.97x, latency/RTF <= 1.03x; WER +0.0002, CER/cpCER +0.001."""
    def test(row: Row, base: np.ndarray, cand: np.ndarray) -> bool:
        if row.kind == "accuracy":
            return cand.mean() - base.mean() > accuracy_tolerance_abs[row.metric] + 1e-12
        ratio = cand.mean() / base.mean()
        return ratio < 1 - speed_ratio if row.higher_is_better else ratio > 1 + speed_ratio
    return test


def welch_rule(alpha: float = 0.05) -> BatchTest:
    """Welch's t-test on the 3 + 3 run values, two-sided p < alpha, candidate worse (hyperfine's script).
    Rows with no spread on either side get p = NaN from scipy: not flagged."""
    def batch(rows: tuple[Row, ...], base: np.ndarray, cand: np.ndarray) -> np.ndarray:
        higher = np.array([row.higher_is_better for row in rows])
        worse = np.where(higher, cand.mean(axis=1) < base.mean(axis=1), cand.mean(axis=1) > base.mean(axis=1))
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)  # near-identical accuracy runs: precision loss
            p = stats.ttest_ind(cand, base, axis=1, equal_var=False).pvalue
        return worse & (np.nan_to_num(p, nan=1.0) < alpha)
    return batch


def asv_rule(factor: float = 1.1) -> RowTest:
    """asv compare: worse by more than `factor` and asv's `is_different` (Mann-Whitney p < 0.002 when the
    sample sizes allow it, which 3 + 3 never does, so asv's 99% CI non-overlap check)."""
    def test(row: Row, base: np.ndarray, cand: np.ndarray) -> bool:
        # asv compares times (smaller is better): turn higher-is-better metrics into their reciprocals.
        b = list(1 / base) if row.higher_is_better else list(base)
        c = list(1 / cand) if row.higher_is_better else list(cand)
        b_value, b_stats = asv_compute_stats(b, 1)
        c_value, c_stats = asv_compute_stats(c, 1)
        return bool(asv_is_result_better(b_value, c_value, (b_stats, b), (c_stats, c), factor))
    return test


def sglang_ci_rule(thresholds: Mapping[tuple[str, str], tuple[float, float]]) -> RowTest:
    """sglang-omni CI: the candidate alone against reference x slack (0.9/1.1; 0.8/1.2 on the long sets).
    Rows the CI does not check are never flagged."""
    def test(row: Row, base: np.ndarray, cand: np.ndarray) -> bool:
        limit = thresholds.get((row.workload_id, row.metric))
        if limit is None:
            return False
        reference, slack = limit
        bound = reference * slack
        return cand.mean() < bound if row.higher_is_better else cand.mean() > bound
    return test


def sglang_ci_thresholds(truths: Mapping[str, WorkloadTruth]) -> dict[tuple[str, str], tuple[float, float]]:
    """(workload, metric) -> (reference, slack) for the checks in sglang-omni-asr.md §4.4-4.5. The simulated
    truths are those references, i.e. the CI's calibration is assumed to be still exact."""
    limits: dict[tuple[str, str], tuple[float, float]] = {}
    for wid, truth in truths.items():
        long_set = truth.sessions
        up, down = (1.2, 0.8) if long_set else (1.1, 0.9)
        for metric, value in truth.accuracy.items():
            limits[(wid, metric)] = (value, up)
        if wid.endswith("/asr_zh"):
            continue  # the CI checks ZH accuracy only
        for metric, value in truth.speed.items():
            limits[(wid, metric)] = (value, down if metric.startswith("throughput") else up)
    return limits


def delta_statistic(row: Row, base: np.ndarray, cand: np.ndarray) -> float:
    """Worse-positive change: log ratio of run means' logs for speed, difference of mean rates for accuracy."""
    if row.kind == "accuracy":
        return float(cand.mean() - base.mean())
    sign = -1.0 if row.higher_is_better else 1.0
    return sign * float(np.log(cand).mean() - np.log(base).mean())


def oracle_rule(true_sd: Mapping[tuple[str, str], float], z_crit: Mapping[str, float],
                use_floor: bool = False) -> RowTest:
    """One-sided z-test with the true SD of the change under no change (the physical limit): flag when
    delta / sd > z_crit[kind]. With use_floor, a speed row also needs the gate's relative floor."""
    def test(row: Row, base: np.ndarray, cand: np.ndarray) -> bool:
        delta = delta_statistic(row, base, cand)
        sd = true_sd[(row.workload_id, row.metric)]
        if sd <= 0:
            return delta > 0
        if delta / sd <= z_crit[row.kind]:
            return False
        if use_floor and row.kind == "speed" and row.floor_rel is not None:
            return math.expm1(delta) >= row.floor_rel
        return True
    return test
