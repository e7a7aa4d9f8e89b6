"""A/A calibration of speed metrics (statistics.md §4.2, §9) and the uncalibrated ratio of means.

The run is the unit: requests inside a run share clocks, GPU state and co-tenancy, so only whole runs
replicate. Three runs cannot estimate their own spread (§4.1), so σ comes from A/A calibration: the
same commit measured twice, the pooled within-arm SD of ln(metric) with its degrees of freedom, and,
from pairs whose arms ran in different jobs, the spread of their differences. The test itself is in
gate.stats.speed.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from gate.stats.outliers import flag_runs

# Below this many degrees of freedom a calibration is not used (one A/A pair of 3+3 runs gives 4).
MIN_CALIBRATION_DF = 4


@dataclass(frozen=True)
class Calibration:
    """Run-to-run noise of ln(metric) for one workload × metric, from same-commit (A/A) repeats.

    Within-job noise: the pooled within-arm SD (sigma, df). Between-job noise: the sum of squared log-mean
    differences of A/A pairs whose two arms ran in different jobs, about zero (cross_sum_sq over
    cross_diffs differences; cross_sum_h = Σ(1/n_a + 1/n_b) of those pairs). Runs flagged by
    gate.stats.outliers are left out of both, as `compare` leaves them out.
    """

    sigma: float  # pooled within-arm SD of ln(value)
    df: int  # Σ(n_g − 1)
    groups: int  # arms pooled (2 per A/A pair)
    delta_sd: float | None = None  # RMS of all pairs' log-mean differences about zero (shown; >= 2 pairs)
    delta_df: int | None = None
    within_pairs: int = 0  # pairs whose two arms ran in one job
    cross_pairs: int = 0  # pairs whose two arms ran in different jobs
    cross_diffs: int = 0  # cross-job differences usable here (complete arms)
    cross_sum_sq: float = 0.0
    cross_sum_h: float = 0.0
    set_aside: int = 0  # runs flagged and left out

    @property
    def usable(self) -> bool:
        return self.df >= MIN_CALIBRATION_DF and math.isfinite(self.sigma)

    def to_dict(self) -> dict:
        return {"sigma": self.sigma, "df": self.df, "groups": self.groups, "delta_sd": self.delta_sd,
                "delta_df": self.delta_df, "within_pairs": self.within_pairs, "cross_pairs": self.cross_pairs,
                "cross_diffs": self.cross_diffs, "cross_sum_sq": self.cross_sum_sq,
                "cross_sum_h": self.cross_sum_h, "set_aside": self.set_aside}

    @classmethod
    def from_dict(cls, data: dict) -> "Calibration":
        """Files written before cross-job pairs were recorded read as within-job only (cannot FAIL across jobs)."""
        return cls(sigma=float(data["sigma"]), df=int(data["df"]), groups=int(data["groups"]),
                   delta_sd=None if data.get("delta_sd") is None else float(data["delta_sd"]),
                   delta_df=None if data.get("delta_df") is None else int(data["delta_df"]),
                   within_pairs=int(data.get("within_pairs", 0)), cross_pairs=int(data.get("cross_pairs", 0)),
                   cross_diffs=int(data.get("cross_diffs", 0)), cross_sum_sq=float(data.get("cross_sum_sq", 0.0)),
                   cross_sum_h=float(data.get("cross_sum_h", 0.0)), set_aside=int(data.get("set_aside", 0)))


def calibrate(pairs: Sequence[tuple[Sequence[float], Sequence[float]]],
              cross_job: Sequence[bool] | None = None) -> Calibration | None:
    """Pool the within-arm variance of ln(value) over A/A pairs [(arm_a_runs, arm_b_runs), ...].

    `cross_job[k]` says pair k's arms ran in different jobs (default: all in one job). Runs more than
    max(5σ, 8%) from their arm's median are set aside (σ from a first pass without runs beyond 8%). Arms with
    fewer than two kept values add no degrees of freedom. Returns None when nothing could be pooled.
    """
    cross_job = list(cross_job) if cross_job is not None else [False] * len(pairs)
    logged = [(_logs(a), _logs(b)) for a, b in pairs]
    # First pass: σ over runs within 8% of their arm's median (a slow restart must not inflate the σ that
    # decides what is wild); second pass: the full max(5σ, 8%) rule with that σ.
    first = _pooled_sd([arm[~flag_runs(arm, 0.0)] for pair in logged for arm in pair if arm is not None])
    squares, df, groups, set_aside = 0.0, 0, 0, 0
    deltas: list[float] = []
    cross: list[tuple[float, float]] = []
    for (y_a, y_b), across in zip(logged, cross_job):
        means: list[float | None] = []
        sizes: list[int] = []
        for y in (y_a, y_b):
            if y is None or len(y) == 0:
                means.append(None)
                continue
            keep = y[~flag_runs(y, first if math.isfinite(first) else 0.0)]
            set_aside += len(y) - len(keep)
            if len(keep) >= 2:
                squares += float(((keep - keep.mean()) ** 2).sum())
                df += len(keep) - 1
                groups += 1
            means.append(float(keep.mean()))
            sizes.append(len(keep))
        if means[0] is not None and means[1] is not None:
            delta = means[1] - means[0]
            deltas.append(delta)
            if across:
                cross.append((delta, 1 / sizes[0] + 1 / sizes[1]))
    if df == 0:
        return None
    delta_sd = float(np.sqrt(np.mean(np.square(deltas)))) if len(deltas) >= 2 else None
    return Calibration(sigma=math.sqrt(squares / df), df=df, groups=groups, delta_sd=delta_sd,
                       delta_df=len(deltas) if delta_sd is not None else None,
                       within_pairs=sum(1 for c in cross_job if not c), cross_pairs=sum(1 for c in cross_job if c),
                       cross_diffs=len(cross), cross_sum_sq=float(sum(d * d for d, _ in cross)),
                       cross_sum_h=float(sum(h for _, h in cross)), set_aside=set_aside)


def _pooled_sd(arms: list[np.ndarray]) -> float:
    ss = sum(float(((y - y.mean()) ** 2).sum()) for y in arms if len(y) >= 2)
    df = sum(len(y) - 1 for y in arms if len(y) >= 2)
    return math.sqrt(ss / df) if df else math.nan


def ratio_policy(base_values: Sequence[float], cand_values: Sequence[float], *, higher_is_better: bool,
                 tolerance: float) -> tuple[float, bool]:
    """The maintainers' rule without calibration: throughput >= (1 − tol)×, latency/RTF <= (1 + tol)×.

    Returns (ratio of means candidate / baseline, whether the rule is broken).
    """
    ratio = float(np.mean(cand_values) / np.mean(base_values))
    breached = ratio < 1 - tolerance - 1e-12 if higher_is_better else ratio > 1 + tolerance + 1e-12
    return ratio, breached


def _logs(values: Sequence[float]) -> np.ndarray | None:
    array = np.asarray([v for v in values if v is not None], dtype=float)
    if (array <= 0).any() or not np.isfinite(array).all():
        return None
    return np.log(array)
