"""A base and a candidate stand-in build for `gate run --ab --design duet` (tests/e2e/run/test_duet*.py)."""
from __future__ import annotations

from tests.standin.build import SMALL_COUNTS, make_checkout

GATE = "import sys; from gate.cli import main; sys.argv = ['gate', *sys.argv[1:]]; main()"
DELAY = 0.3  # seconds a request: throughput is set by it
VERDICT_DELAY = 1.0  # for the verdicts: long enough that a loaded CI machine's jitter is small beside 6%


def pair(bench, tmp_path, slower: float = 1.0, cand_server: dict | None = None, delay: float = DELAY):
    bench.knobs({"server": {"request_delay_s": delay}})
    return make_checkout(tmp_path / "candidate", knobs={"counts": SMALL_COUNTS, "server": {
        "request_delay_s": delay / slower, **(cand_server or {})}})


def judge_session(bench):
    from gate.judging import judge
    return judge.judge(judge.Request(base=bench.out / "base", candidate=bench.out / "pr", suite=bench.suite))
