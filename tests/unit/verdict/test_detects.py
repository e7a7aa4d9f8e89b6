"""What a speed row says it detects (gate.judging.sensitivity.detects, issue 49): the worsening its FAIL catches with
80% power, the own-runs confirmation included, checked against the exact power of the tests it stands for."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from gate.judging.sensitivity import detects
from gate.stats.speed import POWER

NONE = np.array([[np.nan]])


def test_with_one_test_it_is_the_noncentral_t_power():
    se, df, level = 0.0115, 28.0, 0.00075
    size = detects(np.array([[se]]), np.array([[df]]), level, NONE, NONE, 0.0015)[0, 0]
    power = stats.nct.sf(stats.t.isf(level, df), df, np.log1p(size) / se)
    assert power == pytest.approx(POWER, abs=0.01)


def test_both_tests_at_once_need_more_than_either_alone():
    se, df, own_se, own_df = np.array([[0.0115]]), np.array([[28.0]]), np.array([[0.0118]]), np.array([[18.0]])
    alone = max(detects(se, df, 0.00075, NONE, NONE, 0.0)[0, 0], detects(own_se, own_df, 0.0015, NONE, NONE, 0.0)[0, 0])
    both = detects(se, df, 0.00075, own_se, own_df, 0.0015)[0, 0]
    assert both > alone * 1.03  # the larger MDE alone was the old answer: 1-4% optimistic in the power benchmark
    rng = np.random.default_rng(49)  # the joint power at `both`, drawn: d and both σ estimates
    n = 200_000
    d = rng.normal(np.log1p(both), se[0, 0], n)
    cut = stats.t.isf(0.00075, 28) * se[0, 0] * np.sqrt(rng.chisquare(28, n) / 28)
    own_cut = stats.t.isf(0.0015, 18) * own_se[0, 0] * np.sqrt(rng.chisquare(18, n) / 18)
    assert np.mean((d >= cut) & (d >= own_cut)) == pytest.approx(POWER, abs=0.01)


def test_rows_without_a_test_say_nothing():
    found = detects(np.array([[np.nan, 0.01]]), np.array([[3.0, np.nan]]), 0.001, NONE.repeat(2, 1), NONE.repeat(2, 1),
                    0.001)
    assert np.isnan(found).all()
