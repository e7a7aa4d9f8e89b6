"""The runner's writer and gate.formats.runlog's reader agree: every gate-run.json the stand-in `gate run` writes
(an A/B with its plan and looks, a failed run, a resumed one and the attempt it archived) decodes with the
strict typed reader, and the writer refuses to write a log that reader would refuse (a bug: exit 70)."""
from __future__ import annotations

import pytest

from gate.formats import inputs, runlog


def _every_log(out) -> list:
    logs = sorted(out.rglob("gate-run*.json"))
    assert logs, f"no run log under {out}"
    return logs


def _decoded(path) -> runlog.RunLog:
    return runlog.decode(inputs.load_json(path, inputs.RUN_LOG, follow_links=False), path)


def test_an_ab_run_writes_what_the_reader_reads(bench, tmp_path):
    from tests.standin.build import SMALL_COUNTS, make_checkout
    candidate = make_checkout(tmp_path / "candidate", knobs={"counts": SMALL_COUNTS})
    done = bench.run("--ab", str(bench.checkout), str(candidate), "--models", "qwen3", checkout=False, timeout=180)
    assert done.returncode in (0, 1), done.stderr  # pass or fail: both finish the log
    for path in _every_log(bench.out):
        log = _decoded(path)
        assert log.status == "completed" and log.plan is not None and set(log.sides) == {"base", "candidate"}
        assert log.looks is not None and "qwen3" in log.looks and log.steps
        assert runlog.read(path.parent) == log  # what every reader gets


def test_a_failed_then_resumed_run_writes_what_the_reader_reads(bench):
    bench.knobs({"client": {"exit_code": 7, "on_call": 3}})
    assert bench.run("--models", "qwen3", "--runs", "warm,1").returncode == 3
    failed = runlog.read(bench.out / "main")
    assert failed is not None and failed.status == "failed" and failed.exit_code == 3 and failed.message
    bench.knobs({})
    done = bench.run("--models", "qwen3", "--runs", "warm,1", "--resume")
    assert done.returncode == 0, done.stderr
    logs = _every_log(bench.out)
    assert [p.relative_to(bench.out).as_posix() for p in logs] == ["main/attempts/gate-run.1.json", "main/gate-run.json"]
    earlier, resumed = (_decoded(p) for p in logs)
    assert earlier.status == "failed" and resumed.status == "completed"
    assert resumed.previous_attempt == "attempts/gate-run.1.json" and resumed.runs["main/runwarm"] == "skipped"


@pytest.mark.parametrize("change, words", [
    (lambda doc: doc["steps"].append({"step": "client"}), "$.steps[0]: missing key 'side'"),
    (lambda doc: doc["runs"].update({"main/run1": "done"}), '$.runs["main/run1"]: expected one of pending'),
    (lambda doc: doc.update(started="2026-11-02 03:00"), "$.started: expected a string matching"),
    (lambda doc: doc.update(unknown=1), "$: unexpected key"),
])
def test_the_writer_refuses_a_log_its_reader_would_refuse(change, words):
    doc = runlog.skeleton({"main": "/checkouts/main"}, {"main/run1": "running"}, started="2026-11-02T03:00:00.000+00:00")
    runlog.check_written(doc, whole=True)
    change(doc)
    with pytest.raises(runlog.WriterBug, match=words.replace("[", r"\[").replace("$", r"\$")):
        runlog.check_written(doc, whole=False)
