"""Known-answer tests of gate.judging.compare (issue 3 "Done when"), on synthetic trees and in-memory sides."""
from __future__ import annotations

import numpy as np
import pytest

from gate.examples import DEFAULT_FREEZE, utterance_ids
from gate.formats.errors import InputError
from gate.formats.noise_model import Calibration
from gate.formats.reasons import CannotFail, WarnCause
from gate.formats.report import NO_RESULTS, Basis, CoverageProblem
from gate.formats.verdict import Verdict
from gate.judging.compare import compare
from gate.reading.side_loader import load_side
from gate.reading.tree_side import side_from_tree
from gate.stats.thresholds import Thresholds

PASS, WARN, FAIL, INCOMPLETE, NOT_COMPARABLE = (Verdict.PASS, Verdict.WARN, Verdict.FAIL, Verdict.INCOMPLETE,
                                               Verdict.NOT_COMPARABLE)
QWEN_EN = "qwen3/asr_en"
SPEED = ("throughput_samples_per_s", "latency_mean_s", "latency_p95_s", "rtf_mean")


def _calibration(sigma=0.01, df=40):
    cal = Calibration(sigma=sigma, df=df, groups=df // 2)
    return {w: {m: cal for m in SPEED} for w in (QWEN_EN, "qwen3/asr_zh")}


def _verdicts(comparison):
    return {(r.workload, r.metric): r.verdict for r in comparison.rows}


# --- overall verdict ---------------------------------------------------------------------------------

def test_overall_precedence_and_exit_codes():
    assert Verdict.worst([PASS, WARN, FAIL, NOT_COMPARABLE, INCOMPLETE]) is INCOMPLETE
    assert Verdict.worst([PASS, WARN, FAIL, NOT_COMPARABLE]) is NOT_COMPARABLE
    assert Verdict.worst([PASS, FAIL, WARN]) is FAIL
    assert Verdict.worst([PASS, WARN]) is WARN
    assert Verdict.worst(["pass"]) is PASS
    assert Verdict.worst([]) is INCOMPLETE
    assert {v: v.exit_code for v in Verdict} == {PASS: 0, WARN: 0, FAIL: 1, INCOMPLETE: 3, NOT_COMPARABLE: 4}
    with pytest.raises(ValueError):
        Verdict.worst(["maybe"])


def _coverage(result, workload):
    return next(c for c in result.coverage if c.workload == workload)


# --- trees ---------------------------------------------------------------------------------------------

def test_identical_trees_pass(suite, make_tree):
    tree = make_tree("base")
    side = load_side(tree, suite)
    result = compare(side, side, suite, calibration=_calibration())
    assert result.verdict == PASS and result.exit_code == 0
    accuracy = [r for r in result.rows if r.kind == "accuracy"]
    assert accuracy and all(r.basis is Basis.IDENTICAL for r in accuracy)
    assert all(r.verdict == PASS for r in result.rows)


def test_diffuse_wer_regression_fails_on_the_sides_own_runs(suite, make_tree):
    # ~+0.15 pp: 22 utterances with one extra word (the tree has ~15k reference words) plus run noise. The
    # calibration carries no A/A dispersion record, but each side's three same-commit runs are A/A evidence of
    # how the transcripts churn (issue 39): the row may FAIL on them, and says what it measured.
    base = load_side(make_tree("base"), suite)
    cand = load_side(make_tree("diffuse", seed=1, extra_errors={QWEN_EN: 22}), suite)
    result = compare(base, cand, suite, calibration=_calibration())
    row = next(r for r in result.rows if r.workload == QWEN_EN and r.metric == "corpus_wer")
    assert 0.0010 < row.delta_abs < 0.0020
    assert row.verdict == FAIL and "each side's own runs" in row.method and row.next_step is None
    assert row.ci[0] > 0 and row.p_adjusted <= 0.05 and row.basis is Basis.PAIRED
    assert next(r for r in result.rows if r.workload == "qwen3/asr_zh" and r.metric == "corpus_wer").verdict == PASS


def test_single_hallucination_warns_and_names_the_utterance(suite, make_tree):
    target = utterance_ids(suite.workload(QWEN_EN))[17]
    base = load_side(make_tree("base"), suite)
    cand = load_side(make_tree("hallucinate", seed=1, hallucinate={QWEN_EN: target}), suite)
    result = compare(base, cand, suite, calibration=_calibration())
    row = next(r for r in result.rows if r.workload == QWEN_EN and r.metric == "corpus_wer")
    assert row.verdict in (WARN, FAIL)
    assert row.new_catastrophic == 1 and target in "; ".join(row.notes)
    named = [u for u in result.utterances if u.why == "new_catastrophic"]
    assert [u.id for u in named] == [target] and named[0].candidate_errors >= 40


def test_freeze_diff_is_not_comparable_unless_allowed(suite, make_tree):
    freeze = tuple("torch==2.12.0" if line.startswith("torch==") else line for line in DEFAULT_FREEZE)
    base = load_side(make_tree("base"), suite)
    cand = load_side(make_tree("newtorch", seed=1, freeze=freeze), suite)
    result = compare(base, cand, suite, calibration=_calibration())
    assert result.verdict == NOT_COMPARABLE and result.exit_code == 4
    assert all(r.verdict == NOT_COMPARABLE for r in result.rows)
    diff = [d for d in result.environment_diff if d.kind == "freeze"]
    assert [(d.item, d.baseline, d.candidate) for d in diff] == [("torch", "2.11.0", "2.12.0")]
    allowed = compare(base, cand, suite, calibration=_calibration(), allow_diff=("freeze",))
    assert allowed.verdict != NOT_COMPARABLE
    assert allowed.environment_diff[0].blocking is False


def test_unknown_allow_diff_kind_is_an_error(suite, make_tree):
    side = load_side(make_tree("base"), suite)
    with pytest.raises(InputError):
        compare(side, side, suite, allow_diff=("weather",))


def test_uncalibrated_speed_uses_the_ratio_policy_across_jobs(suite, make_tree):
    base = load_side(make_tree("base"), suite)
    cand = load_side(make_tree("slow", seed=1, speed_factor={QWEN_EN: 0.94}), suite)
    result = compare(base, cand, suite, cross_job=True)
    row = next(r for r in result.rows if r.workload == QWEN_EN and r.metric == "throughput_samples_per_s")
    # Across jobs without a calibration speed can WARN at most, and the row says so.
    assert row.verdict == WARN and row.basis is Basis.UNCALIBRATED and row.p_value is None
    assert row.cannot_fail == (CannotFail.NO_CALIBRATION, CannotFail.ACROSS_JOBS) and row.warn_cause is WarnCause.OVER_FLOOR


def test_in_one_job_the_ab_stands_on_its_own_runs(suite, make_tree):
    """Issue 21: an interleaved A/B carries its own run-to-run noise; a 6% slowdown FAILs without calibration."""
    base = load_side(make_tree("base"), suite)
    cand = load_side(make_tree("slow", seed=1, speed_factor={QWEN_EN: 0.94}), suite)
    row = next(r for r in compare(base, cand, suite, cross_job=False).rows
               if r.workload == QWEN_EN and r.metric == "throughput_samples_per_s")
    assert row.verdict == FAIL and row.basis is Basis.CALIBRATED and "own runs" in row.method


def test_per_sample_ids_that_do_not_match_fall_back(suite, make_tree):
    base = side_from_tree(make_tree("base"), suite)
    cand = side_from_tree(make_tree("missing-ids", seed=1, defects={QWEN_EN: "missing_ids"}), suite)
    result = compare(base, cand, suite, calibration=_calibration())
    row = next(r for r in result.rows if r.workload == QWEN_EN and r.metric == "corpus_wer")
    assert row.p_value is None  # never paired
    assert row.verdict == INCOMPLETE or row.basis is Basis.FALLBACK


def test_disjoint_workloads_are_an_input_error(suite, sides):
    rng = np.random.default_rng(0)
    base = sides.memory_side(suite, values={QWEN_EN: sides.seedtts_values(rng)})
    cand = sides.memory_side(suite, values={"qwen3/asr_zh": sides.seedtts_values(rng)})
    with pytest.raises(InputError, match="share no workload"):
        compare(base, cand, suite)


def test_workload_missing_on_one_side_is_incomplete(suite, sides):
    rng = np.random.default_rng(0)
    base = sides.memory_side(suite, values={QWEN_EN: sides.seedtts_values(rng)})
    cand = sides.memory_side(suite, values={QWEN_EN: sides.seedtts_values(rng), "qwen3/asr_zh": sides.seedtts_values(rng)})
    result = compare(base, cand, suite, calibration=_calibration())
    assert {r.verdict for r in result.rows if r.workload == "qwen3/asr_zh"} == {INCOMPLETE}
    assert _coverage(result, "qwen3/asr_zh").baseline.reasons == (CoverageProblem(NO_RESULTS, "no results for this workload"),)


# --- in-memory known answers ---------------------------------------------------------------------------

def test_six_percent_throughput_drop_fails_exactly_that_row(suite, sides):
    rng = np.random.default_rng(4)
    base = sides.memory_side(suite, values={QWEN_EN: sides.seedtts_values(rng), "qwen3/asr_zh": sides.seedtts_values(rng)})
    cand_values = sides.seedtts_values(rng)
    cand_values["throughput_samples_per_s"] = [v * 0.94 for v in base.workloads[QWEN_EN].values["throughput_samples_per_s"]]
    cand = sides.memory_side(suite, values={QWEN_EN: cand_values, "qwen3/asr_zh": sides.seedtts_values(rng)})
    result = compare(base, cand, suite, calibration=_calibration(sigma=0.01))
    failing = [(r.workload, r.metric) for r in result.rows if r.verdict == FAIL]
    assert failing == [(QWEN_EN, "throughput_samples_per_s")]
    row = next(r for r in result.rows if r.verdict == FAIL)
    assert row.delta_rel == pytest.approx(-0.06, abs=1e-9) and row.family == "speed"
    assert row.ci[0] < 0.94 < row.ci[1]


def test_too_few_degrees_of_freedom_fall_back_and_say_so(suite, sides):
    rng = np.random.default_rng(1)
    base = sides.memory_side(suite, values={QWEN_EN: sides.seedtts_values(rng)})
    cand = sides.memory_side(suite, values={QWEN_EN: sides.seedtts_values(rng)})
    cal = {QWEN_EN: {m: Calibration(sigma=0.01, df=2, groups=2) for m in SPEED}}
    result = compare(base, cand, suite, calibration=cal, cross_job=True)
    row = next(r for r in result.rows if r.metric == "throughput_samples_per_s")
    assert row.verdict is not FAIL and "2 degrees of freedom" in "; ".join(row.notes)


def test_single_run_sides_are_said_so(suite, sides):
    rng = np.random.default_rng(2)
    base = sides.memory_side(suite, values={QWEN_EN: sides.seedtts_values(rng, n_runs=1)})
    cand = sides.memory_side(suite, values={QWEN_EN: sides.seedtts_values(rng, n_runs=1)})
    result = compare(base, cand, suite)
    row = next(r for r in result.rows if r.metric == "throughput_samples_per_s")
    assert CannotFail.SINGLE_RUN in row.cannot_fail
    calibrated = compare(base, cand, suite, calibration=_calibration())  # with sigma known, n=1 is testable
    assert next(r for r in calibrated.rows if r.metric == "throughput_samples_per_s").p_value is not None


def test_small_session_sets_use_the_larger_floor(suite, sides):
    # 20 sessions, every one +1 error: exact p = 2^-20, but Δ = 20/4000 = 0.5 pp only just reaches the small-set floor.
    ids = [f"s{i}" for i in range(20)]
    ref = [200] * 20
    base_err = np.full((3, 20), 10)
    moss = "moss_td/aishell4_long"
    speed = {"throughput_qps": [1.0] * 3, "latency_mean_s": [1.0] * 3, "latency_p95_s": [2.0] * 3, "rtf_mean": [0.1] * 3,
             "cer": [0.05] * 3, "cp_cer": [0.05] * 3}
    base = sides.memory_side(suite, values={moss: speed}, samples={moss: {"cer": (ids, ref, base_err), "cp_cer": (ids, ref, base_err)}})
    for extra, expected in ((1, FAIL), (0, PASS)):
        cand_err = base_err + extra
        cand = sides.memory_side(suite, values={moss: speed}, samples={moss: {"cer": (ids, ref, cand_err), "cp_cer": (ids, ref, cand_err)}})
        result = compare(base, cand, suite)
        row = next(r for r in result.rows if r.metric == "cer")
        assert row.verdict == expected
        if extra:
            assert row.p_value == pytest.approx(2.0 ** -20) and row.floor_abs == Thresholds().small_set_floor_abs


def test_ids_that_differ_between_sides_are_never_paired(suite, sides):
    rng = np.random.default_rng(0)
    values = sides.seedtts_values(rng)
    base = sides.memory_side(suite, values={QWEN_EN: values}, samples={QWEN_EN: {"wer": (["a", "b"], [5, 5], [[0, 1]] * 3)}})
    cand = sides.memory_side(suite, values={QWEN_EN: values}, samples={QWEN_EN: {"wer": (["a", "c"], [5, 5], [[0, 1]] * 3)}})
    row = next(r for r in compare(base, cand, suite).rows if r.metric == "corpus_wer")
    assert row.basis is Basis.FALLBACK and "ids do not match" in row.notes[0] and row.p_value is None


# --- false alarms -----------------------------------------------------------------------------------------
