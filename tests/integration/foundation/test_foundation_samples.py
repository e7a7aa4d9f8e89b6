"""gate.reading.samples: per-utterance errors recomputed from schema-exact files, cleaned as the client does, cross-checked."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from gate.reading.samples import clean_no_speaker, cp_cer_counts, read_run_samples, split_by_speaker
from gate.reading.side import MATCH, MISMATCH, UNAVAILABLE
from tests.helpers.foundation_defects import DEFECTS_B


def _raw_row(uid, ref_norm, hyp_norm, ok=True):
    return {"id": uid, "is_success": ok, "wer": None, "ref_text": ref_norm, "hyp_text": hyp_norm, "ref_norm": ref_norm,
            "hyp_norm": hyp_norm, "audio_duration_s": 3.0, "latency_s": 0.3, "text_ttft_s": None, "inter_chunk_s": [],
            "error": "" if ok else "HTTP 500: boom"}


def _small_seedtts_run(complete_tree, tmp_path, rows, corpus_wer):
    """run1 with qwen3/asr_en.json from the example tree, rewritten to describe `rows` (a tiny 4-sample run)."""
    run = tmp_path / "run1"
    (run / "qwen3/raw_en").mkdir(parents=True)
    doc = json.loads((complete_tree / "run1/qwen3/asr_en.json").read_text())
    r = doc["results"][0]
    evaluated = sum(1 for row in rows if row["is_success"])
    r.update(evaluated=evaluated, total=len(rows), skipped=len(rows) - evaluated)
    r["corpus_wer"] = {"mean": corpus_wer, "min": corpus_wer, "max": corpus_wer, "n": 1}
    (run / "qwen3/asr_en.json").write_text(json.dumps(doc))
    (run / "qwen3/raw_en/conc32_rep1.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    return run


ROWS = [
    _raw_row("a", "the cat sat on the mat", "the cat sat on the mat"),  # 0 errors / 6
    _raw_row("b", "we asked over twenty people", "we asked over 20 people"),  # 1 substitution / 5
    _raw_row("c", "one two three four", "one three four five six"),  # 1 deletion + 2 insertions / 4
    _raw_row("d", "never scored", "", ok=False),  # failed request: not valid
]


def test_seedtts_errors_are_computed_per_utterance(complete_tree, suite, tmp_path):
    run = _small_seedtts_run(complete_tree, tmp_path, ROWS, corpus_wer=4 / 15)
    wer = read_run_samples(run, suite.workload("qwen3/asr_en"))["wer"]
    assert wer.ids == ("a", "b", "c", "d")
    assert wer.ref_len.tolist() == [6, 5, 4, 2]
    assert wer.errors.tolist() == [[0, 1, 3, 0]]  # one run's row
    assert wer.substitutions.tolist() == [[0, 1, 0, 0]]
    assert wer.deletions.tolist() == [[0, 0, 1, 0]]
    assert wer.insertions.tolist() == [[0, 0, 2, 0]]
    assert wer.valid.tolist() == [[True, True, True, False]]
    assert dict(wer.texts) == {"b": ("we asked over twenty people", "we asked over 20 people"),
                               "c": ("one two three four", "one three four five six")}  # utterances with errors
    assert wer.corpus_rate == pytest.approx(4 / 15)
    assert wer.crosscheck.status == MATCH and wer.crosscheck.usable


def test_a_file_read_again_is_read_by_its_bytes_not_its_path(complete_tree, suite, tmp_path):
    """A process reads each per-sample file once per distinct content (the row is kept by a digest of the bytes):
    the same bytes elsewhere give the same row, edited bytes are read afresh, and the kept arrays are read-only."""
    workload = suite.workload("qwen3/asr_en")
    first = read_run_samples(_small_seedtts_run(complete_tree, tmp_path / "a", ROWS, corpus_wer=4 / 15), workload)["wer"]
    copied = read_run_samples(_small_seedtts_run(complete_tree, tmp_path / "b", ROWS, corpus_wer=4 / 15), workload)["wer"]
    assert copied.errors is first.errors and copied.crosscheck.path != first.crosscheck.path  # its own cross-check
    with pytest.raises(ValueError, match="read-only"):
        first.errors[0, 0] = 7
    edited = [ROWS[0], ROWS[1], _raw_row("c", "one two three four", "one two three four"), ROWS[3]]
    again = read_run_samples(_small_seedtts_run(complete_tree, tmp_path / "c", edited, corpus_wer=1 / 15), workload)["wer"]
    assert again.errors.tolist() == [[0, 1, 0, 0]] and again.crosscheck.status == MATCH


def test_a_different_corpus_figure_is_a_normalization_mismatch(complete_tree, suite, tmp_path):
    run = _small_seedtts_run(complete_tree, tmp_path, ROWS, corpus_wer=3 / 15)
    check = read_run_samples(run, suite.workload("qwen3/asr_en"))["wer"].crosscheck
    assert check.status == MISMATCH and not check.usable
    assert "normalization mismatch" in check.message and "0.266667" in check.message and "0.200000" in check.message


def test_rounded_reported_figures_still_match(complete_tree, suite, tmp_path):
    run = _small_seedtts_run(complete_tree, tmp_path, ROWS, corpus_wer=0.2667)  # 4/15 rounded to 4 decimals
    assert read_run_samples(run, suite.workload("qwen3/asr_en"))["wer"].crosscheck.status == MATCH
    run2 = _small_seedtts_run(complete_tree, tmp_path / "b", ROWS, corpus_wer=0.2668)
    assert read_run_samples(run2, suite.workload("qwen3/asr_en"))["wer"].crosscheck.status == MISMATCH


@pytest.mark.parametrize("workload_id, words", [
    ("qwen3/asr_en", "duplicate id"),
    ("qwen3/asr_zh", "2019 rows, expected 2020"),
    ("moss_td/movies800times", "duplicate id"),
    ("moss_td/aishell4_long", "per_sample has 19 entries, expected 20"),
])
def test_duplicate_and_missing_ids_are_invalid(defects_b_tree, suite, workload_id, words):
    assert workload_id in DEFECTS_B
    for errors in read_run_samples(defects_b_tree / "run1", suite.workload(workload_id)).values():
        assert errors.crosscheck.status == UNAVAILABLE and errors.crosscheck.invalid
        assert words in errors.crosscheck.message
        assert errors.crosscheck.path and "run1" in errors.crosscheck.path
    for errors in read_run_samples(defects_b_tree / "run2", suite.workload(workload_id)).values():
        assert errors.crosscheck.status == MATCH


@pytest.mark.parametrize("line, words", [
    ("{not json", "not valid JSON"),
    ('{"id": "x", "is_success": true, "ref_norm": "a", "hyp_norm": NaN}', "not valid JSON"),
    ('{"id": 5, "is_success": true, "ref_norm": "a", "hyp_norm": "a"}', "id is 5; expected a str"),
    ('{"id": "x", "is_success": "yes", "ref_norm": "a", "hyp_norm": "a"}', "is_success is 'yes'; expected a bool"),
    ('{"id": "x", "is_success": true, "hyp_norm": "a"}', "ref_norm is missing"),
    ("[1, 2]", "expected a JSON object"),
])
def test_malformed_raw_lines_are_invalid_with_line_numbers(complete_tree, suite, tmp_path, line, words):
    run = _small_seedtts_run(complete_tree, tmp_path, ROWS[:3], corpus_wer=4 / 15)
    path = run / "qwen3/raw_en/conc32_rep1.jsonl"
    path.write_text(path.read_text() + line + "\n")
    check = read_run_samples(run, suite.workload("qwen3/asr_en"))["wer"].crosscheck
    assert check.invalid and words in check.message and "line 4" in check.message


def test_absent_per_sample_data_is_unavailable_not_invalid(complete_tree, suite, tmp_path):
    run = _small_seedtts_run(complete_tree, tmp_path, ROWS, corpus_wer=4 / 15)
    shutil.rmtree(run / "qwen3/raw_en")
    check = read_run_samples(run, suite.workload("qwen3/asr_en"))["wer"].crosscheck
    assert check.status == UNAVAILABLE and not check.invalid and "--save-raw-dir" in check.message


def test_moss_cross_check_both_outcomes(complete_tree, suite, tmp_path):
    source = complete_tree / "run1/moss_td/googletime"
    run = tmp_path / "run1"
    shutil.copytree(source, run / "moss_td/googletime")
    workload = suite.workload("moss_td/googletime")
    found = read_run_samples(run, workload)
    assert found["cer"].crosscheck.status == MATCH and found["cp_cer"].crosscheck.status == MATCH
    assert len(found["cer"].ids) == 25 and found["cer"].valid.shape == (1, 25) and found["cer"].valid.all()
    path = run / "moss_td/googletime/transcribe_diarize_results.json"
    payload = json.loads(path.read_text())
    payload["diarization_metrics"]["cp_cer"] += 0.01
    path.write_text(json.dumps(payload))
    found = read_run_samples(run, workload)
    assert found["cer"].crosscheck.status == MATCH and found["cp_cer"].crosscheck.status == MISMATCH


def test_moss_cleaning_follows_the_client():
    text = "[0.00][S01]你好，世界！【笑声】[1.50][1.60][S2]Hello <noise> there,&um& World[laugh][3.00]"
    assert clean_no_speaker(text) == "你好世界hellothereworld"
    assert split_by_speaker(text, implicit_single_speaker=False) == {"[S1]": "你好世界", "[S2]": "hellothereworld"}
    assert split_by_speaker("plain text", implicit_single_speaker=True) == {"[S1]": "plaintext"}
    assert split_by_speaker("plain text", implicit_single_speaker=False) == {}


@pytest.mark.parametrize("reference, hypothesis, expected", [
    ("[S1]abc[S2]de", "[S2]abc[S1]de", (0, 5)),  # a label permutation costs nothing
    ("[S1]abc[S2]de", "[S1]abcde", (4, 5)),  # S2's text attributed to S1: 2 insertions + 2 deletions
    ("[S1]abc[S2]de", "abxde", (5, 5)),  # no tags: one speaker [S1]; abc->abxde 3 + de->"" 2
    ("abc", "[S1]abc", None),  # no speaker tag in the reference: not cp-valid
    ("[S1][0.5]", "[S1]x", None),  # nothing left after cleaning
])
def test_cp_cer_counts(reference, hypothesis, expected):
    assert cp_cer_counts(reference, hypothesis) == expected


def test_moss_failed_rows_are_not_scored(complete_tree, suite, tmp_path):
    run = tmp_path / "run1"
    shutil.copytree(complete_tree / "run1/moss_td/aishell4_long", run / "moss_td/aishell4_long")
    path = run / "moss_td/aishell4_long/transcribe_diarize_results.json"
    payload = json.loads(path.read_text())
    payload["per_sample"][0].update(error="HTTP 500: boom", result_text="")
    path.write_text(json.dumps(payload))
    cer = read_run_samples(run, suite.workload("moss_td/aishell4_long"))["cer"]
    assert not cer.valid[0, 0] and cer.valid[0, 1:].all() and cer.errors[0, 0] == 0
    assert cer.crosscheck.status == MISMATCH  # the file's figure still counts that sample
    assert np.issubdtype(cer.errors.dtype, np.integer)


@pytest.mark.parametrize("spelled", ["null", "None", " NULL "])
def test_a_moss_error_spelled_null_is_invalid_not_success(complete_tree, suite, tmp_path, spelled):
    """Issue 38: per_sample[].error of the string "null" is an edited file, never taken as no error."""
    run = tmp_path / "run1"
    shutil.copytree(complete_tree / "run1/moss_td/aishell4_long", run / "moss_td/aishell4_long")
    path = run / "moss_td/aishell4_long/transcribe_diarize_results.json"
    payload = json.loads(path.read_text())
    payload["per_sample"][0]["error"] = spelled
    path.write_text(json.dumps(payload))
    cer = read_run_samples(run, suite.workload("moss_td/aishell4_long"))["cer"]
    assert cer.crosscheck.status == UNAVAILABLE and cer.crosscheck.invalid
    assert "per_sample[0]" in cer.crosscheck.message and "error" in cer.crosscheck.message
