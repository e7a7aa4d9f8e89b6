"""gate.examples: deterministic, schema-exact, internally consistent synthetic trees."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from gate.examples import ExampleSpec, utterance_ids, write_example_tree
from gate.formats import result_types
from gate.reading.results import read_tree
from gate.reading.samples import read_run_samples
from gate.reading.side import MATCH

RAW_FIELDS = {"id", "is_success", "wer", "ref_text", "hyp_text", "ref_norm", "hyp_norm", "audio_duration_s",
              "latency_s", "text_ttft_s", "inter_chunk_s", "error"}


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_same_spec_gives_byte_identical_trees(tmp_path, suite):
    spec = ExampleSpec(models=("fun", "moss_td"), runs=("1", "2"))
    first = _files(write_example_tree(tmp_path / "a", suite, spec))
    second = _files(write_example_tree(tmp_path / "b", suite, spec))
    assert first.keys() == second.keys()
    assert first == second
    other = _files(write_example_tree(tmp_path / "c", suite, ExampleSpec(models=("fun", "moss_td"), runs=("1", "2"), seed=7)))
    assert other["run1/fun/asr_en.json"] != first["run1/fun/asr_en.json"]  # the seed matters


def test_layout_and_labels(complete_tree):
    assert "SYNTHETIC" in (complete_tree / "SYNTHETIC.txt").read_text()
    for run in ("runwarm", "run1", "run2", "run3"):
        assert len((complete_tree / run / "commit.txt").read_text().strip()) == 40
        assert "torch==" in (complete_tree / run / "freeze.txt").read_text()
        for model in ("qwen3", "whisper", "fun"):
            for lang in ("en", "zh"):
                assert (complete_tree / run / model / f"asr_{lang}.json").is_file()
                assert (complete_tree / run / model / f"raw_{lang}" / "conc32_rep1.jsonl").is_file()
        for dataset in ("movies800times", "movies800times_stream", "aishell4_long", "googletime"):
            for name in ("transcribe_diarize_results.json", "transcribe_diarize_speed_results.json",
                         "transcribe_diarize_asr_results.json"):
                assert (complete_tree / run / "moss_td" / dataset / name).is_file()


def test_seedtts_files_follow_the_client_schema(complete_tree):
    doc = json.loads((complete_tree / "run1/qwen3/asr_en.json").read_text())
    assert doc["schema_version"] == 2
    assert set(doc) == {"schema_version", "provenance", "config", "results"}
    assert set(doc["provenance"]["artifacts"]) == {"requested_model_id", "declared_model_revision", "dataset_id",
                                                   "dataset_revision", "evaluation_input_sha256"}
    r = doc["results"][0]
    for key in ("corpus_wer", "per_sample_wer_max", "wall_clock_s", "throughput_samples_per_s", "rtfx",
                "latency_mean_s", "latency_median_s", "latency_p95_s", "latency_p99_s", "rtf_mean", "rtf_p95"):
        assert set(r[key]) == {"mean", "min", "max", "n"}
        assert r[key]["mean"] == r["per_repeat"][0][key]
    assert (r["evaluated"], r["total"], r["skipped"]) == (1088, 1088, 0)
    lines = (complete_tree / "run1/qwen3/raw_en/conc32_rep1.jsonl").read_text().splitlines()
    assert len(lines) == 1088
    rows = [json.loads(line) for line in lines]
    assert all(set(row) == RAW_FIELDS for row in rows)
    # Aggregates are those of the per-request rows.
    latency = np.array([row["latency_s"] for row in rows])
    assert r["latency_mean_s"]["mean"] == pytest.approx(latency.mean(), rel=1e-5)
    assert r["throughput_samples_per_s"]["mean"] == pytest.approx(1088 / r["wall_clock_s"]["mean"])
    assert 80 < r["throughput_samples_per_s"]["mean"] < 115  # runbook: Qwen3 EN ~97.9 samples/s
    assert 0.008 < r["corpus_wer"]["mean"] < 0.02  # runbook: WER ~0.012


def test_moss_files_follow_the_client_schema(complete_tree):
    directory = complete_tree / "run1/moss_td/movies800times"
    speed_file = "transcribe_diarize_speed_results.json"
    speed = json.loads((directory / speed_file).read_text())
    assert speed["schema_version"] == 1 and speed["config"]["max_new_tokens"] is None
    googletime = complete_tree / "run1" / "moss_td" / "googletime" / speed_file
    assert json.loads(googletime.read_text())["config"]["max_new_tokens"] == 65536
    payload = json.loads((directory / "transcribe_diarize_results.json").read_text())
    assert "schema_version" not in payload  # the EvaluationPayload has none
    assert payload["summary"]["total_samples"] == payload["summary"]["evaluated"] == 800
    d = payload["diarization_metrics"]
    assert d["cer_valid_samples"] == 784 and d["count"] == 800
    assert payload["diarization_metrics_percent"]["cer"] == pytest.approx(d["cer"] * 100)
    assert 0.04 < d["cer"] < 0.08 and d["cp_cer"] > d["cer"]  # runbook: CER 5.82%, cpCER 13.13%
    assert len(payload["per_sample"]) == 800
    raw = json.loads((directory / "transcribe_diarize_asr_results.json").read_text())
    assert raw["schema_version"] == 1 and len(raw["outputs"]) == len(raw["samples"]) == 800


def test_every_aggregate_is_reproduced_from_its_per_sample_rows(complete_tree, suite):
    tree = read_tree(complete_tree, suite)
    for workload in suite.workloads:
        for run in tree.runs:
            for measure, errors in read_run_samples(run.path, workload).items():
                assert errors.crosscheck.status == MATCH, (workload.id, run.name, measure, errors.crosscheck.message)


def test_knobs_hallucinate_and_p95(tmp_path, suite):
    workload = suite.workload("fun/asr_en")
    target = utterance_ids(workload)[5]
    plain = write_example_tree(tmp_path / "plain", suite, ExampleSpec(models=("fun",), runs=("1",), flip_rate=0.0))
    knobs = write_example_tree(tmp_path / "knobs", suite, ExampleSpec(
        models=("fun",), runs=("1",), flip_rate=0.0, hallucinate={"fun/asr_en": target}, p95_factor={"fun/asr_en": 1.2}))
    a = read_run_samples(plain / "run1", workload)["wer"]
    b = read_run_samples(knobs / "run1", workload)["wer"]
    assert b.crosscheck.status == MATCH
    delta = (b.errors - a.errors)[0]  # run1's row
    assert delta[5] == 40 and delta.sum() == 40
    p95 = [json.loads((root / "run1/fun/asr_en.json").read_text())["results"][0]["latency_p95_s"]["mean"]
           for root in (plain, knobs)]
    assert p95[1] / p95[0] == pytest.approx(1.2, rel=1e-9)


@pytest.mark.parametrize("spec, message", [
    (ExampleSpec(speed_factor={"nope/asr_en": 1.0}), "unknown workload"),
    (ExampleSpec(defects={"qwen3/asr_en": result_types.FAILED_REQUESTS}), "does not apply"),
    (ExampleSpec(defects={"moss_td/googletime": result_types.MAX_NEW_TOKENS_SET}), "does not apply"),
    (ExampleSpec(hallucinate={"qwen3/asr_en": "no-such-utterance"}), "has no utterance"),
])
def test_bad_specs_are_refused(tmp_path, suite, spec, message):
    with pytest.raises(ValueError, match=message):
        write_example_tree(tmp_path / "x", suite, spec)


def test_moss_hallucination_adds_40_characters(tmp_path, suite):
    workload = suite.workload("moss_td/googletime")
    target = utterance_ids(workload)[3]
    plain = write_example_tree(tmp_path / "plain", suite, ExampleSpec(models=("moss_td",), runs=("1",), flip_rate=0.0))
    knobs = write_example_tree(tmp_path / "knobs", suite, ExampleSpec(models=("moss_td",), runs=("1",), flip_rate=0.0,
                                                                      hallucinate={"moss_td/googletime": target}))
    a = read_run_samples(plain / "run1", workload)["cer"]
    b = read_run_samples(knobs / "run1", workload)["cer"]
    assert b.crosscheck.status == MATCH
    assert (b.errors - a.errors).tolist() == [[0, 0, 0, 40] + [0] * 21]
