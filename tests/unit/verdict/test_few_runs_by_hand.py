"""Two trees by hand with fewer than 4 runs an arm (issue 39): σ from the runs untrimmed and no slow-mode start looked
for (gate.stats.speed.trims, gate.stats.outliers.plain_sd); the rows of a run log's A/B keep both."""
from __future__ import annotations

import numpy as np
import pytest

from gate.judging.compare import compare
from gate.judging.judge import one_look_thresholds
from gate.stats.outliers import MIN_RUNS_TO_CHOOSE, plain_sd
from gate.stats.speed import own_noise, own_runs_test, spread, trims

QWEN = ("qwen3/asr_en", "qwen3/asr_zh")
THROUGHPUT = "throughput_samples_per_s"


def test_plain_sd_is_the_pooled_within_arm_sd_of_every_present_run():
    y = np.array([[0.0, 0.01, 0.03], [0.02, np.nan, 0.0], [0.5, np.nan, np.nan]])
    sigma, df, kept = plain_sd(y)
    ss = np.var([0.0, 0.01, 0.03]) * 3 + np.var([0.02, 0.0]) * 2  # the one-run arm adds nothing
    assert int(df) == 3 and float(sigma) == pytest.approx(np.sqrt(ss / 3))
    assert kept.tolist() == (~np.isnan(y)).tolist()
    assert np.isnan(plain_sd(np.array([[1.0, np.nan]]))[0]) and int(plain_sd(np.array([[1.0, np.nan]]))[1]) == 0


def test_trims_needs_a_run_log_or_four_runs_in_every_arm():
    three, four = np.zeros((4, 3)), np.zeros((4, 4))
    assert MIN_RUNS_TO_CHOOSE == 4
    assert trims(three, run_log=True) and trims(four, run_log=False)
    assert not trims(three, run_log=False)
    four[1, 3] = np.nan  # one arm with 3 present runs of 4
    assert not trims(four, run_log=False)
    assert trims(np.zeros((0, 3)), run_log=False)  # nothing to judge: nothing changes


def test_untrimmed_sigma_keeps_the_far_run_and_gives_the_t_test_its_level():
    y = np.log(np.array([[100.0, 100.4, 80.0], [100.2, 99.9, 100.1]]))
    trimmed, untrimmed = spread(y)[0], spread(y, trim=False)[0]
    assert float(untrimmed) == pytest.approx(float(plain_sd(y)[0]))
    assert float(untrimmed) > 5 * float(trimmed)  # the trim took the 80 out of σ; untrimmed it widens σ
    assert int(own_noise(y, None, trim=False)[0].sigma_df) == 4
    # no-op 3 + 3 runs, two workloads (4 arms, 8 df): the untrimmed own-runs t test rejects at its level; the trimmed
    # one rejects on draws the untrimmed does not, never the other way round (issue 39's liberal 3 + 3 speed rows)
    runs = np.random.default_rng(5).normal(0.0, 0.01, (50_000, 4, 3))
    p_plain = own_runs_test(runs[:, 0], runs[:, 1], runs, higher_is_better=True, trim=False)[0]
    p_trim = own_runs_test(runs[:, 0], runs[:, 1], runs, higher_is_better=True)[0]
    assert abs(float(np.mean(p_plain <= 0.01)) - 0.01) < 0.0014  # 3 binomial SDs
    assert int(((p_trim <= 0.01) & (p_plain > 0.01)).sum()) > 5
    assert int(((p_plain <= 0.01) & (p_trim > 0.01)).sum()) == 0


def _sides(suite, sides, runs: int, slow_run: int | None):
    """qwen3, both workloads, σ 0.3%; the candidate's `slow_run` (index) 12% slower in every workload: a slow start."""
    rng = np.random.default_rng(11)
    made = []
    for label in ("base", "cand"):
        values = {w: sides.seedtts_values(rng, sigma=0.003, n_runs=runs) for w in QWEN}
        if label == "cand" and slow_run is not None:
            for w in QWEN:
                values[w][THROUGHPUT][slow_run] *= 0.88
                values[w]["latency_p95_s"][slow_run] /= 0.88
        made.append(sides.memory_side(suite, values=values, label=label))
    return made


def _throughput_rows(suite, sides, runs, slow_run, run_order):
    base, cand = _sides(suite, sides, runs, slow_run)
    report = compare(base, cand, suite, cross_job=False, run_order=run_order, thresholds=one_look_thresholds(True))
    return [r for r in report.rows if r.metric == THROUGHPUT]


def test_by_hand_with_three_runs_a_slow_start_is_not_set_aside_and_does_not_fail(suite, sides):
    for row in _throughput_rows(suite, sides, 3, 1, run_order=False):
        assert row.sigma > 0.03  # the slow run is in σ: not set aside, not trimmed
        # one candidate run far below the rest of three, and no later look: heavy-tailed noise as often as not, so not
        # unstable; the slow run in σ leaves the row blind, and it says so and what would decide it
        assert row.verdict.value == "pass" and not row.unstable and row.blind
        assert row.next_step is not None


def test_with_a_run_log_the_same_runs_set_the_slow_start_aside(suite, sides):
    for row in _throughput_rows(suite, sides, 3, 1, run_order=True):
        assert row.sigma < 0.01  # σ on the fast mode
        assert row.delta_rel == pytest.approx(0.0, abs=0.01)  # and the means too


def test_by_hand_with_four_runs_a_side_slow_starts_are_looked_for(suite, sides):
    for row in _throughput_rows(suite, sides, 4, 1, run_order=False):
        assert row.sigma < 0.01 and row.delta_rel == pytest.approx(0.0, abs=0.01)


def test_by_hand_untrimmed_sigma_is_the_rows_sigma(suite, sides):
    base, cand = _sides(suite, sides, 3, None)
    report = compare(base, cand, suite, cross_job=False, run_order=False, thresholds=one_look_thresholds(True))
    row = next(r for r in report.rows if r.metric == THROUGHPUT)
    arms = np.log(np.array([s.workloads[w].values[THROUGHPUT] for w in QWEN for s in (base, cand)], dtype=float))
    assert row.sigma == pytest.approx(float(plain_sd(arms)[0]))
    assert row.df == 8


def test_by_hand_neither_the_rows_nor_their_agreement_test_fit_position_terms(suite, sides, monkeypatch):
    """Trees by hand record no run positions: the rows' σ and the calibration agreement test's σ (model_agreement)
    come from the same arms, neither after a run-position fit; with a run log both use the log's positions."""
    from gate.judging import speed_rows

    seen: list[object] = []
    real = speed_rows.row_on_fast_mode

    def spy(arms, positions, **kwargs):
        seen.append(positions)
        return real(arms, positions, **kwargs)

    monkeypatch.setattr(speed_rows, "row_on_fast_mode", spy)
    base, cand = _sides(suite, sides, 4, 1)
    compare(base, cand, suite, cross_job=False, run_order=False, thresholds=one_look_thresholds(True))
    assert seen and all(at is None for at in seen)
    seen.clear()
    compare(base, cand, suite, cross_job=False, run_order=True, thresholds=one_look_thresholds(True))
    assert seen and all(at is not None for at in seen)
