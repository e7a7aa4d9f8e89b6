"""Trends of the history: per-metric detector settings, nightly series, change points, noise.

Speed metrics are analysed on ln(value) (a step is a ratio), accuracy metrics as they are (a step is
percentage points). A change smaller than the verdict's floor is never reported: the tracking issue
is for changes a PR would have failed for, not for 1% drifts that happen to look significant.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from gate.formats.config import MetricSpec, Suite, Workload
from gate.history.changepoints import Detector, detect
from gate.history.records import ChangePoint, Record
from gate.history.store import History, mean_of_runs
from gate.stats.thresholds import Thresholds

VERDICT_FLOORS = Thresholds()  # the floors a PR is judged by: a step smaller than them is never reported


def tracked(metric: MetricSpec) -> bool:
    """Metrics whose history is analysed for change points (the gated ones)."""
    return metric.kind in ("speed", "accuracy")


def speed_floor(metric: MetricSpec) -> float:
    """A speed metric's floor, as the verdict reads it (the suite requires one for every speed metric)."""
    return metric.floor_rel or 0.0


def detector_for(metric: MetricSpec, workload: Workload) -> tuple[Detector, bool]:
    """(detector, analyse on log scale) for one workload × metric: its magnitude is the verdict's floor."""
    if metric.kind == "speed":
        return Detector(magnitude=math.log1p(speed_floor(metric))), True
    small = workload.expected_samples <= VERDICT_FLOORS.small_set_size
    return Detector(magnitude=VERDICT_FLOORS.small_set_floor_abs if small else VERDICT_FLOORS.quality_floor_abs), False


# --- series and change points of a history ---------------------------------------------------------

LOOKBACK = 90  # nights re-analysed by default: a nightly only needs the recent window


@dataclass(frozen=True)
class Night:
    time: str
    commit: str | None
    value: float | None  # the night's value: geometric mean of runs (speed), mean (accuracy)
    runs: tuple[float | None, ...]
    verdict: str | None
    complete: bool


@dataclass(frozen=True)
class Trend:
    workload: str
    metric: MetricSpec
    nights: tuple[Night, ...]
    change_points: tuple[ChangePoint, ...]

    def values(self) -> list[float | None]:
        return [n.value for n in self.nights]


def nights_of(records: Sequence[Record], metric: str, *, log: bool) -> tuple[Night, ...]:
    out = []
    for r in records:
        runs = r.values.get(metric)
        if runs is None:
            continue
        out.append(Night(time=r.time, commit=r.commit, value=mean_of_runs(runs, log=log), runs=runs,
                         verdict=r.verdict, complete=r.complete))
    return tuple(out)


def trend(history: History, suite: Suite, workload_id: str, metric_name: str, *, runner_class: str | None = None,
          lookback: int = LOOKBACK) -> Trend:
    """The nightly series of one workload × metric (main only) and its change points in the last `lookback` nights."""
    workload = suite.workload(workload_id)
    metric = workload.metric(metric_name)
    detector, log = detector_for(metric, workload)
    nights = nights_of(history.select(workload=workload_id, kinds=("nightly",), runner_class=runner_class),
                       metric_name, log=log)
    offset = max(0, len(nights) - lookback)
    values = [math.nan if n.value is None or (log and n.value <= 0) else (math.log(n.value) if log else n.value)
              for n in nights[offset:]]
    points = []
    for split in detect(values, detector):
        first, reported = nights[offset + split.index], nights[offset + split.reported_at]
        previous = next((n for n in reversed(nights[:offset + split.index]) if n.value is not None), None)
        if log:
            before, after = math.exp(split.before), math.exp(split.after)
            change, ci = math.expm1(split.shift), (math.expm1(split.ci[0]), math.expm1(split.ci[1]))
        else:
            before, after, change, ci = split.before, split.after, split.shift, split.ci
        worse = change > 0 if metric.direction == "lower" else change < 0
        points.append(ChangePoint(workload=workload_id, metric=metric_name, unit=metric.unit, log=log, worse=worse,
                                  night=first.time, commit=first.commit,
                                  previous_commit=previous.commit if previous else None, reported=reported.time,
                                  before=before, after=after, change=change, ci=ci, p_value=split.p_value,
                                  gated=metric.gated))
    if history.change_points:  # found by earlier nights, whatever the window: they stay
        from gate.history.changes import combine

        stored = [cp for cp in history.change_points if (cp.workload, cp.metric) == (workload_id, metric_name)]
        points = combine(stored, points)
    return Trend(workload=workload_id, metric=metric, nights=nights, change_points=tuple(points))


