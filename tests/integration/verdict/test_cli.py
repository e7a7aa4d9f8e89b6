"""`gate compare` and `gate baseline` through the real click group: exit codes, files, one-line errors."""
from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from gate.cli import cli
from gate.examples import CANDIDATE_COMMIT, DEFAULT_FREEZE
from gate.reading.baseline_file import read_baseline
from gate.reading.tree_side import side_from_tree
from gate.stats.speed import ADVISED_PAIRS

QWEN_EN = "qwen3/asr_en"
SCHEMA = json.loads((Path(__file__).parents[3] / "gate" / "schemas" / "report.schema.json").read_text(encoding="utf-8"))


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def _error_line(result) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("gate: error: "), result.stderr
    assert "Traceback" not in result.output
    return lines[0]


@pytest.fixture(scope="module")
def calibrated_baseline(make_tree, tmp_path_factory):
    base = make_tree("base")
    path = tmp_path_factory.mktemp("baselines") / "h200-qwen3.json"
    assert invoke("baseline", "create", base, "--out", path).exit_code == 0
    result = invoke("baseline", "calibrate", make_tree("aa1", seed=21), make_tree("aa2", seed=22),
                    make_tree("aa3", seed=23), make_tree("aa4", seed=24), "--baseline", path)
    assert result.exit_code == 0, result.output
    return path


def test_a_tree_compared_with_itself_is_refused(make_tree):
    """Issue 38: its runs are the same measurements on both sides (gate.reading.copies), never a pass."""
    tree = make_tree("base")
    result = invoke("compare", tree, tree)
    assert result.exit_code == 2, result.output
    assert "measures exactly what" in _error_line(result)


def test_two_measurements_of_one_commit_exit_0(make_tree):
    result = invoke("compare", make_tree("base"), make_tree("base-again", seed=2))
    assert result.exit_code == 0, result.output
    assert "Verdict: pass" in result.stdout


def test_regression_exits_1_and_writes_every_output(make_tree, calibrated_baseline, tmp_path):
    cand = make_tree("slow-diffuse", seed=1, commit=CANDIDATE_COMMIT, speed_factor={QWEN_EN: 0.94},
                     extra_errors={QWEN_EN: 40})
    out = {name: tmp_path / name for name in ("report.json", "comment.md", "summary.md")}
    result = invoke("compare", calibrated_baseline, cand, "--json", out["report.json"], "--comment", out["comment.md"],
                    "--summary", out["summary.md"], "--format", "markdown")
    assert result.exit_code == 1, result.output
    report = json.loads(out["report.json"].read_text(encoding="utf-8"))
    jsonschema.validate(report, SCHEMA)
    failing = {(r["workload"], r["metric"]) for r in report["rows"] if r["verdict"] == "fail"}
    assert failing == {(QWEN_EN, "corpus_wer")}
    speed = next(r for r in report["rows"] if r["metric"] == "throughput_samples_per_s" and r["workload"] == QWEN_EN)
    # A stored baseline is another job: a 6% slowdown can only WARN there, and says why.
    assert speed["verdict"] == "warn" and speed["basis"] == "calibrated"
    assert "(df 16)" in speed["method"]  # 2 A/A pairs × 2 arms × (3 − 1), pooled over qwen3's two workloads
    assert speed["cannot_fail"] == ["across_jobs", "few_cross_pairs"] and speed["warn_cause"] == "beyond_noise"
    assert any(f"0 of the {ADVISED_PAIRS} cross-job A/A pairs" in n for n in speed["notes"])
    assert out["comment.md"].read_text(encoding="utf-8") == result.stdout
    assert "Per-run values" in out["summary.md"].read_text(encoding="utf-8")


def test_incomplete_exits_3(make_tree):
    cand = make_tree("defect-missing", seed=1, defects={QWEN_EN: "missing_file"})
    result = invoke("compare", make_tree("base"), cand)
    assert result.exit_code == 3 and "incomplete" in result.stdout


def test_not_comparable_exits_4_unless_allowed(make_tree):
    freeze = tuple("torch==2.12.0" if line.startswith("torch==") else line for line in DEFAULT_FREEZE)
    cand = make_tree("newtorch", seed=1, freeze=freeze)
    result = invoke("compare", make_tree("base"), cand)
    assert result.exit_code == 4 and "torch" in result.stdout
    assert invoke("compare", make_tree("base"), cand, "--allow-diff", "freeze").exit_code in (0, 1)


def test_missing_path_is_one_line_and_exit_2(make_tree, tmp_path):
    result = invoke("compare", tmp_path / "nope", make_tree("base"))
    assert result.exit_code == 2 and "no such file or directory" in _error_line(result)


