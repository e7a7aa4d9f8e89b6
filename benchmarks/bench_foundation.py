"""Time the foundation: example trees, reading a tree, the per-sample loader, `gate summarize`.

Goals (issue 2 brief, 2 cores): a full ten-workload tree with warm + 3 scored runs is written in
< 2 s; the per-sample loader handles 10 workloads x (3 + 3) runs well inside compare's 3 s budget.

Usage:  python benchmarks/bench_foundation.py [--repeat 3] [--workdir DIR]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gate.examples import ExampleSpec, write_example_pair, write_example_tree
from gate.formats.config import load_suite
from gate.reading.results import read_tree
from gate.reading.samples import read_run_samples
from gate.reading.side import MATCH


def _median_time(fn, repeat: int) -> str:
    """Median wall and CPU seconds: on a shared 2-core machine the CPU time is the steadier figure."""
    walls, cpus = [], []
    for _ in range(repeat):
        start, cpu = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu)
    return f"{statistics.median(walls):.2f} s wall, {statistics.median(cpus):.2f} s CPU"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3, help="timed repetitions (the median is reported)")
    parser.add_argument("--workdir", type=Path, default=None, help="write trees here (default: a temp dir)")
    args = parser.parse_args()
    suite = load_suite()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="bench-foundation-"))
    print(f"load average (1/5/15 min): {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    counter = iter(range(10_000))

    def fresh_tree() -> None:
        target = work / f"tree{next(counter)}"
        write_example_tree(target, suite, ExampleSpec())
        shutil.rmtree(target)

    def fresh_pair() -> None:
        target = work / f"pair{next(counter)}"
        write_example_pair(target, suite)
        shutil.rmtree(target)

    # A separate process measures the cold start too (imports and caches empty).
    cold = subprocess.run([sys.executable, "-c",
                           "import time, sys; from pathlib import Path; t=time.perf_counter();"
                           "from gate.formats.config import load_suite; from gate.examples import write_example_tree;"
                           "write_example_tree(Path(sys.argv[1]), load_suite()); print(time.perf_counter()-t)",
                           str(work / "cold")], capture_output=True, text=True, check=True)
    print(f"write_example_tree, fresh process (imports included): {float(cold.stdout):.2f} s")
    print(f"write_example_tree, 10 workloads x (warm + 3 runs):    {_median_time(fresh_tree, args.repeat)}")
    print(f"write_example_pair (two such trees):                   {_median_time(fresh_pair, args.repeat)}")

    base, cand = write_example_pair(work / "pair", suite)

    def load_both() -> None:
        for root in (base, cand):
            tree = read_tree(root, suite)
            for workload in suite.workloads:
                for run in tree.runs:
                    for errors in read_run_samples(run.path, workload).values():
                        assert errors.crosscheck.status == MATCH, errors.crosscheck.message

    print(f"read_tree + read_run_samples, 10 workloads x (3+3) runs: {_median_time(load_both, args.repeat)}")
    gate = [sys.executable, "-c", "from gate.cli import main; main()"]
    start = time.perf_counter()
    subprocess.run([*gate, "summarize", str(base)], capture_output=True, check=True)
    print(f"gate summarize (table, with per-sample cross-check), fresh process: {time.perf_counter() - start:.2f} s")
    start = time.perf_counter()
    subprocess.run([*gate, "summarize", str(base), "--format", "runbook"], capture_output=True, check=True)
    print(f"gate summarize --format runbook, fresh process: {time.perf_counter() - start:.2f} s")
    if args.workdir is None:
        shutil.rmtree(work)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
