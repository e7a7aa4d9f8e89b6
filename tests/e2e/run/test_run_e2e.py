"""`gate run` end to end on CPU (--no-gpu) against the stand-in sglang-omni: the tree it writes, every
fault knob, bad input, cancellation, resume, lock contention, A/B. Each test also checks (fixture
teardown) that no process the gate started is left running."""
from __future__ import annotations

import json
import signal
import time

import pytest

from gate.reading.results import read_tree
from gate.runner.gpu import GpuLock


def test_full_run_writes_the_runbook_tree(bench, tmp_path):
    hub = tmp_path / "hub"  # the HF cache records which commit of a private dataset was downloaded
    import shutil
    shutil.copytree(bench.hf_hub, hub)
    (hub / "datasets--zhaochenyang20--googletime" / "refs").mkdir(parents=True)
    (hub / "datasets--zhaochenyang20--googletime" / "refs" / "main").write_text("0123abc")
    bench.hf_hub = hub
    done = bench.run("--runs", "1")
    assert done.returncode == 0, done.stderr
    run1 = bench.out / "main" / "run1"
    tree = read_tree(bench.out / "main", bench.suite)
    assert tree.run_names == ("run1",) and not tree.missing_workloads
    assert all(tree.complete(w.id) for w in bench.suite.workloads)
    assert (run1 / "commit.txt").read_text().strip() == tree.runs[0].commit and len(tree.runs[0].commit) == 40
    assert any(line.startswith("pip==") or "==" in line for line in (run1 / "freeze.txt").read_text().splitlines())
    for model in ("qwen3", "whisper", "fun", "moss_td"):
        pid = (run1 / model / "server.pid").read_text().strip()
        assert pid.isdigit() and "[standin] listening" in (run1 / model / "server.log").read_text()
    assert (run1 / "qwen3" / "raw_en" / "conc32_rep1.jsonl").is_file()
    speed = json.loads((run1 / "moss_td/movies800times/transcribe_diarize_speed_results.json").read_text())
    assert speed["config"]["max_new_tokens"] is None and speed["config"]["request_timeout_s"] == 300
    env = json.loads((run1 / "env.json").read_text())
    assert env["schema_version"] == 1 and env["gpu"] is None and env["commit"] == tree.runs[0].commit
    assert env["models"]["moss_td"]["revision"] == bench.suite.models["moss_td"].revision
    seedtts = bench.suite.datasets["seedtts"]
    assert env["datasets"][seedtts.id]["revision"] == seedtts.revision and seedtts.revision.startswith("27f4c1ad")
    assert env["python"] and env["host"]["logical_cpus"]
    assert env["datasets"]["zhaochenyang20/googletime"]["cached_main_ref"] == "0123abc"  # from the fake hub
    telemetry = json.loads((run1 / "telemetry.json").read_text())
    assert telemetry["available"] is False and "no GPU" in telemetry["error"]
    log = bench.run_log()
    assert log["status"] == "completed" and log["exit_code"] == 0
    assert log["runs"] == {"main/run1": "completed"}
    kinds = [s["step"] for s in log["steps"] if s["run"] == "1"]
    assert kinds.count("server-start") == 4 and kinds.count("client") == 10 and kinds[-1] == "coverage"
    assert all(s["status"] in ("ok", "warning") and s["end"] for s in log["steps"])
    assert "ETA" in done.stderr and "main/run1 moss_td: client " in done.stderr  # progress names run, model, step


# (knobs, expected message in stderr) for faults that must fail run1 while keeping runwarm.
FAULTS = {
    "crash_at_start": ({"server": {"crash_at_start": True, "on_call": 2}}, "server died during start-up"),
    "crash_mid_run": ({"server": {"crash_after_requests": 3, "on_call": 2}}, "the server died while the client ran"),
    "never_healthy": ({"server": {"never_healthy": True, "on_call": 2}}, "server not healthy after 2 s"),
    "port_taken": ({"server": {"port_taken": True, "on_call": 2}}, "SGLANG_OMNI_STRICT_PORT=1 forbids falling back"),
    "partial_coverage": ({"server": {"fail_every": 4, "on_call": 2}}, "coverage incomplete"),
    "client_exit": ({"client": {"exit_code": 7, "on_call": 3}}, "client exited with status 7"),
    "client_no_file": ({"client": {"no_file": True, "on_call": 3}}, "client exited 0 but wrote no"),
}


