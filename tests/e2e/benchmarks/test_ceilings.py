"""benchmarks/ceilings.py's arithmetic against plain Monte Carlo of what it claims to bound (issue 36)."""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))

import ceilings  # noqa: E402

DRAWS = 40_000


def test_the_t_ceiling_is_the_power_of_a_t_test_on_that_many_df():
    rng = np.random.default_rng(7)
    drop, sigma, df = 0.05, 0.02, ceilings.design_df(3)
    alpha = ceilings.POOLED_ALPHA / ceilings.SPEED_ROWS
    se = sigma * math.sqrt(2 / ceilings.RUNS)
    worse = -math.log1p(-drop) + se * rng.standard_normal(DRAWS)
    sigma_hat = sigma * np.sqrt(rng.chisquare(df, DRAWS) / df)
    t_power = float((worse / (sigma_hat * math.sqrt(2 / ceilings.RUNS)) >= stats.t.isf(alpha, df)).mean())
    z_power = float((worse / se >= stats.norm.isf(alpha)).mean())
    z, t = ceilings.oracle_ceiling(drop, sigma, df)
    assert abs(t - t_power) < 0.015 and abs(z - z_power) < 0.015
    assert t < z


def test_the_ceiling_rises_with_the_calibrations_df_towards_the_oracle():
    ratios = [t / z for z, t in (ceilings.oracle_ceiling(0.10, 0.05, ceilings.design_df(p)) for p in (3, 6, 10, 100))]
    assert ratios == sorted(ratios) and ratios[0] < 0.9 < ratios[-1] < 1.0


def _simulated_plan(p_hit: float, extend_share: float, rng: np.random.Generator) -> dict[str, float]:
    hits = rng.random((DRAWS, 6)) < p_hit
    first, total = hits[:, :3].sum(1), hits.sum(1)
    extended = (first >= 1) | (rng.random(DRAWS) < extend_share)
    two_needed = (first >= 2) | (extended & (total >= 2))
    planned_two = total >= 2
    return {"one_hit_enough": float(((first >= 1) | (extended & (total >= 1))).mean()),
            "two_hits_needed": float(two_needed.mean()),
            "two_of_six_caught": float(two_needed[planned_two].mean()),
            "two_needed_all_extended": float(planned_two.mean())}


def test_the_intermittent_ceiling_is_what_the_plan_catches_when_every_hit_is_seen():
    rng = np.random.default_rng(11)
    for p_hit in (1 / 3, 1 / 2):
        claimed = ceilings.intermittent_ceiling(p_hit)
        assert claimed["extend_share"] == 0.25  # (7.5 − 6) / 6
        simulated = _simulated_plan(p_hit, claimed["extend_share"], rng)
        for key, value in simulated.items():
            assert abs(claimed[key] - value) < 0.012, (p_hit, key)
    # ⅓ of runs hit: 80% overall needs 46% of clean first looks extended even when one hit is enough
    third = ceilings.intermittent_ceiling(1 / 3)
    assert third["one_hit_enough"] < 0.8
    assert 0.45 < third["extend_for_80"] < 0.47 and third["two_needed_all_extended"] < 0.8


def test_a_larger_budget_lifts_the_intermittent_ceiling():
    small, large = ceilings.intermittent_ceiling(1 / 3, 7.5), ceilings.intermittent_ceiling(1 / 3, 12.0)
    assert large["extend_share"] == 1.0 and large["one_hit_enough"] > 0.8 > small["one_hit_enough"]


def test_the_ceilings_benchmark_prints_both_tables(capsys):
    assert ceilings.main([]) == 0
    out = capsys.readouterr().out
    assert out.count("| −5% | 2% |") == 4 and out.count("| −10% | 5% |") == 4
    assert "| 0.333 | 25% |" in out and "| 0.5 | 25% |" in out


def test_the_design_df_are_the_ones_the_simulated_gate_pools():
    """The ceiling's df are what the power benchmark's gate pools for the target's throughput row at 6+6 runs
    (a row whose spread disagrees with the calibration's falls back to its own 20 df: hence the median)."""
    from power import matrix, noise, simulate
    from power.calibration import speed_calibration

    rules = simulate.Rules.from_gate()
    test_sets = noise.draw_test_sets(1)
    model = next(w.model for w in simulate.WORKLOADS if w.workload_id == noise.TARGET)
    by_model = {m: [w.workload_id for w in simulate.WORKLOADS if w.model == m] for m in noise.MODELS}
    for key, nights in (("m-thr-5-s2-normal", 0), ("m-thr-5-s2-nights", 14)):
        scenario = next(s for s in matrix.scenarios() if s.key == key)
        chunk = simulate.draw_chunk(np.random.default_rng(3), scenario, test_sets, 40, rules.pairs)
        noises = {(model, metric): speed_calibration(chunk.cal_speed, by_model[model], metric, False, chunk.cal_nights)
                  for metric in simulate.SPEED_ROWS}
        slots = {model: np.broadcast_to(np.arange(2 * simulate.RUNS), (40, 2, 2 * simulate.RUNS))}
        used = simulate._in_job(chunk, by_model, noises, slots, model)
        assert np.median(used[(model, "throughput")].sigma_df) == ceilings.design_df(rules.pairs, nights)

