"""Peak memory of `gate summarize` on hostile inputs: a 500 MB per-sample JSONL, a link to /dev/zero, a
sparse 500 MB result JSON and a FIFO named like a result file (the strict reader must refuse each one
before reading it, so peak RSS stays that of a normal run and nothing hangs).

Each case is a fresh `gate summarize` process on a copy of a small example tree; its peak RSS is read
with getrusage(RUSAGE_CHILDREN) after it exits. Goal: every case within 1.5x of the undamaged tree.

Usage:  python benchmarks/bench_inputs_memory.py [--workdir DIR] [--jsonl-mb 500]
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "fuzz"))
from fuzzer import small_suite  # noqa: E402 - the fuzz suite's small copy of the packaged suite

RAW = "run1/qwen3/raw_en/conc32_rep1.jsonl"
RESULT = "run1/qwen3/asr_en.json"


def _peak_rss_mib(argv: list[str], timeout: float = 120) -> tuple[float, int, float]:
    """(peak RSS MiB, exit code, seconds) of one child process run alone."""
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        os.execvp(argv[0], argv)
    deadline = time.monotonic() + timeout
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            _, status, usage = os.wait4(pid, 0)
            return usage.ru_maxrss / 1024, -9, time.perf_counter() - start
        time.sleep(0.05)
    return usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status), time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--jsonl-mb", type=int, default=500)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="gate-mem-", dir=args.workdir))
    try:
        suite = small_suite(work / "small.yaml")
        gate = shutil.which("gate") or "gate"
        subprocess.run([gate, "example", str(work / "ex"), "--suite", str(suite)], check=True, capture_output=True)
        seed = work / "ex" / "candidate"
        cases = {}

        def case(name: str, damage) -> None:
            tree = work / name.replace(" ", "_").replace("/", "_")
            shutil.copytree(seed, tree)
            damage(tree)
            cases[name] = tree

        case("undamaged", lambda t: None)

        def big_jsonl(tree: Path) -> None:
            line = (tree / RAW).read_text(encoding="utf-8").splitlines()[0] + "\n"
            chunk = (line * max(1, (1 << 20) // len(line))).encode()
            with open(tree / RAW, "wb") as handle:
                for _ in range(args.jsonl_mb):
                    handle.write(chunk)

        case(f"{args.jsonl_mb} MB JSONL", big_jsonl)

        def zero(tree: Path) -> None:
            (tree / RESULT).unlink()
            (tree / RESULT).symlink_to("/dev/zero")

        case("link to /dev/zero", zero)
        case("sparse 500 MB JSON", lambda t: os.truncate(t / RESULT, 500 << 20))

        def fifo(tree: Path) -> None:
            (tree / RESULT).unlink()
            os.mkfifo(tree / RESULT)

        case("FIFO result file", fifo)
        print(f"gate summarize TREE --suite small.yaml   (peak RSS of the gate process; {sys.platform})")
        baseline_rss = None
        for name, tree in cases.items():
            rss, code, seconds = _peak_rss_mib([gate, "summarize", str(tree), "--suite", str(suite)])
            baseline_rss = baseline_rss or rss
            print(f"  {name:22} exit {code:>3}  {seconds:5.1f} s  peak RSS {rss:7.1f} MiB "
                  f"({rss / baseline_rss:.2f}x undamaged)")
        print(f"self peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB (this script)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