@pytest.mark.slow  # a `gate run` process per fault
@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_fault_fails_clearly_and_keeps_earlier_runs(bench, fault):
    knobs, message = FAULTS[fault]
    bench.knobs(knobs)
    done = bench.run("--models", "qwen3", "--runs", "warm,1")
    assert done.returncode == 3, done.stderr
    assert message in done.stderr  # the gate's own traceback never shows (a server's, quoted from its log, may)
    assert not any(line.startswith("Traceback") for line in done.stderr.splitlines())
    assert done.stderr.count("gate: error:") == 1
    log = bench.run_log()
    assert log["status"] == "failed" and log["exit_code"] == 3
    assert log["runs"] == {"main/runwarm": "completed", "main/run1": "failed"}
    warm = bench.out / "main" / "runwarm" / "qwen3"
    assert (warm / "asr_en.json").is_file() and (warm / "asr_zh.json").is_file()
    stop = [s for s in log["steps"] if s["step"] == "server-stop" and s["run"] == "1"]
    assert len(stop) == 1 and stop[0]["status"] == "ok", "the server is stopped even when the run fails"


def test_slow_start_is_waited_for(bench):
    bench.knobs({"server": {"start_delay_s": 1.0}})
    done = bench.run("--models", "qwen3", "--runs", "1")
    assert done.returncode == 0, done.stderr
    ready = [s for s in bench.run_log()["steps"] if s["step"] == "server-ready"][0]
    assert ready["seconds"] >= 1.0


def test_child_left_behind_is_killed_and_the_run_completes(bench):
    bench.knobs({"server": {"leave_child": True}})
    done = bench.run("--models", "qwen3", "--runs", "1")
    assert done.returncode == 0, done.stderr
    stops = [s["message"] for s in bench.run_log()["steps"] if s["step"] == "server-stop"]
    assert stops == ["SIGKILL after 0.5 s grace"]
    from gate.runner.server import port_free
    assert port_free(bench.port), "the child held the listening socket until it was killed"


def test_client_timeout_stops_the_client_group(bench, tmp_path):
    from tests.standin.build import small_suite
    suite = small_suite(tmp_path / "short.yaml", startup_timeout_s=2, stop_grace_s=0.5, client_timeout_s=2)
    bench.suite_path = suite
    bench.knobs({"client": {"hang": True}})
    began = time.monotonic()
    done = bench.run("--models", "qwen3", "--runs", "1")
    assert done.returncode == 3 and "client timed out after 2 s" in done.stderr and "was stopped" in done.stderr
    assert time.monotonic() - began < 15


def test_busy_port_fails_before_any_run(bench):
    import socket
    with socket.socket() as s:
        s.bind(("0.0.0.0", bench.port))
        s.listen()
        done = bench.run("--models", "qwen3", "--runs", "1")
    assert done.returncode == 2 and f"port {bench.port} is in use" in done.stderr
    assert not (bench.out / "main" / "run1").exists()


def test_missing_snapshot_and_python_are_reported_together(bench, tmp_path):
    (bench.checkout / ".venv" / "bin" / "python").unlink()
    done = bench.run("--models", "whisper", "--runs", "1", "--hf-hub", str(tmp_path / "empty-hub"))
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert "preflight: checkout" in lines[0] and lines[0].endswith(", snapshots, GPU")  # said first
    assert lines[1].startswith("gate: error: ") and lines[1].endswith(" preflight failed:")  # then every problem
    assert any(".venv/bin/python: missing" in line and "not executable" in line for line in lines)
    whisper = bench.suite.models["whisper"].model_id
    assert any("config.json: missing; " in line and f"the {whisper} snapshot" in line for line in lines)
    assert not bench.out.exists() or not any(bench.out.rglob("run*"))


