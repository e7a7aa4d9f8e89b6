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


def find_outlier(arm: Mapping[str, Mapping[tuple[str, str], float]],
                 sigma: Callable[[str, str], float | None] = lambda w, m: None) -> Outlier | None:
    """The run of one arm farthest beyond the outlier rule on any speed row, or None. The rule is the one
    `compare` applies (gate.stats.outliers), so a run the runner keeps is never set aside by the judge."""
    import numpy as np

    from gate.stats.outliers import MIN_RUNS_TO_FLAG, flag_runs, outlier_limit

    if len(arm) < MIN_RUNS_TO_FLAG:
        return None
    worst: Outlier | None = None
    rows = set().union(*(values.keys() for values in arm.values()))
    for row in sorted(rows):
        runs = [run for run, values in arm.items() if row in values]
        if len(runs) < MIN_RUNS_TO_FLAG:
            continue
        logs = np.log([arm[run][row] for run in runs])
        s = sigma(*row) or 0.0
        threshold = float(outlier_limit(s))
        deviation = np.abs(np.expm1(logs - float(np.median(logs))))
        for run, flagged, far in zip(runs, flag_runs(logs, s), deviation, strict=True):
            if flagged and (worst is None or far - threshold > worst.deviation - worst.threshold):
                worst = Outlier(run, float(far), threshold, f"{row[0]} {row[1]}")
    return worst


def calibration_sigma(table: Mapping[str, Mapping[str, object]] | None) -> Callable[[str, str], float | None]:
    """The σ the outlier rule judges a run against per (workload, metric), from the A/A calibration of the baseline
    file given as --calibration (its Side's `calibration` table, which the caller loads; None: no file given): the
    upper bound of its sigma_run (SD of ln value) that compare uses too (gate.stats.outliers.flag_sigma); None
    where the baseline has no usable calibration."""
    if table is None:
        return lambda workload_id, metric: None
    from gate.stats.noise_model import Calibration
    from gate.stats.outliers import flag_sigma

    def sigma(workload_id: str, metric: str) -> float | None:
        entry = table.get(workload_id, {}).get(metric)
        if not (isinstance(entry, Calibration) and entry.usable):
            return None
        return float(flag_sigma(entry.sigma, entry.df))
    return sigma
