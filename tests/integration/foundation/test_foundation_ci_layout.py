"""The CI artifact layout (docs/upstream.md §2.3, §2.5): detected automatically, latest attempt used."""
from __future__ import annotations

import shutil

import pytest

from gate.examples import write_example_ci_artifacts
from gate.formats import result_types
from gate.reading.results import read_tree
from gate.reading.samples import read_run_samples
from gate.reading.side import MATCH, UNAVAILABLE


@pytest.fixture(scope="module")
def artifact(tmp_path_factory, suite):
    return write_example_ci_artifacts(tmp_path_factory.mktemp("ci") / "artifact", suite, model="qwen3", attempts=2)


def test_ci_artifact_is_one_run_using_the_latest_attempt(artifact, suite):
    tree = read_tree(artifact, suite)
    assert tree.layout == "ci" and tree.run_names == ("run1",)
    assert set(tree.workloads) == {"qwen3/asr_en", "qwen3/asr_zh", "moss_td/movies800times",
                                   "moss_td/movies800times_stream", "moss_td/aishell4_long", "moss_td/googletime"}
    assert set(tree.missing_workloads) == {"whisper/asr_en", "whisper/asr_zh", "fun/asr_en", "fun/asr_zh"}
    for workload_id, (run,) in tree.workloads.items():
        assert run.complete, (workload_id, [str(p) for p in run.coverage.problems])  # pytest-1 had failures
        assert "pytest-2" in run.files[0]
        assert run.attempts == result_types.Attempts("pytest-2", ("pytest-1",))  # read, and the failed one before it
        assert all(v is not None for k, v in run.metrics.items()), workload_id
    assert tree.workloads["qwen3/asr_en"][0].coverage.evaluated == 1088


def test_first_attempt_alone_shows_its_failures(artifact, suite, tmp_path):
    only_first = tmp_path / "a"
    shutil.copytree(artifact / "pytest-of-runner/pytest-1", only_first / "pytest-1")
    tree = read_tree(only_first, suite, models=("qwen3", "moss_td"))
    assert result_types.SKIPPED in tree.workloads["qwen3/asr_en"][0].coverage.codes
    assert result_types.FAILED_REQUESTS in tree.workloads["moss_td/googletime"][0].coverage.codes


def test_per_sample_data_in_ci_artifacts(artifact, suite):
    tree = read_tree(artifact, suite)
    run_dir = tree.runs[0].path
    moss = read_run_samples(run_dir, suite.workload("moss_td/movies800times"))
    assert moss["cer"].crosscheck.status == MATCH and len(moss["cer"].ids) == 800
    seedtts = read_run_samples(run_dir, suite.workload("qwen3/asr_en"))["wer"]
    assert seedtts.crosscheck.status == UNAVAILABLE and "CI SeedTTS" in seedtts.crosscheck.message


def test_run_directories_of_ci_artifacts_are_runs(artifact, suite, tmp_path):
    for run in ("run1", "run2", "run3"):
        shutil.copytree(artifact, tmp_path / "tree" / run)
    tree = read_tree(tmp_path / "tree", suite, models=("moss_td",))
    assert tree.layout == "ci" and tree.run_names == ("run1", "run2", "run3")
    assert all(tree.complete(w) for w in tree.workloads)


def test_a_planned_ci_run_that_is_missing_makes_workloads_incomplete(artifact, suite, tmp_path):
    for run in ("run1", "run2"):
        shutil.copytree(artifact, tmp_path / "tree" / run)
    tree = read_tree(tmp_path / "tree", suite, models=("moss_td",))
    assert tree.layout == "ci" and tree.run_names == ("run1", "run2", "run3")
    assert tree.workloads and not any(tree.complete(w) for w in tree.workloads)
    assert all(runs[2].coverage.codes == ("missing_run",) for runs in tree.workloads.values())


def test_another_models_seedtts_file_does_not_count(artifact, suite):
    tree = read_tree(artifact, suite, models=("fun",))
    assert tree.missing_workloads == ("fun/asr_en", "fun/asr_zh")


def test_summarize_reads_ci_artifacts(artifact, invoke):
    result = invoke("summarize", artifact, "--models", "qwen3,moss_td")
    assert result.exit_code == 0, result.stdout
    assert "(ci layout)" in result.stdout and "coverage: complete (" in result.stdout
    assert " (6 workloads x 1 runs)" in result.stdout  # qwen3's 2 and moss_td's 4, one run each
