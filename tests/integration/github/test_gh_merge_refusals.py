"""`gate merge` reads each uploaded report through the typed report decoder (issue 27 item 6): a value out
of its range is refused with the report named, and a report.json that is a FIFO, a directory or a link in
the download-artifact layout is named (exit 2), never skipped silently."""
from __future__ import annotations

import json
import os
import shutil

import pytest
from click.testing import CliRunner

from gate.cli import cli


def _merge(tmp_path, *paths):
    out = tmp_path / "merged.json"
    result = CliRunner().invoke(cli, ["merge", *map(str, paths), "--json", str(out)])
    return result, out


@pytest.mark.parametrize("edit, words", [
    (lambda r: r["rows"][0].update(p_value=2), "$.rows[0].p_value: expected at most 1, got 2"),
    (lambda r: r["rows"][0].update(q_value=-0.5), "$.rows[0].q_value: expected at least 0, got -0.5"),
    (lambda r: r["rows"][0].update(p_degradation=1.5), "$.rows[0].p_degradation: expected at most 1"),
    (lambda r: r["rows"][0].update(sigma=-0.01), "$.rows[0].sigma: expected at least 0"),
    (lambda r: r["rows"][0].update(n_worse=-3), "$.rows[0].n_worse: expected at least 0"),
    (lambda r: r["statistics"].update(speed_alpha=5.0), "$.statistics.speed_alpha: expected at most 1"),
    (lambda r: r["statistics"].update(merged_from=0), "$.statistics.merged_from: expected at least 1"),
])
def test_an_out_of_range_value_in_an_uploaded_report_is_refused(tmp_path, example_reports, edit, words):
    report = json.loads(example_reports["qwen3"].read_text())
    edit(report)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(report))
    result, out = _merge(tmp_path, example_reports["whisper"], bad)
    assert result.exit_code == 2, result.output
    head, rest = result.stderr.removeprefix("gate: error: ").split(": ", 1)  # the refused file, then why
    assert head == str(bad) and rest.startswith("report does not match the") and f" schema at {words}" in rest
    assert result.stderr.count("\n") == 1 and not out.exists()


@pytest.mark.parametrize("kind, words", [("fifo", "not a regular file (a FIFO)"),
                                         ("directory", "not a regular file (a directory)"),
                                         ("link", "a symbolic link (not followed)")])
def test_a_report_that_is_not_a_regular_file_is_named_not_skipped(tmp_path, example_reports, kind, words):
    reports = tmp_path / "reports"
    for model in ("qwen3", "whisper"):
        (reports / f"asr-gate-model-{model}-1-1").mkdir(parents=True)
    shutil.copy(example_reports["qwen3"], reports / "asr-gate-model-qwen3-1-1" / "report.json")
    odd = reports / "asr-gate-model-whisper-1-1" / "report.json"
    if kind == "fifo":
        os.mkfifo(odd)
    elif kind == "directory":
        odd.mkdir()
    else:
        odd.symlink_to(example_reports["whisper"])
    result, out = _merge(tmp_path, reports)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"gate: error: {odd}: {words}") and result.stderr.count("\n") == 1
    assert not out.exists()


def test_a_report_path_given_as_a_fifo_is_named(tmp_path, example_reports):
    fifo = tmp_path / "report.json"
    os.mkfifo(fifo)
    result, out = _merge(tmp_path, example_reports["qwen3"], fifo)
    assert result.exit_code == 2 and f"{fifo}: not a regular file (a FIFO)" in result.stderr


@pytest.mark.parametrize("models", [["whisper"], ["qwen3", "whisper"], []])
def test_a_tampered_models_field_is_named(tmp_path, example_reports, models):
    """Issue 38: a qwen3 report claiming whisper would make --expect-models whisper pass without a whisper job."""
    report = json.loads(example_reports["qwen3"].read_text())
    report["models"] = models
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(report))
    out = tmp_path / "merged.json"
    result = CliRunner().invoke(cli, ["merge", str(bad), "--expect-models", "qwen3,whisper", "--json", str(out)])
    assert result.exit_code == 2, result.output
    assert f"{bad}: report does not match the schema at $.models" in result.stderr
    assert result.stderr.count("\n") == 1 and not out.exists()
