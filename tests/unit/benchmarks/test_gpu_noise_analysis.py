"""Known answers for the GPU noise study's statistics (benchmarks/noise/analysis.py)."""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))

from noise import analysis  # noqa: E402


def test_sigma_ci_matches_chi_square_table_df20():
    # 21 values with sample SD exactly 1 (df 20). Table: χ²(0.025, 20) = 9.591, χ²(0.975, 20) = 34.170.
    y = np.arange(21, dtype=float)
    y = (y - y.mean()) / np.std(y, ddof=1)
    est = analysis.sigma_with_ci(y)
    assert est.df == 20 and est.sd == pytest.approx(1.0)
    assert est.ci_low == pytest.approx(math.sqrt(20 / 34.170), rel=1e-4)   # 0.7650
    assert est.ci_high == pytest.approx(math.sqrt(20 / 9.591), rel=1e-4)   # 1.4441


def test_sigma_ci_matches_chi_square_table_df2_and_scales():
    # [0, 2, 4]: SD 2, df 2. Table: χ²(0.025, 2) = 0.05064, χ²(0.975, 2) = 7.3778.
    est = analysis.sigma_with_ci([0.0, 2.0, 4.0])
    assert est.sd == pytest.approx(2.0)
    assert est.ci_low == pytest.approx(2.0 * math.sqrt(2 / 7.3778), rel=1e-4)
    assert est.ci_high == pytest.approx(2.0 * math.sqrt(2 / 0.05064), rel=1e-3)
    narrower = analysis.sigma_with_ci([0.0, 2.0, 4.0], confidence=0.5)
    assert est.ci_low < narrower.ci_low < narrower.sd < narrower.ci_high < est.ci_high


def test_sigma_ci_covers_true_sigma_at_nominal_rate():
    rng = np.random.default_rng(7)
    covered = sum(lo <= 0.02 <= hi for lo, hi in (
        (e.ci_low, e.ci_high) for e in (analysis.sigma_with_ci(rng.normal(0, 0.02, 23)) for _ in range(2000))))
    assert 0.93 <= covered / 2000 <= 0.97


def test_trend_hand_computed():
    # x = 0..4, y = [1, 2, 2, 3, 5]: slope 9/10, SSR 1.10, s² = 1.1/3, SE = sqrt(s²/10) = 0.19149, t = 4.700.
    t = analysis.trend([1, 2, 2, 3, 5])
    assert t.delta == pytest.approx(0.9)
    assert t.se == pytest.approx(math.sqrt(1.1 / 3 / 10))
    assert t.t == pytest.approx(0.9 / math.sqrt(1.1 / 3 / 10))
    assert t.df == 3
    assert t.p_two_sided == pytest.approx(0.01823, abs=2e-4)  # 2·P(T₃ > 4.700)


def test_trend_uses_given_index_and_exact_line_is_exact():
    t = analysis.trend([1.0, 1.2, 1.4, 1.6], index=[10, 11, 12, 13])
    assert t.delta == pytest.approx(0.2) and t.se == pytest.approx(0.0, abs=1e-12)
    assert t.p_two_sided < 1e-12
    flat = analysis.trend([3.0, 3.0, 3.0])
    assert flat.delta == 0.0 and flat.p_two_sided == 1.0


def test_lag1_autocorrelation_known_values():
    assert analysis.lag1_autocorrelation([1, -1, 1, -1]).r1 == pytest.approx(-0.75)
    rising = analysis.lag1_autocorrelation([1, 2, 3, 4, 5])
    assert rising.r1 == pytest.approx(0.4)
    assert rising.band95 == pytest.approx(1.96 / math.sqrt(5))
    # z = (0.4 + 1/5)·√5 = 1.3416 -> p = 0.1797
    assert rising.p_two_sided == pytest.approx(0.1797, abs=1e-3)


def test_lag1_of_white_noise_is_near_zero_and_of_a_random_walk_is_high():
    rng = np.random.default_rng(3)
    assert abs(analysis.lag1_autocorrelation(rng.normal(size=4000)).r1) < 0.05
    assert analysis.lag1_autocorrelation(np.cumsum(rng.normal(size=400))).r1 > 0.8


def test_first_run_effect_prediction_t():
    # rest [0, 1, 2]: mean 1, SD 1; run 1 = 4 -> Δ 3, SE √(1 + 1/3) = 1.1547, t 2.598 on df 2 (p 0.1217).
    shift = analysis.first_run_effect([4.0, 0.0, 1.0, 2.0])
    assert shift.delta == pytest.approx(3.0)
    assert shift.se == pytest.approx(math.sqrt(4 / 3))
    assert shift.t == pytest.approx(3.0 / math.sqrt(4 / 3))
    assert shift.df == 2
    assert shift.p_two_sided == pytest.approx(0.1217, abs=1e-3)
    assert analysis.Shift(n=1, delta=math.log(0.9), se=1, t=0, df=1, p_two_sided=1).percent == pytest.approx(-10.0)


def test_mean_shift_is_one_sample_t():
    # d = [1, 2, 3]: mean 2, SE 1/√3, t 3.464 on df 2 (p 0.0742).
    shift = analysis.mean_shift([1.0, 2.0, 3.0])
    assert shift.delta == pytest.approx(2.0) and shift.se == pytest.approx(1 / math.sqrt(3))
    assert shift.p_two_sided == pytest.approx(0.0742, abs=1e-3)


def test_consecutive_pairs_known_values_and_odd_tail_dropped():
    pairs = analysis.consecutive_pairs([0, 1, 1, 3, 2, 2, 9])  # pairs (0,1) (1,3) (2,2); 9 is left over
    assert pairs.n_pairs == 3
    assert pairs.mean == pytest.approx(1.0) and pairs.sd == pytest.approx(1.0)
    assert pairs.sigma_implied == pytest.approx(1 / math.sqrt(2))
    assert pairs.max_abs == pytest.approx(2.0)


def test_pairs_recover_sigma_of_independent_runs():
    rng = np.random.default_rng(11)
    pairs = analysis.consecutive_pairs(rng.normal(0, 0.03, 20000))
    assert pairs.sigma_implied == pytest.approx(0.03, rel=0.03)


def test_robust_sigma_ignores_one_slow_run():
    # [1, 2, 3, 4, 100]: median 3, |deviations| [2, 1, 0, 1, 97], MAD 1 -> 1.4826.
    assert analysis.robust_sigma([1, 2, 3, 4, 100]) == pytest.approx(1.4826)
    rng = np.random.default_rng(5)
    assert analysis.robust_sigma(rng.normal(0, 0.02, 20000)) == pytest.approx(0.02, rel=0.03)


@pytest.mark.parametrize("fn, values", [
    (analysis.robust_sigma, [1.0, 2.0]),
    (analysis.sigma_with_ci, [1.0]),
    (analysis.first_run_effect, [1.0, 2.0]),
    (analysis.trend, [1.0, 2.0]),
    (analysis.lag1_autocorrelation, [1.0, 2.0]),
    (analysis.consecutive_pairs, [1.0, 2.0, 3.0]),
    (analysis.mean_shift, [1.0]),
])
def test_too_few_values_say_how_many(fn, values):
    with pytest.raises(ValueError, match="at least"):
        fn(values)
