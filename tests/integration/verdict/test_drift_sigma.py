"""Issue 36: run-to-run σ that drift and warm-up leaks cannot inflate, and the detectable change on every row."""
from __future__ import annotations

import math

import numpy as np
import pytest

from gate.stats.drift import TERMS, arm_positions, detrended_sd, interleave_positions
from gate.stats.outliers import robust_sd
from gate.stats.performance import calibrate


def _arms(rng, batch: int, arms: int, runs: int, *, drift: float = 0.0, leak: float = 0.0, sigma: float = 0.01):
    """(batch, arms, runs) ln values: workloads' base/candidate arms of one interleaved job."""
    at = arm_positions(arms, runs)
    first = (np.arange(runs) == 0)
    return sigma * rng.standard_normal((batch, arms, runs)) - drift * at - leak * first


def test_the_runners_interleave_is_abbaab_then_baabba():
    order = sorted((int(p), "AB"[arm]) for arm in (0, 1) for p in interleave_positions(6, arm))
    assert "".join(letter for _, letter in order) == "ABBAAB" "BAABBA"


@pytest.mark.parametrize("runs", [3, 6])
def test_drift_does_not_inflate_sigma(runs):
    y = _arms(np.random.default_rng(1), 2000, 4, runs, drift=0.005)
    sigma, df, _, found = detrended_sd(y, arm_positions(4, runs))
    raw = robust_sd(y)[0]
    assert math.sqrt(np.mean(raw ** 2)) > 0.014  # as it was: σ 1% looked like 1.4-2.2%
    assert math.sqrt(np.mean(sigma ** 2)) == pytest.approx(0.01, rel=0.15)
    assert found.mean() > (0.5 if runs == 3 else 0.99)
    assert np.mean(df[found] == 4 * (runs - 1) - TERMS) > 0.95  # a df less for each term


def test_a_warm_up_leak_is_found_and_set_aside():
    y = _arms(np.random.default_rng(2), 2000, 4, 6, leak=0.03)
    sigma, _, _, found = detrended_sd(y, arm_positions(4, 6))
    assert found.mean() > 0.99
    assert math.sqrt(np.mean(sigma ** 2)) == pytest.approx(0.01, rel=0.1)


def test_without_drift_the_terms_are_rarely_fitted_and_sigma_keeps_its_df():
    y = _arms(np.random.default_rng(3), 4000, 4, 3)
    sigma, df, _, found = detrended_sd(y, arm_positions(4, 3))
    assert found.mean() < 0.08  # SCREEN_P 0.05
    assert np.mean(df[~found] == 8) > 0.95  # all 8 df, but where the outlier rule set a run aside
    assert math.sqrt(np.mean(sigma ** 2)) == pytest.approx(0.01, rel=0.05)


def test_calibration_takes_drift_out_of_in_job_pairs_only_where_df_allow():
    rng = np.random.default_rng(4)
    pairs = [tuple(np.exp(arm) * 100 for arm in _arms(rng, 1, 2, 3, drift=0.01)[0]) for _ in range(6)]
    drifted = calibrate(pairs)
    assert drifted.df == 6 * 4 - TERMS and drifted.sigma == pytest.approx(0.01, rel=0.35)
    assert calibrate(pairs, cross_job=[True] * 6).sigma > 0.015  # arms of different jobs: as measured
    single = calibrate(pairs[:1])
    assert single.df == 4  # one pair keeps its 4 df (MIN_CALIBRATION_DF): nothing fitted


def _in_job_rows(suite, sides, shift: float):
    from gate.judging.compare import compare

    workloads = ("qwen3/asr_en", "qwen3/asr_zh")
    rng = np.random.default_rng(7)

    def values(arm: int, change: float) -> dict:
        at = interleave_positions(3, arm)
        thr = 100 * np.exp(0.01 * rng.standard_normal(3) - 0.005 * at - change)
        p95 = 0.5 * np.exp(0.01 * rng.standard_normal(3) + 0.005 * at + change)
        return {"corpus_wer": [0.02] * 3, "throughput_samples_per_s": list(thr), "latency_mean_s": [0.3] * 3,
                "latency_p95_s": list(p95), "rtf_mean": [0.06] * 3}

    base = sides.memory_side(suite, values={w: values(0, 0.0) for w in workloads})
    cand = sides.memory_side(suite, values={w: values(1, shift if w == workloads[0] else 0.0) for w in workloads},
                             label="cand")
    return compare(base, cand, suite).rows


def test_every_gated_row_says_what_it_detects_the_way_its_metric_moves(suite, sides):
    rows = [r for r in _in_job_rows(suite, sides, 0.0) if r.family is not None]
    assert rows and all(r.detects is not None for r in rows)
    for row in rows:
        # bounded by the t test's MDE and, for speed, by the own-runs confirmation a FAIL also needs
        if row.family == "speed" and row.direction == "higher":
            assert row.detects <= 1 / (1 + row.mde) - 1 + 1e-12 and row.detects < 0  # a throughput drop
        else:
            assert row.detects >= row.mde - 1e-12 and row.detects > 0  # a latency or error-rate rise
    assert all(r.detects is None for r in _in_job_rows(suite, sides, 0.0) if r.family is None)


