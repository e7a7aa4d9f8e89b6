"""A base and a candidate stand-in build for `gate run --ab --design duet` (tests/e2e/run/test_duet*.py)."""
from __future__ import annotations

import json
import subprocess
import sys

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


def judged_duet(bench, tmp_path, slower: float, verdict: str) -> None:
    """A duet A/B of 5 to 8 sessions of a candidate `slower` × the base's speed on the stand-in (qwen3): the
    sessions alternate who leads, each server starts with its memory share, the rows are judged per session and
    the report's verdict is `verdict`; the base's tree stays the runbook's."""
    candidate = pair(bench, tmp_path, slower, delay=VERDICT_DELAY)
    done = bench.run("--ab", str(bench.checkout), str(candidate), "--names", "base,pr", "--design", "duet",
                     "--sessions", "5,8", "--models", "qwen3", "--client-timeout", "60", checkout=False, timeout=600)
    assert done.returncode == 0, done.stderr
    record = json.loads((bench.out / "pr" / "gate-duet.json").read_text())
    assert record["design"] == "duet" and record["ports"] == {"base": bench.port, "pr": bench.port + 1}
    sessions = [s for s in record["sessions"] if s["status"] == "completed"]
    assert len(sessions) >= 4 and all(len(s["blocks"]) == 2 for s in sessions)
    assert [b["side"] for b in sessions[1]["blocks"]] == ["pr", "base"]  # even sessions lead with the candidate
    starts = [s for s in bench.run_log("base")["steps"] if s["step"] == "server-start"]
    assert len(starts) == 2 * len(sessions) and all("--mem-fraction-static" in s["command"] for s in starts)
    report = judge_session(bench)
    throughput = [r for r in report.rows if r.metric == "throughput_samples_per_s"]
    print([(r.workload, r.verdict.value, r.worse_rel, r.method) for r in throughput])
    assert all(r.method.startswith("duet:") for r in throughput)
    assert report.verdict.value == verdict, [(r.workload, r.metric, r.verdict, r.notes) for r in report.rows]
    assert "duet" in (report.looks[0].note or "")
    read = subprocess.run([sys.executable, "-c", GATE, "summarize", str(bench.out / "pr"), "--suite",
                           str(bench.suite_path), "--models", "qwen3"], capture_output=True, text=True, env=bench.env())
    assert read.returncode == 0 and "coverage: complete" in read.stdout, read.stderr  # the runbook's tree, unchanged
