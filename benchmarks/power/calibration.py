"""The A/A calibration of simulated PRs, batched: what `gate baseline calibrate` computes for each PR
(gate.stats.performance.calibrate through gate.stats.outliers.robust_sd; gate.stats.overdispersion.from_arms
with its co-moving utterances).
benchmarks/power/validate.py feeds the same runs to the real code and checks the verdicts agree."""
from __future__ import annotations

import numpy as np

from gate.formats.noise_model import MIN_CALIBRATION_DF
from gate.stats.drift import TERMS, arm_positions, detrend, detrended_sd
from gate.stats.outliers import robust_sd
from gate.stats.overdispersion import comoving
from gate.stats.slowmode import find_slow_starts
from gate.stats.speed import SpeedNoise

RUNS = 3  # per arm per look (simulate.RUNS)


def speed_calibration(cal: dict, workloads: list[str], metric: str, cross_job: bool,
                      nights: dict | None = None, slow: np.ndarray | None = None) -> SpeedNoise | None:
    """Per PR (B,), the model's pooled SpeedNoise for one metric, from its workloads' A/A runs (None without), with
    the nightly's runs pooled into the within-job part where `nights` holds them (gate.history.noise: one arm a
    night, outlier rule over the nights, no position terms; gate.stats.performance.with_nights adds the sums).
    `slow`: the model's A/A slow-mode starts (`slow_starts`, found once per chunk: the judge asks per metric and
    workload); None: found here."""
    ss = df = cross_sq = cross_h = 0.0
    cross_diffs = 0
    wild = seen = 0  # the runs set aside, and df + groups + set aside (gate.stats.speed.SpeedNoise.pooled)
    pairs = next(iter(cal.values()))[metric].shape[1]
    if pairs == 0:
        return None
    if slow is None:  # set aside from every workload and metric of the model
        slow = slow_starts(cal, cross_job)[workloads[0].split("/")[0]]
    for wid in workloads:
        y = np.where(slow, np.nan, cal[wid][metric])  # (B, K, 2, RUNS)
        fitted, terms = _without_drift(y, cross_job)
        keep = robust_sd(fitted.reshape(y.shape[0], -1, y.shape[-1]))[2].reshape(y.shape)
        n = keep.sum(axis=-1)
        with np.errstate(divide="ignore", invalid="ignore"):  # an arm whose runs were all slow starts: none (n = 0)
            mean = np.where(keep, y, 0.0).sum(axis=-1) / n
            fitted_mean = np.where(keep, fitted, 0.0).sum(axis=-1) / n
        arm_ss = np.where(keep, (fitted - fitted_mean[..., None]) ** 2, 0.0).sum(axis=-1)
        ss = ss + np.where(n >= 2, arm_ss, 0.0).sum(axis=(1, 2))
        df = df + np.where(n >= 2, n - 1, 0).sum(axis=(1, 2)) - terms
        aside = (~keep).sum(axis=(1, 2, 3))
        wild = wild + aside
        seen = seen + np.where(n >= 2, n - 1, 0).sum(axis=(1, 2)) - terms + (n >= 2).sum(axis=(1, 2)) + aside
        if cross_job:
            delta = mean[..., 1] - mean[..., 0]
            cross_sq = cross_sq + (delta ** 2).sum(axis=1)
            cross_h = cross_h + (1 / n[..., 0] + 1 / n[..., 1]).sum(axis=1)
            cross_diffs += y.shape[1]
        if nights is not None:
            sigma, night_df, keep = robust_sd(nights[wid][metric])  # over the (B, N, RUNS) nights
            n = keep.sum(axis=-1)
            ss = ss + np.where(night_df > 0, np.nan_to_num(sigma) ** 2 * night_df, 0.0)
            aside = (~keep).sum(axis=(1, 2))
            df = df + night_df
            wild = wild + aside
            seen = seen + night_df + (n >= 2).sum(axis=1) + aside
    return SpeedNoise(sigma=np.sqrt(ss / df), sigma_df=df, cross_pairs=pairs if cross_job else 0,
                      cross_msd=cross_sq / cross_diffs if cross_diffs else 0.0,
                      cross_h=cross_h / cross_diffs if cross_diffs else 0.0, cross_df=cross_diffs,
                      wild_runs=wild, runs_seen=seen)


