"""`gate run` always cleans up (issue 12, item 5), against the stand-in server: leftovers of a SIGKILLed
gate are stopped by the next run, a signal never abandons a stop, a second signal KILLs at once,
escaped processes are reported, every model's coverage is reported, --resume redoes interrupted runs."""
from __future__ import annotations

import json
import signal
import time

import pytest

from gate.reading.results import read_tree
from tests.standin.procs import alive, escaped_children


def _wait_for(predicate, proc, timeout: float = 30, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if proc.poll() is not None:
            raise AssertionError(f"gate run exited ({proc.returncode}) before {what}:\n{proc.stderr.read()}")
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _log_has_running(bench, step: str):
    def check() -> bool:
        try:
            log = bench.run_log()
        except (OSError, ValueError):
            return False
        return any(s["step"] == step and s["status"] == "running" for s in log["steps"])
    return check


@pytest.mark.slow  # two `gate run` processes
def test_kill_9_mid_client_then_the_next_run_stops_the_old_client_and_server_first(bench):
    bench.knobs({"client": {"delay_s": 8, "on_call": 1}})  # the first client sleeps 8 s, then would write
    proc = bench.start("--models", "qwen3", "--runs", "1")
    client_log = bench.out / "main" / "run1" / "qwen3" / "asr_en.client.log"
    _wait_for(lambda: client_log.exists() and "delay_s" in client_log.read_text(), proc, what="the client")
    killed_at = time.monotonic()
    proc.kill()  # SIGKILL: no handler runs; only the process record survives
    proc.communicate()
    assert len(bench.leftovers()) >= 2, "the killed gate's server and client are still running"
    records = json.loads((bench.out / "gate-processes.json").read_text())["processes"]
    assert sorted(r["kind"] for r in records) == ["client", "server"]

    done = bench.run("--models", "qwen3", "--runs", "1")
    assert done.returncode == 0, done.stderr
    leftover = [line.split(": ")[-1].split(" (group ")[0] for line in done.stderr.splitlines()
                if "leftover process(es) of " in line]
    assert "client main/run1/qwen3/asr_en" in leftover and "server main/run1/qwen3" in leftover  # both, by name
    assert bench.leftovers() == []
    result = bench.out / "main" / "run1" / "qwen3" / "asr_en.json"
    before = (result.read_bytes(), result.stat().st_mtime_ns)
    time.sleep(max(0.0, 8.5 - (time.monotonic() - killed_at)))  # past the moment the old client would write
    assert (result.read_bytes(), result.stat().st_mtime_ns) == before, "the new run's tree is untouched"
    assert read_tree(bench.out / "main", bench.suite, models=("qwen3",)).complete("qwen3/asr_en")
    assert json.loads((bench.out / "gate-processes.json").read_text())["processes"] == []


def test_a_signal_during_a_stop_still_completes_the_stop(bench, tmp_path):
    from tests.standin.build import small_suite
    bench.suite_path = small_suite(tmp_path / "grace.yaml", startup_timeout_s=5, stop_grace_s=3, client_timeout_s=20)
    bench.knobs({"server": {"ignore_term": True}, "client": {"exit_code": 7}})  # the run fails; the stop takes 3 s
    proc = bench.start("--models", "qwen3", "--runs", "1")
    _wait_for(_log_has_running(bench, "server-stop"), proc, what="the server stop")
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "finishing the stop" in err and "in progress" in err
    stop = [s for s in bench.run_log()["steps"] if s["step"] == "server-stop"]
    assert stop[0]["message"] == "SIGKILL after 3 s grace" and stop[0]["status"] == "ok"
    assert bench.run_log()["status"] == "interrupted"
    assert bench.leftovers() == []


def test_a_second_signal_kills_at_once(bench, tmp_path):
    from tests.standin.build import small_suite
    bench.suite_path = small_suite(tmp_path / "long.yaml", startup_timeout_s=5, stop_grace_s=60, client_timeout_s=60)
    bench.knobs({"server": {"ignore_term": True}, "client": {"hang": True}})
    proc = bench.start("--models", "qwen3", "--runs", "1")
    client_log = bench.out / "main" / "run1" / "qwen3" / "asr_en.client.log"
    _wait_for(lambda: client_log.exists() and "hang" in client_log.read_text(), proc, what="the client")
    proc.send_signal(signal.SIGTERM)
    _wait_for(_log_has_running(bench, "server-stop"), proc, what="the server stop")
    second = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert time.monotonic() - second < 10, "did not wait out the 60 s grace"
    assert proc.returncode == 143, err
    stop = [s for s in bench.run_log()["steps"] if s["step"] == "server-stop"]
    assert stop[0]["message"].endswith("(second signal: no grace)")
    assert "<name>" not in err and str(bench.out / "main" / "gate-run.json") in err
    assert bench.leftovers() == []


def _escaped_child_reported_and_killed(bench):
    """Run qwen3 once; the worker its stand-in server left behind must be named on stderr and be dead."""
    done = bench.run("--models", "qwen3", "--runs", "1")
    assert done.returncode == 0, done.stderr
    [child] = escaped_children(bench.out / "main" / "run1" / "qwen3" / "server.log")
    line = next(line for line in done.stderr.splitlines() if f"pid {child}" in line)
    assert "escaped the server's" in line and "process group and its tag" in line
    assert not alive(child)


def test_a_process_that_escapes_group_and_tag_is_reported_and_killed(bench):
    bench.knobs({"server": {"leave_child": True, "child_clear_env": True}})
    _escaped_child_reported_and_killed(bench)
    steps = [s for s in bench.run_log()["steps"] if s["step"] == "escaped-processes"]
    assert len(steps) == 1 and steps[0]["status"] == "warning"


def test_an_escaped_process_is_found_when_the_server_exits_slowly_like_a_cuda_process(bench):
    """Found on the H200 (benchmarks/gpu_faults.py): a server's main thread exits at once while CUDA tears
    down in another thread; /proc shows "Z" but the process lives, and its escaped child is re-parented to
    the gate only at the end. The stop must wait for that, or the escaped child keeps its GPU memory."""
    bench.knobs({"server": {"leave_child": True, "child_clear_env": True, "exit_linger_s": 1.5}})
    _escaped_child_reported_and_killed(bench)


def test_every_models_coverage_is_reported_when_a_later_client_fails(bench):
    # qwen3's server fails every 4th request (coverage short); whisper's first client then exits 7
    bench.knobs({"server": {"fail_every": 4, "on_call": 1}, "client": {"exit_code": 7, "on_call": 3}})
    done = bench.run("--models", "qwen3,whisper", "--runs", "1")
    assert done.returncode == 3
    assert "whisper/asr_en: client exited" in done.stderr and "exited with status 7" in done.stderr
    assert "earlier in main/run1: " in done.stderr and ": coverage incomplete" in done.stderr
    assert "qwen3/asr_en" in done.stderr
    coverage = [s for s in bench.run_log()["steps"] if s["step"] == "coverage"]
    assert [(s["model"], s["status"]) for s in coverage] == [("qwen3", "incomplete")]


def test_resume_redoes_a_run_marked_interrupted_and_keeps_its_log(bench):
    assert bench.run("--models", "qwen3", "--runs", "1").returncode == 0
    path = bench.out / "main" / "gate-run.json"
    log = json.loads(path.read_text())
    log.update(status="interrupted", runs={"main/run1": "interrupted"})  # a signal after the clients finished
    path.write_text(json.dumps(log))
    done = bench.run("--models", "qwen3", "--runs", "1", "--resume")
    assert done.returncode == 0, done.stderr
    assert bench.run_log()["runs"] == {"main/run1": "completed"}
    kept = json.loads((bench.out / "main" / "attempts" / "gate-run.1.json").read_text())
    assert kept["status"] == "interrupted" and bench.run_log()["previous_attempt"] == "attempts/gate-run.1.json"


def test_the_no_gpu_lock_is_per_port(bench):
    from gate.runner.gpu import GpuLock
    other = GpuLock(bench.root / "locks", f"no-gpu-port{bench.port + 1}")
    other.acquire()
    try:
        done = bench.run("--models", "qwen3", "--runs", "1")
    finally:
        other.release()
    assert done.returncode == 0, done.stderr


def test_one_gate_per_out_dir(tmp_path):
    import pytest

    from gate.runner.ledger import Ledger, OutDirBusy
    first = Ledger(tmp_path)
    first.lock()
    try:
        with pytest.raises(OutDirBusy, match="another gate run is writing into this out dir"):
            Ledger(tmp_path).lock()
    finally:
        first.unlock()
    again = Ledger(tmp_path)
    again.lock()  # released: free again
    again.unlock()


def test_an_unreadable_process_record_is_reported_not_fatal(tmp_path):
    from gate.runner.ledger import Ledger
    (tmp_path / "gate-processes.json").write_text("{truncated")
    lines = Ledger(tmp_path).stop_leftovers(grace_s=0.1)
    assert len(lines) == 1 and "unreadable process record" in lines[0]