def test_baseline_round_trip_gives_the_same_verdicts(make_tree, calibrated_baseline, suite):
    cand = make_tree("diffuse", seed=1, extra_errors={QWEN_EN: 22})
    # Both with the calibration: without an A/A dispersion record a churning accuracy row can WARN at most (issue 21).
    from_tree = json.loads(invoke("compare", make_tree("base"), cand, "--format", "json",
                                  "--calibration", calibrated_baseline).stdout)
    from_file = json.loads(invoke("compare", calibrated_baseline, cand, "--format", "json",
                                  "--calibration", calibrated_baseline).stdout)
    stored = read_baseline(calibrated_baseline, suite)
    tree = side_from_tree(make_tree("base"), suite)
    for workload_id, w in tree.workloads.items():
        assert stored.workloads[workload_id].values == w.values
        for measure, s in w.samples.items():
            assert stored.workloads[workload_id].samples[measure].ids == s.ids
            assert (stored.workloads[workload_id].samples[measure].errors == s.errors).all()
    assert stored.fingerprint == tree.fingerprint
    accuracy = lambda rep: [(r["workload"], r["verdict"], r["p_value"], r["delta_abs"]) for r in rep["rows"] if r["kind"] == "accuracy"]  # noqa: E731
    assert accuracy(from_tree) == accuracy(from_file)


@pytest.mark.parametrize("mutation, message", [
    (lambda d: d.update(schema_version=99), "schema_version is 99"),
    (lambda d: d.update(suite="tts"), "suite 'tts'"),
    (lambda d: d.update(kind="something"), "not a baseline file"),
    (lambda d: d["workloads"][QWEN_EN]["metrics"].update(rtf_mean=[1.0]), "expected 3 values"),
    (lambda d: d["workloads"][QWEN_EN].pop("runs"), 'malformed baseline: $.workloads["qwen3/asr_en"]: missing key \'runs\''),
])
def test_bad_baseline_files_are_one_line_and_exit_2(make_tree, calibrated_baseline, tmp_path, mutation, message):
    data = json.loads(calibrated_baseline.read_text(encoding="utf-8"))
    mutation(data)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data), encoding="utf-8")
    result = invoke("compare", bad, make_tree("base"))
    assert result.exit_code == 2 and message in _error_line(result)


def test_truncated_baseline_is_exit_2(make_tree, calibrated_baseline, tmp_path):
    bad = tmp_path / "cut.json"
    bad.write_text(calibrated_baseline.read_text(encoding="utf-8")[:500], encoding="utf-8")
    result = invoke("compare", bad, make_tree("base"))
    assert result.exit_code == 2 and "not valid JSON" in _error_line(result)


def test_calibrate_rejects_odd_trees_and_mixed_commits(make_tree, calibrated_baseline):
    result = invoke("baseline", "calibrate", make_tree("aa1", seed=21), "--baseline", calibrated_baseline)
    assert result.exit_code == 2 and "pairs of trees" in _error_line(result)
    other = make_tree("other-commit", seed=5, commit=CANDIDATE_COMMIT)
    result = invoke("baseline", "calibrate", make_tree("aa1", seed=21), other, "--baseline", calibrated_baseline)
    assert result.exit_code == 2 and "one commit twice" in _error_line(result)


def test_models_option_limits_the_comparison(make_tree):
    tree, other = make_tree("base"), make_tree("base-again", seed=2)
    result = invoke("compare", tree, other, "--models", "qwen3", "--format", "json")
    assert {r["model"] for r in json.loads(result.stdout)["rows"]} == {"qwen3"}
    result = invoke("compare", tree, other, "--models", "nosuchmodel")
    assert result.exit_code == 2 and "nosuchmodel" in _error_line(result)


def test_a_refreshed_baseline_keeps_the_calibration_it_replaces(make_tree, calibrated_baseline, suite, tmp_path):
    """The nightly writes a new baseline each night; its noise floor must survive the refresh."""
    fresh = tmp_path / "fresh.json"
    result = invoke("baseline", "create", make_tree("base"), "--out", fresh, "--keep-calibration", calibrated_baseline)
    assert result.exit_code == 0, result.output
    kept = read_baseline(fresh, suite).calibration
    assert kept and kept == read_baseline(calibrated_baseline, suite).calibration
    source = json.loads(fresh.read_text(encoding="utf-8"))["calibration_source"]
    assert source["carried_from"] == str(calibrated_baseline) and source["pairs"]
    # The first night has nothing to carry over: a missing file is ignored, the baseline is uncalibrated.
    first = tmp_path / "first.json"
    assert invoke("baseline", "create", make_tree("base"), "--out", first,
                  "--keep-calibration", tmp_path / "none.json").exit_code == 0
    assert read_baseline(first, suite).calibration == {}


def test_json_to_stdout_is_the_only_document_there(make_tree):
    """`--json -` leaves stdout one JSON document for a pipe; the terminal report moves to stderr."""
    result = invoke("compare", make_tree("base"), make_tree("base-again", seed=2), "--json", "-")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["verdict"] == "pass"
    assert "Verdict: pass" in result.stderr
