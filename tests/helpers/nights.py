"""Synthetic nightly history records (numpy only): the history tests' shared builder."""
from __future__ import annotations

import datetime as _dt
import math

import numpy as np

from gate.history.records import Record

STEP_NIGHT = 24
NIGHTS = 36
FIRST = _dt.datetime(2026, 9, 1, 2, 0, tzinfo=_dt.timezone.utc)


def commit(i: int) -> str:
    return f"{i:040x}"


def synthetic_records(*, nights: int = NIGHTS, step_night: int = STEP_NIGHT, seed: int = 7,
                      runner_class: str = "h100", base: float = 98.0, first: _dt.datetime = FIRST) -> list[Record]:
    """qwen3/asr_en with 1% run and night noise; throughput -6% from `step_night` (latency +6%)."""
    rng = np.random.default_rng(seed)
    records = []
    for i in range(nights):
        level = rng.normal(0, 0.01) + (math.log(0.94) if i >= step_night else 0.0)
        runs = level + rng.normal(0, 0.01, 3)
        values = {"corpus_wer": tuple(float(v) for v in 0.0138 + rng.normal(0, 0.0002, 3)),
                  "throughput_samples_per_s": tuple(float(v) for v in base * np.exp(runs)),
                  "latency_mean_s": tuple(float(v) for v in 0.34 * np.exp(-runs))}
        records.append(Record(time=(first + _dt.timedelta(days=i)).isoformat(), kind="nightly", commit=commit(i),
                              workload="qwen3/asr_en", runs=("run1", "run2", "run3"), values=values,
                              verdict="pass", env="abc", complete=True, runner_class=runner_class))
    return records
