"""Turn a synthetic one-pass SeedTTS run (gate.examples) into P timed passes in one server start, as the client
writes them with --repeats P (docs/upstream.md §2.1, §2.2): per_repeat holds one record per pass, each stat dict
is {mean, min, max, n} over the passes, the counts are summed, and --save-raw-dir has conc32_rep1..repP."""
from __future__ import annotations

import json
import shutil
import statistics
from pathlib import Path
from typing import Sequence

from gate.formats.config import Workload

_SPEED_UP = ("throughput_samples_per_s", "rtfx")  # scale with a pass's speed factor
_SLOW_DOWN = ("wall_clock_s", "latency_mean_s", "latency_median_s", "latency_p95_s", "latency_p99_s", "rtf_mean",
              "rtf_p95")  # scale with its inverse


def as_passes(run_dir: Path, workload: Workload, factors: Sequence[float]) -> dict:
    """Rewrite `workload`'s file in `run_dir` as len(factors) passes, pass j's speed × factors[j] (WER unchanged);
    returns the new document."""
    path = Path(run_dir) / workload.path
    doc = json.loads(path.read_text(encoding="utf-8"))
    result = doc["results"][0]
    first = result["per_repeat"][0]
    records = []
    for j, factor in enumerate(factors):
        record = dict(first, repeat=j + 1)
        for key in _SPEED_UP:
            record[key] = first[key] * factor
        for key in _SLOW_DOWN:
            if record.get(key) is not None:
                record[key] = first[key] / factor
        records.append(record)
    p = len(factors)
    for key, value in list(result.items()):
        if isinstance(value, dict) and set(value) == {"mean", "min", "max", "n"}:
            values = [r[key] for r in records if r.get(key) is not None]
            result[key] = ({"mean": statistics.fmean(values), "min": min(values), "max": max(values), "n": len(values)}
                           if values else value)
    for key in ("evaluated", "total", "skipped"):
        result[key] = first[key] * p
    result["repeats"] = p
    result["per_repeat"] = records
    doc["config"]["repeats"] = p
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert workload.raw_dir is not None
    raw = Path(run_dir) / workload.raw_dir
    for j in range(2, p + 1):
        shutil.copy(raw / "conc32_rep1.jsonl", raw / f"conc32_rep{j}.jsonl")
    return doc
