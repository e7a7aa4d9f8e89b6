"""In-memory sides (numpy only, no files): the verdict tests' builders, shared with the history tests."""
from __future__ import annotations

import numpy as np

from gate.formats.result_types import MISSING_FILE, Problem
from gate.reading.comparability import Fingerprint
from gate.reading.side import MeasureSamples, Side, WorkloadSide


def memory_side(suite, *, values: dict[str, dict[str, list[float]]], samples: dict[str, dict[str, tuple]] | None = None,
                complete: dict[str, bool] | None = None, fingerprint: Fingerprint | None = None,
                calibration=None, label: str = "mem") -> Side:
    """A Side without files. values: workload -> metric -> per-run values; samples: workload -> measure ->
    (ids, ref_len, errors (R, N))."""
    workloads = {}
    for workload_id, metrics in values.items():
        runs = tuple(f"run{i + 1}" for i in range(len(next(iter(metrics.values())))))
        measures = {}
        for measure, (ids, ref_len, errors) in (samples or {}).get(workload_id, {}).items():
            errors = np.atleast_2d(np.asarray(errors, dtype=np.int64))
            measures[measure] = MeasureSamples(measure=measure, ids=tuple(ids), ref_len=np.asarray(ref_len, dtype=np.int64),
                                               errors=errors, valid=np.ones_like(errors, dtype=bool))
        ok = (complete or {}).get(workload_id, True)
        workloads[workload_id] = WorkloadSide(
            workload_id=workload_id, runs=runs, values={m: tuple(v) for m, v in metrics.items()}, complete=ok,
            problems=() if ok else (Problem(MISSING_FILE, "synthetic defect", run="run1"),), samples=measures,
            evaluated=tuple(suite.workload(workload_id).expected_samples for _ in runs))
    return Side(kind="tree", path=f"<{label}>", suite=suite.name, commit=label, runs=("run1", "run2", "run3"),
                workloads=workloads, missing=(), fingerprint=fingerprint or Fingerprint(), calibration=calibration or {})


def seedtts_values(rng: np.random.Generator, *, wer: float = 0.02, tput: float = 100.0, sigma: float = 0.01,
                   n_runs: int = 3, tput_factor: float = 1.0) -> dict[str, list[float]]:
    noise = lambda: np.exp(rng.normal(0, sigma, n_runs))  # noqa: E731
    return {
        "corpus_wer": [wer] * n_runs,
        "throughput_samples_per_s": list(tput * tput_factor * noise()),
        "latency_mean_s": list(0.3 * noise()),
        "latency_p95_s": list(0.5 * noise()),
        "rtf_mean": list(0.06 * noise()),
    }