def slow_starts(cal: dict, cross_job: bool) -> dict[str, np.ndarray]:
    """Per model, (B, K, 2, RUNS): the in-job A/A pairs' slow-mode server starts, found on the throughput of all its
    workloads together (gate.judging.calibration.calibration_from_pairs; gate.stats.slowmode.find_slow_starts,
    one_commit), whichever of its workloads are asked about; none across jobs (the A/B there sets none aside)."""
    out = {}
    for model in dict.fromkeys(w.split("/")[0] for w in cal):
        arms = np.concatenate([cal[w]["throughput"] for w in cal if w.split("/")[0] == model], axis=2)  # (B, K, 2W, RUNS)
        out[model] = (np.zeros(arms.shape[:2] + (2, arms.shape[-1]), dtype=bool) if cross_job or arms.shape[1] == 0 else
                      find_slow_starts(arms, arm_positions(arms.shape[-2], arms.shape[-1]), higher_is_better=True,
                                       one_commit=True)[0])
    return out


def _without_drift(y: np.ndarray, cross_job: bool) -> tuple[np.ndarray, np.ndarray | int]:
    """gate.stats.performance._without_drift, batched: the position terms common to the in-job pairs, fitted on all
    runs and then on the runs the outlier rule keeps, per PR where they are found; only when MIN_CALIBRATION_DF
    df remain after them."""
    runs = y.shape[-1]
    arms = y.reshape(y.shape[0], -1, runs)  # [pair 0 arm a, pair 0 arm b, pair 1 arm a, ...] as calibrate orders them
    arm_df = np.maximum((~np.isnan(arms)).sum(axis=-1) - 1, 0).sum(axis=-1)  # runs set aside (NaN) count no df
    if cross_job or not (arm_df - TERMS >= MIN_CALIBRATION_DF).any():
        return y, 0
    at = arm_positions(arms.shape[1], runs)
    found = detrended_sd(arms, at)[3] & (arm_df - TERMS >= MIN_CALIBRATION_DF)
    first = detrend(arms, at)[0]
    fitted = detrend(arms, at, robust_sd(first)[2])[0]
    return np.where(found[:, None, None], fitted, arms).reshape(y.shape), np.where(found, TERMS, 0)


def dispersion(cal_errors: dict, wid: str, measure: str) -> tuple[np.ndarray, ...] | None:
    """Per PR: one workload's measure's (ss_total, ss_units, df, rest, group_ss) from its A/A arms (overdispersion.from_arms
    with the utterances' ids): `rest` (B, n) marks the utterances that do not co-move (overdispersion.comoving,
    the gate's own function, per PR, on the arms in the order gate.judging.calibration.calibration_from_pairs sees them),
    and the sums are over those."""
    e = cal_errors[wid][measure]  # (B, K, 2, RUNS, n) int
    if e.shape[1] == 0:
        return None
    rest = np.stack([~comoving([e[b, k, arm] for k in range(e.shape[1]) for arm in range(2)])
                     for b in range(e.shape[0])])
    c = (e - e[..., :1, :]) * rest[:, None, None, None, :]  # variances are shift-invariant: small integers
    sums, squares = c.sum(axis=-2), (c * c).sum(axis=-2)
    units = ((squares - sums * sums / RUNS).sum(axis=-1) / (RUNS - 1)).sum(axis=(1, 2)) * (RUNS - 1)
    totals = c.sum(axis=-1).astype(float)
    total = totals.var(axis=-1, ddof=1).sum(axis=(1, 2)) * (RUNS - 1)
    df = e.shape[1] * e.shape[2] * (RUNS - 1)
    # the co-moving group's own spread (Dispersion.group_ss): its total errors per run, about each arm's mean
    group = (e * ~rest[:, None, None, None, :]).sum(axis=-1).astype(float)  # (B, K, 2, RUNS)
    group_ss = group.var(axis=-1, ddof=1).sum(axis=(1, 2)) * (RUNS - 1)
    return total, units, np.full(np.shape(total), df), rest, group_ss


