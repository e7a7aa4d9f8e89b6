"""Groups of utterances that churn together: one the runs did not show (issue 39, 3 + 3 runbook trees without an A/A
record) and one the A/A runs found (issue 36, its own row). gate.stats.overdispersion: hidden_split_p,
comovement_p, group_test, run_permutation_p; gate.judging.compare / accuracy_rows: the rows they make."""
from __future__ import annotations

import json
from math import comb

import numpy as np
import pytest

from gate.formats.report import COMOVING_SUFFIX, Report, Subset
from gate.judging.calibration import calibration_from_pairs
from gate.judging.compare import compare
from gate.render.renderer import render_comment, render_terminal
from gate.stats.overdispersion import (
    Dispersion,
    comovement_p,
    from_arms,
    group_test,
    hidden_split_p,
    own_runs_sums,
    run_permutation_p,
)

QWEN_EN, QWEN_ZH = "qwen3/asr_en", "qwen3/asr_zh"
N = 1088
GROUP = slice(500, 533)  # 33 utterances that flip together, as in the benchmark's hostile churn


def test_a_hidden_group_splits_3_plus_3_sides_one_time_in_64_and_6_plus_6_one_in_4096():
    assert hidden_split_p(3, 3) == pytest.approx(1 / 64)
    assert hidden_split_p(6, 6) == pytest.approx(1 / 4096)
    q = 4 / 7  # the worst q for 3 base and 4 candidate runs
    assert hidden_split_p(3, 4) == pytest.approx(q ** 4 * (1 - q) ** 3)
    assert hidden_split_p(0, 3) == 1.0


def _side(rng, runs: int, independent: int, group: int | None) -> np.ndarray:
    e = np.zeros((runs, N), dtype=int)
    e[:, :independent] = rng.integers(0, 2, (runs, independent))
    if group is not None:
        e[:, GROUP] = group if group in (0, 1) else rng.integers(0, 2, (runs, 1))
    return e


def test_comovement_is_seen_when_a_group_moved_and_not_under_independent_churn():
    rng = np.random.default_rng(39)
    quiet = [own_runs_sums(_side(rng, 3, 300, None), _side(rng, 3, 300, None)) for _ in range(200)]
    ps = np.array([comovement_p(np.array([q[0]]), np.array([q[1]]), np.array([q[2]])) for q in quiet])
    assert 0.03 < (ps <= 0.2).mean() < 0.4  # about the level under independent churn (χ² on 4 df, approximately)
    base = np.zeros((3, N), dtype=int)
    base[1, GROUP] = 1  # the group moved once in the baseline's runs
    t, u, df = own_runs_sums(base + _side(rng, 3, 50, 0), _side(rng, 3, 50, 0))
    assert comovement_p(np.array([t]), np.array([u]), np.array([df])) < 1e-3
    assert np.isnan(comovement_p(np.zeros(1), np.zeros(1), np.array([4])))  # no churn at all: nothing to say


def test_run_permutation_p_is_exact_over_the_labellings():
    assert run_permutation_p([0, 0, 0], [33, 33, 33]) == pytest.approx(1 / 20)
    assert run_permutation_p([0] * 6, [9] * 6) == pytest.approx(1 / comb(12, 6))
    assert run_permutation_p([5, 5, 5], [5, 5, 5]) == 1.0
    batch = run_permutation_p(np.array([[0, 0, 0], [3, 2, 1]]), np.array([[1, 1, 1], [0, 0, 0]]))
    assert batch.shape == (2,) and batch[0] == pytest.approx(1 / 20) and batch[1] == 1.0


def test_the_group_row_test_does_not_fail_on_the_group_own_swing_and_sees_a_change_beyond_it():
    # the group (33) flips all-or-nothing; its A/A spread: 6 arms of 3 runs, about 33²/4 a run
    aa_ss, aa_df = 33 ** 2 / 4 * 12, 12
    p_swing, _, _ = group_test(33.0, 0.0, 4, aa_ss, aa_df, 2 / 3)  # a whole-group split between the sides
    assert float(p_swing) > 0.005
    p_change, se, df = group_test(100.0, 0.0, 4, aa_ss, aa_df, 2 / 3)  # +3 errors on each of the 33
    assert float(p_change) < 1e-4 and float(df) == 16 and float(se) == pytest.approx(np.sqrt(aa_ss / 16 * 2 / 3))  # own runs flat: pooled in
    assert np.isnan(group_test(5.0, 0.0, 0, 0.0, 0, 2 / 3)[0])


def _values(sides, rng):
    return {w: sides.seedtts_values(rng) for w in (QWEN_EN, QWEN_ZH)}


