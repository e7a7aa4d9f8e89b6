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
    assert result["mismatches"] == []


def test_wilson_interval():
    p, lo, hi = verdict_power.wilson(10, 1000)
    assert p == 0.01 and 0.005 < lo < 0.01 < hi < 0.02
    assert np.isnan(verdict_power.wilson(0, 0)[0])


def test_the_readme_tables_are_rebuilt_from_the_results_file(tmp_path, capsys):
    import readme_tables

    cells = [verdict_power.run_scenario(k, prs=20, chunk=20, seed=1) for k in ("m-noop-s1-normal", "m-thr-3-s1-normal")]
    found = tmp_path / "verdict_power.json"
    found.write_text(__import__("json").dumps({"scenarios": cells}), encoding="utf-8")
    assert readme_tables.main([str(found)]) == 0
    noop, change = capsys.readouterr().out.split("\n\n")
    assert noop.count("\n") == 2 and f"| σ 1%, normal | two-look | {verdict_power.rate(cells[0], 'any_fail')} |" in noop
    assert change.strip().count("\n") == 2 and verdict_power.rate(cells[1], "target_thr_fail") in change
    (tmp_path / "bad.json").write_text("{}", encoding="utf-8")
    assert readme_tables.main([str(tmp_path / "bad.json")]) == 2
    assert "expected a verdict_power.json" in capsys.readouterr().err
