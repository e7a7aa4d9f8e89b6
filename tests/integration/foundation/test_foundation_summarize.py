"""`gate summarize`: byte-identical to the runbook's Step 7 script; a richer table and JSON; exit codes; bad input."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gate.examples import ExampleSpec, write_example_tree
from gate.formats import result_types

RUNBOOK = Path(__file__).resolve().parents[3].parent / "shared" / "seed" / "asr-benchmark-runbook.md"
# The maintainers' Step 7 script, copied verbatim from the runbook (which lives outside the repository).
SHIPPED_STEP7 = Path(__file__).resolve().parents[2] / "fixtures" / "runbook-step7-summarize.py.txt"
# Defects the runbook's script survives (it prints complete=False or "missing in a run").
SURVIVABLE = {
    "qwen3/asr_en": result_types.SKIPPED,
    "whisper/asr_zh": result_types.WRONG_TOTAL,
    "fun/asr_en": result_types.MISSING_FILE,
    "moss_td/movies800times": result_types.MAX_NEW_TOKENS_SET,  # the script does not check this one
    "moss_td/movies800times_stream": result_types.FAILED_REQUESTS,
    "moss_td/aishell4_long": result_types.ALL_FAILED,
}


@pytest.fixture(scope="module")
def runbook_script(tmp_path_factory) -> Path:
    """The Step 7 summarize.py: the runbook's heredoc, verbatim, shipped beside this test (SHIPPED_STEP7). Where
    the runbook itself is at hand (this workspace), the shipped copy must still be what it says."""
    shipped = SHIPPED_STEP7.read_text(encoding="utf-8")
    if RUNBOOK.is_file():
        match = re.search(r"cat > /work/results/summarize\.py <<'EOF'\n(.*?)\nEOF\n", RUNBOOK.read_text(encoding="utf-8"),
                          re.S)
        assert match, "the runbook no longer contains the Step 7 summarize.py heredoc"
        assert match.group(1) + "\n" == shipped, f"{SHIPPED_STEP7.name} differs from the runbook's Step 7 script"
    script = tmp_path_factory.mktemp("runbook") / "summarize.py"
    script.write_text(shipped, encoding="utf-8")
    return script


@pytest.fixture(scope="module")
def survivable_tree(tmp_path_factory, suite) -> Path:
    return write_example_tree(tmp_path_factory.mktemp("survivable") / "tree", suite,
                              ExampleSpec(seed=3, runs=("1", "2", "3"), defects=SURVIVABLE))


@pytest.fixture(scope="module")
def two_run_tree(tmp_path_factory, suite) -> Path:
    return write_example_tree(tmp_path_factory.mktemp("two_runs") / "tree", suite,
                              ExampleSpec(models=("fun", "moss_td"), runs=("warm", "1", "2")))


@pytest.mark.parametrize("tree_fixture", ["complete_tree", "survivable_tree", "qwen3_tree", "two_run_tree"])
def test_runbook_format_is_byte_identical_to_the_runbook_script(request, runbook_script, invoke, tree_fixture):
    tree = request.getfixturevalue(tree_fixture)
    script = subprocess.run([sys.executable, str(runbook_script), str(tree)], capture_output=True, check=True)
    result = invoke("summarize", tree, "--format", "runbook")
    assert result.stdout_bytes == script.stdout
    complete = b"coverage complete: True" in script.stdout
    assert result.exit_code == (0 if complete else 3)
    assert complete == (tree_fixture == "complete_tree")


@pytest.mark.parametrize("damage, words", [
    (lambda t: (t / "run2/qwen3/asr_en.json").write_text('{"schema_version": 2, "results": [{"eval'), "truncated"),
    (lambda t: (t / "run2/qwen3/asr_en.json").write_text(
        (t / "run2/qwen3/asr_en.json").read_text().replace('"rtf_mean": {"mean": ', '"rtf_mean": {"mean": NaN, "x": ', 1)),
     "NaN"),
    (lambda t: (t / "run2/moss_td/googletime/transcribe_diarize_speed_results.json").unlink(), "missing; expected it beside"),
    (lambda t: (t / "run2/qwen3/asr_en.json").write_text('{"results": [{"evaluated": 1}]}'), "not a SeedTTS result"),
    (lambda t: shutil.copytree(t / "run2/moss_td/googletime", t / "run2/moss_td/other"), "unexpected dataset directory"),
])
def test_runbook_format_reports_what_the_script_would_crash_on(complete_tree, tmp_path, invoke, damage, words):
    tree = tmp_path / "tree"
    shutil.copytree(complete_tree, tree, ignore=shutil.ignore_patterns("raw_*", "transcribe_diarize_asr_results.json"))
    damage(tree)
    result = invoke("summarize", tree, "--format", "runbook")
    assert result.exit_code == 3  # a malformed result file: its workload is incomplete, as in compare
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("gate: error: ") and words in result.stderr
    assert "Traceback" not in result.stderr


def test_table_on_a_complete_tree(complete_tree, invoke, tmp_path):
    result = invoke("summarize", complete_tree, "--json", tmp_path / "s.json")
    assert result.exit_code == 0 and result.stderr == ""
    lines = result.stdout.splitlines()
    assert "coverage: complete (" in result.stdout and " (10 workloads x 3 runs)" in result.stdout
    assert next(line for line in lines if line.startswith("qwen3/asr_en ")).split() == [
        "qwen3/asr_en", "runs=3/3", "n=1088/1088", "complete"]
    wer = next(line for line in lines if "per-sample wer: " in line)
    assert "matches the file" in wer and wer.endswith(" in every run (3)")
    doc = json.loads((tmp_path / "s.json").read_text())
    assert doc["schema_version"] == 1 and doc["kind"] == "gate.summary"
    assert doc["complete"] is True and doc["exit_code"] == 0 and doc["runs"] == ["run1", "run2", "run3"]
    assert len(doc["workloads"]) == 10
    first = doc["workloads"][0]
    assert first["id"] == "qwen3/asr_en" and len(first["metrics"]["corpus_wer"]["values"]) == 3
    assert {s["status"] for w in doc["workloads"] for s in w["samples"]} == {"match"}


def test_table_names_each_incomplete_reason_and_exits_3(survivable_tree, invoke):
    result = invoke("summarize", survivable_tree)
    assert result.exit_code == 3 and result.stderr == ""
    out = result.stdout
    assert "coverage: INCOMPLETE: " in out and ": 6 incomplete" in out
    assert "run1: skipped: " in out and "run1: wrong_total: " in out and "run1: missing_file: " in out
    assert "run1: max_new_tokens_set: " in out and "run1: failed_requests: " in out and "run1: all_requests_failed: " in out
    assert "fun/asr_en  runs=2/3" in out and "INCOMPLETE (partial means)" in out


def test_unreadable_result_files_exit_3_with_one_line_per_problem(defects_a_tree, invoke):
    result = invoke("summarize", defects_a_tree)
    assert result.exit_code == 3  # incomplete, as in compare; 2 is only for a tree that cannot be opened
    lines = result.stderr.splitlines()
    assert len(lines) == 3  # truncated JSON, bad schema_version, NaN: one line each, naming the file
    assert all(line.startswith("gate: error: ") and "/run1/" in line for line in lines)
    assert "coverage: INCOMPLETE" in result.stdout  # the table is still printed


def test_invalid_per_sample_data_exits_3(defects_b_tree, invoke):
    result = invoke("summarize", defects_b_tree, "--models", "qwen3")
    assert result.exit_code == 3
    assert "duplicate id" in result.stderr and "2019 rows, expected 2020" in result.stderr
    assert "per-sample wer run1: INVALID" in result.stdout


def test_models_option_and_missing_workloads(qwen3_tree, invoke):
    assert invoke("summarize", qwen3_tree).exit_code == 3
    only = invoke("summarize", qwen3_tree, "--models", "qwen3", "--no-samples")
    assert only.exit_code == 0 and "moss_td" not in only.stdout
    unknown = invoke("summarize", qwen3_tree, "--models", "qwen3,nope")
    assert unknown.exit_code == 2 and "unknown model(s) nope" in unknown.stderr


@pytest.mark.parametrize("fmt", ["table", "runbook"])
def test_missing_and_empty_trees(tmp_path, invoke, fmt):
    missing = invoke("summarize", tmp_path / "nope", "--format", fmt)
    assert missing.exit_code == 2 and "no such directory" in missing.stderr and missing.stderr.count("\n") == 1
    (tmp_path / "empty").mkdir()
    empty = invoke("summarize", tmp_path / "empty", "--format", fmt)
    assert empty.exit_code == 2 and empty.stderr.count("\n") == 1 and "expected the runbook layout" in empty.stderr


def test_help_documents_exit_codes(invoke):
    text = invoke("summarize", "--help").stdout
    assert "0  coverage complete" in text and "3  coverage incomplete" in text and "2  TREE cannot be opened" in text
