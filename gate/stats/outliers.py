"""Which runs of one arm are wild: set aside by `compare`, re-measured by `gate run` (statistics.md §9).

The runbook documents a ~25% slow mode after restarts, and every scored run restarts the server, so now
and then one run of three is far off. A run further than max(5σ, 8%) from its arm's median is flagged;
the arm is then summarized by the mean of the runs left, so one wild run cannot swing the verdict. The
median of three cannot be moved by one run, which is why the rule needs at least three runs (with two,
neither can be told to be the wild one). With an even count the lower median is used: it is a run.
"""
from __future__ import annotations

import numpy as np

OUTLIER_SIGMAS = 5.0
OUTLIER_MIN_REL = 0.08
MIN_RUNS_TO_FLAG = 3


def outlier_limit(sigma: float | np.ndarray) -> np.ndarray:
    """The relative distance from the arm's median beyond which a run is flagged."""
    return np.maximum(OUTLIER_SIGMAS * np.asarray(sigma, dtype=float), OUTLIER_MIN_REL)


def flag_runs(log_values: np.ndarray, sigma: float | np.ndarray = 0.0) -> np.ndarray:
    """Boolean mask (same shape) of flagged runs along the last axis of ln(value); NaN entries are absent runs.

    `sigma` is the calibrated run-to-run SD of ln(value) (0 when unknown: the 8% limit applies), broadcast
    against the batch axes.
    """
    y = np.asarray(log_values, dtype=float)
    present = ~np.isnan(y)
    n = present.sum(axis=-1, keepdims=True)
    if y.shape[-1] == 0:
        return np.zeros(y.shape, dtype=bool)
    with np.errstate(all="ignore"):
        # The lower median is one of the runs, so at least that run is always kept (with an even count the
        # plain median could sit between two clusters and flag every run).
        filled = np.where(n > 0, y, 0.0)
        median = (np.quantile(filled, 0.5, axis=-1, keepdims=True, method="lower") if present.all()
                  else np.nanquantile(filled, 0.5, axis=-1, keepdims=True, method="lower"))
        distance = np.abs(np.expm1(y - median))
    limit = outlier_limit(sigma)
    limit = limit[..., None] if limit.ndim else limit
    return present & (n >= MIN_RUNS_TO_FLAG) & (distance > limit)
