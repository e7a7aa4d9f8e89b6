"""Reading years of nights: HistoryStore.read, and the `gate history` analysis on top of it.

Writes YEARS × 365 synthetic nights of all 10 suite workloads (3 runs, every gated metric) into a
temporary history, then times, best of --repeat, in this process:
- read: HistoryStore(dir).read() (parse and validate every line);
- table: read + trends() over the default 90-night window (what `gate history` computes).

Run: python benchmarks/bench_history_read.py [--years 3] [--repeat 5] [--out benchmarks/results/history_read.json]
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from gate.formats.config import load_suite
from gate.history.analysis import trends
from gate.history.records import Record
from gate.history.store import HistoryStore


def write_history(root: Path, years: int) -> int:
    suite = load_suite()
    rng = np.random.default_rng(0)
    first = _dt.datetime(2024, 1, 1, 2, 0, tzinfo=_dt.timezone.utc)
    records = []
    for night in range(years * 365):
        when = (first + _dt.timedelta(days=night)).isoformat()
        for workload in suite.workloads:
            values = {m.name: tuple(float(v) for v in rng.uniform(0.5, 1.5, 3)) for m in workload.metrics
                      if m.kind in ("speed", "accuracy")}
            records.append(Record(time=when, kind="nightly", commit=f"{night:040x}", workload=workload.id,
                                  runs=("run1", "run2", "run3"), values=values, verdict="pass", env="e",
                                  runner_class="h100"))
    HistoryStore(root).append(records)
    return len(records)


def best_of(repeat: int, fn) -> dict:
    """Best wall and CPU seconds of `repeat` calls (CPU time: the figure a shared, loaded machine does not inflate)."""
    wall, cpu = [], []
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - w0)
        cpu.append(time.process_time() - c0)
    return {"wall_seconds": round(min(wall), 3), "cpu_seconds": round(min(cpu), 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--years", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "history_read.json")
    args = parser.parse_args()
    suite = load_suite()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "history"
        lines = write_history(root, args.years)
        size = sum(p.stat().st_size for p in root.rglob("*.jsonl"))
        read_s = best_of(args.repeat, lambda: HistoryStore(root).read())
        table_s = best_of(args.repeat, lambda: trends(HistoryStore(root).read(), suite))
    document = {"command": " ".join(["python", *sys.argv]), "years": args.years, "nights": args.years * 365,
                "lines": lines, "megabytes": round(size / 1e6, 2), "read": read_s,
                "read_and_analyse_90_nights": table_s, "python": platform.python_version(),
                "load_average_1min": round(os.getloadavg()[0], 1), "cpus": os.cpu_count()}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(document))


if __name__ == "__main__":
    main()
