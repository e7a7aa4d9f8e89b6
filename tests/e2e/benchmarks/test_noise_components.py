"""Variance components of nested runs (issue 37, benchmarks/noise/components.py): known answers, the estimator
on synthetic data with known σ_start and σ_pass, and the harness's plumbing without a GPU (benchmarks/noise/nested.py).
"""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))

from noise import components  # noqa: E402


def test_one_way_known_answer():
    # Starts at 0, 1, 2 with passes −0.5, +0.5, 0 around them.
    y = np.array([[-0.5, 0.5, 0.0], [0.5, 1.5, 1.0], [1.5, 2.5, 2.0]])
    comp = components.one_way(y)
    msw = (0.25 + 0.25) * 3 / (3 * 2)  # each start: squares 0.25, 0.25, 0 over df 3·2
    msb = 3 * (1 + 0 + 1) / 2  # P·Σ(ȳ_k − ȳ)²/(K − 1)
    assert comp.df_pass == 6 and comp.df_start == 2
    assert comp.sigma_pass.estimate == pytest.approx(math.sqrt(msw))
    assert comp.sigma_start.estimate == pytest.approx(math.sqrt((msb - msw) / 3))
    assert comp.sigma_pass.low < comp.sigma_pass.estimate < comp.sigma_pass.high
    assert comp.sigma_start.low < comp.sigma_start.estimate < comp.sigma_start.high


def test_start_variance_below_pass_noise_is_zero_not_negative():
    y = np.array([[0.0, 1.0], [1.0, 0.0], [0.0, 1.0]])  # start means equal: MSB = 0 < MSW
    comp = components.one_way(y)
    assert comp.sigma_start.estimate == 0.0 and comp.sigma_start.low == 0.0


def test_one_way_rejects_a_single_start_or_pass():
    with pytest.raises(ValueError):
        components.one_way(np.zeros((1, 4)))
    with pytest.raises(ValueError):
        components.one_way(np.zeros((4, 1)))


@pytest.mark.parametrize("sigma_start", [0.005, 0.02])
def test_estimator_recovers_known_components_and_intervals_cover(sigma_start):
    rng = np.random.default_rng(37)
    sigma_pass, k, p, reps = 0.025, 8, 4, 400
    start_hits = pass_hits = 0
    start_var, pass_var = [], []
    for _ in range(reps):
        y = rng.normal(0, sigma_start, (k, 1)) + rng.normal(0, sigma_pass, (k, p))
        comp = components.one_way(y)
        pass_var.append(comp.sigma_pass.estimate ** 2)
        start_var.append(comp.sigma_start.estimate ** 2)
        start_hits += comp.sigma_start.low <= sigma_start <= comp.sigma_start.high
        pass_hits += comp.sigma_pass.low <= sigma_pass <= comp.sigma_pass.high
    assert np.mean(pass_var) == pytest.approx(sigma_pass ** 2, rel=0.05)  # MSW is unbiased
    # max(0, ·) biases σ_start² up a little where it is small; the ANOVA estimate is within 15% at 2%
    if sigma_start == 0.02:
        assert np.mean(start_var) == pytest.approx(sigma_start ** 2, rel=0.15)
    assert 0.92 <= pass_hits / reps <= 0.98
    assert 0.90 <= start_hits / reps <= 0.99  # the MLS interval keeps about its 95%


def test_optimal_passes_follows_cost_and_variance_ratio():
    # σ_start = σ_pass, a start costs 4 passes: P* = √4 = 2
    assert components.optimal_passes(0.02, 0.02, 4.0, 1.0) == 2
    assert components.optimal_passes(0.01, 0.03, 9.0, 1.0) == 9  # √9 · 3 = 9
    assert components.optimal_passes(0.0, 0.02, 4.0, 1.0, cap=16) == 16  # no start effect: passes are free signal
    assert components.optimal_passes(0.02, 0.0, 4.0, 1.0) == 1


def test_job_effect_zero_for_identical_machines_and_positive_when_apart():
    comp = components.one_way(np.array([[0.0, 0.01], [0.01, 0.0], [0.005, 0.005]]))
    same = components.job_effect([comp, comp])
    assert same is not None and same.estimate == 0.0
    moved = components.one_way(np.array([[0.1, 0.11], [0.11, 0.1], [0.105, 0.105]]))
    apart = components.job_effect([comp, moved])
    assert apart is not None and apart.estimate > 0.05
    assert components.job_effect([comp]) is None


def test_pooled_components_remove_machine_means_and_add_their_degrees_of_freedom():
    y = np.array([[-0.5, 0.5, 0.0], [0.5, 1.5, 1.0], [1.5, 2.5, 2.0]])
    one = components.one_way(y)
    both = components.pooled([y, y + 7.0])  # a second machine 7 log units away: its level is not start noise
    assert both.starts == 6 and both.df_start == 4 and both.df_pass == 12
    assert both.sigma_pass.estimate == pytest.approx(one.sigma_pass.estimate)
    assert both.sigma_start.estimate == pytest.approx(one.sigma_start.estimate)
    assert both.sigma_start.high - both.sigma_start.low < one.sigma_start.high - one.sigma_start.low
    with pytest.raises(ValueError):
        components.pooled([y, np.zeros((3, 2))])


def test_machine_difference_is_welch_on_start_means():
    rng = np.random.default_rng(4)
    y1 = rng.normal(0.0, 0.02, (10, 1)) + rng.normal(0.0, 0.02, (10, 4))
    y2 = y1[:8] + 0.03
    d = components.machine_difference(y1, y2)
    m1, m2 = y1.mean(axis=1), y2.mean(axis=1)
    assert d["difference"] == pytest.approx(m2.mean() - m1.mean())
    assert d["low"] < d["difference"] < d["high"]
    same = components.machine_difference(y1, y1)
    assert same["difference"] == 0.0 and same["p_two_sided"] == pytest.approx(1.0)


