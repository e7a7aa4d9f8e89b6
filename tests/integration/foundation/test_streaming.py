"""Streamed workloads (issue 52): the clients' streaming fields read bit-identical, time to first text and inter-chunk
latency judged as speed rows, and a stream run checked to be one (a workload the suite streams without the fields, or
a plain workload with them, is INCOMPLETE in one line naming the file and the client's --stream flag)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from gate.cli import cli
from gate.examples import ExampleSpec, write_example_ci_artifacts, write_example_tree
from gate.formats import result_types
from gate.formats.config import load_suite
from gate.formats.errors import SuiteError
from gate.reading.results import read_tree
from tests.helpers.streams import (
    MOSS_PLAIN,
    MOSS_STREAM,
    SEEDTTS_STREAM,
    moss_stream_values,
    seedtts_stream_values,
    stream_suite,
)

RUNS = ("1", "2", "3")


def _invoke(*args):
    result = CliRunner().invoke(cli, [str(a) for a in args])
    return result.exit_code, result.output + (result.stderr if result.stderr_bytes else "")


@pytest.fixture(scope="module")
def suite_path(tmp_path_factory) -> Path:
    return stream_suite(tmp_path_factory.mktemp("suite") / "suite.yaml")


@pytest.fixture(scope="module")
def suite(suite_path):
    return load_suite(suite_path)


@pytest.fixture(scope="module")
def tree(tmp_path_factory, suite) -> Path:
    return write_example_tree(tmp_path_factory.mktemp("streamed") / "tree", suite,
                              ExampleSpec(models=("qwen3", "moss_td"), runs=RUNS))


@pytest.fixture(scope="module")
def other(tmp_path_factory, suite) -> Path:
    """A base for compare: the MOSS workloads measured again (another seed)."""
    return write_example_tree(tmp_path_factory.mktemp("other") / "tree", suite,
                              ExampleSpec(seed=7, models=("moss_td",), runs=RUNS))


def _summary(tree: Path, suite_path: Path, tmp_path: Path, *extra: str) -> tuple[int, dict, str]:
    out = tmp_path / "summary.json"
    code, text = _invoke("summarize", tree, "--suite", suite_path, "--json", out, *extra)
    return code, json.loads(out.read_text()), text


def _workload(summary: dict, workload_id: str) -> dict:
    return next(w for w in summary["workloads"] if w["id"] == workload_id)


def test_streaming_values_read_bit_identical_in_summarize_json(tree, suite_path, tmp_path):
    code, summary, text = _summary(tree, suite_path, tmp_path, "--models", "qwen3,moss_td")
    assert code == 0, text
    checked = 0
    for workload_id, file_values in (
            (SEEDTTS_STREAM, lambda run: seedtts_stream_values(json.loads((tree / run / "qwen3/asr_en_stream.json").read_text()))),
            (MOSS_STREAM, lambda run: moss_stream_values(json.loads(
                (tree / run / MOSS_STREAM / result_types.MOSS_SPEED_FILE).read_text())))):
        metrics = _workload(summary, workload_id)["metrics"]
        for k, run in enumerate(f"run{r}" for r in RUNS):
            written = file_values(run)
            assert sorted(written) == sorted(result_types.STREAM_FIELDS), written
            for field, value in written.items():
                assert metrics[field]["values"][k] == value  # the same float, to the last bit
                checked += 1
    assert checked == 2 * 3 * 7
    # a workload that does not stream has no streaming metric at all
    assert not set(_workload(summary, MOSS_PLAIN)["metrics"]) & set(result_types.STREAM_FIELDS)
    assert not set(_workload(summary, "qwen3/asr_en")["metrics"]) & set(result_types.STREAM_FIELDS)


def test_ci_artifacts_read_their_streaming_fields(suite, suite_path, tmp_path):
    root = write_example_ci_artifacts(tmp_path / "ci", suite, ExampleSpec(models=("qwen3", "moss_td"), runs=("1",)))
    read = read_tree(root, suite, models=("moss_td",))
    (run,) = read.workloads[MOSS_STREAM]
    assert run.complete, run.coverage.problems
    assert run.metrics["text_ttft_p95_s"] is not None and run.provenance.stream is True
    (plain,) = read.workloads[MOSS_PLAIN]
    assert plain.complete and plain.provenance.stream is False


def test_stream_fact_comes_from_what_moss_files_show(tree, suite):
    read = read_tree(tree, suite, models=("moss_td", "qwen3"))
    assert {r.provenance.stream for r in read.workloads[MOSS_STREAM]} == {True}
    assert {r.provenance.stream for r in read.workloads[MOSS_PLAIN]} == {False}
    assert {r.provenance.stream for r in read.workloads[SEEDTTS_STREAM]} == {True}


def _swap(tree: Path, tmp_path: Path, source: str, target: str, name: str) -> Path:
    """A copy of `tree` whose run1 holds `source`'s MOSS files in `target`'s place."""
    copy = tmp_path / name
    shutil.copytree(tree, copy)
    shutil.rmtree(copy / "run1" / target)
    shutil.copytree(tree / "run1" / source, copy / "run1" / target)
    return copy


def test_a_plain_run_in_the_stream_workload_is_incomplete_with_the_fix(tree, other, suite_path, tmp_path):
    swapped = _swap(tree, tmp_path, "moss_td/movies800times", "moss_td/movies800times_stream", "plain-in-stream")
    code, summary, text = _summary(swapped, suite_path, tmp_path, "--models", "moss_td")
    assert code == 3, text
    problems = [p for c in _workload(summary, MOSS_STREAM)["coverage"] for p in c["problems"]]
    assert [p["code"] for p in problems] == [result_types.NOT_STREAMED], problems
    assert problems[0]["path"].endswith("run1/moss_td/movies800times_stream/" + result_types.MOSS_SPEED_FILE)
    assert "--stream" in problems[0]["message"]
    lines = [line for line in text.splitlines() if "not_streamed" in line]
    assert len(lines) == 1 and "--stream" in lines[0] and result_types.MOSS_SPEED_FILE in lines[0], text
    # the case: in compare it no longer passes as "4 improved"
    code, out = _invoke("compare", other, swapped, "--suite", suite_path, "--models", "moss_td")
    assert code == 3, out
    assert "has no streaming fields" in out and "--stream flag" in out, out


def test_a_streamed_run_in_a_plain_workload_is_incomplete(tree, suite_path, tmp_path):
    swapped = _swap(tree, tmp_path, "moss_td/movies800times_stream", "moss_td/movies800times", "stream-in-plain")
    code, summary, text = _summary(swapped, suite_path, tmp_path, "--models", "moss_td")
    assert code == 3, text
    problems = [p for c in _workload(summary, MOSS_PLAIN)["coverage"] for p in c["problems"]]
    assert [p["code"] for p in problems] == [result_types.UNEXPECTED_STREAM], problems
    assert "without the client's --stream" in problems[0]["message"]


def test_a_seedtts_stream_workload_without_the_fields_is_incomplete(tree, suite_path, tmp_path):
    copy = tmp_path / "seed"
    shutil.copytree(tree, copy)
    path = copy / "run2" / "qwen3/asr_en_stream.json"
    data = json.loads(path.read_text())
    for field in result_types.STREAM_FIELDS:
        del data["results"][0][field]
        del data["results"][0]["per_repeat"][0][field]
    data["config"]["stream"] = False
    path.write_text(json.dumps(data))
    code, summary, text = _summary(copy, suite_path, tmp_path, "--models", "qwen3")
    assert code == 3, text
    problems = [p for c in _workload(summary, SEEDTTS_STREAM)["coverage"] for p in c["problems"]]
    assert [p["code"] for p in problems] == [result_types.NOT_STREAMED], problems


def test_a_suite_stream_flag_must_match_the_client_flag(tmp_path, suite_path):
    text = suite_path.read_text().replace('stream: true, client_extra_args: ["--stream"], path: moss_td',
                                          'stream: true, path: moss_td', 1)
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    with pytest.raises(SuiteError, match="--stream"):
        load_suite(bad)


@pytest.fixture(scope="module")
def ab(tmp_path_factory, suite):
    """A/B pairs of MOSS trees, 6 + 6 runs: a no-op, time to first text 10% worse, and the base with 3× its time to
    first text and nothing else changed (the same seed)."""
    root = tmp_path_factory.mktemp("ab")
    runs = tuple(str(r) for r in range(1, 7))

    def tree(name: str, seed: int, factor: float = 1.0, runs: tuple[str, ...] = runs) -> Path:
        return write_example_tree(root / name, suite, ExampleSpec(
            seed=seed, models=("moss_td",), runs=runs, ttft_factor={MOSS_STREAM: factor}))

    return {"base": tree("base", 0), "noop": tree("noop", 1), "worse": tree("worse", 1, 1.10),
            "base3": tree("base3", 0, runs=RUNS), "triple": tree("triple", 0, 3.0, runs=RUNS)}


def _report(base: Path, cand: Path, suite_path: Path, tmp_path: Path) -> tuple[int, dict, str]:
    out = tmp_path / "report.json"
    code, text = _invoke("compare", base, cand, "--suite", suite_path, "--json", out)
    return code, json.loads(out.read_text()), text


def _row(report: dict, metric: str) -> dict:
    return next(r for r in report["rows"] if r["workload"] == MOSS_STREAM and r["metric"] == metric)


def test_time_to_first_text_10_percent_worse_fails_on_its_row(ab, suite_path, tmp_path):
    code, report, text = _report(ab["base"], ab["worse"], suite_path, tmp_path)
    assert code == 1, text
    failed = [(r["workload"], r["metric"]) for r in report["rows"] if r["verdict"] == "fail"]
    assert failed == [(MOSS_STREAM, "text_ttft_p95_s")], text
    for metric in ("text_ttft_mean_s", "inter_chunk_mean_s"):  # the means are shown, never gated
        assert _row(report, metric)["family"] is None


def test_a_no_op_pair_does_not_fail_on_streaming_rows(ab, suite_path, tmp_path):
    code, report, text = _report(ab["base"], ab["noop"], suite_path, tmp_path)
    assert code == 0, text
    for metric in ("text_ttft_p95_s", "inter_chunk_p95_s"):
        row = _row(report, metric)
        assert row["family"] == "speed" and row["verdict"] == "pass", row


def test_three_times_the_time_to_first_text_is_judged_not_refused_as_a_copy(ab, suite_path, tmp_path):
    code, report, text = _report(ab["base3"], ab["triple"], suite_path, tmp_path)
    assert code == 1, text
    row = _row(report, "text_ttft_p95_s")
    assert row["verdict"] == "fail" and row["delta_rel"] == pytest.approx(2.0, rel=0.01), row
