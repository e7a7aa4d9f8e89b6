"""The smaller promises of issue 23 (item 5): what `gate run` says when all requests fail, when a signal comes
during preflight, when --out cannot be written, and what the ETA says before the second look is decided."""
from __future__ import annotations

import io

from gate.runner.cycle import stop_message
from gate.runner.progress import Progress


def test_all_requests_failed_is_said_so_not_as_a_schema_error(bench):
    bench.knobs({"server": {"fail_every": 1}})  # every transcription answers HTTP 500; the client still exits 0
    done = bench.run("--models", "qwen3", "--runs", "1")
    assert done.returncode == 3, done.stderr
    assert "every request failed (evaluated 0 of 6)" in done.stderr
    assert "mean is 0.0" not in done.stderr
    coverage = [s for s in bench.run_log()["steps"] if s["step"] == "coverage"]
    assert coverage[0]["status"] == "incomplete" and "every request failed" in coverage[0]["message"]


def test_a_signal_during_preflight_points_to_no_log(bench):
    prelude = ("import os, signal\nimport gate.runner.execute as ex\n_real = ex.run_preflight\n"
               "def _pre(*a, **k):\n    os.kill(os.getpid(), signal.SIGTERM)\n    return _real(*a, **k)\n"
               "ex.run_preflight = _pre\n")
    done = bench.run("--models", "qwen3", "--runs", "1", python_prelude=prelude)
    assert done.returncode == 143, done.stderr
    assert "interrupted by SIGTERM" in done.stderr and "before any run started" in done.stderr
    assert "gate-run.json" not in done.stderr
    assert not (bench.out / "main" / "gate-run.json").exists()


def test_an_out_dir_that_cannot_be_created_is_bad_input(bench, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    bench.out = blocker / "results"
    done = bench.run("--models", "qwen3", "--runs", "1")
    assert done.returncode == 2, done.stderr
    lines = [ln for ln in done.stderr.splitlines() if ln.startswith("gate: ")]
    [line] = lines  # one error line: the path, why (errno), what was expected
    assert line.startswith(f"gate: error: {bench.out}: ") and "(ENOTDIR: Not a directory)" in line, done.stderr
    assert "the out dir" in line and line.endswith("; expected a writable folder")


def test_the_eta_gives_the_second_look_too_until_it_is_decided():
    now = [0.0]
    stream = io.StringIO()
    progress = Progress(2, stream, clock=lambda: now[0])
    progress.remaining = ["whisper", "whisper"]
    progress.possible = ["whisper"] * 6
    now[0] = 60.0
    progress.cycle_done("whisper", 60.0)
    progress.say("x")
    eta = stream.getvalue().split("ETA ", 1)[1]  # this cycle's pace: 1 left now, 1 + 6 if extended
    assert eta.startswith("~1m00s, ~7m00s if the ") and eta.split("]")[0].endswith(" second look extends")
    progress.possible = []
    progress.say("y")
    assert stream.getvalue().splitlines()[-1].endswith("ETA ~1m00s] y")


def test_a_hurried_stop_says_how_long_it_took():
    hurried = stop_message("kill", 5.0, 1.73, hurried=True)
    assert hurried.startswith("SIGKILL after 1.7 s") and hurried.endswith("(second signal: no grace)")
    assert stop_message("kill", 5.0, 5.02, hurried=False) == "SIGKILL after 5 s grace"
    assert stop_message("term", 5.0, 0.2, hurried=False) == "stopped by SIGTERM"


def test_the_outlier_record_cites_the_runs_telemetry(tmp_path):
    import json

    from gate.runner.telemetry import summarize
    from gate.runner.twolooks import contention
    samples = [{"sm_clock_mhz": 1980, "throttle_reasons": [], "load1": 2.0, "cpu_jiffies": 1000, "steal_jiffies": 10},
               {"sm_clock_mhz": 1410, "throttle_reasons": ["sw_power_cap"], "load1": 9.5, "cpu_jiffies": 3000,
                "steal_jiffies": 110}]
    summary = summarize(samples, duration_s=2.0)
    assert summary["cpu_steal_share"] == 0.05 and summary["load1_max"] == 9.5
    (tmp_path / "telemetry.json").write_text(json.dumps({"summary": summary}))
    text = contention(tmp_path)
    assert "SM clock min 1410 MHz" in text and "host load1 max 9.5" in text and "CPU steal 5.0%" in text
    assert "sw_power_cap" in text
    assert contention(tmp_path / "missing") == ""


def test_host_samples_are_read_from_this_machine():
    from gate.runner.telemetry import host_sample
    sample = host_sample()
    assert sample["load1"] >= 0 and sample["cpu_jiffies"] > 0 and sample["steal_jiffies"] >= 0


def test_the_templates_load_from_a_source_checkout():
    """PYTHONPATH=<checkout> without an install: gate.templates is no package there; templates/ is found beside gate/."""
    import subprocess
    import sys
    from pathlib import Path
    repo = Path(__file__).resolve().parents[3]
    code = ("import sys\n"
            "sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in repr(f).lower()]\n"
            f"sys.path.insert(0, {str(repo)!r})\n"
            "import importlib.util\n"
            "assert importlib.util.find_spec('gate.templates') is None, 'an install maps gate.templates'\n"
            "from gate.render.renderer import environment\n"
            "print(environment().get_template('terminal.txt.j2').name)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd="/")
    assert done.returncode == 0 and done.stdout.strip() == "terminal.txt.j2", done.stderr


def test_a_run_from_a_source_checkout_names_its_version(monkeypatch):
    """PYTHONPATH=<checkout> without an install has no distribution metadata; the run log's gate_version
    (a required string) is then the package's own version, marked, instead of null (a WriterBug, exit 70)."""
    from importlib import metadata

    from gate import __version__
    from gate.formats import env, runlog

    def not_installed(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(env.metadata, "version", not_installed)
    assert env.gate_version() == f"{__version__}+source"
    doc = runlog.skeleton({"main": "/checkout"}, {"1": "pending"}, started="2026-12-03T00:00:00.000+00:00",
                          gate_version=env.gate_version())
    runlog.check_written(doc, whole=True)  # raises WriterBug where the writer and the reader disagree


def test_an_ab_of_one_checkout_is_refused(bench, tmp_path):
    """Issue 38: the same checkout twice (or two checkouts sharing one .venv) measures one build twice."""
    done = bench.run("--models", "qwen3", "--runs", "1", "--ab", str(bench.checkout), str(bench.checkout),
                     checkout=False)
    assert done.returncode == 2, done.stderr
    lines = [ln for ln in done.stderr.splitlines() if ln.startswith("gate: ")]
    assert len(lines) == 1 and lines[0].startswith("gate: error: --ab ") and "same checkout" in lines[0], done.stderr
    other = tmp_path / "other"
    other.mkdir()
    (other / ".venv").symlink_to(bench.checkout / ".venv")
    done = bench.run("--models", "qwen3", "--runs", "1", "--ab", str(bench.checkout), str(other), checkout=False)
    assert done.returncode == 2 and "share one .venv" in done.stderr, done.stderr


def test_a_checkout_that_is_not_a_git_repository_is_warned(bench):
    import shutil

    shutil.rmtree(bench.checkout / ".git")
    done = bench.run("--models", "qwen3", "--runs", "1")
    assert done.returncode == 0, done.stderr
    assert "warning: " in done.stderr and "not a git checkout" in done.stderr
    assert not (bench.out / "main" / "run1" / "commit.txt").exists()
