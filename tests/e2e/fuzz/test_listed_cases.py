"""The cases issue 12 lists, one by one, through the real CLI: each ends with a documented non-zero exit and
one line naming the file and field, or (where the input must be ignored) reads as before."""
from __future__ import annotations

import json
import re
import shutil

import pytest
from click.testing import CliRunner

from gate.cli import cli
from gate.formats import runlog
from tests.helpers.runs import copy_run


def _invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.fixture
def tree(seeds, tmp_path):
    target = tmp_path / "candidate"
    shutil.copytree(seeds["candidate"], target)
    return target


def _compare(seeds, base, cand, *extra):
    return _invoke("compare", base, cand, "--suite", seeds["suite"], "--format", "terminal", *extra)


def _edit(path, change):
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def test_a_negative_wer_in_one_run_is_incomplete_not_averaged(seeds, tree):
    same = tree.parent / "same"
    shutil.copytree(tree, same)  # same-commit pair: without the damage it would pass
    for run in ("run1", "run2", "run3"):  # measured again, not copied (a copy is refused: gate.reading.copies)
        shutil.rmtree(same / run)
        copy_run(tree / run, same / run)
    _edit(same / "run2/qwen3/asr_zh.json", lambda d: d["results"][0]["corpus_wer"].__setitem__("mean", -0.02))
    result = _compare(seeds, tree, same, "--models", "qwen3")
    assert result.exit_code == 3, result.output
    line = next(line for line in result.output.splitlines() if "run2: qwen3/asr_zh.json: " in line)
    assert "corpus_wer.mean is -0.02, " in line and ", expected a non-negative" in line
    summary = _invoke("summarize", same, "--suite", seeds["suite"])
    assert summary.exit_code == 3 and "asr_zh.json" in summary.output


def test_negative_zero_speed_is_refused(seeds, tree):
    _edit(tree / "run1/qwen3/asr_zh.json", lambda d: d["results"][0]["rtf_mean"].__setitem__("mean", -0.0))
    summary = _invoke("summarize", tree, "--suite", seeds["suite"])
    assert summary.exit_code == 3 and "rtf_mean.mean is -0.0, " in summary.output
    assert "expected a positive number" in summary.output  # -0.0 is not above 0


def test_only_run1_is_incomplete(seeds, tree):
    for run in ("run2", "run3"):
        shutil.rmtree(tree / run)
    summary = _invoke("summarize", tree, "--suite", seeds["suite"])
    assert summary.exit_code == 3 and "run2: missing_run" in summary.output and "runs=1/3" in summary.output
    assert _compare(seeds, seeds["baseline"], tree).exit_code == 3


def test_a_copied_run_folder_is_reported_and_ignored(seeds, tree):
    shutil.copytree(tree / "run1", tree / "run1.bak")
    summary = _invoke("summarize", tree, "--suite", seeds["suite"], "--no-samples")
    assert summary.exit_code == 0, summary.output
    line = next(line for line in summary.output.splitlines() if "run1.bak" in line)
    assert "ignored: run1.bak: " in line and "not a planned run" in line and "(run1, run2, run3)" in line
    assert "runs:    run1, run2, run3" in summary.output


def test_gate_run_json_plans_the_runs(seeds, tree):
    log = runlog.skeleton({tree.name: "/checkouts/pr"}, {f"{tree.name}/run{r}": "completed" for r in ("warm", "1", "2", "3", "4")},
                          started="2026-11-02T03:00:00+00:00", status="completed")
    (tree / "gate-run.json").write_text(json.dumps(log))
    summary = _invoke("summarize", tree, "--suite", seeds["suite"], "--no-samples")
    assert summary.exit_code == 3 and "run4: missing_run" in summary.output  # a planned second look is missing
    copy_run(tree / "run3", tree / "run4")  # measured anew (a plain copy is refused: gate.reading.copies)
    assert _invoke("summarize", tree, "--suite", seeds["suite"], "--no-samples").exit_code == 0
    (tree / "gate-run.json").write_text('{"runs": {"a/run1": 1, "a/run1": 2}}')
    broken = _invoke("summarize", tree, "--suite", seeds["suite"])
    assert broken.exit_code == 2 and "gate-run.json: duplicate key" in broken.output


def test_a_duplicate_key_is_refused(seeds, tree):
    path = tree / "run3/qwen3/asr_zh.json"
    text = path.read_text()
    key = "latency_p95_s"
    path.write_text(re.sub(f'"{key}": \\{{', f'"{key}": {{"mean": 0.1}}, "{key}": {{', text, count=1))
    result = _compare(seeds, seeds["baseline"], tree)
    assert result.exit_code == 3 and f"asr_zh.json: duplicate key {key!r}" in result.output


