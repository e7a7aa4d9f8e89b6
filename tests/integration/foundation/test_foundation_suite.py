"""The suite loader's errors: one line naming the file and the key; the CLI exits 2 without a traceback."""
from __future__ import annotations

from pathlib import Path

import pytest

from gate.formats.config import default_suite_path, load_suite
from gate.formats.errors import SuiteError


def _variant(tmp_path: Path, old: str, new: str) -> Path:
    text = default_suite_path().read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / "suite.yaml"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return path


def test_the_packaged_suite_has_the_ten_runbook_workloads(suite):
    assert [w.expected_samples for w in suite.workloads] == [1088, 2020] * 3 + [800, 800, 20, 25]
    assert suite.warm_run == "warm" and suite.scored_runs == ("1", "2", "3")


@pytest.mark.parametrize("old, new, words", [
    ("name: asr\n", "name: asr\nnmae: typo\n", "nmae: unknown key"),
    ("  port: 8000\n", "  port: 8000\n  prot: 1\n", "server.prot: unknown key"),
    ("expected_samples: 1088,", "expected_samples: -1,", "workloads[0].expected_samples: expected a positive integer"),
    ("kind: accuracy, samples: wer,", "kind: acuracy, samples: wer,", "kind: expected one of"),
    ("samples: wer, plausible: [0, 10]}", "samples: wer, plausible: [0]}", "metrics[0].plausible: expected [min, max]"),
    ("samples: wer, plausible: [0, 10]}", "samples: wer, plausible: [1, 0.5]}", "max a number above min"),
    ("    cp_cer: 0.001\n", "    cp_cer: 0.001\n  speed_ratio: 0.03\n", "policy.speed_ratio: no longer read"),
    ("schema_version: 1\n", "schema_version: 2\n", "schema_version: expected 1"),
    ("runs:\n  warm: warm\n", "runs: [\n  warm: warm\n", "not valid YAML at line"),
])
def test_malformed_suites_name_file_and_key(tmp_path, old, new, words):
    path = _variant(tmp_path, old, new)
    with pytest.raises(SuiteError) as info:
        load_suite(path)
    message = str(info.value)
    assert message.startswith(str(path)) and words in message and "\n" not in message


def test_cli_reports_a_bad_suite_in_one_line(tmp_path, invoke, complete_tree):
    path = _variant(tmp_path, "name: asr\n", "name: asr\nnmae: typo\n")
    result = invoke("summarize", complete_tree, "--suite", path)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"gate: error: {path}: nmae: unknown key; expected one of schema_version, name,")
    assert result.stderr.endswith(": fix the spelling\n") and result.stderr.count("\n") == 1


def test_plausible_ranges_come_from_the_suite(suite):
    qwen3 = suite.workload("qwen3/asr_en")
    assert qwen3.metric("corpus_wer").bounds(qwen3.expected_samples) == (0.0, 10.0)
    assert qwen3.metric("latency_p95_s").bounds(qwen3.expected_samples) == (0.0001, 86400.0)
    moss = suite.workload("moss_td/googletime")
    assert moss.metric("cer_valid_samples").bounds(moss.expected_samples) == (0.0, 25.0)  # at most the dataset
