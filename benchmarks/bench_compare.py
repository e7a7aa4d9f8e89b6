"""Time `gate compare` on the full ten-workload suite: wall and CPU, cold and warm, at 1x, 2x and 4x runs.

Goals (issue 16), on 2 idle cores, 3+3 runs (1x): baseline file vs tree <= 3 s wall cold; tree vs
tree <= 3 s warm and <= 6 s cold.

For each multiple k (scored runs 1..3k on each side, via a copy of the packaged suite whose `scored`
list is extended), it writes a synthetic baseline tree and candidate tree (gate.examples: every
workload, per-utterance data; the candidate has the example's planted regression), a baseline file
made from the baseline tree (calibrated once from a synthetic A/A pair), then times the whole command
in a fresh process (imports included), median of --repeat:

  file  cold   gate compare BASELINE.json CAND_TREE    with no cache beside CAND_TREE (it is written)
  file  warm   the same again, the cache in place
  tree  cold   gate compare BASE_TREE CAND_TREE        with no cache beside either tree
  tree  warm   the same again
  tree  off    the same with --no-cache (what the trusted job pays: scored every time, nothing written)

"cold" means no per-utterance cache; the files themselves are in the OS page cache after the first
read, as they are on a runner that just wrote them.

Usage:  python benchmarks/bench_compare.py [--repeat 3] [--multiples 1,2,4] [--workdir DIR]
"""
from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gate.examples import BASELINE_COMMIT, CANDIDATE_COMMIT, ExampleSpec, write_example_tree
from gate.formats.config import default_suite_path, load_suite
from gate.judging.calibration import calibration_from_pairs, with_calibration
from gate.reading.baseline_file import write_baseline
from gate.reading.sample_cache import CACHE_DIR
from gate.reading.tree_side import side_from_tree

GOALS = {("file", "cold"): 3.0, ("tree", "warm"): 3.0, ("tree", "cold"): 6.0}


def _suite_with_runs(work: Path, runs: int) -> Path:
    """The packaged suite with scored runs 1..runs (the rest unchanged)."""
    text = default_suite_path().read_text(encoding="utf-8")
    scored = ", ".join(f'"{r}"' for r in range(1, runs + 1))
    text, count = re.subn(r"(?m)^(\s*scored:\s*)\[[^]]*\]", lambda m: f"{m.group(1)}[{scored}]", text)
    if count != 1:
        raise SystemExit("bench_compare: cannot find the suite's `scored:` list")
    path = work / f"suite-{runs}runs.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _gate() -> list[str]:
    gate = Path(sys.executable).with_name("gate")
    return [str(gate)] if gate.exists() else [sys.executable, "-c", "from gate.cli import main; main()"]


def _run(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds user+system) of one `gate compare` process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1, 3, 4):
        raise SystemExit(f"gate compare failed ({proc.returncode}): {proc.stderr.strip()}")
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _clear(*trees: Path) -> None:
    for tree in trees:
        shutil.rmtree(tree / CACHE_DIR, ignore_errors=True)


def _median(samples: list[tuple[float, float]]) -> tuple[float, float]:
    return statistics.median(s[0] for s in samples), statistics.median(s[1] for s in samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3, help="timed repetitions per case (the median is reported)")
    parser.add_argument("--multiples", default="1,2,4", help="run-count multiples of 3 scored runs (default 1,2,4)")
    parser.add_argument("--workdir", type=Path, default=None, help="keep the trees here (default: a temp dir, removed)")
    args = parser.parse_args()
    multiples = [int(m) for m in args.multiples.split(",") if m.strip()]
    work = args.workdir or Path(tempfile.mkdtemp(prefix="bench-compare-"))
    work.mkdir(parents=True, exist_ok=True)
    gate = _gate()

    # One A/A calibration for all multiples: sigma is per workload x metric, whatever the run count.
    base_suite = load_suite()
    aa = [write_example_tree(work / f"aa{i}", base_suite, ExampleSpec(seed=100 + i, runs=("1", "2", "3")))
          for i in range(2)]
    no_samples = lambda run_dir, run, workload: {}  # noqa: E731 - calibration needs speed values only
    calibration = calibration_from_pairs([tuple(side_from_tree(t, base_suite, sample_reader=no_samples) for t in aa)],
                                         base_suite)
    for tree in aa:
        shutil.rmtree(tree)

    print(f"gate compare, full suite (10 workloads), {os.cpu_count()} CPUs, median of {args.repeat}; "
          "wall and CPU (user+system) seconds of a fresh process")
    print(f"{'runs':>7}  {'case':<11} {'wall':>7} {'CPU':>7}  goal")
    failed_goals = []
    for k in multiples:
        runs = 3 * k
        suite_path = _suite_with_runs(work, runs)
        suite = load_suite(suite_path)
        run_names = tuple(str(r) for r in range(1, runs + 1))
        root = work / f"x{k}"
        base_tree = write_example_tree(root / "baseline", suite, ExampleSpec(seed=0, commit=BASELINE_COMMIT, runs=run_names))
        cand_tree = write_example_tree(root / "candidate", suite, ExampleSpec(
            seed=1, commit=CANDIDATE_COMMIT, runs=run_names, speed_factor={"qwen3/asr_en": 0.94},
            extra_errors={"qwen3/asr_en": 40}))
        baseline_file = write_baseline(with_calibration(side_from_tree(base_tree, suite), calibration),
                                       root / "baseline.json")
        common = ["--suite", str(suite_path), "--json", str(root / "report.json"), "--format", "none"]

        def case(base: Path, *, cold: bool, extra: tuple[str, ...] = ()) -> tuple[float, float]:
            samples = []
            for _ in range(args.repeat):
                if cold:
                    _clear(base_tree, cand_tree)  # noqa: B023  # called before the loop moves on
                samples.append(_run([*gate, "compare", str(base), str(cand_tree), *common, *extra]))  # noqa: B023  # called before the loop moves on
            return _median(samples)

        results = {
            ("file", "cold"): case(baseline_file, cold=True),
            ("file", "warm"): case(baseline_file, cold=False),
            ("tree", "cold"): case(base_tree, cold=True),
            ("tree", "warm"): case(base_tree, cold=False),
            ("tree", "off"): case(base_tree, cold=False, extra=("--no-cache",)),
        }
        for (what, state), (wall, cpu) in results.items():
            goal = GOALS.get((what, state)) if k == 1 else None
            verdict = "" if goal is None else f"<= {goal:.0f} s {'met' if wall <= goal else 'MISSED'}"
            if goal is not None and wall > goal:
                failed_goals.append(f"{what} {state}")
            label = {"file": "file vs tree", "tree": "tree vs tree"}[what]
            print(f"{runs:>3}+{runs:<3}  {label + ' ' + state:<17} {wall:7.2f} {cpu:7.2f}  {verdict}")
        shutil.rmtree(root)
    print(f"load average now: {' '.join(f'{x:.1f}' for x in os.getloadavg())} (wall time grows with other load)")
    if args.workdir is None:
        shutil.rmtree(work, ignore_errors=True)
    if failed_goals:
        print(f"goals missed: {', '.join(failed_goals)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