def trends(history: History, suite: Suite, *, runner_class: str | None = None, lookback: int = LOOKBACK,
           workloads: Sequence[str] | None = None) -> list[Trend]:
    """Every tracked workload × metric present in the history, in suite order."""
    present = set(history.workloads())
    out = []
    for workload in suite.workloads:
        if workload.id not in present or (workloads and workload.id not in workloads):
            continue
        for metric in workload.metrics:
            if tracked(metric):
                found = trend(history, suite, workload.id, metric.name, runner_class=runner_class, lookback=lookback)
                if found.nights:
                    out.append(found)
    return out


def last_nights(history_dir: str | Path, workload_id: str, metric_name: str, n: int = 14, *,
                runner_class: str | None = None, suite: Suite | None = None) -> list[Night]:
    """The last `n` nightly values of one workload × metric (for the PR comment's trend)."""
    from gate.formats.config import load_suite
    from gate.history.store import HistoryStore

    suite = suite or load_suite()
    workload = suite.workload(workload_id)
    _, log = detector_for(workload.metric(metric_name), workload)
    history = HistoryStore(history_dir).read(runner_class=runner_class)
    records = history.select(workload=workload_id, kinds=("nightly",), runner_class=runner_class)
    return list(nights_of(records, metric_name, log=log)[-n:])


# --- noise between change points ---------------------------------------------------------------------

@dataclass(frozen=True)
class Noise:
    workload: str
    metric: str
    log: bool  # sigmas are of ln(value) (relative) when True, else absolute
    nights: int  # nights since the last change point that were used
    run_sigma: float | None  # pooled within-night SD over runs
    run_df: int
    night_sigma: float | None  # SD of the night level beyond what run noise explains
    since: str | None  # first night used


def noise(trend_: Trend, *, kinds_note: str = "") -> Noise:
    """Run-to-run and night-to-night σ over the nights since the last change point (trusted nightly records)."""
    start = 0
    if trend_.change_points:
        first = trend_.change_points[-1].night
        start = next((i for i, n in enumerate(trend_.nights) if n.time >= first), len(trend_.nights))
    nights = trend_.nights[start:]
    log = trend_.metric.kind == "speed"
    squares, df, means, runs_per_night = 0.0, 0, [], []
    for night in nights:
        runs = [v for v in night.runs if v is not None and (v > 0 or not log)]
        if len(runs) < 1:
            continue
        xs = np.log(runs) if log else np.asarray(runs, dtype=float)
        squares += float(((xs - xs.mean()) ** 2).sum())
        df += len(xs) - 1
        means.append(float(xs.mean()))
        runs_per_night.append(len(xs))
    run_sigma = math.sqrt(squares / df) if df > 0 else None
    night_sigma = None
    if len(means) >= 3:
        between = float(np.var(means, ddof=1)) - (run_sigma**2 / float(np.mean(runs_per_night)) if run_sigma else 0.0)
        night_sigma = math.sqrt(max(between, 0.0))
    return Noise(workload=trend_.workload, metric=trend_.metric.name, log=log, nights=len(means), run_sigma=run_sigma,
                 run_df=df, night_sigma=night_sigma, since=nights[0].time if nights else None)
