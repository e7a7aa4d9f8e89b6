"""CI smoke of benchmarks/verdict_power.py (issue 10): the simulator runs, its counts are consistent, and on
shared simulated PRs it decides exactly as gate.judging.compare does. The full run is for people:
`python benchmarks/verdict_power.py --validate 40 --out benchmarks/results`."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "benchmarks"))

import verdict_power  # noqa: E402
from power import noise, simulate, validate  # noqa: E402


def test_noise_models_are_the_committed_ones():
    # Changing these after the rules were tuned would make every figure meaningless (issue 10).
    assert noise.CLEAN == noise.NoiseModel("clean")
    assert (noise.HOSTILE.tau, noise.HOSTILE.slow_prob, noise.HOSTILE.slow_factor, noise.HOSTILE.churn_range,
            noise.HOSTILE.shared_churn) == (0.005, 0.02, 0.80, (0.02, 0.40), 0.03)
    assert noise.HOSTILE_TAU1.tau == 0.01 and noise.CLEAN.sigma_run == 0.01


def test_a_small_run_is_consistent():
    result = verdict_power.run_scenario("thr-5-clean", prs=40, chunk=40, seed=1)
    counts = result["counts"]
    assert result["prs"] == 40 and 0 <= counts["any_warn"] <= 40
    assert counts["target_thr_fail"] <= counts["any_fail"] <= 40
    assert counts["target_thr_fail"] >= 36  # −5% at σ 1%: the gate catches it (~100% in the full run)
    assert 6 <= result["runs_mean"] <= result["runs_max"] <= 14


@pytest.mark.slow  # simulates and judges a batch of PRs both ways
def test_simulator_and_compare_agree_on_shared_prs():
    rules = simulate.Rules.from_gate()
    result = validate.check(("thr-3-hostile", "cross-noop-tau1"), 3, 5, rules)
    assert result["prs"] == 6 and result["rows"] >= 6 * 20
    assert result["arm_looks"] == 3 * 4 * 4  # two looks: each model's two arms at both, by the runner's functions
    assert result["mismatches"] == []


@pytest.mark.slow  # simulates and judges a batch of PRs both ways
def test_the_simulator_remeasures_what_the_runner_would():
    """Slow-mode starts and wild runs re-measured: the slot the simulator re-measured is the one the runner's own
    functions pick (gate.judging.outliers), at both looks."""
    result = validate.check(("m-noop-slowstart-s1",), 2, 4099, simulate.Rules.from_gate())
    assert result["remeasured"] >= 2
    assert result["mismatches"] == []


def test_wilson_interval():
    p, lo, hi = verdict_power.wilson(10, 1000)
    assert p == 0.01 and 0.005 < lo < 0.01 < hi < 0.02
    assert np.isnan(verdict_power.wilson(0, 0)[0])


def test_the_matrix_tables_are_rebuilt_from_the_results_file(tmp_path, capsys):
    import matrix_tables

    cells = [verdict_power.run_scenario(k, prs=20, chunk=20, seed=1) for k in ("m-noop-s1-normal", "m-thr-3-s1-normal")]
    found = tmp_path / "verdict_power.json"
    found.write_text(__import__("json").dumps({"scenarios": cells}), encoding="utf-8")
    assert matrix_tables.main([str(found)]) == 0
    noop, change = capsys.readouterr().out.split("\n\n")
    assert noop.count("\n") == 2 and f"| σ 1%, normal | two-look | {verdict_power.rate(cells[0], 'any_fail')} |" in noop
    assert change.strip().count("\n") == 2 and verdict_power.rate(cells[1], "target_thr_fail") in change
    (tmp_path / "bad.json").write_text("{}", encoding="utf-8")
    assert matrix_tables.main([str(tmp_path / "bad.json")]) == 2
    assert "expected a verdict_power.json" in capsys.readouterr().err
    # --out writes the tables to a file under a heading that names the command (docs link it; no page copies it)
    assert matrix_tables.main([str(found), "--out", str(tmp_path / "noise_matrix.md")]) == 0
    written = (tmp_path / "noise_matrix.md").read_text(encoding="utf-8")
    assert written.startswith("# The noise matrix") and noop in written and change.strip() in written


def _cell(key: str):
    return next(s for s in verdict_power.all_scenarios() if s.key == key)


def test_nights_pool_into_sigma_and_leave_every_other_draw_as_it_was():
    # The design's steady state: the nightly's newest nights add their within-night df to the calibration's σ
    # (gate.history.noise), drawn after everything else so the cells without nights keep their numbers.
    from dataclasses import replace

    from power.calibration import speed_calibration

    test_sets = noise.draw_test_sets(7)
    with_nights = _cell("m-noop-s2-nights")
    assert with_nights.extra["nights"] == 14
    without = replace(with_nights, extra={})
    a = simulate.draw_chunk(np.random.default_rng(3), with_nights, test_sets, 8, 3)
    b = simulate.draw_chunk(np.random.default_rng(3), without, test_sets, 8, 3)
    assert b.cal_nights is None and a.cal_nights["qwen3/asr_en"]["throughput"].shape == (8, 14, 3)
    for wid in a.speed:
        for metric in a.speed[wid]:
            assert np.array_equal(a.speed[wid][metric], b.speed[wid][metric])
            assert np.array_equal(a.cal_speed[wid][metric], b.cal_speed[wid][metric])
    workloads = ["qwen3/asr_en", "qwen3/asr_zh"]
    pairs_only = speed_calibration(a.cal_speed, workloads, "throughput", False)
    pooled = speed_calibration(a.cal_speed, workloads, "throughput", False, a.cal_nights)
    added = np.asarray(pooled.sigma_df) - np.asarray(pairs_only.sigma_df)
    assert ((added > 40) & (added <= 2 * 14 * 2)).all()  # 2 df a night a workload, less any run set aside
    seen = np.asarray(pooled.runs_seen) - np.asarray(pairs_only.runs_seen)
    assert ((seen <= 2 * 14 * 3) & (seen >= 2 * 14 * 3 - 4)).all()  # an arm left with one run counts two


def test_intermittent_hits_are_counted_among_the_runs_scored():
    result = verdict_power.run_scenario("m-intermittent-third-random", prs=40, chunk=40, seed=1)
    counts = result["counts"]
    assert sum(counts[f"scored_hits{k}_prs"] for k in range(3)) == 40
    for k in range(3):
        assert counts[f"scored_hits{k}_warn_or_fail"] <= counts[f"scored_hits{k}_prs"]
    assert counts["scored_hits0_warn_or_fail"] == 0  # a clean look has nothing to see: the rate's ceiling


@pytest.mark.slow  # simulates and judges a batch of PRs both ways
def test_simulator_and_compare_agree_with_nights_pooled():
    result = validate.check(("m-thr-5-s2-nights",), 2, 5, simulate.Rules.from_gate())
    assert result["prs"] == 2 and result["rows"] >= 2 * 20
    assert result["mismatches"] == []


def test_the_agreement_size_benchmark_runs(capsys):
    import agreement_size

    assert agreement_size.main(["--models", "400", "--seed", "1"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 2 and all("rejects" in line and "(nominal 5%)" in line for line in lines)
    # an F test of a calibration that is not stale rejects near its nominal 5% (10.5% measured: docs/statistics.md)
    assert 0.02 <= agreement_size.size(4000, 1, True) <= 0.2


def test_the_remeasured_split_adds_up(capsys):
    import remeasured

    s = remeasured.split("m-thr-3-drift", 250, 4099)  # the matrix's first chunk of this cell
    assert s["prs"] == 250 and 0 < s["remeasured"] < 0.2
    # the two groups' FAIL rates weighted by their shares are the cell's own rate, and over the oracle's its ratio
    total_fail = s["remeasured"] * s["fail_remeasured"] + (1 - s["remeasured"]) * s["fail_rest"]
    total_oracle = s["remeasured"] * s["oracle_remeasured"] + (1 - s["remeasured"]) * s["oracle_rest"]
    assert abs(total_fail / total_oracle - s["gate_oracle"]) < 1e-9
    assert remeasured.main(["--scenarios", "m-thr-3-drift", "--prs", "40", "--seed", "1"]) == 0
    assert "| m-thr-3-drift |" in capsys.readouterr().out


def test_unseen_hosts_are_named_only_and_never_in_the_default_matrix():
    """The held-out hosts (power/matrix.py, unseen_hosts) run when --scenarios names them; the default run and its
    tables hold the matrix alone, so adding a held-out host never moves a committed figure."""
    unseen = [s.key for s in verdict_power.matrix.unseen_hosts()]
    assert unseen and not set(unseen) & set(verdict_power.select(""))
    assert verdict_power.select(unseen[0]) == [unseen[0]]
    result = verdict_power.run_scenario(unseen[0], prs=20, chunk=20, seed=1)
    assert result["prs"] == 20 and result["key"] == unseen[0]
    with pytest.raises(ValueError, match="unknown scenario"):
        verdict_power.select("u-noop-no-such-host")
