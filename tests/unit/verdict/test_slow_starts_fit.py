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
