"""`gate run --resume` after a cut-off attempt (issue 51's traps): a torn earlier gate-run.json is an error, never
"no earlier attempt", and a run kept by --resume gets the stamp.json a kill right after its closing log write
left it without."""
from __future__ import annotations

import json

import pytest

from gate.formats.calibration_stamp import STAMP_NAME
from gate.formats.errors import EXIT_INPUT


@pytest.mark.slow  # two `gate run` processes
def test_a_torn_earlier_run_log_is_an_error_for_resume(bench):
    assert bench.run("--models", "qwen3", "--runs", "1").returncode == 0
    log = bench.out / "main" / "gate-run.json"
    torn = log.read_bytes()[: len(log.read_bytes()) // 2]  # a kill in the middle of a write the runner did not make
    log.write_bytes(torn)
    done = bench.run("--models", "qwen3", "--runs", "1", "--resume")
    assert done.returncode == EXIT_INPUT, done.stderr
    line = next(line for line in done.stderr.splitlines() if line.startswith("gate: error: "))
    assert str(log) in line and "--resume needs the earlier attempt's log" in line and "without --resume" in line
    assert log.read_bytes() == torn  # nothing moved, nothing rerun
    assert not (bench.out / "main" / "attempts").exists()


@pytest.mark.slow  # two `gate run` processes
def test_resume_writes_the_stamp_a_completed_run_lacks(bench):
    assert bench.run("--models", "qwen3", "--runs", "1").returncode == 0
    stamp = bench.out / "main" / STAMP_NAME
    written = json.loads(stamp.read_text(encoding="utf-8"))
    stamp.unlink()  # a signal right after the run's closing log write
    done = bench.run("--models", "qwen3", "--runs", "1", "--resume")
    assert done.returncode == 0, done.stderr
    assert bench.run_log()["runs"] == {"main/run1": "skipped"}
    assert json.loads(stamp.read_text(encoding="utf-8")) == written
