"""One side of a comparison, as the verdict sees it: per workload the per-run metric values, coverage,
per-utterance error arrays, and the fingerprint. A result tree (gate.reading.tree_side.side_from_tree) and a
baseline file (gate.reading.baseline_file.read_baseline) both become a Side; `gate.judging.compare` judges two of them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from gate.formats.noise_model import Calibration, Dispersion
from gate.formats.result_types import Attempts, Problem
from gate.reading.comparability import Fingerprint

# Whether one run's per-sample data reproduces its result file's corpus figure (gate.reading.samples checks it).
MATCH = "match"  # recomputed corpus figure equals the file's (to rounding)
MISMATCH = "mismatch"  # it does not: a normalization mismatch; the per-sample data is not used
UNAVAILABLE = "unavailable"  # no usable per-sample data for this run (absent, or invalid: see CrossCheck.invalid)


@dataclass(frozen=True)
class CrossCheck:
    status: str  # MATCH, MISMATCH or UNAVAILABLE
    recomputed: float | None
    reported: float | None
    message: str
    invalid: bool = False  # UNAVAILABLE because the per-sample file is malformed (bad input, not merely absent)
    path: str | None = None  # the per-sample file

    @property
    def usable(self) -> bool:
        return self.status == MATCH


@dataclass(frozen=True, eq=False)
class MeasureSamples:
    """One error measure (wer, cer or cp_cer) of one workload: ids once, errors per run (rows) and utterance
    (columns). The one per-utterance type: gate.reading.samples reads one run's files into one row (with its
    cross-check), gate.reading.tree_side stacks a side's runs, a baseline file stores the stack.

    `errors[r, i]` is S+D+I (characters for ZH and MOSS), `ref_len[i]` the reference length in the same
    units. Entries with `valid[r, i]` False (failed request, empty reference, invalid for cpCER) carry
    errors 0 and are excluded from the corpus figure.
    """

    measure: str
    ids: tuple[str, ...]
    ref_len: np.ndarray  # (N,) int
    errors: np.ndarray  # (R, N) int
    valid: np.ndarray  # (R, N) bool
    # id -> (reference, hypothesis), normalized, of the run with the most errors, for utterances with errors
    texts: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    # (R, N) int each, where the measure has them (not cpCER, not a baseline file)
    substitutions: np.ndarray | None = None
    deletions: np.ndarray | None = None
    insertions: np.ndarray | None = None
    checks: tuple[CrossCheck, ...] = ()  # per run, when read from result files

    @property
    def crosscheck(self) -> CrossCheck:
        """The cross-check of a measure read from one run's files."""
        if len(self.checks) != 1:
            raise ValueError(f"{self.measure}: {len(self.checks)} cross-checks; expected one run's")
        return self.checks[0]

    @property
    def corpus_rate(self) -> float | None:
        """Errors over reference units of the valid entries, all runs pooled; None when there are none."""
        total = int((self.ref_len * self.valid).sum())
        return None if total == 0 else float(self.errors[self.valid].sum()) / total


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
    # speed metric -> per run (as `runs`), its timed passes' values when the run had P > 1 passes in one server
    # start (gate.formats.result_types.WorkloadRun.passes), else (); empty for P = 1 and for baseline files
    passes: Mapping[str, tuple[tuple[float, ...], ...]] = field(default_factory=dict)
    # run -> the CI attempt (pytest-<N>) its result file was read from, and the failed ones before it; CI layout only
    attempts: Mapping[str, Attempts] = field(default_factory=dict)

    def complete_runs(self) -> tuple[int, ...]:
        """Indices (into `runs`) of the runs whose values may be averaged."""
        if self.run_complete:
            return tuple(i for i, ok in enumerate(self.run_complete) if ok)
        return tuple(range(len(self.runs))) if self.complete else ()


@dataclass(frozen=True)
class JobOrder:
    """Where a tree's scored runs sat in the job that made them, from its run log (gate.formats.runlog.server_starts):
    what a run's position in the drift terms is (gate.stats.drift) where a re-measure moved it from its slot."""

    job: str  # the run log's start: both trees of one A/B hold a copy of one log
    arm: int  # the tree's side: 0 the log's first side (A, the baseline), 1 its second (B)
    at: Mapping[str, Mapping[str, int]]  # model -> this side's run label -> its place among the model's server starts


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
    order: JobOrder | None = None  # a tree of `gate run --ab`: where its runs sat in the job (None: unknown)

    @property
    def models(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(w.split("/", 1)[0] for w in self.workloads))
