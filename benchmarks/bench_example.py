"""Time `gate example OUT` in a fresh process (goal: about 10 s or less on 2 cores), and the first
`gate compare OUT/baseline.json OUT/candidate` a newcomer runs after it.

`gate example` writes two result trees, stores one as OUT/baseline.json and calibrates it from
three synthetic A/A pairs (six more trees, removed afterwards): most of its time is writing files.

Usage:  python benchmarks/bench_example.py [--repeat 3] [--workdir DIR]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _timed(args: list[str], expect: int) -> float:
    start = time.perf_counter()
    done = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != expect:
        sys.exit(f"{' '.join(args)} exited {done.returncode}, expected {expect}: {done.stderr.strip()}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="bench-example-"))
    example, compare = [], []
    for i in range(args.repeat):
        out = workdir / f"out{i}"
        example.append(_timed(["gate", "example", str(out)], expect=0))
        # exit 1: the planted regression fails, as it should
        compare.append(_timed(["gate", "compare", str(out / "baseline.json"), str(out / "candidate")], expect=1))
    print(f"cores: {os.cpu_count()}  repeats: {args.repeat}  workdir: {workdir}")
    for name, values in (("gate example OUT", example), ("gate compare OUT/baseline.json OUT/candidate", compare)):
        print(f"{name:46s} median {statistics.median(values):.2f} s  (min {min(values):.2f}, max {max(values):.2f})")


if __name__ == "__main__":
    main()
