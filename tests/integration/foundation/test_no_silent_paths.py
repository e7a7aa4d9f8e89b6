"""Issue 26: nothing the readers accept is averaged away without a word.

A metric key missing from one run, a null in one run that the others measured, an absurd value, a
calibration that is a special file or of a non-integer schema_version, and a run the run log marks
failed: each ends in an incomplete workload or a refusal that names the file and the key.
"""
from __future__ import annotations

import json
import os
import shutil
import socket
from pathlib import Path

import pytest

from gate.formats import result_types, runlog
from gate.formats.errors import InputError
from gate.reading.baseline_file import load_document, read_baseline, write_baseline
from gate.reading.results import read_tree
from gate.reading.summarize import RUN_LOG, summarize_tree
from gate.reading.tree_side import side_from_tree

STARTED = "2026-11-01T12:00:00.000+00:00"


@pytest.fixture
def tree(complete_tree, tmp_path) -> Path:
    """A writable copy of the complete example tree (qwen3 and moss_td only: faster to read)."""
    copy = tmp_path / "tree"
    shutil.copytree(complete_tree, copy)
    return copy


def _edit(path: Path, change) -> None:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def _problems(tree: Path, suite, workload_id: str, run: int):
    runs = read_tree(tree, suite, models=(workload_id.split("/")[0],)).workloads[workload_id]
    return runs[run - 1].coverage.problems


def test_a_metric_key_deleted_from_one_run_is_that_runs_problem(tree, suite):
    _edit(tree / "run2/qwen3/asr_zh.json", lambda d: d["results"][0]["throughput_samples_per_s"].pop("mean"))
    problems = _problems(tree, suite, "qwen3/asr_zh", 2)
    assert [p.code for p in problems] == [result_types.MISSING_METRIC]
    assert problems[0].path.endswith("run2/qwen3/asr_zh.json")
    key = "results[0].throughput_samples_per_s.mean"  # the JSON path of the deleted key
    assert problems[0].message.startswith(f"{key} is missing; ")
    assert not _problems(tree, suite, "qwen3/asr_zh", 1)  # the other runs are untouched


def test_a_moss_speed_key_missing_without_failures_is_a_broken_file(tree, suite):
    speed = tree / "run1/moss_td/googletime/transcribe_diarize_speed_results.json"
    _edit(speed, lambda d: d["speed"].pop("throughput_qps"))
    assert [p.code for p in _problems(tree, suite, "moss_td/googletime", 1)] == [result_types.MISSING_METRIC]
    _edit(speed, lambda d: d["speed"].update(failed_requests=25))  # some failed, yet the figures are gone
    assert result_types.NO_SPEED in [p.code for p in _problems(tree, suite, "moss_td/googletime", 1)]
    _edit(speed, lambda d: d["speed"].update(completed_requests=0))  # every request failed: only counts are written
    assert result_types.ALL_FAILED in [p.code for p in _problems(tree, suite, "moss_td/googletime", 1)]


def test_a_null_in_one_run_that_others_measured_is_named(tree, suite):
    results_file = "moss_td/googletime/transcribe_diarize_results.json"
    _edit(tree / "run3" / results_file, lambda d: d["diarization_metrics"].update(speaker_timestamp_der=None))
    problems = _problems(tree, suite, "moss_td/googletime", 3)
    assert [p.code for p in problems] == [result_types.NULL_METRIC]
    assert "diarization_metrics.speaker_timestamp_der is null, but run1, run2 measured it" in problems[0].message
    for run in ("run1", "run2"):  # null in every run: nothing was measured anywhere, nothing to average away
        _edit(tree / run / results_file, lambda d: d["diarization_metrics"].update(speaker_timestamp_der=None))
    assert read_tree(tree, suite, models=("moss_td",)).complete("moss_td/googletime")


@pytest.mark.parametrize("where, value, words", [
    ("corpus_wer", 5e-324, "from 0 to 10 (the plausible range of corpus_wer)"),
    ("latency_mean_s", 5e-324, "from 0.0001 to 86400 s"),
    ("latency_p95_s", 1e308, "from 0.0001 to 86400 s"),
    ("rtf_mean", 1e308, "(the plausible range of rtf_mean)"),
])
def test_absurd_seedtts_values_are_refused_with_the_range(tree, suite, where, value, words):
    _edit(tree / "run1/qwen3/asr_en.json", lambda d: d["results"][0][where].update(mean=value))
    problems = _problems(tree, suite, "qwen3/asr_en", 1)
    assert [p.code for p in problems] == [result_types.BAD_SCHEMA]
    assert f"results[0].{where}.mean is {value!r}" in problems[0].message and words in problems[0].message


