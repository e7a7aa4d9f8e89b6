"""Noise-floor tests for speed metrics (throughput, mean and p95 latency, RTF): statistics.md §4-5.

The run is the unit: requests inside a run share clocks, GPU state and co-tenancy, so only whole runs
replicate. Three runs cannot estimate their own spread (§4.1), so sigma comes from A/A calibration:
the same commit measured twice, the pooled within-arm SD of ln(metric) with its degrees of freedom
(§4.2). The test is a one-sided t on the log scale with t quantiles (sigma is estimated).

Orientation: every result is reported "worse-positive": `worse` = s·(ȳ_cand − ȳ_base) with s = +1 when
lower is better (latency, RTF) and −1 when higher is better (throughput), and `worse_rel` = e^worse − 1.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy import stats

# Below this many degrees of freedom a calibration is not used (one A/A pair of 3+3 runs gives 4).
MIN_CALIBRATION_DF = 4


@dataclass(frozen=True)
class Calibration:
    """Run-to-run noise of ln(metric), from same-commit (A/A) repeats."""

    sigma: float  # pooled within-arm SD of ln(value)
    df: int  # Σ(n_g − 1)
    groups: int  # arms pooled (2 per A/A pair)
    delta_sd: float | None = None  # SD of the A/A pairs' log-mean differences (needs >= 2 pairs)
    delta_df: int | None = None

    @property
    def usable(self) -> bool:
        return self.df >= MIN_CALIBRATION_DF and math.isfinite(self.sigma)

    def to_dict(self) -> dict:
        return {"sigma": self.sigma, "df": self.df, "groups": self.groups, "delta_sd": self.delta_sd,
                "delta_df": self.delta_df}

    @classmethod
    def from_dict(cls, data: dict) -> "Calibration":
        return cls(sigma=float(data["sigma"]), df=int(data["df"]), groups=int(data["groups"]),
                   delta_sd=None if data.get("delta_sd") is None else float(data["delta_sd"]),
                   delta_df=None if data.get("delta_df") is None else int(data["delta_df"]))


def calibrate(pairs: Sequence[tuple[Sequence[float], Sequence[float]]]) -> Calibration | None:
    """Pool the within-arm variance of ln(value) over A/A pairs [(arm_a_runs, arm_b_runs), ...].

    Arms with fewer than two positive values add no degrees of freedom. Returns None when nothing
    could be pooled. With two or more pairs it also keeps the SD of the arms' log-mean differences:
    if that is larger than sigma·sqrt(1/n_a + 1/n_b) there is a session effect (§4.2), and the test
    then uses it instead.
    """
    squares, df, groups, deltas = 0.0, 0, 0, []
    for arm_a, arm_b in pairs:
        means = []
        for arm in (arm_a, arm_b):
            y = _logs(arm)
            if y is None or len(y) < 2:
                means.append(None if y is None or len(y) == 0 else float(y.mean()))
                continue
            squares += float(((y - y.mean()) ** 2).sum())
            df += len(y) - 1
            groups += 1
            means.append(float(y.mean()))
        if None not in means:
            deltas.append(means[1] - means[0])
    if df == 0:
        return None
    delta_sd = float(np.std(deltas, ddof=1)) if len(deltas) >= 2 else None
    return Calibration(sigma=math.sqrt(squares / df), df=df, groups=groups, delta_sd=delta_sd,
                       delta_df=len(deltas) - 1 if delta_sd is not None else None)


@dataclass(frozen=True)
class SpeedTest:
    worse: float  # s·Δ ln(mean): positive means the candidate is worse
    worse_rel: float  # e^worse − 1
    ratio: float  # geometric-mean ratio candidate / baseline (natural direction)
    se: float
    t: float
    df: int
    p_value: float  # one-sided, H1: the candidate is worse
    ratio_ci: tuple[float, float]  # 95% two-sided CI of the ratio candidate / baseline
    se_source: str  # "within-run sigma" or "A/A pair differences"


def log_shift_test(base_values: Sequence[float], cand_values: Sequence[float], *, higher_is_better: bool,
                   calibration: Calibration) -> SpeedTest:
    """One-sided t test of the log-mean shift with sigma from calibration (statistics.md §4.2, Option A)."""
    y_base, y_cand = _logs(base_values), _logs(cand_values)
    if y_base is None or y_cand is None or len(y_base) == 0 or len(y_cand) == 0:
        raise ValueError("speed values must be positive numbers, at least one per side")
    shift = float(y_cand.mean() - y_base.mean())
    orientation = -1.0 if higher_is_better else 1.0
    worse = orientation * shift
    se = calibration.sigma * math.sqrt(1 / len(y_base) + 1 / len(y_cand))
    df, source = calibration.df, "within-run sigma"
    if _session_effect(calibration, se):
        se, df, source = calibration.delta_sd, calibration.delta_df, "A/A pair differences"
    if se <= 0:
        t = math.inf if worse > 0 else (-math.inf if worse < 0 else 0.0)
        p = 0.0 if worse > 0 else 1.0
        half = 0.0
    else:
        t = worse / se
        p = float(stats.t.sf(t, df))
        half = float(stats.t.ppf(0.975, df)) * se
    return SpeedTest(worse=worse, worse_rel=math.expm1(worse), ratio=math.exp(shift), se=se, t=t, df=df, p_value=p,
                     ratio_ci=(math.exp(shift - half), math.exp(shift + half)), se_source=source)


def ratio_policy(base_values: Sequence[float], cand_values: Sequence[float], *, higher_is_better: bool,
                 tolerance: float) -> tuple[float, bool]:
    """The maintainers' rule without calibration: throughput >= (1 − tol)×, latency/RTF <= (1 + tol)×.

    Returns (ratio of means candidate / baseline, whether the rule is broken).
    """
    ratio = float(np.mean(cand_values) / np.mean(base_values))
    breached = ratio < 1 - tolerance - 1e-12 if higher_is_better else ratio > 1 + tolerance + 1e-12
    return ratio, breached


def _session_effect(calibration: Calibration, se: float) -> bool:
    # The A/A differences vary more than the within-arm sigma predicts (one-sided F test at 1%): something
    # per session (clocks, placement) that interleaving did not cancel; use them instead. Only with enough
    # pairs (delta_df >= MIN_CALIBRATION_DF): with 2-3 pairs the F test switches by chance, and a t with
    # 1-2 degrees of freedom would make every interval useless.
    if calibration.delta_sd is None or not calibration.delta_df or calibration.delta_df < MIN_CALIBRATION_DF or se <= 0:
        return False
    ratio = (calibration.delta_sd / se) ** 2
    return bool(ratio > stats.f.ppf(0.99, calibration.delta_df, calibration.df))


def _logs(values: Sequence[float]) -> np.ndarray | None:
    array = np.asarray([v for v in values if v is not None], dtype=float)
    if (array <= 0).any() or not np.isfinite(array).all():
        return None
    return np.log(array)