def test_a_slow_mode_start_is_every_workload_slow_in_one_run_never_one_workload_alone():
    from gate.stats.slowmode import slow_mode_runs

    y = 0.003 * np.random.default_rng(9).standard_normal((4, 6))  # qwen3: [en base, en cand, zh base, zh cand]
    y[[0, 2], 1] += np.log(0.92)  # baseline run 2: a slow start, both workloads
    y[1, 4] += np.log(0.88)  # candidate run 5: one workload only (an intermittent regression, not a slow mode)
    slow = slow_mode_runs(y, higher_is_better=True)
    assert slow.tolist() == [[False, True, False, False, False, False], [False] * 6]
    assert not slow_mode_runs(y[:2], higher_is_better=True).any()  # one workload: cannot be told


def test_a_candidate_all_slow_is_a_regression_not_a_slow_mode():
    from gate.stats.slowmode import slow_mode_runs
    from gate.stats.speed import SpeedNoise, shift_test

    y = 0.003 * np.random.default_rng(10).standard_normal((4, 6))
    y[[1, 3]] += np.log(0.92)  # every candidate run of both workloads 8% slower
    slow = slow_mode_runs(y, higher_is_better=True)
    assert not slow.any()
    test = shift_test(y[0][None], y[1][None], SpeedNoise(sigma=0.01, sigma_df=40), higher_is_better=True,
                      cross_job=False, slow_mode=slow[None])
    assert test.worse_rel[0] == pytest.approx(1 / 0.92 - 1, abs=0.01) and test.p[0] < 1e-6


def test_slow_mode_starts_are_set_aside_and_the_row_is_judged_on_the_fast_mode():
    from gate.stats.slowmode import slow_mode_runs
    from gate.stats.speed import SpeedNoise, shift_test

    rng = np.random.default_rng(8)
    y = 0.005 * rng.standard_normal((4, 6))
    y[[1, 3], 2] += np.log(0.92)  # candidate run 3 and run 6: slow starts of both workloads
    y[[1, 3], 5] += np.log(0.92)
    slow = slow_mode_runs(y, higher_is_better=True)
    assert slow[1].tolist() == [False, False, True, False, False, True] and not slow[0].any()
    noise = SpeedNoise(sigma=0.005, sigma_df=40)
    fast = shift_test(y[0][None], y[1][None], noise, higher_is_better=True, cross_job=False, slow_mode=slow[None])
    assert abs(fast.worse_rel[0]) < 0.01 and not fast.intermittent[0] and not fast.worse_set_aside[0]
    assert fast.slow_mode_cand[0] == 2 and fast.slow_mode_base[0] == 0
    plain = shift_test(y[0][None], y[1][None], noise, higher_is_better=True, cross_job=False)
    assert plain.intermittent[0] or plain.worse_set_aside[0]  # without it: two slow runs of six looked intermittent


def _shared_arms(rng, batch: int, workloads: int, runs: int, *, shared: float, sigma: float):
    """(batch, 2W, runs) ln values of one job's model, [w0 base, w0 cand, w1 base, ...]: a share `shared` of each
    run's variance belongs to its server start, which the model's workloads share (matrix.py's run_shared)."""
    own = rng.standard_normal((batch, 2 * workloads, runs))
    start = np.tile(rng.standard_normal((batch, 2, runs)), (1, workloads, 1))  # row k is arm k % 2
    return sigma * (np.sqrt(1 - shared) * own + np.sqrt(shared) * start)


def test_terms_are_not_found_in_a_start_effect_the_workloads_share():
    # Issue 36 (m-noop-runshared-s2): the position terms are common to the workloads, so under no drift their sum of
    # squares is the starts' shared effect; against the pooled within-arm spread the F test found them far too often.
    y = _shared_arms(np.random.default_rng(11), 4000, 4, 6, shared=0.8, sigma=0.02)
    at = arm_positions(8, 6)
    assert detrended_sd(y, at)[3].mean() > 0.15  # the pooled error term alone: "drift" in a fifth of the jobs
    assert detrended_sd(y, at, shared_starts=True)[3].mean() < 0.07  # SCREEN_P 0.05
    # independent workloads: drift 0.5% a run at σ 1% is still found at 6+6
    drift = _arms(np.random.default_rng(12), 2000, 4, 6, drift=0.005)
    assert detrended_sd(drift, arm_positions(4, 6), shared_starts=True)[3].mean() > 0.99


def test_a_start_effect_the_workloads_share_is_rarely_a_slow_mode():
    from gate.stats import slowmode
    from gate.stats.slowmode import slow_mode_runs

    # every workload 3σ slow in one start is common when the start carries 80% of the variance: the rule on the
    # workloads alone found a "slow mode" in a sixth of such no-op 6+6 models, the starts' own spread halves that
    y = _shared_arms(np.random.default_rng(13), 4000, 2, 6, shared=0.8, sigma=0.02)
    now = slow_mode_runs(y, higher_is_better=True).any(axis=(-1, -2)).mean()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(slowmode, "_start_beyond", lambda by, *_: np.ones(by.shape[:-3] + by.shape[-2:], bool))
        workloads_alone = slow_mode_runs(y, higher_is_better=True).any(axis=(-1, -2)).mean()
    assert workloads_alone > 0.15 and now < 0.1
    # a real slow start (8%, σ 1%, independent workloads) is still found
    z = _shared_arms(np.random.default_rng(14), 2000, 2, 6, shared=0.0, sigma=0.01)
    z[:, [0, 2], 1] += np.log(0.92)
    assert slow_mode_runs(z, higher_is_better=True)[:, 0, 1].mean() > 0.95
