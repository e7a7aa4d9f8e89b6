"""gate.stats.distributions answers as scipy.stats does, to the bit, on a grid with every edge (x at and past a
support's ends, df ≤ 0, ∞, NaN); the binomial's within 1e-15 (Boost underneath scipy.stats, the incomplete beta or
exact binomial coefficients here)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import stats

from gate.stats import distributions as dist

X = np.array([-np.inf, -40, -5, -1.5, -1e-300, 0.0, 1e-300, 1e-8, 0.3, 1, 2.5, 7, 40, 1e5, np.inf, np.nan])
DF = np.array([-1, 0, 1e-3, 0.5, 1, 2, 3, 4.5, 8, 20, 79, 1e3, 1e7, np.inf, np.nan])
Q = np.array([-0.1, 0, 1e-300, 1e-12, 1e-4, 0.001, 0.025, 0.05, 0.5, 0.8, 0.975, 0.999999, 1, 1.1, np.nan])


def _same(ours, theirs) -> None:
    np.testing.assert_array_equal(np.asarray(ours, dtype=float), np.asarray(theirs, dtype=float))


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


@pytest.mark.parametrize("name", ["t_sf", "chi2_sf"])
def test_tails_in_x_and_df_are_scipy_stats_own(name):
    x, df = np.meshgrid(X, DF)
    family = getattr(stats, name.split("_")[0])
    _same(getattr(dist, name)(x, df), family.sf(x, df))


@pytest.mark.parametrize("name", ["t_ppf", "t_isf", "chi2_ppf"])
def test_quantiles_are_scipy_stats_own(name):
    q, df = np.meshgrid(Q, DF)
    family, method = name.split("_")
    _same(getattr(dist, name)(q, df), getattr(getattr(stats, family), method)(q, df))


@pytest.mark.parametrize("dfd", [-1, 0, 1, 2, 7.5, 40, np.inf, np.nan])
def test_f_tails_are_scipy_stats_own(dfd):
    x, dfn = np.meshgrid(X, DF)
    _same(dist.f_sf(x, dfn, dfd), stats.f.sf(x, dfn, dfd))
    _same(dist.f_cdf(x, dfn, dfd), stats.f.cdf(x, dfn, dfd))


def test_normal_is_scipy_stats_own():
    for ours, theirs, grid in ((dist.norm_sf, stats.norm.sf, X), (dist.norm_cdf, stats.norm.cdf, X),
                               (dist.norm_ppf, stats.norm.ppf, Q), (dist.norm_isf, stats.norm.isf, Q)):
        _same(ours(grid), theirs(grid))


def test_scalars_come_back_as_numpy_scalars_as_from_scipy_stats():
    assert type(dist.t_sf(1.0, 3.0)) is type(stats.t.sf(1.0, 3.0))
    assert type(dist.t_isf(0.01, 8)) is type(stats.t.isf(0.01, 8))
    assert np.ndim(dist.f_sf(2.0, 2, 9)) == 0


@pytest.mark.parametrize("p", [0.0, 0.01, 0.05, 0.2, 0.5, 1.0])
def test_binomial_upper_tail_within_round_off_of_scipy_stats(p):
    k, n = np.meshgrid(np.arange(-3, 16), np.arange(0, 15))
    ours, theirs = dist.binom_sf(k, n, p), stats.binom.sf(k, n, p)
    assert np.isnan(ours).sum() == np.isnan(theirs).sum() == 0
    np.testing.assert_allclose(ours, theirs, rtol=1e-14, atol=1e-15)
    assert np.isnan(dist.binom_sf(1, -1, 0.5)) and np.isnan(dist.binom_sf(1, 4, 1.5))


@pytest.mark.parametrize("m", [0, 1, 2, 5, 30, 100, 1000, 3000])
def test_half_binomial_pmf_is_the_exact_coefficients(m):
    ours = dist.binom_half_pmf(m)
    np.testing.assert_allclose(ours, stats.binom.pmf(np.arange(m + 1), m, 0.5), rtol=1e-12, atol=0)
    if m <= 60:  # small enough for exact float comparison with integer arithmetic
        assert ours.sum() == pytest.approx(1.0, abs=1e-15)
        assert all(value * 2 ** m == __import__("math").comb(m, k) for k, value in enumerate(ours))


def test_gate_commands_load_neither_scipy_stats_nor_scipy_optimize():
    """Each takes 0.3-0.5 s to import, in every `gate` process; scipy.optimize loads only for a MOSS-TD cpCER."""
    import subprocess
    import sys
    code = ("import sys, gate.judging.judge, gate.judging.compare, gate.history.changepoints, gate.reading.samples; "
            "print([m for m in ('scipy.stats', 'scipy.optimize') if m in sys.modules])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_benjamini_hochberg_is_scipy_stats_false_discovery_control_to_the_bit():
    from gate.stats.multiplicity import benjamini_hochberg
    rng = np.random.default_rng(7)
    for _ in range(500):
        p = rng.random(int(rng.integers(1, 30))) ** int(rng.integers(1, 6))
        p[-1] = p[0]  # a tie
        _same(benjamini_hochberg(list(p)), stats.false_discovery_control(p, method="bh"))