def test_a_count_above_the_dataset_size_is_refused(tree, suite):
    results_file = tree / "run2/moss_td/googletime/transcribe_diarize_results.json"
    _edit(results_file, lambda d: d["diarization_metrics"].update(cer_valid_samples=1e308))
    problems = _problems(tree, suite, "moss_td/googletime", 2)
    assert problems and "cer_valid_samples is 1e+308" in problems[0].message and "from 0 to 25 samples" in problems[0].message


def test_a_deleted_transcript_is_invalid_per_sample_data(tree, suite):
    deleted = "result_text"
    _edit(tree / "run1/moss_td/googletime/transcribe_diarize_results.json", lambda d: d["per_sample"][2].pop(deleted))
    side = side_from_tree(tree, suite, models=("moss_td",))
    workload = side.workloads["moss_td/googletime"]
    assert not workload.complete
    assert any(p.code == "invalid_samples" and p.run == "run1" and f"per_sample[2]: {deleted} is missing" in p.message
               for p in workload.problems)


def test_a_sample_reader_that_raises_is_a_bug_not_a_weaker_test(tree, suite):
    def broken(run_dir, run, workload):
        raise RuntimeError("a bug in the reader")

    with pytest.raises(RuntimeError):
        side_from_tree(tree, suite, models=("qwen3",), sample_reader=broken)


def test_summarize_does_not_show_a_failed_run_complete(tree, suite):
    log = dict(runlog.skeleton({"tree": "/checkouts/tree"}, {f"tree/run{r}": "completed" for r in "123"},
                               started=STARTED, status="failed"), message="server exited with status 1")
    (tree / "gate-run.json").write_text(json.dumps(log))
    summary = summarize_tree(read_tree(tree, suite), suite, samples=False)
    assert not summary.complete and summary.exit_code == 3
    [problem] = summary.run_log
    assert problem.code == RUN_LOG and problem.message.startswith("`gate run` ended 'failed': ")
    assert f": {log['message']}; " in problem.message and problem.message.endswith("; expected 'completed'")
    log.update(status="completed", runs=dict(log["runs"], **{"tree/run2": "failed"}))
    (tree / "gate-run.json").write_text(json.dumps(log))
    summary = summarize_tree(read_tree(tree, suite), suite, samples=False)
    [problem] = summary.run_log
    assert problem.code == RUN_LOG and problem.message.startswith("tree/run2 is marked 'failed'")
    assert problem.message.endswith("not a finished measurement")
    log["runs"]["tree/run2"] = "completed"
    (tree / "gate-run.json").write_text(json.dumps(log))
    assert summarize_tree(read_tree(tree, suite), suite, samples=False).exit_code == 0


@pytest.mark.parametrize("change, words", [
    ({"schema_version": 1.0}, "$.schema_version: expected an integer"),
    ({"schema_version": True}, "$.schema_version: expected an integer"),
    ({"schema_version": "1"}, "$.schema_version: expected an integer"),
    ({"schema_version": 2}, "$.schema_version: expected 1, got 2"),
    ({"status": "done"}, "$.status: expected one of running, completed"),
    ({"runs": {"tree/run1": 1}}, '$.runs["tree/run1"]: expected one of pending'),
    ({"runs": {"tree/run1": "finished"}}, '$.runs["tree/run1"]: expected one of pending'),
    ({"started": "2026-11-01T12:00:00"}, "$.started: expected a string matching"),  # naive: its instant is a guess
    ({"steps": {}}, "$.steps: expected a list"),
    ({"scored_runs": {"tree": {"qwen3": ["run1", 2]}}}, "$.scored_runs.tree.qwen3[1]: expected a string"),
    ({"extra": 1}, "$: unexpected key \"extra\""),
])
def test_a_run_log_that_is_not_the_runners_is_refused_in_one_line(tree, suite, change, words):
    log = runlog.skeleton({"tree": "/checkouts/tree"}, {"tree/run1": "completed"}, started=STARTED)
    (tree / "gate-run.json").write_text(json.dumps({**log, **change}))
    with pytest.raises(InputError) as err:
        read_tree(tree, suite)
    line = str(err.value)
    assert line.startswith(f"{tree / 'gate-run.json'}: {words}"), line
    assert "\n" not in line and line.endswith("`gate run` writes") and "; expected the run log" in line


