"""A calibration expires when the GPU, driver or package set changes (issue 11): `gate compare` reads the
stamp beside the calibration file (<name>.calibration-stamp.json) and compares it with the candidate tree's
env.json and freeze.txt. Stale: the report says why, speed rows compared across jobs (which WARN at most
anyway) give it as a reason, and every output says so in one line. No stamp: unknown, not stale. A malformed stamp: one error line, exit 2."""
from __future__ import annotations

import json
import shutil

import pytest
from click.testing import CliRunner

from gate.cli import cli
from gate.examples import CANDIDATE_COMMIT, DEFAULT_FREEZE
from gate.formats.calibration_stamp import packages_digest
from gate.formats.reasons import CannotFail
from gate.formats.report import Report

QWEN_EN = "qwen3/asr_en"
H100 = {"gpu": "NVIDIA H100 80GB HBM3", "driver": "550.54.15", "packages_sha256": None}
H200 = {"name": "NVIDIA H200", "driver_version": "580.65.06"}
GATED_SLOW = {(QWEN_EN, "throughput_samples_per_s"), (QWEN_EN, "latency_p95_s")}


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def store(make_tree, tmp_path_factory):
    """A baseline file calibrated from three cross-job A/A pairs (the job-to-job spread a WARN across jobs needs)."""
    path = tmp_path_factory.mktemp("store") / "h200" / "qwen3.json"
    path.parent.mkdir()
    assert invoke("baseline", "create", make_tree("base"), "--out", path).exit_code == 0
    pairs = [arg for k in range(3) for arg in ("--cross-job", make_tree(f"xaa{k}a", seed=40 + 2 * k),
                                               make_tree(f"xaa{k}b", seed=41 + 2 * k))]
    result = invoke("baseline", "calibrate", *pairs, "--baseline", path)
    assert result.exit_code == 0, result.output
    return path


@pytest.fixture(scope="module")
def h200_candidate(make_tree, tmp_path_factory):
    """A candidate 25% slower on qwen3/asr_en, measured on an H200 (env.json in every run)."""
    tree = shutil.copytree(make_tree("stale-slow", seed=5, commit=CANDIDATE_COMMIT, speed_factor={QWEN_EN: 0.75}),
                           tmp_path_factory.mktemp("h200") / "candidate")
    for run in ("runwarm", "run1", "run2", "run3"):
        (tree / run / "env.json").write_text(json.dumps({"schema_version": 1, "gpu": H200}), encoding="utf-8")
    return tree


@pytest.fixture
def calibration(store, tmp_path):
    """A copy of the calibrated baseline file; `stamp(doc)` writes the stamp beside it (a dict, or raw text)."""
    path = shutil.copy(store, tmp_path / "qwen3.json")

    def stamp(doc):
        text = doc if isinstance(doc, str) else json.dumps(doc)
        (tmp_path / "qwen3.calibration-stamp.json").write_text(text, encoding="utf-8")
    return path, stamp


def judge(base, candidate, tmp_path, *extra):
    out = {name: tmp_path / name for name in ("report.json", "comment.md", "summary.md")}
    result = invoke("compare", base, candidate, "--json", out["report.json"], "--comment", out["comment.md"],
                    "--summary", out["summary.md"], *extra)
    assert result.exit_code in (0, 1), result.output
    report = Report.from_json(json.loads(out["report.json"].read_text(encoding="utf-8")))
    return result, report, [out[n].read_text(encoding="utf-8") for n in ("comment.md", "summary.md")]


def verdicts(report):
    return {(r.workload, r.metric): r.verdict.value for r in report.rows}


def test_an_h100_calibration_is_stale_against_an_h200_tree_and_cannot_fail_across_jobs(calibration, h200_candidate,
                                                                                       tmp_path):
    path, stamp = calibration
    stamp(H100)
    result, report, markdown = judge(path, h200_candidate, tmp_path)
    (check,) = report.calibration_checks
    assert (check.source, check.status, check.blocks_fail) == ("qwen3.json", "stale", True)
    gpu = f"GPU {H100['gpu']} then, {H200['name']} now"  # what the stamp says against what the tree's env.json says
    assert check.reasons == (gpu, f"driver {H100['driver']} then, {H200['driver_version']} now")
    assert {verdicts(report)[k] for k in GATED_SLOW} == {"warn"} and result.exit_code == 0
    assert all(v != "fail" for (_, metric), v in verdicts(report).items() if "latency" in metric or "throughput" in metric)
    slow = next(r for r in report.rows if (r.workload, r.metric) == (QWEN_EN, "throughput_samples_per_s"))
    assert slow.cannot_fail == (CannotFail.ACROSS_JOBS, CannotFail.CALIBRATION_STALE)
    line = ("Calibration stale: qwen3.json was measured elsewhere (GPU NVIDIA H100 80GB HBM3 then, NVIDIA H200 now; "
            "driver 550.54.15 then, 580.65.06 now): speed rows compared across jobs still judge by its σ (and WARN at "
            "most).")
    assert result.stdout.count("Calibration stale") == 1 and line in result.stdout
    for text in markdown:
        assert text.count("Calibration stale") == 1 and f"⚠️ **{line.replace(':', ':**', 1)}" in text


