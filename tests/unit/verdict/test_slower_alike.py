"""Candidate runs slower alike on a host with slow-mode starts (issue 49's held-out gaps): counted on the baseline's
spread and terms, and barring only a FAIL that rests on them."""
from __future__ import annotations

import numpy as np

from gate.stats.drift import arm_positions
from gate.stats.slowmode import fail_blocker, find_slow_starts, slower_alike


def _arms(seed: int, sigma: float, slow_cand: tuple[int, ...], step: float, shift: float = 0.0) -> np.ndarray:
    """[en base, en cand, zh base, zh cand] ln throughput, 6 runs; the candidate's `slow_cand` runs slower by `step`
    in both workloads (slow-mode starts), and the candidate shifted by `shift` on en only."""
    y = sigma * np.random.default_rng(seed).standard_normal((4, 6))
    y[np.ix_([1, 3], list(slow_cand))] += np.log1p(-step)
    y[1] += shift
    return y


def test_a_candidate_mostly_in_the_slow_mode_is_counted_on_the_baseline_spread():
    # σ 2%, 4 of the candidate's 6 starts 10% slow: its spread (a mixture) widened the limit past the step
    at = arm_positions(4, 6)
    counted = 0
    for seed in range(200):
        y = _arms(seed, 0.02, (0, 2, 3, 5), 0.10)
        slow = find_slow_starts(y, at, higher_is_better=True)[0]
        counted += bool(fail_blocker(slower_alike(y, at, slow, higher_is_better=True), np.ones(6, bool), False))
    assert counted >= 150  # barred: some but not all of its runs slower alike (194 of 200 when written)


def test_a_fast_first_run_is_not_made_slow_by_a_first_run_term():
    # 5 of 6 candidate starts 10% slow, the fast one its first: a warm-up term fitted on the candidate took it for a
    # leak and counted six of six (a regression) or none
    at = arm_positions(4, 6)
    barred = 0
    for seed in range(200):
        y = _arms(seed, 0.01, (1, 2, 3, 4, 5), 0.10)
        slow = find_slow_starts(y, at, higher_is_better=True)[0]
        barred += bool(fail_blocker(slower_alike(y, at, slow, higher_is_better=True), np.ones(6, bool), False))
    assert barred >= 180


def test_a_regression_everywhere_is_not_a_slow_mode():
    at = arm_positions(4, 6)
    for seed in range(50):
        y = _arms(seed, 0.01, (), 0.0)
        y[[1, 3]] += np.log(0.90)
        slow = find_slow_starts(y, at, higher_is_better=True)[0]
        alike = slower_alike(y, at, slow, higher_is_better=True)
        assert not fail_blocker(alike, np.ones(6, bool), first_look=False)  # six of six: a regression


def test_a_warm_up_leak_in_each_arm_s_first_run_is_not_counted():
    # issue 49: a −3% build on one workload, each arm's first run 3% slow (σ 1%). Fitted on the baseline alone the
    # first-run term was rarely found, the candidate's first run counted slower alike and barred the FAIL (the cell
    # FAILed 69% against 86%); the terms are found on both arms and fitted on the baseline.
    at = arm_positions(4, 6)
    counted = 0
    for seed in range(200):
        y = _arms(seed, 0.01, (), 0.0, shift=np.log(0.97))
        y[:, 0] += np.log(0.97)  # every arm's first run (position 0 and 1 of the interleave)
        slow = find_slow_starts(y, at, higher_is_better=True)[0]
        counted += bool(slower_alike(y, at, slow, higher_is_better=True)[0])
    assert counted <= 10  # 0 of 200 when written; 40 with the terms found on the baseline alone, 56 with none
