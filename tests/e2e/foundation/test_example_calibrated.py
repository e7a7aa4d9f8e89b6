"""`gate example OUT` writes OUT/baseline.json, calibrated from synthetic A/A pairs: compared against it,
the planted regression still FAILs (now with p-values) and every noise-only row passes."""
from __future__ import annotations

import json

import pytest

from gate.examples import AA_PAIRS, BASELINE_COMMIT
from gate.formats.noise_model import Calibration, Dispersion
from gate.reading.baseline_file import read_baseline

PLANTED = "qwen3/asr_en"


@pytest.mark.slow  # the calibrated `gate example` (A/A pairs generated and judged)
def test_example_baseline_file_is_calibrated_from_aa_pairs(example_out, suite):
    out, result = example_out
    assert result.exit_code == 0, result.stderr
    assert (f"next: gate compare {out / 'baseline'} {out / 'candidate'} --calibration {out / 'baseline.json'}"
            in result.stdout)
    assert f"  or: gate compare {out / 'baseline.json'} {out / 'candidate'}" in result.stdout
    side = read_baseline(out / "baseline.json", suite)
    assert side.commit == BASELINE_COMMIT and len(side.workloads) == len(suite.workloads)
    speed = [m.name for w in suite.workloads for m in w.metrics if m.kind == "speed"]
    calibrated = [m for metrics in side.calibration.values() for m, cal in metrics.items() if isinstance(cal, Calibration)]
    assert sorted(calibrated) == sorted(speed)
    # the A/A pairs also give each accuracy row its dispersion record (same-commit churn), so accuracy can FAIL
    assert any(isinstance(cal, Dispersion) for metrics in side.calibration.values() for cal in metrics.values())
    for metrics in side.calibration.values():
        for cal in metrics.values():
            if not isinstance(cal, Calibration):
                continue
            assert cal.df == 4 * AA_PAIRS  # 3 + 3 runs per pair
            # the generator's run-to-run noise is 1% (ExampleSpec.speed_sigma); p95 and streaming figures spread more
            assert 0.004 < cal.sigma < 0.03
    assert not (out / "aa").exists()  # the A/A trees are removed once calibrated
    assert "A/A" in (out / "README.txt").read_text(encoding="utf-8")


@pytest.mark.slow  # the calibrated `gate example` (A/A pairs generated and judged)
def test_planted_regression_fails_and_noise_passes_against_the_calibrated_baseline(example_out, invoke, tmp_path):
    out, _ = example_out
    report_path = tmp_path / "report.json"
    result = invoke("compare", out / "baseline.json", out / "candidate", "--json", report_path)
    assert result.exit_code == 1, result.output
    report = json.loads(report_path.read_text(encoding="utf-8"))
    assert report["baseline"]["calibrated"] is True
    failed = {(r["workload"], r["metric"]) for r in report["rows"] if r["verdict"] == "fail"}
    # WER (40 extra errors) FAILs. The 6% slowdown is judged across jobs (a baseline file is another job):
    # its SE carries the spread of the 3 cross-job A/A pairs, and both gated speed rows, p < 0.01, WARN: across
    # jobs a whole job running slower looks the same as a regression (gate.judging.speed_rows.speed_blockers); gate
    # run's A/B in one job is the one that blocks on speed.
    assert failed == {(PLANTED, "corpus_wer")}
    slow = [r for r in report["rows"] if r["workload"] == PLANTED and r["family"] == "speed"]
    assert len(slow) == 2 and all(r["p_value"] < 0.01 and "across jobs" in r["method"] for r in slow)
    assert {r["metric"]: r["verdict"] for r in slow} == {"throughput_samples_per_s": "warn", "latency_p95_s": "warn"}
    assert all("across_jobs" in r["cannot_fail"] for r in slow)
    others = [r for r in report["rows"] if r["workload"] != PLANTED]
    assert others and all(r["verdict"] == "pass" for r in others)
    speed = [r for r in report["rows"] if r["kind"] == "speed"]
    assert all(r["p_value"] is not None and not r["method"].startswith("uncalibrated") for r in speed)
    # The terminal shows the failing rows and not the passing ones.
    assert "uncalibrated" not in result.stdout and "Worse beyond noise and above the floors: qwen3/asr_en" in result.stdout
    assert "whisper/asr_en" not in result.stdout.split("Why:")[0]


@pytest.mark.slow  # the calibrated `gate example` (A/A pairs generated and judged)
def test_the_ab_comparison_a_pr_gets_fails_the_slowdown_too(example_out, invoke, tmp_path):
    """In one job (two trees, the calibration lent by the baseline file) the 6% slowdown FAILs on both gated
    speed rows, beside the WER regression; mean latency and RTF are shown, not gated."""
    out, _ = example_out
    report_path = tmp_path / "report.json"
    result = invoke("compare", out / "baseline", out / "candidate", "--calibration", out / "baseline.json",
                    "--json", report_path)
    assert result.exit_code == 1, result.output
    report = json.loads(report_path.read_text(encoding="utf-8"))
    failed = {(r["workload"], r["metric"]) for r in report["rows"] if r["verdict"] == "fail"}
    assert failed == {(PLANTED, "corpus_wer"), (PLANTED, "throughput_samples_per_s"), (PLANTED, "latency_p95_s")}
    assert all(r["verdict"] == "pass" for r in report["rows"] if r["workload"] != PLANTED)
