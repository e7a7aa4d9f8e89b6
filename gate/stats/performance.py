"""A/A calibration of speed metrics (docs/statistics.md) and the uncalibrated ratio of means.

The run is the unit: requests inside a run share clocks, GPU state and co-tenancy, so only whole runs
replicate. Three runs cannot estimate their own spread (an exact rank test of 3 vs 3 runs cannot go
below p = 0.05 one-sided), so σ comes from A/A calibration: the same commit measured twice, the pooled
within-arm SD of ln(metric) with its degrees of freedom, and,
from pairs whose arms ran in different jobs, the spread of their differences. The test itself is in
gate.stats.speed.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np

from gate.formats.noise_model import MIN_CALIBRATION_DF, Calibration
from gate.stats.drift import TERMS, arm_positions, detrend, detrended_sd
from gate.stats.outliers import robust_sd


def with_nights(pairs: Calibration | None, nights: Calibration | None) -> Calibration | None:
    """The within-job σ of A/A pairs and of nights together: sums of squares and degrees of freedom added.

    `pairs` may already hold an earlier nights' part: it is replaced, never added to (a night is counted
    once). `nights` is what `calibrate` returns for the nights' runs, one arm per night. The cross-job
    fields stay the pairs'. None when neither has degrees of freedom.
    """
    base = pairs.without_nights() if pairs is not None else None
    if nights is None or nights.df == 0:
        return base
    squares = nights.sigma ** 2 * nights.df
    part = Calibration(sigma=nights.sigma, df=nights.df, groups=nights.groups, set_aside=nights.set_aside,
                       nights=nights.groups, night_df=nights.df, night_sum_sq=squares,
                       night_set_aside=nights.set_aside)
    if base is None:
        return part
    df = base.df + nights.df
    return replace(base, sigma=math.sqrt((base.sigma ** 2 * base.df + squares) / df), df=df,
                   groups=base.groups + part.groups, set_aside=base.set_aside + part.set_aside, nights=part.nights,
                   night_df=part.night_df, night_sum_sq=part.night_sum_sq, night_set_aside=part.night_set_aside)


def evidence(calibrations: Sequence[Calibration]) -> str:
    """Where a pooled σ's degrees of freedom come from, e.g. "3 A/A pairs + 14 nights"; empty without nights
    (the A/A pairs are then all there is, and the report says nothing new)."""
    nights = max((c.nights for c in calibrations), default=0)
    if not nights:
        return ""
    pairs = max((c.pairs for c in calibrations), default=0)
    parts = ([f"{pairs} A/A pair{'s' if pairs != 1 else ''}"] if pairs else []) + [f"{nights} night{'s' if nights != 1 else ''}"]
    return " + ".join(parts)


def calibrate(pairs: Sequence[tuple[Sequence[float], Sequence[float]]],
              cross_job: Sequence[bool] | None = None) -> Calibration | None:
    """Pool the within-arm variance of ln(value) over A/A pairs [(arm_a_runs, arm_b_runs), ...].

    `cross_job[k]` says pair k's arms ran in different jobs (default: all in one job). Runs the outlier rule
    flags at the calibration's own scale-free σ are set aside (gate.stats.outliers.robust_sd), and so are NaN
    values (slow-mode server starts: gate.judging.calibration), in their place. Arms with fewer than two kept
    values add no degrees of freedom. Returns None when nothing could be pooled.
    """
    cross_job = list(cross_job) if cross_job is not None else [False] * len(pairs)
    logged = [(_logs(a), _logs(b)) for a, b in pairs]
    # σ and the runs set aside by the one outlier rule at that σ, scale-free (gate.stats.outliers.robust_sd):
    # no fixed window decides what is wild.
    arms = [arm for pair in logged for arm in pair if arm is not None and len(arm)]
    width = max((len(a) for a in arms), default=0)
    padded = np.full((len(arms), width), np.nan)
    for k, arm in enumerate(arms):
        padded[k, :len(arm)] = arm
    fitted, terms = _without_drift(logged, cross_job, padded)
    kept = robust_sd(fitted)[2] if arms else padded.astype(bool)
    squares, df, groups, set_aside, deltas, cross = _pooled_arms(logged, cross_job, fitted, kept)
    df -= terms
    if df <= 0:
        return None
    delta_sd = float(np.sqrt(np.mean(np.square(deltas)))) if len(deltas) >= 2 else None
    return Calibration(sigma=math.sqrt(squares / df), df=df, groups=groups, delta_sd=delta_sd,
                       delta_df=len(deltas) if delta_sd is not None else None,
                       within_pairs=sum(1 for c in cross_job if not c), cross_pairs=sum(1 for c in cross_job if c),
                       cross_diffs=len(cross), cross_sum_sq=float(sum(d * d for d, _ in cross)),
                       cross_sum_h=float(sum(h for _, h in cross)), set_aside=set_aside)


def _pooled_arms(logged: Sequence[tuple[np.ndarray | None, np.ndarray | None]], cross_job: Sequence[bool],
                 fitted: np.ndarray, kept: np.ndarray
                 ) -> tuple[float, int, int, int, list[float], list[tuple[float, float]]]:
    """Over the A/A pairs' arms (fitted's rows, in calibrate's order): Σ squares and df of the kept runs, the arms
    with two or more, the runs set aside, each pair's difference of means and, across jobs, (difference, h)."""
    squares, df, groups, set_aside = 0.0, 0, 0, 0
    deltas: list[float] = []
    cross: list[tuple[float, float]] = []
    index = 0
    for (y_a, y_b), across in zip(logged, cross_job, strict=True):
        sides: list[_KeptArm | None] = []
        for y in (y_a, y_b):
            part = None if y is None or len(y) == 0 else _kept_arm(y, fitted[index, :len(y)], kept[index, :len(y)])
            sides.append(part)
            if y is not None and part is not None:
                index += 1
                set_aside += len(y) - part.n
                squares, df, groups = squares + part.squares, df + part.df, groups + int(part.df > 0)
        first, second = sides
        if first is not None and second is not None and first.n and second.n:
            deltas.append(second.mean - first.mean)
            if across:
                cross.append((deltas[-1], 1 / first.n + 1 / second.n))
    return squares, df, groups, set_aside, deltas, cross


