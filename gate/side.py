"""One side of a comparison, as the verdict sees it: per workload the per-run metric values, coverage,
per-utterance error arrays, and the fingerprint. A result tree (gate.baseline.side_from_tree) and a
baseline file (gate.baseline.read_baseline) both become a Side; `gate.compare` judges two of them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from gate.comparability import Fingerprint
from gate.result_types import Problem
from gate.stats.overdispersion import Dispersion
from gate.stats.performance import Calibration


@dataclass(frozen=True, eq=False)
class MeasureSamples:
    """One error measure of one workload on one side: ids once, errors per run (rows) and utterance (columns)."""

    measure: str
    ids: tuple[str, ...]
    ref_len: np.ndarray  # (N,) int
    errors: np.ndarray  # (R, N) int
    valid: np.ndarray  # (R, N) bool
    texts: Mapping[str, tuple[str, str]] = field(default_factory=dict)  # id -> (reference, hypothesis)


@dataclass(frozen=True)
class WorkloadSide:
    workload_id: str
    runs: tuple[str, ...]
    values: Mapping[str, tuple[float | None, ...]]  # metric -> one value per run
    complete: bool
    problems: tuple[Problem, ...]  # why not complete
    samples: Mapping[str, MeasureSamples]  # measure -> arrays (only usable ones)
    sample_notes: tuple[str, ...] = ()  # why a measure has no usable per-sample data
    evaluated: tuple[int | None, ...] = ()  # samples evaluated, per run
    # per run present: whether that run is complete (readable, evaluated = total, nothing skipped or failed)
    run_complete: tuple[bool, ...] = ()
    expected_runs: int = 0  # scored runs the side should have (a missing run is not in `runs`)

    def complete_runs(self) -> tuple[int, ...]:
        """Indices (into `runs`) of the runs whose values may be averaged."""
        if self.run_complete:
            return tuple(i for i, ok in enumerate(self.run_complete) if ok)
        return tuple(range(len(self.runs))) if self.complete else ()


@dataclass(frozen=True)
class Side:
    kind: str  # "tree" or "baseline"
    path: str
    suite: str
    commit: str | None
    runs: tuple[str, ...]
    workloads: Mapping[str, WorkloadSide]
    missing: tuple[str, ...]  # suite workloads (of the selected models) with no result at all
    fingerprint: Fingerprint
    # workload -> speed metric -> Calibration, accuracy metric -> Dispersion (gate baseline calibrate)
    calibration: Mapping[str, Mapping[str, Calibration | Dispersion]] = field(default_factory=dict)

    @property
    def models(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(w.split("/", 1)[0] for w in self.workloads))
