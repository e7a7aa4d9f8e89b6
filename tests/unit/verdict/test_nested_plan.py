"""Two-level runs (issue 37, gate.stats.nested): honest df, the estimator, and the planner's choices."""
from __future__ import annotations

import math

import numpy as np
import pytest

from gate.formats.noise_model import Components
from gate.stats import nested
from gate.stats.speed import mde

# The H200's graphs-b32 components (docs/benchmarks.md, machine A)
H200 = Components(sigma_start=0.0246, sigma_pass=0.0256, start_cost_s=7.60, pass_cost_s=2.24)


def test_passes_never_add_degrees_of_freedom():
    one, eight = nested.design(H200, 4, 1), nested.design(H200, 4, 8)
    # same K: df 2(K − 1) = 6 either way; only the start mean's σ shrinks, never below σ_start
    se8 = math.sqrt(H200.sigma_start ** 2 + H200.sigma_pass ** 2 / 8) * math.sqrt(2 / 4)
    assert eight.detectable == pytest.approx(float(mde(se8, 6, 0.005)))
    floor = float(mde(H200.sigma_start * math.sqrt(2 / 4), 6, 0.005))
    assert floor < eight.detectable < one.detectable


def test_minutes_count_warm_cycles_starts_and_passes():
    d = nested.design(H200, 3, 2)
    seconds = 2 * (7.60 + 2.24) + 2 * 3 * (7.60 + 2 * 2.24)
    assert d.gpu_minutes == pytest.approx(seconds / 60)


def test_estimate_recovers_components_from_an_aa_arm():
    rng = np.random.default_rng(7)
    y = rng.normal(0, 0.02, (400, 1)) + rng.normal(0, 0.03, (400, 4))
    sigma_start, sigma_pass, df_start, df_pass = nested.estimate(np.exp(y))
    assert (df_start, df_pass) == (399, 1200)
    assert sigma_start == pytest.approx(0.02, rel=0.15) and sigma_pass == pytest.approx(0.03, rel=0.05)
    with pytest.raises(ValueError):
        nested.estimate([[1.0, 1.0]])


def test_start_means_are_the_observations():
    means = nested.start_means([[100.0, 100.0], [90.0, 110.0]])
    assert means[0] == pytest.approx(math.log(100.0))
    assert means[1] == pytest.approx((math.log(90.0) + math.log(110.0)) / 2)


def test_cheapest_design_reaches_the_target_at_least_cost():
    best = nested.cheapest_for(H200, 0.03)
    today = nested.cheapest_for(H200, 0.03, passes=1)
    assert best is not None and today is not None
    assert best.detectable <= 0.03 and today.detectable <= 0.03
    assert best.gpu_minutes <= today.gpu_minutes
    # no design with fewer minutes reaches the target
    for p in range(1, nested.MAX_PASSES + 1):
        for k in range(2, 65):
            d = nested.design(H200, k, p)
            assert d.detectable > 0.03 or d.gpu_minutes >= best.gpu_minutes


def test_passes_pay_when_starts_are_expensive_and_pass_noise_dominates():
    costly = Components(sigma_start=0.005, sigma_pass=0.03, start_cost_s=120.0, pass_cost_s=10.0)
    best = nested.cheapest_for(costly, 0.03)
    today = nested.cheapest_for(costly, 0.03, passes=1)
    assert best is not None and today is not None
    assert best.passes > 1 and best.gpu_minutes < 0.5 * today.gpu_minutes


def test_budget_buys_a_detectable_change_and_unreachable_is_none():
    within = nested.best_within(H200, 3.0)
    assert within is not None and within.gpu_minutes <= 3.0
    assert nested.best_within(H200, 0.1) is None
    assert nested.cheapest_for(H200, 0.001, max_starts=8) is None


def test_bad_components_are_refused():
    with pytest.raises(ValueError):
        Components(sigma_start=-0.01, sigma_pass=0.01, start_cost_s=1.0, pass_cost_s=1.0)
    with pytest.raises(ValueError):
        Components(sigma_start=0.01, sigma_pass=0.01, start_cost_s=0.0, pass_cost_s=1.0)
