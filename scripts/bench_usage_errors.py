"""CPU seconds of every command's --help, an unknown flag, a missing argument and a bad path (goal < 0.3 s).

Usage: python scripts/bench_usage_errors.py [--repeat N] [--gate PATH]
Each case runs N times in a fresh process; the median user+system CPU of the child is printed, with its
exit code. A case over the goal is marked; the exit status is 1 when any case is over it. Find what a slow
case imports with: python -X importtime -m gate.cli ARGS 2> importtime.txt
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys

GOAL_S = 0.3
MISSING = "no-such-path-for-the-bench"
CASES = [
    ("--help",), ("--version",),
    *[(command, "--help") for command in ("action", "baseline", "compare", "event", "example", "history", "merge",
                                          "post", "run", "summarize")],
    ("baseline", "create", "--help"), ("baseline", "calibrate", "--help"), ("history", "import", "--help"),
    ("compare", "--bogus", "a", "b"), ("compare",), ("compare", MISSING, MISSING),
    ("summarize", MISSING), ("summarize",), ("baseline", "create", MISSING, "--out", "x.json"),
    ("example",), ("run", "--bogus"), ("post", "--bogus"), ("merge",), ("event", "--bogus"), ("action",),
    ("history", "--history", MISSING),
]


def cpu_of(argv: list[str]) -> tuple[float, int]:
    before = os.times()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = os.times()
    return (after.children_user - before.children_user) + (after.children_system - before.children_system), done.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--gate", default=shutil.which("gate") or "gate")
    args = parser.parse_args()
    over = 0
    print(f"{'case':<48} {'CPU s':>6}  exit")
    for case in CASES:
        runs = [cpu_of([args.gate, *case]) for _ in range(args.repeat)]
        cpu = statistics.median(r[0] for r in runs)
        flag = "  OVER" if cpu >= GOAL_S else ""
        over += bool(flag)
        print(f"{'gate ' + ' '.join(case):<48} {cpu:6.2f}  {runs[0][1]}{flag}")
    print(f"{len(CASES)} cases, {over} at or over {GOAL_S} s CPU (python {sys.version.split()[0]})")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
