"""`gate run --ab --design duet` on the stand-in judges a 6% slower build FAIL and its A/A twin PASS (issue 53).
Apart from test_duet.py because it mostly waits on the stand-in's requests: in its own file (xdist --dist loadfile)
another worker's tests run beside it."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.helpers.duet_pairs import GATE, VERDICT_DELAY, judge_session, pair


@pytest.mark.slow
@pytest.mark.parametrize("slower, verdict", [(0.94, "fail"), (1.0, "pass")], ids=["6pct-slower", "aa-twin"])
def test_a_6pct_slower_build_fails_and_its_aa_twin_passes(bench, tmp_path, slower, verdict):
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
