from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from gate.history.changepoints import Detector, detect, energy_statistic, rank_sum_p, robust_scale


def brute_energy(x: np.ndarray, tau: int) -> float:
    a, b = x[:tau], x[tau:]
    n, m = len(a), len(b)
    cross = np.abs(a[:, None] - b[None, :]).sum()
    within_a = np.abs(a[:, None] - a[None, :]).sum()
    within_b = np.abs(b[:, None] - b[None, :]).sum()
    return n * m / (n + m) * (2 * cross / (n * m) - within_a / n**2 - within_b / m**2)


def test_energy_statistic_matches_the_definition():
    x = np.random.default_rng(1).normal(size=17)
    q = energy_statistic(x, min_size=3)
    for tau in range(len(x) + 1):
        if 3 <= tau <= len(x) - 3:
            assert q[tau] == pytest.approx(brute_energy(x, tau))
        else:
            assert q[tau] == -np.inf


def test_exact_rank_sum_p_matches_scipy():
    rng = np.random.default_rng(2)
    for n1, n2 in itertools.product((5, 20), (3, 6)):
        a, b = rng.normal(size=n1), rng.normal(0.8, 1, size=n2)
        assert rank_sum_p(a, b) == pytest.approx(stats.mannwhitneyu(b, a, method="exact").pvalue)


def test_a_step_is_reported_in_place_within_three_nights():
    rng = np.random.default_rng(3)
    x = np.r_[rng.normal(0, 0.01, 40), rng.normal(-0.05, 0.01, 10)]
    found = detect(x, Detector(magnitude=0.03))
    assert [s.index for s in found] == [40]
    assert found[0].reported_at - 40 <= 3
    assert found[0].ci[0] < found[0].shift < found[0].ci[1] < 0


def test_lone_slow_nights_and_noise_are_not_change_points():
    rng = np.random.default_rng(4)
    x = rng.normal(0, 0.01, 90)
    x[[20, 21, 55, 80]] -= 0.09  # slow nights, two of them back to back
    assert detect(x, Detector(magnitude=0.03)) == []


def test_magnitude_floor_hides_small_significant_shifts():
    rng = np.random.default_rng(5)
    x = np.r_[rng.normal(0, 0.002, 40), rng.normal(0.01, 0.002, 10)]
    assert detect(x, Detector(magnitude=0.0))
    assert detect(x, Detector(magnitude=0.03)) == []


def test_missing_nights_are_skipped_and_indices_stay_in_night_units():
    rng = np.random.default_rng(6)
    x = np.r_[rng.normal(0, 0.01, 30), rng.normal(-0.06, 0.01, 10)]
    x[[5, 31]] = np.nan
    found = detect(x, Detector(magnitude=0.03))
    assert len(found) == 1 and found[0].index in (30, 32)


def test_resuming_from_known_change_points_gives_the_same_answer():
    rng = np.random.default_rng(8)
    x = np.r_[rng.normal(0, 0.01, 30), rng.normal(-0.06, 0.01, 30), rng.normal(0, 0.01, 30)]
    full = detect(x, Detector(magnitude=0.03))
    assert len(full) == 2
    resumed = detect(x, Detector(magnitude=0.03), start=full[0].reported_at + 1, known=full[:1])
    assert resumed == full


def test_robust_scale_ignores_one_step():
    x = np.r_[np.zeros(10), np.ones(10)] + np.random.default_rng(9).normal(0, 0.01, 20)
    assert robust_scale(x) < 0.03