def test_same_gpu_machines_get_their_own_job_effect_and_pooled_components():
    def study(label: str, gpu: str, shift: float, seed: int) -> dict:
        rng = np.random.default_rng(seed)
        starts = [{"start": k, "wall_s": 20.0, "ready_s": 3.0,
                   "passes": [{"throughput": float(80 * math.exp(shift + a + rng.normal(0, 0.02))), "wall_s": 2.3,
                               "p95_s": 0.5, "skipped": 0} for _ in range(4)]}
                  for k, a in enumerate(rng.normal(0, 0.02, 6))]
        return {"machine_label": label, "machine": {"gpu": f"{gpu}, GPU-{label}", "boot_id": label},
                "started": "t", "configs": [{"name": "graphs-b32", "passes_per_start": 4, "starts": starts}]}
    result = components.analyse([study("A", "NVIDIA H200", 0.0, 1), study("B", "NVIDIA H100 80GB HBM3", 0.1, 2),
                                 study("C", "NVIDIA H200", 0.02, 3)])
    (group,) = result["same_gpu"]["graphs-b32"]
    assert group["gpu_model"] == "NVIDIA H200" and group["machines"] == ["A", "C"]
    assert group["pairs"][0]["first"] == "A" and group["pairs"][0]["second"] == "C"
    assert group["pooled"]["starts"] == 12 and group["pooled"]["machine"] == "A+C"
    assert [r["machine"] for r in result["minutes"]] == ["A", "B", "C", "A+C"]
    assert "Machines of one GPU model" in components.markdown(result)


def _block(side: str, throughput: float) -> dict:
    return {"side": side, "throughput": throughput, "wall_s": 1.0, "p95_s": 0.1, "skipped": 0}


def test_duet_pairs_take_a_minus_b_whatever_the_order():
    # ABBA blocks with A always 3% faster: every pair says ln A − ln B = ln 1.03
    blocks = [_block("A", 103.0), _block("B", 100.0), _block("B", 100.0), _block("A", 103.0)]
    session = {"blocks": blocks, "wall_s": 10.0}
    summary = components.duet_summary({"slow_b": 0.03, "sessions": [session, session]})
    assert summary is not None and summary["n"] == 2
    assert summary["mean_diff"] == pytest.approx(math.log(1.03))
    assert summary["session_sd"].estimate == 0.0


def test_harness_and_analysis_without_a_gpu(tmp_path, monkeypatch):
    """The stand-in server without the decoder: the plumbing (starts, passes, duet blocks) and the JSON."""
    from noise import nested
    monkeypatch.setenv("NESTED_WORK", str(tmp_path / "work"))
    code = nested.main(["--out", str(tmp_path), "--no-decoder", "--configs", "graphs-b1", "--passes", "2",
                        "--max-starts", "2", "--budget-s", "1", "--duet-s", "1", "--duet-pairs", "1"])
    assert code == 0
    study = json.loads((tmp_path / "nested-A.json").read_text())
    starts = study["configs"][0]["starts"]
    assert len(starts) == 2 and all(len(s["passes"]) == 2 and "error" not in s for s in starts)
    assert [b["side"] for b in study["duet"]["sessions"][0]["blocks"]] == ["A", "B"]
    result = components.analyse([study])
    assert result["configs"]["graphs-b1"][0]["starts"] == 2
    assert result["duet"][0]["n"] == 2


@pytest.mark.gpu
def test_harness_on_the_gpu_measures_starts_passes_and_a_slower_duet_build(tmp_path, monkeypatch):
    """On a GPU machine: the decoder behind the stand-in, two starts × two passes, one A/B duet session of the −3%
    build (what docs/benchmarks.md's study ran, sized to about a minute)."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    from noise import nested
    monkeypatch.setenv("NESTED_WORK", str(tmp_path / "work"))
    code = nested.main(["--out", str(tmp_path), "--configs", "graphs-b1", "--passes", "2", "--max-starts", "2",
                        "--budget-s", "1", "--duet-ab-s", "1", "--duet-pairs", "2"])
    assert code == 0
    study = json.loads((tmp_path / "nested-A.json").read_text())
    starts = study["configs"][0]["starts"]
    assert len(starts) == 2 and all("error" not in s and s["ready_s"] > 0 for s in starts)
    assert study["duet_ab"]["slow_b"] == pytest.approx(0.0309)
    assert all("error" not in s for s in study["duet_ab"]["sessions"])


def test_gate_ab_harness_plumbing_without_a_gpu(tmp_path):
    """benchmarks/noise/gate_ab_gpu.py with --plumbing (no decoder, gate run --no-gpu): one A/A gate run --ab of
    whisper end to end, its cycles counted from gate-run.json and its verdict from gate compare. The stand-in's
    throughput is this machine's wall clock over 4 utterances, so an A/A may WARN on a busy CI runner (one did,
    at 16% apart); it must never FAIL."""
    from noise import gate_ab_gpu
    assert gate_ab_gpu.main(["--out", str(tmp_path / "out"), "--work", str(tmp_path / "w"), "--plumbing",
                             "--utterances", "4", "--only", "aa"]) == 0
    (run,) = json.loads((tmp_path / "out" / "gate-ab-gpu.json").read_text())["runs"]
    assert run["gate_run_exit"] == 0 and run["compare_exit"] == 0, run
    assert run["base"]["server_starts"] >= 8 and run["base"]["looks"]["whisper"]["final"] == "pass"
    verdict = (tmp_path / "out" / "compare-aa.txt").read_text().splitlines()[0]
    assert verdict.startswith(("ASR regression gate: PASS", "ASR regression gate: WARN")), verdict