def test_dataset_that_does_not_load_offline(bench):
    bench.knobs({"dataset_errors": {"googletime": "Couldn't reach the Hub (offline mode)"}, "counts": {"movies800times": 9}})
    done = bench.run("--models", "moss_td", "--runs", "1")
    assert done.returncode == 2, done.stderr
    googletime, movies = (bench.suite.datasets[k].id for k in ("googletime", "movies800times"))
    assert f"dataset {googletime} does not load offline: " in done.stderr and ": ConnectionError: " in done.stderr
    assert f"dataset {movies} has 9 samples, expected 4" in done.stderr


def test_venv_that_does_not_match_the_pins_is_a_preflight_problem(bench):
    pins = "transformers==5.12.1 expected, found 5.0.0"
    bench.knobs({"venv_pins_error": pins})
    done = bench.run("--models", "qwen3", "--runs", "1")
    assert done.returncode == 2
    assert f"--skip-venv-check): ERROR: {pins}" in done.stderr  # pip's own words, and the way past them
    assert "the checkout's pins" in done.stderr and "runbook Step 2" in done.stderr
    assert bench.run("--models", "qwen3", "--runs", "1", "--skip-venv-check").returncode == 0


def test_cancellation_stops_everything_and_keeps_completed_runs(bench):
    bench.knobs({"client": {"hang": True, "on_call": 3}})  # run1's first client hangs: cancel it there
    proc = bench.start("--models", "qwen3", "--runs", "warm,1")
    client_log = bench.out / "main" / "run1" / "qwen3" / "asr_en.client.log"
    deadline = time.monotonic() + 30
    while not (client_log.exists() and "hang" in client_log.read_text()):
        assert time.monotonic() < deadline and proc.poll() is None, proc.stderr.read() if proc.poll() is not None else ""
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 130 and "interrupted by SIGINT" in err
    log = bench.run_log()
    assert log["status"] == "interrupted" and log["runs"] == {"main/runwarm": "completed", "main/run1": "interrupted"}
    assert (bench.out / "main" / "runwarm" / "qwen3" / "asr_zh.json").is_file()
    # fixture teardown asserts that no server or client process survived


def test_sigterm_is_handled_like_sigint(bench):
    bench.knobs({"client": {"hang": True}})
    proc = bench.start("--models", "qwen3", "--runs", "1")
    client_log = bench.out / "main" / "run1" / "qwen3" / "asr_en.client.log"
    deadline = time.monotonic() + 30
    while not (client_log.exists() and "hang" in client_log.read_text()):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=20)
    assert proc.returncode == 143 and bench.run_log()["status"] == "interrupted"


@pytest.mark.slow  # two `gate run` processes
def test_resume_skips_complete_runs_and_redoes_incomplete_ones(bench):
    assert bench.run("--models", "qwen3", "--runs", "1,2").returncode == 0
    (bench.out / "main" / "run2" / "qwen3" / "asr_zh.json").unlink()
    marker = bench.out / "main" / "run2" / "stale-file"
    marker.write_text("from the cut-off run")
    done = bench.run("--models", "qwen3", "--runs", "1,2", "--resume")
    assert done.returncode == 0, done.stderr
    assert bench.run_log()["runs"] == {"main/run1": "skipped", "main/run2": "completed"}
    assert (bench.out / "main" / "run2" / "qwen3" / "asr_zh.json").is_file()
    assert not marker.exists(), "an incomplete run is redone whole"
    assert "skipped (already complete)" in done.stderr and ": main/run1" in done.stderr


def test_second_gate_on_the_same_gpu_fails_clearly(bench):
    lock = GpuLock(bench.root / "locks", f"no-gpu-port{bench.port}")
    lock.acquire()
    try:
        done = bench.run("--models", "qwen3", "--runs", "1", "--lock-wait", "0.3")
    finally:
        lock.release()
    assert done.returncode == 4 and "another gate run (pid" in done.stderr and "holds this GPU" in done.stderr
    assert not (bench.out / "main" / "run1").exists()


