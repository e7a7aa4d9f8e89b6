"""A run with P timed passes in one server start (the client's --repeats P; issue 37): its value is the client's
mean over the passes, one observation; the passes' values are kept for the within-start component; the
per-utterance data is the first pass's, cross-checked against that pass's own corpus figure. P = 1 reads as
before (no pass values)."""
from __future__ import annotations

import json
import math

import pytest

from gate.examples import ExampleSpec, write_example_tree
from gate.formats.config import load_suite
from gate.formats.result_types import BAD_SCHEMA
from gate.reading.result_files import read_workload_run
from gate.reading.samples import samples_of_run
from gate.reading.side import MATCH
from gate.reading.tree_side import side_from_tree
from tests.helpers.passes import as_passes

SUITE = load_suite()
WORKLOAD = SUITE.workload("qwen3/asr_en")
FACTORS = (1.0, 1.02, 0.98, 1.01)


@pytest.fixture(scope="module")
def trees(tmp_path_factory):
    one = write_example_tree(tmp_path_factory.mktemp("one-pass"), SUITE, ExampleSpec(models=("qwen3",)))
    four = write_example_tree(tmp_path_factory.mktemp("four-passes"), SUITE, ExampleSpec(models=("qwen3",)))
    for run in ("run1", "run2", "run3"):
        for workload in SUITE.workloads_for(("qwen3",)):
            as_passes(four / run, workload, FACTORS)
    return one, four


def test_one_pass_reads_as_before(trees):
    run = read_workload_run(trees[0] / "run1", WORKLOAD)
    assert run.complete and run.passes == {}
    assert samples_of_run(run, WORKLOAD)["wer"].checks[0].status == MATCH


def test_four_passes_are_one_observation_with_their_values_kept(trees):
    one = read_workload_run(trees[0] / "run1", WORKLOAD)
    four = read_workload_run(trees[1] / "run1", WORKLOAD)
    assert four.complete, four.coverage.problems
    assert four.coverage.total == 4 * WORKLOAD.expected_samples
    throughput = four.passes["throughput_samples_per_s"]
    assert len(throughput) == 4
    assert math.isclose(four.metrics["throughput_samples_per_s"], sum(throughput) / 4)
    assert math.isclose(throughput[1] / throughput[0], 1.02)
    assert four.metrics["corpus_wer"] == one.metrics["corpus_wer"]
    side = side_from_tree(trees[1], SUITE)
    values = side.workloads["qwen3/asr_en"].values["throughput_samples_per_s"]
    assert len(values) == 3  # three starts, three observations, never 12


def test_per_utterance_data_is_the_first_pass(trees):
    run = read_workload_run(trees[1] / "run1", WORKLOAD)
    wer = samples_of_run(run, WORKLOAD)["wer"]
    assert wer.checks[0].status == MATCH
    assert wer.checks[0].path.endswith("conc32_rep1.jsonl")
    assert wer.errors.shape == (1, WORKLOAD.expected_samples)


def test_a_missing_pass_file_makes_the_run_invalid(trees, tmp_path):
    import shutil
    tree = shutil.copytree(trees[1], tmp_path / "tree")
    (tree / "run1" / WORKLOAD.raw_dir / "conc32_rep3.jsonl").unlink()
    run = read_workload_run(tree / "run1", WORKLOAD)
    check = samples_of_run(run, WORKLOAD)["wer"].checks[0]
    assert check.invalid and "conc<C>_rep4.jsonl" in check.message


@pytest.mark.parametrize("edit, words", [
    (lambda r: r["per_repeat"].pop(), "per_repeat has 3 records, expected 4"),
    (lambda r: r["throughput_samples_per_s"].update(mean=r["throughput_samples_per_s"]["mean"] * 1.05),
     "expected the mean of the per_repeat values"),
])
def test_a_pass_record_that_disagrees_is_a_broken_file(trees, tmp_path, edit, words):
    import shutil
    tree = shutil.copytree(trees[1], tmp_path / "tree")
    path = tree / "run1" / WORKLOAD.path
    doc = json.loads(path.read_text())
    edit(doc["results"][0])
    path.write_text(json.dumps(doc))
    run = read_workload_run(tree / "run1", WORKLOAD)
    assert [p.code for p in run.coverage.problems] == [BAD_SCHEMA]
    assert words in run.coverage.problems[0].message
