"""Slow-mode starts are re-measured in both arms alike, judged against the other arm's median (issue 36), and a run
worse in some workloads only is kept in both arms (gate.judging.outliers, gate.stats.slowmode.remeasure_depth)."""
from __future__ import annotations

import numpy as np

from gate.formats.config import load_suite
from gate.judging.outliers import find_outlier, slow_starts_to_remeasure
from gate.stats.drift import arm_positions
from gate.stats.slowmode import remeasure_depth

SLOW = np.log(0.92)


def _arms(seed: int, runs: int = 6, sigma: float = 0.005) -> np.ndarray:
    return sigma * np.random.default_rng(seed).standard_normal((4, runs))  # [en base, en cand, zh base, zh cand]


def test_a_candidate_mostly_in_the_slow_mode_has_its_deepest_slow_start_found():
    y = _arms(1)
    slow = [0, 2, 3, 5]
    y[np.ix_([1, 3], slow)] += SLOW  # 4 of the candidate's 6 starts slow: its own median is in the slow mode
    y[[1, 3], 2] += np.log(0.98)  # run 3 the deepest
    depth = remeasure_depth(y, arm_positions(4, 6), higher_is_better=True)
    assert np.isfinite(depth[1, slow]).all() and not np.isfinite(depth[1, [1, 4]]).any()
    assert int(np.nanargmax(depth[1])) == 2
    assert not np.isfinite(depth[0]).any()


def test_the_baseline_arm_is_judged_by_the_same_rule():
    y = _arms(2)
    y[[0, 2], 1] += SLOW
    swapped = y[[1, 0, 3, 2]]
    a = remeasure_depth(y, None, higher_is_better=True)
    b = remeasure_depth(swapped, None, higher_is_better=True)
    assert np.isfinite(a[0, 1]) and np.array_equal(np.isfinite(a), np.isfinite(b[::-1]))


def test_one_workload_slower_is_no_slow_start():
    y = _arms(3)
    y[1, :3] += SLOW  # the en workload only: an intermittent regression's shape, not a server start
    assert not np.isfinite(remeasure_depth(y, None, higher_is_better=True)).any()


def test_lower_is_better_metrics_are_slow_upwards():
    y = _arms(4)
    y[[1, 3], 5] -= SLOW  # latency 8.7% higher in both workloads
    depth = remeasure_depth(y, None, higher_is_better=False)
    assert np.isfinite(depth[1, 5]) and np.isfinite(depth).sum() == 1


def test_one_workload_or_odd_rows_find_nothing():
    assert not np.isfinite(remeasure_depth(_arms(5)[:2] + np.array([[0], [-0.1]]), None, higher_is_better=True)).any()


THR, P95 = "throughput_samples_per_s", "latency_p95_s"
# A calibrated σ small enough that the rule's 3% decides (5σ = 0.5%): these tests are about which run and which
# direction, not where σ comes from (without a calibration it is the arm's own: test_unknown_sigma_is_the_arms_own)
KNOWN = lambda workload, metric: 0.001  # noqa: E731


def _run(en: float, zh: float, p95: float = 1.0) -> dict:
    return {("qwen3/asr_en", THR): en, ("qwen3/asr_zh", THR): zh, ("qwen3/asr_en", P95): p95, ("qwen3/asr_zh", P95): p95}


def test_find_outlier_keeps_a_run_worse_in_one_workload_in_either_arm():
    arm = {"run1": _run(100, 50), "run2": _run(101, 50.5), "run3": _run(88, 50.2)}
    assert find_outlier(arm, KNOWN) is None  # en 12% slower alone stays: it may be an intermittent regression
    arm["run2"] = _run(120, 50.5)  # a better run is re-measured, but not while a worse one stays
    assert find_outlier(arm, KNOWN) is None
    arm["run3"] = _run(100.5, 50.2)
    found = find_outlier(arm, KNOWN)
    assert found is not None and found.run == "run2"


def test_find_outlier_re_measures_a_run_worse_in_every_workload():
    arm = {"run1": _run(100, 50), "run2": _run(101, 50.5), "run3": _run(88, 44)}
    found = find_outlier(arm, KNOWN)
    assert found is not None and found.run == "run3"


def test_find_outlier_reads_latency_as_worse_upwards():
    arm = {"run1": _run(100, 50, 1.0), "run2": _run(100.2, 50.1, 1.01), "run3": _run(100.1, 50.05, 1.0)}
    arm["run3"][("qwen3/asr_en", P95)] = 1.2  # en's p95 20% higher alone: worse in one workload, stays
    assert find_outlier(arm, KNOWN) is None
    arm["run3"][("qwen3/asr_en", P95)] = 0.8  # 20% lower: better, re-measured
    assert find_outlier(arm, KNOWN).run == "run3"


def test_slow_starts_to_remeasure_names_each_arms_deepest_slow_start_over_both_arms():
    suite = load_suite()
    base = {f"run{i}": _run(100 * (1 + 0.002 * i), 50 * (1 - 0.002 * i)) for i in range(1, 7)}
    cand = {f"run{i}": _run(100 * (1 - 0.001 * i), 50 * (1 + 0.001 * i)) for i in range(1, 7)}
    cand["run1"], cand["run4"] = _run(92, 46), _run(90, 45)
    base["run6"] = _run(91, 45.5)
    found = slow_starts_to_remeasure({"base": base, "candidate": cand}, suite, "qwen3")
    assert found["candidate"].run == "run4" and found["base"].run == "run6"
    for r in ("run2", "run5"):  # the candidate mostly slow: still found against the baseline's median
        cand[r] = _run(92, 46)
    found = slow_starts_to_remeasure({"base": base, "candidate": cand}, suite, "qwen3")
    assert found["candidate"].run == "run4" and "base" not in found  # the baseline's against a slow median: not
    assert slow_starts_to_remeasure({"base": base, "candidate": dict(list(cand.items())[:5])}, suite, "qwen3") == {}


def test_unknown_sigma_is_the_arms_own():
    """Without a usable calibration the re-measure judges a run against the arm's own σ (gate.stats.outliers.own_sigma,
    as compare judges the row on the A/B's own runs), not the 3% alone: on a σ 2% host a run 4% better than the
    median is ordinary noise, and replacing it moved the arm's mean (benchmarks/results/noop_level_diagnosis.md)."""
    rng = np.random.default_rng(7)
    noise = np.exp(0.02 * rng.standard_normal((6, 2)))
    arm = {f"run{i + 1}": _run(100 * noise[i, 0], 50 * noise[i, 1]) for i in range(6)}
    arm["run2"] = _run(104 * noise[1, 0], 52 * noise[1, 1])  # better in both workloads, ~2σ
    assert find_outlier(arm, KNOWN) is not None  # at a calibrated σ that small, 3% decides
    assert find_outlier(arm) is None  # at its own σ (~2%) it is ordinary
    arm["run2"] = _run(150, 75)  # 50% better: wild at any σ these runs allow
    found = find_outlier(arm)
    assert found is not None and found.run == "run2" and found.threshold > 0.03