@pytest.mark.slow  # a two-checkout `gate run` process
def test_ab_interleaves_two_checkouts_into_two_trees(bench, tmp_path):
    from tests.standin.build import SMALL_COUNTS, make_checkout
    candidate = make_checkout(tmp_path / "candidate", knobs={"counts": SMALL_COUNTS})
    done = bench.run("--ab", str(bench.checkout), str(candidate), "--names", "base,pr", "--models", "qwen3",
                     "--runs", "1,2", checkout=False)
    assert done.returncode == 0, done.stderr
    log = json.loads((bench.out / "base" / "gate-run.json").read_text())
    assert log == json.loads((bench.out / "pr" / "gate-run.json").read_text())
    order = list(dict.fromkeys(f"{s['side']}/run{s['run']}" for s in log["steps"] if s["step"] == "server-start"))
    assert order == ["base/run1", "pr/run1", "pr/run2", "base/run2"]
    for name, checkout in (("base", bench.checkout), ("pr", candidate)):
        env = json.loads((bench.out / name / "run1" / "env.json").read_text())
        assert env["checkout"] == str(checkout)
        assert read_tree(bench.out / name, bench.suite, models=("qwen3",)).complete("qwen3/asr_en")


_BLOCK_HEAVY = (
    "import sys, importlib.abc\n"
    "class _Block(importlib.abc.MetaPathFinder):\n"
    "    def find_spec(self, name, path, target=None):\n"
    "        if name.split('.')[0] in ('jiwer', 'datasets', 'github', 'matplotlib', 'scipy', 'numpy'):\n"
    "            raise ImportError('blocked: ' + name)\n"
    "sys.meta_path.insert(0, _Block())\n"
)


def test_gate_run_needs_none_of_the_heavy_libraries(bench):
    """The GPU machine has no jiwer/datasets/PyGithub: `gate run` must not import them."""
    done = bench.run("--models", "qwen3", "--runs", "1", python_prelude=_BLOCK_HEAVY)
    assert done.returncode == 0, done.stderr


def test_gate_cli_imports_without_the_heavy_libraries(bench):
    import subprocess
    import sys
    probe = _BLOCK_HEAVY + "import gate.cli\nimport gate.commands.run\n"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=bench.env())
    assert done.returncode == 0, done.stderr[-800:]


@pytest.mark.gpu
def test_gate_run_on_the_real_gpu_frees_memory_held_by_a_left_behind_child(bench):
    """On the GPU machine: the stand-in server and a child it leaves behind (ignoring SIGTERM) each hold
    2 GiB; the group kill must release all of it, the GPU-free wait must see that, telemetry must record it."""
    try:
        from gate.runner.gpu import NvmlGpu
        gpu = NvmlGpu()
    except Exception as exc:
        pytest.skip(f"no NVIDIA GPU/pynvml here: {exc}")
    pytest.importorskip("torch")
    from tests.standin.build import small_suite
    bench.suite_path = small_suite(bench.root / "gpu.yaml", startup_timeout_s=120, stop_grace_s=0.5,
                                   client_timeout_s=120)  # torch + CUDA start-up in the stand-in takes seconds
    bench.knobs({"server": {"gpu_mib": 2048, "leave_child": True}})
    before = gpu.memory_used_mib(0)
    bench.no_gpu = False
    done = bench.run("--models", "qwen3", "--runs", "1", timeout=300)
    assert done.returncode == 0, done.stderr
    steps = bench.run_log()["steps"]
    assert [s["message"] for s in steps if s["step"] == "server-stop"] == ["SIGKILL after 0.5 s grace"]
    run1 = bench.out / "main" / "run1"
    telemetry = json.loads((run1 / "telemetry.json").read_text())
    assert telemetry["available"] and telemetry["summary"]["samples"] >= 1
    assert "[standin] holding 2048 MiB" in (run1 / "qwen3" / "server.log").read_text()
    assert gpu.memory_used_mib(0) < before + 1024, "the group kill released the GPU memory"
    env = json.loads((run1 / "env.json").read_text())
    assert env["gpu"]["uuid"].startswith("GPU-") and env["gpu"]["memory_total_mib"] > 0
