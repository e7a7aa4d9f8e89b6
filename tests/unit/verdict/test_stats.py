"""Known-answer tests for gate.stats on synthetic arrays (the worked examples of docs/statistics.md)."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from gate.formats.noise_model import MIN_CALIBRATION_DF
from gate.stats.multiplicity import benjamini_hochberg, holm
from gate.stats.performance import calibrate, ratio_policy
from gate.stats.quality import paired_bootstrap, paired_quality_test, sign_flip_p
from gate.stats.speed import SpeedNoise, shift_test

# --- multiplicity ---------------------------------------------------------------------------------

def test_holm_known_values_and_missing_entries():
    assert holm([0.01, None, 0.04, 0.03]) == pytest.approx([0.03, None, 0.06, 0.06])
    assert holm([]) == []
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])


def test_bh_matches_scipy_and_keeps_positions():
    ps = [0.001, 0.2, float("nan"), 0.03, 0.04]
    expected = stats.false_discovery_control([0.001, 0.2, 0.03, 0.04], method="bh")
    got = benjamini_hochberg(ps)
    assert got[2] is None
    assert [got[0], got[1], got[3], got[4]] == pytest.approx(list(expected))


def test_out_of_range_pvalue_is_an_error():
    with pytest.raises(ValueError):
        holm([1.5])


# --- paired quality -------------------------------------------------------------------------------

def _brute_force_p(d):
    d = np.asarray(d, dtype=float)
    observed = d.sum()
    hits = sum(1 for signs in itertools.product((-1, 1), repeat=len(d)) if np.dot(signs, d) >= observed - 1e-9)
    return hits / 2 ** len(d)


@pytest.mark.parametrize("seed", range(5))
def test_exact_sign_flip_equals_full_enumeration(seed):
    rng = np.random.default_rng(seed)
    d = rng.integers(-3, 5, size=12).astype(float) / 3  # means over 3 runs: lattice 1/3
    p, method = sign_flip_p(d, scale=3)
    assert method == "exact sign-flip"
    assert p == pytest.approx(_brute_force_p(d), abs=1e-12)


def test_exact_sign_flip_agrees_with_scipy_permutation_test():
    rng = np.random.default_rng(7)
    a = rng.integers(0, 6, size=14)
    b = a + rng.integers(-1, 3, size=14)
    res = stats.permutation_test((b, a), lambda x, y, axis: np.sum(x - y, axis=axis), permutation_type="samples",
                                 n_resamples=np.inf, alternative="greater", vectorized=True)
    p, _ = sign_flip_p(b - a)
    assert p == pytest.approx(res.pvalue, abs=1e-9)


def test_monte_carlo_fallback_is_close_to_exact():
    rng = np.random.default_rng(3)
    d = rng.normal(0.05, 1, size=300)  # not on a lattice -> randomization
    p_mc, method = sign_flip_p(d, n_flips=20000, seed=1)
    assert method.startswith("randomization")
    z = d.sum() / math.sqrt((d ** 2).sum())
    assert p_mc == pytest.approx(stats.norm.sf(z), abs=0.02)


def _seedtts_like(n=1088, seed=0):
    rng = np.random.default_rng(seed)
    ref = rng.integers(4, 19, size=n)
    errors = np.where(rng.random(n) < 0.85, 0, rng.integers(1, 4, size=n))
    return ref, errors


def test_identical_outputs_short_circuit():
    ref, errors = _seedtts_like()
    runs = np.vstack([errors] * 3)
    result = paired_quality_test(runs, runs, ref)
    assert result.identical and result.p_value == 1.0 and result.delta == 0.0 and result.p_method == "identical"
    assert result.new_catastrophic == ()


def test_diffuse_regression_is_significant():
    # docs/statistics.md: 30 utterances +1 error, 12 utterances -1 -> randomization p ~ 0.005.
    ref, base = _seedtts_like()
    cand = base.copy()
    cand[:30] += 1
    fixable = np.flatnonzero(base[30:] > 0)[:12] + 30
    cand[fixable] -= 1
    result = paired_quality_test(np.vstack([base] * 3), np.vstack([cand] * 3), ref, n_boot=4000)
    assert result.delta == pytest.approx(18 / ref.sum())
    assert (result.n_worse, result.n_better) == (30, 12)
    assert 0.001 < result.p_value < 0.02
    assert result.ci[0] > 0 and result.ci[0] < result.delta < result.ci[1]
    assert result.p_degradation > 0.98
    sign = stats.binomtest(30, 42, 0.5, alternative="greater").pvalue
    assert sign == pytest.approx(0.0040, abs=1e-3)  # the same configuration's sign test: 30 worse vs 12 better, one-sided binomial p ≈ 0.004


def test_single_hallucination_is_not_significant_but_is_catastrophic():
    ref, base = _seedtts_like()
    cand = base.copy()
    cand[500] += 40
    result = paired_quality_test(base, cand, ref)
    assert result.p_value == pytest.approx(0.5)
    assert result.new_catastrophic == (500,)
    assert result.fixed_catastrophic == ()


def test_mean_over_runs_and_partial_flips():
    ref = np.array([10, 10, 10, 10])
    base = np.array([[1, 0, 0, 0], [1, 0, 0, 0], [1, 0, 0, 0]])
    cand = np.array([[2, 0, 0, 0], [1, 0, 0, 1], [1, 0, 0, 0]])  # utterance 0 +1/3, utterance 3 +1/3
    result = paired_quality_test(base, cand, ref)
    assert result.d == pytest.approx([1 / 3, 0, 0, 1 / 3])
    assert result.p_value == pytest.approx(0.25)  # two equal positive magnitudes: P(both +) = 1/4
    assert result.delta == pytest.approx((2 / 3) / 40)


def test_bootstrap_interval_covers_truth_at_nominal_rate():
    # Calibration-style check (as asv's _check_ci does): the 95% interval covers the true ΔW most of the time.
    rng = np.random.default_rng(11)
    covered = 0
    trials = 60
    for trial in range(trials):
        n_ref = rng.integers(5, 20, size=400).astype(float)
        d = rng.choice([-1.0, 0.0, 0.0, 0.0, 1.0, 2.0], size=400)
        population = np.array([-1, 0, 0, 0, 1, 2]).mean() / 12.0  # E[d] / E[n]: the true ΔW
        (low, high), _ = paired_bootstrap(d, n_ref, n_boot=500, seed=trial)
        covered += low <= population <= high
    assert covered / trials >= 0.85


def test_shape_mismatch_is_rejected():
    with pytest.raises(ValueError):
        paired_quality_test(np.zeros(3), np.zeros(4), np.ones(3))


# --- performance ----------------------------------------------------------------------------------

def test_worked_example_4_6():
    noise = SpeedNoise(sigma=0.012, sigma_df=40)
    res = shift_test(np.log([[100.2, 99.5, 100.8]]), np.log([[97.1, 96.5, 97.9]]), noise, higher_is_better=True,
                     cross_job=False)
    assert res.worse[0] == pytest.approx(0.0304, abs=2e-4)
    assert res.worse_rel[0] == pytest.approx(0.0309, abs=3e-4)
    assert res.worse[0] / res.se[0] == pytest.approx(3.10, abs=0.01)
    assert res.p[0] == pytest.approx(0.00175, abs=1e-4)
    low, high = res.ratio_ci(True)
    assert low[0] < math.exp(-res.worse[0]) < high[0] < 1.0


def test_latency_orientation_is_worse_positive():
    noise = SpeedNoise(sigma=0.01, sigma_df=40)
    slower = shift_test(np.log([[1.0, 1.0, 1.0]]), np.log([[1.06, 1.06, 1.06]]), noise, higher_is_better=False,
                        cross_job=False)
    faster = shift_test(np.log([[1.0, 1.0, 1.0]]), np.log([[0.94, 0.94, 0.94]]), noise, higher_is_better=False,
                        cross_job=False)
    assert slower.worse[0] > 0 and slower.p[0] < 1e-6
    assert faster.worse[0] < 0 and faster.p[0] > 0.999


def test_calibration_recovers_sigma_and_counts_df():
    rng = np.random.default_rng(5)
    pairs = [(np.exp(rng.normal(0, 0.02, 3)) * 100, np.exp(rng.normal(0, 0.02, 3)) * 100) for _ in range(40)]
    cal = calibrate(pairs)
    assert cal.df == 160 and cal.groups == 80
    assert cal.sigma == pytest.approx(0.02, rel=0.15)
    assert cal.delta_sd == pytest.approx(0.02 * math.sqrt(2 / 3), rel=0.3)  # RMS about zero
    assert cal.usable


def test_calibration_with_too_few_runs():
    assert calibrate([([100.0], [101.0])]) is None
    small = calibrate([([100.0, 101.0], [100.0])])
    assert small.df == 1 and not small.usable and MIN_CALIBRATION_DF > 1


def test_ratio_policy():
    assert ratio_policy([100, 100], [96.9, 96.9], higher_is_better=True, tolerance=0.03)[1]
    assert not ratio_policy([100, 100], [97.0, 97.0], higher_is_better=True, tolerance=0.03)[1]
    assert ratio_policy([1.0], [1.031], higher_is_better=False, tolerance=0.03)[1]
    assert not ratio_policy([1.0], [0.5], higher_is_better=False, tolerance=0.03)[1]


def test_exact_sign_flip_on_a_wide_lattice_matches_the_normal_approximation():
    # 2020 utterances, many distinct magnitudes (FFT convolution path): exact p ≈ normal p of Σd.
    rng = np.random.default_rng(0)
    base, cand = rng.integers(0, 30, size=(3, 2020)), rng.integers(0, 30, size=(3, 2020))
    cand[:, :300] += 1
    d = cand.mean(axis=0) - base.mean(axis=0)
    p, method = sign_flip_p(d, scale=9)
    assert method == "exact sign-flip"
    assert p == pytest.approx(stats.norm.sf(d.sum() / math.sqrt((d ** 2).sum())), abs=0.01)
