"""The outlier rule's median (gate.stats.outliers._median) is np.nanmedian's, bit for bit, whatever is absent."""
from __future__ import annotations

import warnings

import numpy as np

from gate.stats.outliers import _median


def _reference(y: np.ndarray) -> np.ndarray:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)  # "All-NaN slice"
        return np.nanmedian(y, axis=-1, keepdims=True)


def test_equal_to_nanmedian_on_random_batches_with_absent_and_infinite_runs() -> None:
    rng = np.random.default_rng(7)
    for _ in range(3000):
        shape = tuple(int(k) for k in rng.integers(1, 7, size=rng.integers(1, 4)))
        y = rng.normal(size=shape) * rng.choice([1e-3, 1.0, 1e300])
        y[rng.random(shape) < rng.random()] = np.nan
        if rng.random() < 0.1:
            y[rng.random(shape) < 0.2] = rng.choice([np.inf, -np.inf])
        assert np.array_equal(_median(y), _reference(y), equal_nan=True), y


def test_even_counts_average_the_middle_two_and_an_empty_arm_is_nan() -> None:
    y = np.array([[1.0, 4.0, np.nan, 2.0, 3.0], [np.nan] * 5, [5.0, np.nan, np.nan, np.nan, np.nan]])
    assert np.array_equal(_median(y), [[2.5], [np.nan], [5.0]], equal_nan=True)
    assert _median(np.empty((3, 0))).shape == (3, 1)


def test_the_remembered_chi2_quantiles_give_scipys_bound_bit_for_bit() -> None:
    """flag_sigma's quantiles come from a memo (gate.stats.outliers._chi2_low): scalars, arrays and df 0 alike."""
    from scipy import stats

    from gate.stats.outliers import FLAG_SIGMA_QUANTILE, flag_sigma

    rng = np.random.default_rng(11)
    for shape in [(), (5,), (3, 4), ()]:
        for _ in range(200):
            df = rng.choice([0.0, 1.0, 2.0, 3.5, 4.0, 8.0, 12.0, 44.0, 100.25], size=shape)
            sigma = rng.random(shape)
            with np.errstate(all="ignore"):
                scipy_bound = sigma * np.where(
                    df > 0, np.sqrt(df / stats.chi2.ppf(FLAG_SIGMA_QUANTILE, np.where(df > 0, df, 1.0))), 1.0)
            got = flag_sigma(sigma, df)
            assert got.shape == scipy_bound.shape and np.array_equal(got, scipy_bound)