def _pair(suite, sides, rng, base: dict, cand: dict, calibration=None):
    ids, ref = [f"u{i}" for i in range(N)], np.full(N, 11)
    b = sides.memory_side(suite, values=_values(sides, rng), calibration=calibration,
                          samples={w: {"wer": (ids, ref, e)} for w, e in base.items()})
    c = sides.memory_side(suite, values=_values(sides, rng), label="cand",
                          samples={w: {"wer": (ids, ref, e)} for w, e in cand.items()})
    return b, c


def test_on_own_runs_a_group_hidden_in_one_row_and_seen_in_another_bars_the_fail(suite, sides):
    """3 + 3 runs a side, no A/A record. asr_en: a group that stayed put within each side and split them (+33
    errors, every candidate run), under light independent churn: alone it FAILs. asr_zh's runs show a group that
    moved: utterances co-move on this model, so asr_en can WARN at most and names runs 4-6."""
    rng = np.random.default_rng(7)
    hidden_b, hidden_c = _side(rng, 3, 20, 0), _side(rng, 3, 20, 1)
    quiet = {QWEN_EN: hidden_b, QWEN_ZH: _side(rng, 3, 20, 0)}, {QWEN_EN: hidden_c, QWEN_ZH: _side(rng, 3, 20, 0)}
    row = next(r for r in compare(*_pair(suite, sides, rng, *quiet), suite, cross_job=False).rows
               if r.workload == QWEN_EN and r.metric == "corpus_wer")
    assert row.verdict.value == "fail"  # nothing says utterances co-move: the row decides on its own runs

    moved_b = _side(rng, 3, 20, 0)
    moved_b[1, GROUP] = 1  # asr_zh's group moved within the baseline's runs
    seen = {QWEN_EN: hidden_b, QWEN_ZH: moved_b}, {QWEN_EN: hidden_c, QWEN_ZH: _side(rng, 3, 20, 0)}
    row = next(r for r in compare(*_pair(suite, sides, rng, *seen), suite, cross_job=False).rows
               if r.workload == QWEN_EN and r.metric == "corpus_wer")
    assert row.verdict.value == "warn" and row.next_step is not None and row.next_step.value == "more_runs"
    assert any("utterances churn together in the model's own runs" in n for n in row.notes)


def test_on_6_plus_6_own_runs_where_utterances_churn_together_the_run_totals_decide(suite, sides):
    """6 + 6 runs a side, no A/A record, a group of 33 moving together on both workloads: asr_en's group flipped in 1
    of the baseline's runs and in all 6 of the candidate's (1 in 4,096 × 6 ways by chance, under the model's α of
    0.005 but not under its share of what two looks spend). The widened test alone FAILed it; the runs' exact
    permutation p (6/924 here) is above that level, so the row WARNs, says why and names further runs."""
    rng = np.random.default_rng(11)
    base, cand = _side(rng, 6, 20, 0), _side(rng, 6, 20, 1)
    base[1, GROUP] = 1
    zh_b, zh_c = _side(rng, 6, 20, None), _side(rng, 6, 20, None)
    pair = _pair(suite, sides, rng, {QWEN_EN: base, QWEN_ZH: zh_b}, {QWEN_EN: cand, QWEN_ZH: zh_c})
    row = next(r for r in compare(*pair, suite, cross_job=False).rows if r.workload == QWEN_EN and r.metric == "corpus_wer")
    assert run_permutation_p(base.sum(1), cand.sum(1)) == pytest.approx(6 / 924)
    assert row.p_value is not None and row.p_value < 0.005 / 2  # what the widened test says alone
    assert row.verdict.value == "warn" and row.next_step is not None and row.next_step.value == "more_runs"
    assert any("the runs' error totals decide" in n and "exact permutation p is 0.0065" in n for n in row.notes)


def _aa_pairs(suite, sides, rng, ids):
    arms = []
    for _ in range(6):
        e = np.zeros((3, N), dtype=int)
        e[:, :300] = rng.integers(0, 2, (3, 300))
        e[:, GROUP] = rng.integers(0, 2, (3, 1))
        arms.append(e)
    while sum(bool((a[:, GROUP.start] != a[0, GROUP.start]).any()) for a in arms) < 3:
        return _aa_pairs(suite, sides, rng, ids)
    made = [sides.memory_side(suite, values={QWEN_EN: sides.seedtts_values(rng)},
                              samples={QWEN_EN: {"wer": (ids, np.full(N, 11), e)}}, label=f"aa{k}")
            for k, e in enumerate(arms)]
    return arms, calibration_from_pairs(list(zip(made[0::2], made[1::2], strict=True)), suite)