def test_with_a_matching_stamp_nothing_is_said(calibration, h200_candidate, tmp_path):
    """Across jobs the 25% slowdown WARNs whatever the stamp says (a whole slow job looks the same); a fresh
    stamp adds no reason to the rows and no line to the outputs."""
    path, stamp = calibration
    stamp({"gpu": H200["name"], "driver": H200["driver_version"],
           "packages_sha256": packages_digest("".join(line + "\n" for line in DEFAULT_FREEZE))})
    result, report, markdown = judge(path, h200_candidate, tmp_path)
    assert [(c.status, c.reasons, c.blocks_fail) for c in report.calibration_checks] == [("fresh", (), False)]
    assert {verdicts(report)[k] for k in GATED_SLOW} == {"warn"} and result.exit_code == 0
    slow = next(r for r in report.rows if (r.workload, r.metric) == (QWEN_EN, "throughput_samples_per_s"))
    assert slow.cannot_fail == (CannotFail.ACROSS_JOBS,)
    assert all("stale" not in text.lower() for text in (result.stdout, *markdown))
    # Why speed can only WARN here is said once, in the header of every output
    header = next(line for line in result.stdout.splitlines() if line.startswith("Compared across jobs "))
    assert result.stdout.count("Compared across jobs") == 1 and "speed checks can WARN" in header and header.endswith("can FAIL on speed.")
    assert all(text.count("ℹ️ **Compared across jobs**") == 1 for text in markdown)


def test_a_missing_stamp_is_unknown_not_stale(calibration, h200_candidate, tmp_path):
    path, _ = calibration
    result, report, markdown = judge(path, h200_candidate, tmp_path)
    (check,) = report.calibration_checks
    assert check.status == "unknown" and "qwen3.calibration-stamp.json" in check.reasons[0] and not check.blocks_fail
    assert {verdicts(report)[k] for k in GATED_SLOW} == {"warn"}
    assert all("stale" not in text.lower() for text in (result.stdout, *markdown))


def test_another_package_set_is_stale(calibration, h200_candidate, tmp_path):
    path, stamp = calibration
    stamp({"gpu": H200["name"], "driver": H200["driver_version"], "packages_sha256": "0" * 64})
    _, report, _ = judge(path, h200_candidate, tmp_path)
    [(status, (reason,))] = [(c.status, c.reasons) for c in report.calibration_checks]
    assert status == "stale" and reason.startswith("a different package set") and reason.endswith(" now")
    assert {verdicts(report)[k] for k in GATED_SLOW} == {"warn"}


def test_in_one_job_a_stale_calibration_is_reported_and_not_used(calibration, make_tree, h200_candidate, tmp_path):
    """Two trees of one A/B job with --calibration stamped on another GPU: a σ measured elsewhere is not used in
    one job (as `gate run` does for its looks, so the runner, CI and a hand compare agree); every speed row
    says so, and the outputs say the calibration is stale."""
    path, stamp = calibration
    stamp(H100)
    base = shutil.copytree(make_tree("base"), tmp_path / "base")
    for run in ("runwarm", "run1", "run2", "run3"):
        (base / run / "env.json").write_text(json.dumps({"schema_version": 1, "gpu": H200}), encoding="utf-8")
    result, report, markdown = judge(base, h200_candidate, tmp_path, "--calibration", path)
    (check,) = report.calibration_checks
    assert check.status == "stale" and not check.blocks_fail
    speed = [row for row in report.rows if row.kind == "speed"]
    gated = [row for row in speed if "shown, not gated" not in row.notes]
    gpu = f"GPU {H100['gpu']} then, {H200['name']} now"
    assert check.reasons[0] == gpu
    said = f"not used in this job: {'; '.join(check.reasons)}"
    assert gated and all(any(n.startswith("calibration stale, ") and n.endswith(said) for n in row.notes) for row in gated)
    assert all(row.sigma is None or "A/A" not in row.method for row in speed)  # no calibrated σ in use
    stale = next(line for line in result.stdout.splitlines() if line.startswith("Calibration stale: "))
    assert "; in one job it is not used: " in stale and stale.endswith("by what the job measured.")
    assert all(text.count("Calibration stale") == 1 for text in markdown)
    assert all("Compared across jobs" not in text for text in (result.stdout, *markdown))  # one job: it can FAIL


@pytest.mark.parametrize("text, words", [
    ('{"gpu": "NVIDIA H100", "driver": null', "not valid JSON"),
    ('{"gpu": "NVIDIA H100", "gpu": "NVIDIA H200", "driver": null, "packages_sha256": null}', "duplicate key 'gpu'"),
    ('{"gpu": 100, "driver": null, "packages_sha256": null}', "$.gpu: expected a string or null"),
    ('{"gpu": "NVIDIA H100", "packages_sha256": null}', "$: missing key 'driver'"),
    ('{"gpu": null, "driver": null, "packages_sha256": "abc"}', "$.packages_sha256: expected a string matching [0-9a-f]{64}"),
    ('["NVIDIA H100"]', "$: expected an object"),
    ('{"gpu": null, "driver": null, "packages_sha256": null, "gpus": 8}', '$: unexpected key "gpus"'),
])
def test_a_malformed_stamp_is_one_error_line(calibration, h200_candidate, text, words):
    path, stamp = calibration
    stamp(text)
    result = invoke("compare", path, h200_candidate)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.output
    assert lines[0].startswith(f"gate: error: {path.parent / 'qwen3.calibration-stamp.json'}: ") and words in lines[0]
