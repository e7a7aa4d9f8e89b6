"""Slow-mode server starts (issue 36; docs/statistics.md): a mixture, not noise.

The runbook's CI stage 1 reached 43.2–44.7 req/s in a first attempt and 57.0–59.1 after the server restarted: a
server start can land in a slow mode, and then every workload that server serves is slow in that run. Judged as
noise, slow starts inflate σ and, two in six candidate runs, look like an intermittent regression (55% of no-op
PRs WARNed with 20% of starts 8% slow). So a run of the in-job A/B is a slow-mode start when EVERY workload of
the model (two or more) is worse than its arm's median by more than max(SLOW_MODE_SIGMAS·σ, the outlier rule's
3%) in that run, and such runs are set aside in both arms: the row is judged on the fast mode, and says so.
Jointly over the workloads the limit can be lower than the one-run outlier rule's 5σ: two workloads beyond 3σ
together by chance is a one-in-a-million run.

The arm's median decides, so a slow mode is always a minority of an arm's runs: a candidate whose runs are all
(or mostly) slow has a slow median, nothing is set aside, and its shift is a regression. An intermittent
regression of one workload is not a slow mode: the model's other workloads are not slow with it.
"""
from __future__ import annotations

import warnings

import numpy as np

from gate.stats.outlier_rule import OUTLIER_MIN_REL

SLOW_MODE_SIGMAS = 3.0


def slow_mode_runs(arms: np.ndarray, sigma: np.ndarray | float, *, higher_is_better: bool) -> np.ndarray:
    """(..., 2W, runs) ln values of the model's W workloads, [w0 base, w0 cand, w1 base, ...] (NaN = absent) ->
    (..., 2, runs) bool: the runs (base, candidate) that are slow-mode starts. None are with fewer than two
    workloads, or where a workload lacks the run."""
    y = np.asarray(arms, dtype=float)
    lead, runs = y.shape[:-2], y.shape[-1]
    if y.shape[-2] < 4 or y.shape[-2] % 2:
        return np.zeros(lead + (2, runs), dtype=bool)
    by = y.reshape(lead + (y.shape[-2] // 2, 2, runs))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        worse = (by - np.nanmedian(by, axis=-1, keepdims=True)) * (-1.0 if higher_is_better else 1.0)
    s = np.nan_to_num(np.asarray(sigma, dtype=float))
    limit = np.maximum(SLOW_MODE_SIGMAS * s, np.log1p(OUTLIER_MIN_REL))
    limit = np.reshape(limit, np.shape(limit) + (1, 1, 1))
    with np.errstate(invalid="ignore"):
        slow = np.where(np.isnan(worse), False, worse > limit)
    return np.asarray(slow.all(axis=-3), dtype=bool)