def test_the_comoving_group_has_its_own_row_in_every_output(suite, sides):
    """+3 errors on each of the 33 utterances the A/A runs found moving together (+0.83 pp): the workload's row tests
    the rest and cannot see it; the group's own row does, and it is in the report, its JSON, the comment and the
    terminal."""
    rng = np.random.default_rng(36)
    ids = [f"u{i}" for i in range(N)]
    arms, calibration = _aa_pairs(suite, sides, rng, ids)
    record = calibration[QWEN_EN]["corpus_wer"]
    assert isinstance(record, Dispersion) and record.group_df == 12 and record.group_ss > 0
    assert from_arms(arms, ids) == record

    def runs():
        e = np.zeros((3, N), dtype=int)
        e[:, :300] = rng.integers(0, 2, (3, 300))
        e[:, GROUP] = rng.integers(0, 2, (3, 1))
        return e

    base, cand = runs(), runs()
    cand[:, GROUP] += 3
    b = sides.memory_side(suite, values={QWEN_EN: sides.seedtts_values(rng)}, calibration=calibration,
                          samples={QWEN_EN: {"wer": (ids, np.full(N, 11), base)}})
    c = sides.memory_side(suite, values={QWEN_EN: sides.seedtts_values(rng)}, label="cand",
                          samples={QWEN_EN: {"wer": (ids, np.full(N, 11), cand)}})
    report = compare(b, c, suite, cross_job=False)
    whole = next(r for r in report.rows if r.metric == "corpus_wer")
    group = next(r for r in report.rows if r.metric == "corpus_wer" + COMOVING_SUFFIX)
    assert whole.subset is None and whole.verdict.value != "fail"  # the rest does not carry the change
    assert group.subset is Subset.COMOVING and group.family is not None and group.family.value == "quality"
    assert group.verdict.value == "warn" and group.delta_abs == pytest.approx(99 / (11 * N), rel=0.2)
    # 3 + 3 runs: the exact permutation p is 1/20 at best, so the group's row WARNs and names runs 4-6
    assert any("exact permutation p is 0.05" in n for n in group.notes) and group.next_step is not None
    assert group.candidate.n_samples == len(record.comoving)

    data = json.loads(json.dumps(report.to_json()))
    assert {r["subset"] for r in data["rows"]} == {None, "comoving"}
    assert Report.from_json(data) == report
    kept = [{k: v for k, v in r.items() if k != "subset"} for r in data["rows"] if r["subset"] is None]
    counts = {k: sum(r["verdict"] == k for r in kept) for k in data["counts"]}
    worst = next(v for v in ("fail", "warn", "pass") if counts.get(v))
    old = {**data, "rows": kept, "verdict": worst, "exit_code": 1 if worst == "fail" else 0, "counts": counts}
    assert all(r.subset is None for r in Report.from_json(old).rows)  # a v4 report written before it
    assert "co-moving utterances" in render_comment(report)
    assert "corpus_wer" + COMOVING_SUFFIX in render_terminal(report, show_all=True)


def test_weighted_holm_spends_each_row_its_share_of_alpha():
    from gate.stats.decision import decide_family, weighted

    p = np.array([[0.002, 0.5, 0.004, np.nan]])
    w = np.array([[0.97, 1.0, 0.03, 1.0]])  # a measure's weight 1 split 0.97 / 0.03 between the rest and its group
    scaled = weighted(p, w)
    # Holm's first step: p_i ≤ α·w_i/Σw over the tested rows (Σw = 2)
    assert scaled[0, 0] == pytest.approx(0.002 / (0.97 * 3 / 2)) and np.isnan(scaled[0, 3])
    verdict = decide_family(scaled, np.ones((1, 4), bool), np.ones((1, 4), bool), np.ones((1, 4), bool),
                            alpha=0.005, warn_q=0.01).verdict
    assert verdict[0, 0] == 2 and verdict[0, 2] == 0  # 0.002 ≤ 0.005·0.97/2; the group's 0.004 > 0.005·0.03/2
    assert np.array_equal(weighted(p, np.ones((1, 4))), p, equal_nan=True)  # equal weights: plain Holm and BH


def test_own_runs_enough_and_churn_possible_batched_as_for_one_ab():
    """gate.stats.overdispersion.own_runs_enough / churn_possible: what own_runs and accuracy_rows ask of one A/B,
    the power simulator of B at once (issue 49)."""
    from gate.stats.overdispersion import OWN_MIN_DF, churn_possible, own_runs, own_runs_enough

    assert not own_runs_enough(OWN_MIN_DF - 1) and own_runs_enough(OWN_MIN_DF)
    assert np.array_equal(own_runs_enough(np.array([2, 4, 10])), np.array([2, 4, 10]) >= OWN_MIN_DF)
    rng = np.random.default_rng(2)
    base = np.repeat(rng.integers(0, 3, (4, 1, 20)), 3, axis=1)  # (B, R, N): identical runs ...
    cand = base.copy()
    cand[1, 2, 5] += 1  # ... but one candidate run of A/B 1
    base[2, 0, 7] += 1  # and one baseline run of A/B 2
    assert churn_possible(base, cand).tolist() == [False, True, True, False]
    assert bool(churn_possible(base[0, :1], cand[0]))  # one run: nothing shows its runs identical
    assert (own_runs(base[1], cand[1]) is not None) == bool(own_runs_enough(4))
