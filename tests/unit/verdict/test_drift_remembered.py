"""detrended_sd remembers its answers for small inputs (gate.stats.drift): the same bits as computing them, and a
caller that changes what it got back changes nothing for the next caller."""
from __future__ import annotations

import numpy as np

from gate.stats import drift


def test_remembered_answers_are_the_computed_ones_and_copies() -> None:
    rng = np.random.default_rng(5)
    positions = np.array([[0, 2, 4, 6, 8, 10], [1, 3, 5, 7, 9, 11]])
    for shared in (False, True):
        y = rng.normal(scale=0.01, size=(4, 2, 6)) + 0.001 * positions
        computed = drift._detrended_sd(y, positions, shared)
        first = drift.detrended_sd(y, positions, shared_starts=shared)
        first[0][...] = -1.0  # a caller's change to its copy
        again = drift.detrended_sd(y.copy(), positions, shared_starts=shared)
        for want, got in zip(computed, again, strict=True):
            assert np.array_equal(want, got, equal_nan=True)


def test_large_batches_are_computed_not_remembered() -> None:
    y = np.random.default_rng(6).normal(scale=0.01, size=(400, 2, 6))
    before = len(drift._REMEMBERED)
    drift.detrended_sd(y, np.tile(np.arange(6), (2, 1)))
    assert len(drift._REMEMBERED) == before
