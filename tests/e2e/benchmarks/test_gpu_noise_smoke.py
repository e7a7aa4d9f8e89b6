"""Smoke of benchmarks/gpu_noise.py (issue 11, item 6): a real CPU study of 3 fresh processes (needs torch),
the committed GPU study re-analysed from its raw runs (no torch), and bad input. The GPU study itself is for
people with a GPU: `python benchmarks/gpu_noise.py --device cuda --runs 24 --budget-s 380 --out benchmarks/results`.
"""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "benchmarks" / "gpu_noise.py"
RESULTS = ROOT / "benchmarks" / "results"
sys.path.insert(0, str(ROOT / "benchmarks"))

import gpu_noise  # noqa: E402
from noise import analysis  # noqa: E402


def run_script(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def check_study_figures(study: dict) -> None:
    """The summary's figures are the analysis functions applied to the raw runs, in run order."""
    done = [r for r in study["runs"] if r["ok"]]
    summary = study["summary"]
    assert summary["runs_finished"] == len(done)
    for key in ("throughput_rps", "p95_latency_s"):
        m = summary["metrics"][key]
        y = np.log([r["scored"][key] for r in done])
        sigma = analysis.sigma_with_ci(y[1:])
        assert m["sigma_run"]["sd"] == pytest.approx(sigma.sd)
        assert m["sigma_run"]["ci_low"] <= m["sigma_run"]["sd"] <= m["sigma_run"]["ci_high"]
        assert m["first_run"]["delta"] == pytest.approx(y[0] - y[1:].mean())
        warm = np.log([r["warmup"][key] for r in done])
        assert m["warmup_pass_effect"]["delta"] == pytest.approx(float(np.mean(y - warm)))
        assert m["mde_3v3_percent"] == pytest.approx(100 * math.expm1(3.21 * sigma.sd))
        if m["trend_per_run"] is not None:
            assert m["trend_per_run"]["delta"] == pytest.approx(analysis.trend(y[1:]).delta)
            assert m["lag1"]["r1"] == pytest.approx(analysis.lag1_autocorrelation(y[1:]).r1)
            assert m["sigma_run_robust"] == pytest.approx(analysis.robust_sigma(y[1:]))
    for run in done:
        s = run["scored"]
        assert s["throughput_rps"] == pytest.approx(s["requests"] / s["duration_s"])
        assert 0 < s["p50_latency_s"] <= s["p95_latency_s"] <= s["duration_s"]
        assert s["output_tokens"] == run["warmup"]["output_tokens"]


@pytest.mark.slow  # three fresh processes each import torch: ~15 s on an idle machine
def test_cpu_study_end_to_end(tmp_path):
    pytest.importorskip("torch")
    done = run_script("--device", "cpu", "--runs", "3", "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr[-3000:]
    study = json.loads((tmp_path / "gpu_noise.json").read_text(encoding="utf-8"))
    assert [r["index"] for r in study["runs"]] == [1, 2, 3] and all(r["ok"] for r in study["runs"])
    assert study["environment"]["device_type"] == "cpu" and study["config"]["requests"] == 24
    check_study_figures(study)
    # fp32 on one CPU thread, same seed, same schedule: every process makes the same tokens.
    det = study["summary"]["determinism"]
    assert det["distinct_scored_outputs"] == 1
    assert all(det[f"requests_changed_vs_{other}_max"] == 0 for other in ("run1", "warmup"))
    table = (tmp_path / "gpu_noise.md").read_text(encoding="utf-8")
    assert "| throughput (req/s) |" in table and "| p95 latency (s) |" in table
    assert done.stdout.strip().endswith(table.strip().splitlines()[-1])


def assert_same_figures(got, want, where: str = "summary") -> None:
    """Equal structure and values; floats equal to 1e-9 relative (numpy builds differ in the last bits)."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and got.keys() == want.keys(), where
        for key in want:
            assert_same_figures(got[key], want[key], f"{where}.{key}")
    elif isinstance(want, float):
        assert got == pytest.approx(want, rel=1e-9, abs=1e-12), where
    else:
        assert got == want, where


def test_committed_gpu_study_reanalyses_to_itself(tmp_path):
    committed = json.loads((RESULTS / "gpu_noise.json").read_text(encoding="utf-8"))
    assert committed["environment"]["device_type"] == "cuda"
    for field in ("gpu_name", "driver", "torch"):
        assert committed["environment"][field]
    assert committed["summary"]["runs_finished"] >= 16  # σ_run on df >= 15 (the study targets 20+; see README)
    check_study_figures(committed)
    assert gpu_noise.main(["--reanalyse", str(RESULTS / "gpu_noise.json"), "--out", str(tmp_path)]) == 0
    again = json.loads((tmp_path / "gpu_noise.json").read_text(encoding="utf-8"))
    # The study is computed on the GPU machine; its numpy may differ in the last bits from this one's.
    assert_same_figures(again["summary"], committed["summary"])
    assert (tmp_path / "gpu_noise.md").read_text(encoding="utf-8") == \
        (RESULTS / "gpu_noise.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("content, message", [
    ("not json", "Expecting value"),
    ('{"schema": "other", "runs": []}', "expected a gpu-noise/1 study"),
])
def test_reanalyse_bad_file_is_one_line_exit_2(tmp_path, capsys, content, message):
    bad = tmp_path / "bad.json"
    bad.write_text(content, encoding="utf-8")
    assert gpu_noise.main(["--reanalyse", str(bad), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(bad) in err and message in err
    assert not (tmp_path / "out").exists()
