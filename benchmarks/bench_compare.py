"""Time `gate compare` on a full ten-workload suite with 3+3 scored runs (issue 3, goal: <= 3 s on 2 cores).

Writes a synthetic baseline and candidate tree (gate.examples; every workload, per-utterance data),
a calibrated baseline file made from the baseline tree, then times, at the shipped resample counts:

  1. the whole command in a fresh process:  gate compare BASE_TREE CAND_TREE --json ... (tree vs tree)
  2. the same with the baseline FILE as BASE (the PR case: stored baseline vs fresh candidate tree)
  3. in process, the parts: loading both sides, compare(), rendering comment + terminal.

Usage:  python benchmarks/bench_compare.py [--repeat 5] [--workdir DIR]
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gate.baseline import calibration_from_pairs, side_from_tree, with_calibration, write_baseline
from gate.compare import Thresholds, compare
from gate.sides import load_side
from gate.config import load_suite
from gate.examples import ExampleSpec, write_example_pair, write_example_tree
from gate.render import render_comment, render_terminal


def _timed(fn, repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5, help="timed repetitions (the median is reported)")
    parser.add_argument("--workdir", type=Path, default=None, help="keep the trees here (default: a temp dir)")
    args = parser.parse_args()
    suite = load_suite()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="bench-compare-"))
    base_tree, cand_tree = write_example_pair(work / "pair", suite)
    aa = [write_example_tree(work / f"aa{i}", suite, ExampleSpec(seed=100 + i)) for i in range(4)]
    no_samples = lambda run_dir, workload: {}  # noqa: E731 - calibration needs speed values only
    pairs = [(side_from_tree(aa[i], suite, sample_reader=no_samples), side_from_tree(aa[i + 1], suite, sample_reader=no_samples))
             for i in (0, 2)]
    baseline_file = work / "baseline.json"
    write_baseline(with_calibration(side_from_tree(base_tree, suite), calibration_from_pairs(pairs, suite)), baseline_file)

    gate = [str(Path(sys.executable).with_name("gate"))]
    if not Path(gate[0]).exists():
        gate = [sys.executable, "-c", "from gate.cli import main; main()"]

    def run(base: Path) -> tuple[float, float]:
        """(wall seconds, CPU seconds user+system) of one `gate compare` process."""
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        proc = subprocess.run([*gate, "compare", str(base), str(cand_tree), "--json", str(work / "report.json"),
                               "--format", "none"], capture_output=True, text=True)
        elapsed = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if proc.returncode not in (0, 1, 3, 4):
            raise SystemExit(f"gate compare failed ({proc.returncode}): {proc.stderr.strip()}")
        return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)

    def median_run(base: Path) -> tuple[float, float]:
        samples = [run(base) for _ in range(args.repeat)]
        return statistics.median(s[0] for s in samples), statistics.median(s[1] for s in samples)

    tree_cli, tree_cpu = median_run(base_tree)
    file_cli, file_cpu = median_run(baseline_file)
    load_t, sides = _timed(lambda: (load_side(baseline_file, suite), load_side(cand_tree, suite)), args.repeat)
    compare_t, result = _timed(lambda: compare(*sides, suite), args.repeat)
    report = result
    render_t, _ = _timed(lambda: (render_comment(report), render_terminal(report)), args.repeat)
    load_tree_t, _ = _timed(lambda: load_side(cand_tree, suite), args.repeat)
    rows = len(report.rows)
    paired = report.statistics.quality_family_size
    print(f"gate compare, 10 workloads, 3+3 runs, {rows} rows ({paired} paired accuracy tests, "
          f"{Thresholds().n_boot} bootstrap resamples, exact sign-flip), {os.cpu_count()} CPUs, median of {args.repeat}:")
    print(f"  CLI, tree vs tree            {tree_cli:6.2f} s wall, {tree_cpu:.2f} s CPU (fresh process, imports included)")
    print(f"  CLI, baseline file vs tree   {file_cli:6.2f} s wall, {file_cpu:.2f} s CPU")
    print(f"  load average now: {' '.join(f'{x:.1f}' for x in os.getloadavg())} (wall time grows with other load)")
    print(f"  in process: load both sides  {load_t:6.2f} s   (of which one tree with per-sample recomputation: {load_tree_t:.2f} s)")
    print(f"  in process: compare()        {compare_t:6.2f} s")
    print(f"  in process: render           {render_t:6.2f} s")
    print(f"  verdict: {report.verdict.value}   trees under {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
