"""`gate run --ab --design duet` end to end on the stand-in (issue 53): two servers on two ports, blocks written as
runs, the session judged on its paired blocks, teardown under every signal, a discarded pair. The verdicts on a
6% slower build and its A/A twin are in test_duet_verdict.py and test_duet_aa_twin.py."""
from __future__ import annotations

import json
import signal
import time

import pytest

from gate.runner.duet import block_order, mem_fraction, session_runs, without_mem_option
from gate.runner.preflight import PreflightFailed
from tests.helpers.duet_pairs import judge_session, pair


def test_blocks_alternate_and_each_side_leads_as_often():
    assert block_order(1, 2) == ("A", "B", "B", "A") and block_order(2, 1) == ("B", "A")
    assert session_runs(3, 2) == ("5", "6")
    orders = [block_order(s, 1) for s in range(1, 7)]
    assert sum(o[0] == "A" for o in orders) == 3


def test_memory_split_is_sized_and_refused_in_one_line():
    assert mem_fraction(81559, 80000, 3500, model="whisper") == pytest.approx(0.45 * 80000 / 81559, abs=1e-3)
    with pytest.raises(PreflightFailed, match="both servers cannot fit"):
        mem_fraction(81559, 20000, 16000, model="qwen3")
    assert without_mem_option(("serve", "--mem-fraction-static", "0.8", "--port", "1")) == ("serve", "--port", "1")


@pytest.mark.slow
def test_a_block_whose_partner_failed_is_discarded_as_a_pair(bench, tmp_path):
    # the candidate's first server start answers every 2nd request with HTTP 500: session 1's pair is incomplete
    candidate = pair(bench, tmp_path, cand_server={"fail_every": 2, "on_call": 1})
    done = bench.run("--ab", str(bench.checkout), str(candidate), "--names", "base,pr", "--design", "duet",
                     "--sessions", "3,3", "--models", "qwen3", checkout=False, timeout=300)
    assert done.returncode == 0, done.stderr
    record = json.loads((bench.out / "pr" / "gate-duet.json").read_text())
    assert [s["discarded"] != [] for s in record["sessions"]] == [True, False, False]
    assert not (bench.out / "base" / "run1").exists() and (bench.out / "base" / "duet-discarded" / "session1-run1").is_dir()
    assert "base/run1" not in bench.run_log("base")["runs"]
    assert "pair run1 discarded" in done.stderr
    report = judge_session(bench)
    assert all(r.verdict.value != "incomplete" for r in report.rows)  # judged on the two kept sessions


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT],
                         ids=["INT", "TERM", "HUP", "QUIT"])
def test_a_signal_mid_session_stops_both_servers(bench, tmp_path, signum):
    candidate = pair(bench, tmp_path)
    proc = bench.start("--ab", str(bench.checkout), str(candidate), "--names", "base,pr", "--design", "duet",
                       "--sessions", "3,3", "--models", "qwen3", checkout=False)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # both servers up: the candidate's warm block has begun
        if (bench.out / "pr" / "runwarm" / "qwen3").is_dir() and any((bench.out / "pr").glob("runwarm/qwen3/*.log")):
            break
        time.sleep(0.05)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signum, err
    assert "server and clients stopped" in err
    assert bench.leftovers() == []
    stops = [s for s in bench.run_log("base")["steps"] if s["step"] == "server-stop"]
    assert len(stops) == 2, stops
    ledger = json.loads((bench.out / "gate-processes.json").read_text())
    assert ledger["processes"] == [], ledger


@pytest.mark.slow
def test_resume_keeps_the_completed_sessions_and_redoes_the_interrupted_one(bench, tmp_path):
    candidate = pair(bench, tmp_path)
    args = ("--ab", str(bench.checkout), str(candidate), "--names", "base,pr", "--design", "duet", "--sessions", "3,3",
            "--models", "qwen3")
    proc = bench.start(*args, checkout=False)
    record_path = bench.out / "pr" / "gate-duet.json"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:  # session 1 complete, session 2 begun
        try:
            sessions = json.loads(record_path.read_text())["sessions"]
        except (OSError, ValueError, KeyError):
            sessions = []
        if len(sessions) >= 2:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    done = bench.run(*args, "--resume", checkout=False, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "duet session 1: complete already" in done.stderr and "kept (--resume)" in done.stderr
    record = json.loads(record_path.read_text())
    assert [s["status"] for s in record["sessions"]] == ["completed"] * 3
    starts = [s for s in bench.run_log("base")["steps"] if s["step"] == "server-start"]
    assert len(starts) == 4  # sessions 2 and 3 only
    assert bench.run_log("base")["runs"]["base/run1"] == "skipped"


def test_the_dry_run_plans_both_designs_from_stored_components(bench, tmp_path):
    components = tmp_path / "components.json"
    components.write_text(json.dumps({"schema": "gate-components/1", "models": {"qwen3": {
        "sigma_start": 0.0157, "sigma_pass": 0.0266, "start_cost_s": 8.5, "pass_cost_s": 2.31,
        "duet": {"session_sd": 0.0092, "session_cost_s": 35.8}}}}))
    candidate = pair(bench, tmp_path)
    done = bench.run("--ab", str(bench.checkout), str(candidate), "--design", "duet", "--models", "qwen3", "--dry-run",
                     "--components", str(components), "--target-change", "3", checkout=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith("# --- duet: both builds' servers resident") for line in lines)
    budget = next(line for line in lines if line.startswith("#   today's budget"))
    assert "interleave 7 starts a side" in budget and "detects 6.7%" in budget and "detects 3.2%" in budget
    assert "#   variance at equal GPU minutes: the duet's 13.6× lower; design: duet" in lines
    assert not (bench.out / "base").exists()  # nothing ran