@pytest.mark.parametrize("text", ["null", "[]", '"gate-run"', "1", "{}"])
def test_a_run_log_that_is_not_an_object_of_the_runners_schema_is_refused(tree, suite, text):
    (tree / "gate-run.json").write_text(text)
    with pytest.raises(InputError, match=r"gate-run\.json: \$: (expected an object|missing key)"):
        read_tree(tree, suite)


def test_a_linked_run_log_is_refused_even_inside_the_tree(tree, suite):
    log = runlog.skeleton({"tree": "/checkouts/tree"}, {f"tree/run{r}": "completed" for r in "123"}, started=STARTED)
    (tree / "run-log.json").write_text(json.dumps(log))
    (tree / "gate-run.json").symlink_to(tree / "run-log.json")
    with pytest.raises(InputError, match="gate-run.json: a symbolic link"):
        read_tree(tree, suite)


def _special(path: Path, kind: str) -> None:
    path.unlink(missing_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(str(path))
        server.close()
    else:
        path.symlink_to({"dev-null": "/dev/null", "dev-zero": "/dev/zero"}[kind])


@pytest.fixture
def baseline(tree, suite, tmp_path) -> Path:
    return write_baseline(side_from_tree(tree, suite, models=("qwen3",), sample_reader=lambda *a: {}),
                          tmp_path / "baseline.json")


@pytest.mark.parametrize("kind", ["fifo", "socket", "dev-null", "dev-zero"])
def test_keep_calibration_refuses_a_special_file(invoke, tree, tmp_path, kind):
    calibration = tmp_path / "calibration.json"
    _special(calibration, kind)
    out = tmp_path / "new.json"
    result = invoke("baseline", "create", tree, "--out", out, "--models", "qwen3", "--keep-calibration", calibration)
    assert result.exit_code == 2 and str(calibration) in result.stderr and "expected a baseline file" in result.stderr
    assert not out.exists()


def test_keep_calibration_of_nothing_says_so(invoke, tree, tmp_path):
    out = tmp_path / "new.json"
    result = invoke("baseline", "create", tree, "--out", out, "--models", "qwen3", "--keep-calibration",
                    tmp_path / "none.json")
    assert result.exit_code == 0 and "no baseline at" in result.output and out.exists()


@pytest.mark.parametrize("change, words", [
    (lambda d: d.update(schema_version=1.0), "schema_version is 1.0, this gate reads the integer 1"),
    (lambda d: d.update(schema_version=True), "schema_version is True"),
    (lambda d: d.update(calibration=None), "$.calibration: expected an object"),
    (lambda d: d["workloads"]["qwen3/asr_en"].update(evaluated=[-1, 0, 0]), "evaluated[0]: expected at least 0, got -1"),
    (lambda d: d["workloads"]["qwen3/asr_en"]["metrics"]["corpus_wer"].__setitem__(0, 5e-324),
     "metrics.corpus_wer[0] is 5e-324"),
])
def test_a_baseline_is_refused_as_a_whole(baseline, suite, change, words):
    _edit(baseline, change)
    with pytest.raises(InputError) as info:
        read_baseline(baseline, suite)
    assert str(info.value).startswith(str(baseline)) and words in str(info.value), str(info.value)


def test_a_baseline_of_an_older_writer_reads_as_before(baseline, suite):
    """schema_version 1 files written before every key was written: the earlier reader's defaults."""
    before = read_baseline(baseline, suite)
    doc = json.loads(baseline.read_text())
    for key in ("missing", "fingerprint", "calibration_source"):
        doc.pop(key)
    for w in doc["workloads"].values():
        for key in ("sample_notes", "evaluated", "run_complete", "expected_runs"):
            w.pop(key)
    baseline.write_text(json.dumps(doc))
    after = read_baseline(baseline, suite)
    assert after.workloads.keys() == before.workloads.keys()
    for workload_id, w in after.workloads.items():
        assert w.values == before.workloads[workload_id].values and w.expected_runs == 3
    assert load_document(baseline).missing == ()
