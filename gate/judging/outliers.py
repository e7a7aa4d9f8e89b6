"""The runner's outlier rule, judged as `compare` judges (gate.stats.outliers): which run of an arm is far
enough from its arm's median to be re-measured once. The runner applies it between runs; the trusted boundary
(gate.publish.untrusted) checks a re-measure the uploaded tree holds by the same rule."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

from gate.formats.config import Suite
from gate.reading.result_files import read_workload_run


@dataclass(frozen=True)
class Outlier:
    run: str  # "run3"
    deviation: float  # relative distance from the arm's median
    threshold: float
    row: str  # "qwen3/asr_en throughput_samples_per_s"

    def describe(self) -> str:
        return (f"{self.run}: {self.row} is {self.deviation:.1%} from its arm's median "
                f"(rule: more than {self.threshold:.1%})")


def speed_values(run_dir: Path, suite: Suite, model: str) -> dict[tuple[str, str], float]:
    """The gated speed metrics of one model in one run directory: (workload id, metric) -> value."""
    found = {}
    for workload in suite.workloads_for((model,)):
        run = read_workload_run(run_dir, workload)
        for metric in workload.metrics:
            value = run.metrics.get(metric.name)
            if metric.kind == "speed" and isinstance(value, (int, float)) and value > 0:
                found[(workload.id, metric.name)] = float(value)
    return found


def speed_directions(suite: Suite, model: str) -> dict[tuple[str, str], bool]:
    """(workload id, metric) -> whether higher is better, for the model's speed metrics (what speed_values reads)."""
    return {(w.id, m.name): m.higher_is_better for w in suite.workloads_for((model,)) for m in w.metrics
            if m.kind == "speed"}


def find_outlier(arm: Mapping[str, Mapping[tuple[str, str], float]],
                 sigma: Callable[[str, str], float | None] = lambda w, m: None,
                 directions: Mapping[tuple[str, str], bool] | None = None) -> Outlier | None:
    """The run of one arm farthest beyond the outlier rule on any speed row, or None. The rule is the one
    `compare` applies (gate.stats.outliers), so a run the runner keeps is never set aside by the judge; the choice is
    gate.stats.outliers.run_to_remeasure, which the power benchmark runs on its simulated arms.

    Both arms alike (issue 36): a run flagged WORSE than its arm's median stays unless every workload of the model
    (two or more) is flagged worse in it, and while one stays nothing in the arm is re-measured: a slowdown of one
    workload may be an intermittent regression, which must not be re-measured away (the row is then unstable,
    WARN at least), and a baseline's slow run is kept as a candidate's is. A run worse in every workload is a slow
    server start, and a fresh start is the measurement. `directions`: (workload, metric) -> higher is better
    (`speed_directions`); without it, a metric named throughput* is higher-is-better, any other lower."""
    import numpy as np

    from gate.formats.noise_model import FEWEST_RUNS
    from gate.stats.outliers import outlier_limit, own_sigma, run_to_remeasure

    if len(arm) < FEWEST_RUNS:
        return None
    runs = list(arm)
    rows = sorted(set().union(*(values.keys() for values in arm.values())))
    with np.errstate(divide="ignore"):
        logs = np.array([[np.log(arm[run][row]) if row in arm[run] else np.nan for run in runs] for row in rows])
    metrics = np.array([r[1] for r in rows])
    sigmas = np.array([sigma(*row) or 0.0 for row in rows])
    sigmas = np.where(sigmas > 0, sigmas, own_sigma(logs, metrics))  # unknown: the arm's own, as run_to_remeasure says
    higher = np.array([directions[row] if directions is not None and row in directions else row[1].startswith("throughput")
                       for row in rows], dtype=bool)
    run, row = (int(i) for i in run_to_remeasure(logs, sigmas, higher, np.array([r[0] for r in rows]), metrics))
    if run < 0:
        return None
    present = logs[row][~np.isnan(logs[row])]
    deviation = abs(float(np.expm1(logs[row, run] - np.median(present))))
    return Outlier(runs[run], deviation, float(outlier_limit(sigmas[row])), f"{rows[row][0]} {rows[row][1]}")


@dataclass(frozen=True)
class SlowStart:
    run: str  # "run3"
    depth: float  # relative: how much worse than the other arm's median, mean over the model's workloads

    def describe(self) -> str:
        return (f"{self.run}: a slow-mode server start, every workload of the model {self.depth:.1%} slower than "
                "the other arm's median (rule: more than max(3 sigma, 3%) in each)")


def slow_starts_to_remeasure(arms: Mapping[str, Mapping[str, Mapping[tuple[str, str], float]]], suite: Suite,
                             model: str) -> dict[str, SlowStart]:
    """{"base": {run: speed_values}, "candidate": ...} with as many runs in each arm -> the deepest slow-mode start
    of each arm (gate.stats.slowmode.remeasure_depth and deepest_slow_start, on each workload's gated throughput-like metric, after the
    job's position terms), both arms alike. Arms whose runs differ in number, or runs lacking a workload: none."""
    import numpy as np

    from gate.stats.drift import interleave_positions
    from gate.stats.slowmode import deepest_slow_start, remeasure_depth

    sides = ("base", "candidate")
    runs = [sorted(arms.get(side, {}), key=lambda r: int(r[3:])) for side in sides]
    if len(runs[0]) != len(runs[1]) or len(runs[0]) < 2:
        return {}
    rows = []
    for workload in suite.workloads_for((model,)):
        metric = next((m.name for m in workload.metrics if m.kind == "speed" and m.gated and m.higher_is_better), None)
        if metric is not None:
            rows.append((workload.id, metric))
    values = np.full((2 * len(rows), len(runs[0])), np.nan)
    positions = np.zeros(values.shape)
    for k, row in enumerate(rows):
        for a, side in enumerate(sides):
            for i, run in enumerate(runs[a]):
                value = arms[side][run].get(row)
                if value is not None and value > 0:
                    values[2 * k + a, i] = np.log(value)
            index = np.asarray([int(run[3:]) - 1 for run in runs[a]])
            positions[2 * k + a] = interleave_positions(int(index.max()) + 1, a)[index]
    if np.isnan(values).any():
        return {}
    depth = remeasure_depth(values, positions, higher_is_better=True)
    out = {}
    for a, (side, i) in enumerate(zip(sides, deepest_slow_start(depth).tolist(), strict=True)):
        if i >= 0:
            out[side] = SlowStart(runs[a][i], float(np.expm1(depth[a][i])))
    return out


def calibration_sigma(table: Mapping[str, Mapping[str, object]] | None) -> Callable[[str, str], float | None]:
    """The σ the outlier rule judges a run against per (workload, metric), from the A/A calibration of the baseline
    file given as --calibration (its Side's `calibration` table, which the caller loads; None: no file given): the
    upper bound of its sigma_run (SD of ln value) that compare uses too (gate.stats.outliers.flag_sigma); None
    where the baseline has no usable calibration."""
    if table is None:
        return lambda workload_id, metric: None
    from gate.formats.noise_model import Calibration
    from gate.stats.outliers import flag_sigma

    def sigma(workload_id: str, metric: str) -> float | None:
        entry = table.get(workload_id, {}).get(metric)
        if not (isinstance(entry, Calibration) and entry.usable):
            return None
        return float(flag_sigma(entry.sigma, entry.df))
    return sigma