def test_a_truncated_env_record_is_not_comparable(seeds, tree):
    (tree / "run2/env.json").write_text('{"schema_version": 1, "gpu": {"name": "NVIDIA H2')
    result = _compare(seeds, seeds["baseline"], tree)
    assert result.exit_code == 4, result.output
    assert "unreadable env.json in run2" in result.output
    allowed = _compare(seeds, seeds["baseline"], tree, "--allow-diff", "gpu", "--allow-diff", "driver")
    assert allowed.exit_code == 1  # the difference is accepted; the planted regression remains


def test_an_env_record_of_the_wrong_schema_is_not_comparable(seeds, tree):
    (tree / "run1/env.json").write_text(json.dumps({"schema_version": 1, "gpu": {"name": 5}}))
    assert _compare(seeds, seeds["baseline"], tree).exit_code == 4


_ENTRY = "calibration.qwen3/asr_en.rtf_mean"  # as the range checks name it
_TYPED = '$.calibration["qwen3/asr_en"].rtf_mean'  # as the typed reader (gate.formats.typedjson) names it


@pytest.mark.parametrize("field, value, words", [
    ("sigma", 0, f"{_ENTRY}.sigma is 0.0, expected a number between 0.0001 and 1"),
    ("sigma", -0.01, f"{_ENTRY}.sigma is -0.01"),
    ("sigma", 1e-9, f"{_ENTRY}.sigma is 1e-09"),
    ("sigma", "nan", f"{_TYPED}.sigma: expected a finite number"),
    ("df", 0, f"{_ENTRY}.df is 0, expected a positive integer"),
    ("df", True, f"{_TYPED}.df: expected an integer"),
    ("df", -1, f"{_TYPED}.df: expected at least 0, got -1"),
])
def test_baseline_calibration_values_are_checked(seeds, tmp_path, field, value, words):
    baseline = tmp_path / "baseline.json"
    shutil.copy(seeds["baseline"], baseline)
    _edit(baseline, lambda d: d["calibration"]["qwen3/asr_en"]["rtf_mean"].__setitem__(field, value))
    result = _compare(seeds, baseline, seeds["candidate"])
    assert result.exit_code == 2 and result.output.count("\n") == 1
    assert f"{baseline}: malformed baseline: {words}" in result.output, result.output


@pytest.mark.parametrize("change, words", [
    (lambda w: w["metrics"]["throughput_samples_per_s"].__setitem__(0, True),
     "throughput_samples_per_s[0]: expected a finite number or null"),
    (lambda w: w["metrics"]["throughput_samples_per_s"].__setitem__(0, "97.5"),
     "throughput_samples_per_s[0]: expected a finite number or null"),
    (lambda w: w["metrics"]["throughput_samples_per_s"].__setitem__(0, 5e-324),
     "throughput_samples_per_s[0] is 5e-324, expected a positive number from 0.0001 to 1e+06"),
    (lambda w: w["samples"]["wer"]["invalid"].__setitem__(0, [10_000]), "samples.wer.invalid[0] has an index out of range"),
    (lambda w: w["samples"]["wer"]["errors"][1].__setitem__(3, w["samples"]["wer"]["errors"][1][3] + 9),
     "samples.wer.errors[1] give wer"),
])
def test_baseline_values_are_checked(seeds, tmp_path, change, words):
    baseline = tmp_path / "baseline.json"
    shutil.copy(seeds["baseline"], baseline)
    _edit(baseline, lambda d: change(d["workloads"]["qwen3/asr_en"]))
    result = _compare(seeds, baseline, seeds["candidate"])
    assert result.exit_code == 2 and words in result.output, result.output


def test_calibrate_writes_a_new_file_and_keeps_the_old_on_failure(seeds, tmp_path, monkeypatch):
    import errno
    import os

    from gate.examples import BASELINE_COMMIT, ExampleSpec, write_example_tree
    from gate.formats.config import load_suite

    suite = load_suite(seeds["suite"])  # an A/A pair: the baseline's commit measured twice, fresh noise each
    pair = [str(write_example_tree(tmp_path / f"aa{k}", suite, ExampleSpec(seed=50 + k, commit=BASELINE_COMMIT,
                                                                          runs=("1", "2", "3")))) for k in (0, 1)]
    baseline = tmp_path / "baseline.json"
    shutil.copy(seeds["baseline"], baseline)
    before = baseline.read_bytes()
    inode = baseline.stat().st_ino
    real_write = os.write

    def full(fd, data):  # fault injection: the disk is full
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "write", full)
    result = _invoke("baseline", "calibrate", *pair, "--baseline", baseline, "--suite", seeds["suite"])
    monkeypatch.setattr(os, "write", real_write)
    assert result.exit_code == 2 and "(no space left on device); " in result.output
    assert result.output.rstrip().endswith("previous file is unchanged")
    assert baseline.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["aa0", "aa1", "baseline.json"]
    ok = _invoke("baseline", "calibrate", *pair, "--baseline", baseline, "--suite", seeds["suite"])
    assert ok.exit_code == 0, ok.output
    assert baseline.stat().st_ino != inode  # replaced by rename, never rewritten in place
    assert _compare(seeds, baseline, seeds["candidate"]).exit_code in (0, 1)