@dataclass(frozen=True)
class _KeptArm:
    n: int  # runs kept
    mean: float  # their mean ln(value)
    squares: float  # Σ squared deviations of their residuals (after the drift terms) from their mean; 0 below two
    df: int  # n − 1, or 0 below two runs


def _kept_arm(y: np.ndarray, residuals: np.ndarray, kept: np.ndarray) -> _KeptArm:
    """One A/A arm's kept runs: what they add to the pooled σ, and their mean."""
    keep, residual = y[kept], residuals[kept]
    if len(keep) < 2:
        return _KeptArm(len(keep), float(keep.mean()) if len(keep) else math.nan, 0.0, 0)
    return _KeptArm(len(keep), float(keep.mean()), float(((residual - residual.mean()) ** 2).sum()), len(keep) - 1)


def _without_drift(logged: Sequence[tuple[np.ndarray | None, np.ndarray | None]], cross_job: Sequence[bool],
                   padded: np.ndarray) -> tuple[np.ndarray, int]:
    """The arms (padded's rows, in calibrate's order) with the position terms of gate.stats.drift removed from the
    in-job pairs: one drift slope and one first-run effect common to them, where detrended_sd finds them (fitted
    as it fits them: on all runs, then on the runs the outlier rule keeps). A job's drift rate that differs from the common one stays
    in σ (it can only make σ larger). Only when the calibration keeps MIN_CALIBRATION_DF degrees of freedom after
    the terms (a single 3+3 pair has 4: its σ stays as measured). Returns the arms and how many terms."""
    rows, at = [], 0
    for (y_a, y_b), across in zip(logged, cross_job, strict=True):
        present = [y is not None and len(y) > 0 for y in (y_a, y_b)]
        if all(present) and not across:
            rows += [at, at + 1]
        at += sum(present)
    arm_df = int(np.maximum((~np.isnan(padded)).sum(axis=-1) - 1, 0).sum()) if padded.size else 0
    if not rows or arm_df - TERMS < MIN_CALIBRATION_DF:
        return padded, 0
    positions = arm_positions(len(rows), padded.shape[-1])
    if not detrended_sd(padded[rows], positions)[3]:  # the terms explain nothing beyond chance: σ as measured
        return padded, 0
    out = padded.copy()
    out[rows] = detrend(padded[rows], positions)[0]
    out[rows] = detrend(padded[rows], positions, robust_sd(out)[2][rows])[0]
    return out, TERMS


def ratio_policy(base_values: Sequence[float], cand_values: Sequence[float], *, higher_is_better: bool,
                 tolerance: float) -> tuple[float, bool]:
    """The maintainers' rule without calibration: throughput >= (1 − tol)×, latency/RTF <= (1 + tol)×.

    Returns (ratio of means candidate / baseline, whether the rule is broken).
    """
    ratio = float(np.mean(cand_values) / np.mean(base_values))
    breached = ratio < 1 - tolerance - 1e-12 if higher_is_better else ratio > 1 + tolerance + 1e-12
    return ratio, breached


def _logs(values: Sequence[float]) -> np.ndarray | None:
    """ln of an arm's values; NaN stays, in its place: a run set aside (a slow-mode server start:
    gate.judging.calibration), absent from σ but not moving the later runs' positions."""
    array = np.asarray([v for v in values if v is not None], dtype=float)
    there = array[~np.isnan(array)]
    if (there <= 0).any() or not np.isfinite(there).all():
        return None
    return np.asarray(np.log(array))
