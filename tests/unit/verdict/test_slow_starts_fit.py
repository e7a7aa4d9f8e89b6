"""Slow-mode starts are found with the job's position terms fitted on the fast mode (issue 36)."""
from __future__ import annotations

import numpy as np

from gate.stats.drift import arm_positions, without_terms
from gate.stats.slowmode import find_slow_starts, slow_mode_runs


def _arms(seed: int, runs: int = 3, sigma: float = 0.002) -> np.ndarray:
    return sigma * np.random.default_rng(seed).standard_normal((4, runs))  # [en base, en cand, zh base, zh cand]


def test_a_slow_start_in_an_arms_first_run_is_not_taken_for_a_warm_up_leak():
    y = _arms(1, runs=6)
    y[[1, 3], 0] += np.log(0.92)  # the candidate's first run: a slow start of both workloads
    y[[0, 2], 3] += np.log(0.92)  # and the baseline's fourth
    at = arm_positions(4, 6)
    slow, steady = find_slow_starts(y, at, higher_is_better=True)
    assert slow.tolist() == [[False, False, False, True, False, False], [True, False, False, False, False, False]]
    assert steady.shape == y.shape


def test_without_positions_it_is_the_plain_finder():
    y = _arms(2)
    y[[1, 3], 1] += np.log(0.9)
    slow, steady = find_slow_starts(y, None, higher_is_better=True)
    assert (slow == slow_mode_runs(y, higher_is_better=True)).all() and steady is y or np.array_equal(steady, y)


def test_left_out_runs_do_not_move_the_terms_but_are_taken_out_all_the_same():
    y = _arms(3, runs=6, sigma=0.001)
    at = arm_positions(4, 6)
    y = y - 0.005 * at  # drift: each run 0.5% slower than the last
    out = np.zeros(y.shape, dtype=bool)
    out[[1, 3], 2] = True
    y_slow = y.copy()
    y_slow[[1, 3], 2] += np.log(0.9)  # a slow start, left out of the fit
    plain = without_terms(y, at)
    left = without_terms(y_slow, at, left_out=out)
    kept = ~out
    assert np.allclose(plain[kept], left[kept], atol=1e-3)  # the drift is taken out alike
    assert np.allclose(left[out] - plain[out], np.log(0.9), atol=1e-3)  # the slow start stays in the run


def test_a_warm_up_leak_is_still_not_a_slow_mode():
    rng = np.random.default_rng(4)
    found = 0
    for _ in range(50):
        y = 0.01 * rng.standard_normal((4, 6))
        y[:, 0] -= 0.03  # each arm's first scored run 3% slow
        slow, _ = find_slow_starts(y, arm_positions(4, 6), higher_is_better=True)
        found += int(slow.any())
    assert found <= 10


def test_half_an_arm_in_the_slow_mode_is_found_against_the_other_half():
    y = _arms(5, runs=6)
    for r in (0, 3, 5):
        y[[1, 3], r] += np.log(0.92)  # three of the candidate's six starts slow: its median sits between the modes
    slow = slow_mode_runs(y, higher_is_better=True)
    assert slow[1].tolist() == [True, False, False, True, False, True] and not slow[0].any()


def test_most_or_all_runs_slow_is_a_regression_not_a_slow_mode():
    for count in (4, 6):
        y = _arms(6, runs=6)
        y[[1, 3], :count] += np.log(0.92)
        assert not slow_mode_runs(y, higher_is_better=True)[1].any()


def test_ordinary_noise_is_rarely_a_slow_mode_even_when_the_workloads_move_together():
    rng = np.random.default_rng(7)
    found = 0
    for _ in range(400):
        common = rng.standard_normal((1, 6))  # 80% of a run's effect shared by the model's workloads, σ 2%
        y = 0.02 * (np.sqrt(0.8) * common + np.sqrt(0.2) * rng.standard_normal((4, 6)))
        found += int(slow_mode_runs(y, higher_is_better=True).any())
    assert found <= 60  # measured 44 of 400 (11%): with 80% of a run shared, a start 3σ off in every workload is one


def test_latency_is_slow_upward():
    y = _arms(8, runs=6)
    y[[0, 2], 2] += np.log(1.1)  # a baseline start with every workload's p95 10% higher
    assert slow_mode_runs(y, higher_is_better=False)[0].tolist() == [False, False, True, False, False, False]
