"""gate.reading.results: every coverage reason of the runbook, and every bad input, on schema-exact trees."""
from __future__ import annotations

import json
import shutil

import pytest

from gate.formats import result_types
from gate.formats.errors import InputError
from gate.reading.results import read_tree
from tests.helpers.foundation_defects import DEFECTS_A

# The coverage codes each planted defect must produce in run1 (and nothing in run2/run3).
EXPECTED_CODES = {
    "qwen3/asr_en": {result_types.SKIPPED, result_types.EVALUATED_NE_TOTAL},
    "qwen3/asr_zh": {result_types.UNREADABLE},
    "whisper/asr_en": {result_types.BAD_SCHEMA},
    "whisper/asr_zh": {result_types.WRONG_TOTAL},
    "fun/asr_en": {result_types.MISSING_FILE},
    "fun/asr_zh": {result_types.UNREADABLE},  # NaN is not JSON
    "moss_td/movies800times": {result_types.MAX_NEW_TOKENS_SET},
    "moss_td/movies800times_stream": {result_types.FAILED_REQUESTS, result_types.EVALUATED_NE_TOTAL},
    "moss_td/aishell4_long": {result_types.ALL_FAILED, result_types.FAILED_REQUESTS, result_types.EVALUATED_NE_TOTAL},
    "moss_td/googletime": {result_types.WRONG_TOTAL},
}


@pytest.fixture(scope="module")
def tree_a(defects_a_tree, suite):
    return read_tree(defects_a_tree, suite)


def test_complete_tree_is_complete(complete_tree, suite):
    tree = read_tree(complete_tree, suite)
    assert tree.layout == "runbook"
    assert tree.run_names == ("run1", "run2", "run3")  # runwarm is never scored
    assert tree.missing_workloads == ()
    assert all(tree.complete(w.id) for w in suite.workloads)
    run = tree.workloads["qwen3/asr_en"][0]
    assert run.metrics["corpus_wer"] is not None and run.coverage.evaluated == run.coverage.total == 1088
    assert run.provenance.dataset_revision == suite.datasets["seedtts"].revision  # the suite's pinned revision
    assert run.provenance.evaluation_input_sha256
    moss = tree.workloads["moss_td/movies800times"][0]
    assert moss.provenance.max_new_tokens is None and moss.coverage.failed_requests == 0
    assert tree.runs[0].commit and tree.runs[0].freeze


@pytest.mark.parametrize("workload_id", sorted(DEFECTS_A))
def test_each_coverage_reason_is_named(tree_a, workload_id):
    run1, run2, run3 = tree_a.workloads[workload_id]
    assert set(run1.coverage.codes) == EXPECTED_CODES[workload_id], [str(p) for p in run1.coverage.problems]
    assert all(p.path and "run1" in p.path for p in run1.coverage.problems)
    assert run2.complete and run3.complete
    assert not tree_a.complete(workload_id)


def test_defect_messages_say_what_was_expected(tree_a):
    messages = {w: " ".join(str(p) for p in runs[0].coverage.problems) for w, runs in tree_a.workloads.items()}
    assert "skipped 5 samples" in messages["qwen3/asr_en"]
    assert "truncated" in messages["qwen3/asr_zh"]
    assert "schema_version is 3, " in messages["whisper/asr_en"] and ", expected 2" in messages["whisper/asr_en"]
    assert "expected 2020" in messages["whisper/asr_zh"]
    assert "NaN" in messages["fun/asr_zh"]
    assert "max_new_tokens is 65536" in messages["moss_td/movies800times"]
    assert "every request failed" in messages["moss_td/aishell4_long"]


def test_missing_workloads_and_models(qwen3_tree, suite):
    tree = read_tree(qwen3_tree, suite)
    assert set(tree.workloads) == {"qwen3/asr_en", "qwen3/asr_zh"}
    assert len(tree.missing_workloads) == 8
    only = read_tree(qwen3_tree, suite, models=("qwen3",))
    assert only.missing_workloads == ()


def test_missing_and_empty_trees_are_input_errors(tmp_path, suite):
    with pytest.raises(InputError, match="no such directory"):
        read_tree(tmp_path / "nope", suite)
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no scored run directories"):
        read_tree(tmp_path / "empty", suite)
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputError, match="not a directory"):
        read_tree(tmp_path / "file", suite)


def _copy_run1(source, tmp_path, relative):
    """A one-run tree holding only `relative` from run1 of `source` (to edit it)."""
    target = tmp_path / "tree"
    (target / "run1" / relative).parent.mkdir(parents=True)
    shutil.copy(source / "run1" / relative, target / "run1" / relative)
    return target, target / "run1" / relative


@pytest.mark.parametrize("edit, code, words", [
    (lambda d: d["results"][0].__setitem__("evaluated", "1088"), result_types.BAD_SCHEMA, "non-negative integer"),
    (lambda d: d["results"][0]["corpus_wer"].__setitem__("mean", "0.01"), result_types.BAD_SCHEMA, "expected a non-negative number"),
    (lambda d: d.__setitem__("schema_version", 99), result_types.BAD_SCHEMA, "schema_version is 99"),
    (lambda d: d.__setitem__("results", []), result_types.BAD_SCHEMA, "results[0] is missing"),
])
def test_wrong_types_and_schema_in_seedtts(complete_tree, suite, tmp_path, edit, code, words):
    root, path = _copy_run1(complete_tree, tmp_path, "qwen3/asr_en.json")
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc))
    run = read_tree(root, suite, models=("qwen3",)).workloads["qwen3/asr_en"][0]
    assert code in run.coverage.codes
    assert words in " ".join(p.message for p in run.coverage.problems)


@pytest.mark.parametrize("text, words", [
    ("", "empty file"),
    ('{"schema_version": 2, "results": [{"corpus_wer": Infinity}]}', "Infinity"),
    (b"\xff\xfe{}", "not UTF-8"),
    ("[1, 2", "truncated"),
])
def test_unreadable_files(complete_tree, suite, tmp_path, text, words):
    root, path = _copy_run1(complete_tree, tmp_path, "qwen3/asr_en.json")
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    run = read_tree(root, suite, models=("qwen3",)).workloads["qwen3/asr_en"][0]
    assert run.coverage.codes == (result_types.UNREADABLE,)
    assert words in run.coverage.problems[0].message
