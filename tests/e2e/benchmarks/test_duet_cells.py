"""The duet's cells of the noise matrix (benchmarks/power/duet.py, issue 53): false FAIL and power at the measured
components, and the simulator's verdicts against `gate.judging.compare.compare` on duet layouts."""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from benchmarks.power import duet
from benchmarks.power.noise import WORKLOADS, draw_test_sets
from benchmarks.power.validate import _side
from gate.formats.config import load_suite
from gate.judging import look_rule
from gate.judging.compare import compare
from gate.judging.duet import Layout, session_test
from gate.judging.judge import one_look_thresholds
from gate.stats import looks

_CODES = {"pass": 0, "warn": 1, "fail": 2}


@pytest.fixture(scope="module")
def machines():
    return duet.machines()


def test_a_no_op_duet_false_fails_at_most_one_percent_and_minus_five_is_caught_on_machine_a(machines):
    rows = duet.model_rows()
    a = machines["A"]
    runner = duet.cell(a, rows, duet.RUNNER.pairs, duet.RUNNER.first_sessions, duet.RUNNER.max_sessions, 600, 1)
    assert runner["false_fail_high"] <= 0.01
    assert runner["power"]["-5%"] >= 0.8
    # within today's GPU minutes (`--sessions K,K`): no more false FAILs, and a smaller change caught than today's
    now = duet.today(a)
    k = duet.duet_design.sessions_within(a.duet(duet.RUNNER.pairs), now["gpu_minutes"]).sessions
    cell = duet.cell(a, rows, duet.RUNNER.pairs, k, k, 600, 2)
    assert cell["sessions"] == [k, k] and cell["false_fail_high"] <= 0.01
    assert cell["caught_80"] is not None and cell["caught_80"] < now["detectable"]


def test_the_co_residence_slowdown_cancels_in_the_paired_difference(machines):
    rows = duet.model_rows()
    slow = replace(machines["B"], coresidence=math.log(0.5), coresidence_sd=0.2)
    draws = [duet.draw_blocks(np.random.default_rng(5), m, rows, 2, 6, 50, -0.03) for m in (machines["B"], slow)]
    assert np.allclose(duet.session_means(*draws[0]), duet.session_means(*draws[1]))
    assert np.mean(draws[1][0]) < np.mean(draws[0][0]) - 0.5  # the absolute figures move


def test_the_batched_session_test_is_the_judges_on_one_comparison():
    means = np.random.default_rng(3).normal(-0.01, 0.01, (7, 4, 5))
    batched = session_test(means, np.array([True, False, True, False]))
    one = session_test(means[2, 1], False)
    assert float(one.p) == batched.p[2, 1] and float(one.worse) == batched.worse[2, 1] and one.df == 4


def _sides(suite, test_sets, base, cand, pr):
    """Base and candidate sides of qwen3 whose run (s − 1)·P + j is block pair j of session s (block arrays (B, R, K, P)
    in model_rows' order: per workload, throughput then p95)."""
    rows = duet.model_rows()
    out = []
    for label, logs in (("base", base), ("cand", cand)):
        data = {}
        for truth in (w for w in WORKLOADS if w.model == duet.MODEL):
            r = [i for i, name in enumerate(rows.names) if name.startswith(truth.workload_id + " ")]
            errors = {m: np.tile(test_sets[truth.workload_id].errors[m], (logs.shape[2] * logs.shape[3], 1))
                      for _, m, _ in truth.measures}
            data[truth.workload_id] = ({"throughput": logs[pr, r[0]].reshape(-1),
                                        "latency_p95_s": logs[pr, r[1]].reshape(-1)}, errors)
        out.append(_side(suite, "tree", label, data, test_sets, lambda a: a, logs.shape[2] * logs.shape[3]))
    return out


def test_the_simulated_duet_agrees_with_compare_on_duet_layouts(machines):
    suite, test_sets, rows = load_suite(), draw_test_sets(11), duet.model_rows()
    first, most, pairs = duet.RUNNER.first_sessions, duet.RUNNER.max_sessions, 2
    layout = Layout(tuple((s, (duet.MODEL,), tuple(f"run{(s - 1) * pairs + j}" for j in range(1, pairs + 1)))
                          for s in range(1, most + 1)), "duet", {}, first)
    checked = fails = 0
    actions: list[str] = []
    for change, seed in ((0.0, 1), (-0.03, 2), (-0.06, 3)):
        base, cand = duet.draw_blocks(np.random.default_rng(seed), machines["A"], rows, pairs, most, 4, change)
        means = duet.session_means(base, cand)
        look1 = duet.judge_look(means[..., :first], rows, looks.thresholds_for(looks.Look.FIRST), first=True)
        pooled = duet.judge_look(means, rows, looks.thresholds_for(looks.Look.POOLED), first=False)
        # `--sessions K,K`: one look, no looks recorded, at the one-look level (gate.judging.judge._duet_report)
        one = duet.judge_look(means[..., :most - 2], rows, one_look_thresholds(True), first=False)
        for pr in range(means.shape[0]):
            b, c = _sides(suite, test_sets, base, cand, pr)
            report = compare(b, c, suite, models=(duet.MODEL,), thresholds=looks.thresholds_for(looks.Look.FIRST),
                             cross_job=False, duet=layout.first_look())
            action = look_rule.decide(report, duet.MODEL).action
            expected = "fail" if look1.fail[pr] else "extend" if look1.extend[pr] else "pass"
            assert action == expected
            actions.append(action)
            got = {f"{r.workload} {r.metric}": _CODES[r.verdict.value] for r in report.rows if r.family == "speed"}
            assert [got[n] for n in rows.names] == list(look1.verdict[pr])
            checked += 1
            report = compare(b, c, suite, models=(duet.MODEL,), thresholds=one_look_thresholds(True), cross_job=False,
                             duet=replace(layout, sessions=layout.sessions[:most - 2]))
            got = {f"{r.workload} {r.metric}": _CODES[r.verdict.value] for r in report.rows if r.family == "speed"}
            assert [got[n] for n in rows.names] == list(one.verdict[pr])
            if action == "extend":
                report = compare(b, c, suite, models=(duet.MODEL,), cross_job=False, duet=layout,
                                 thresholds=looks.thresholds_for(looks.Look.POOLED))
                got = {f"{r.workload} {r.metric}": _CODES[r.verdict.value] for r in report.rows if r.family == "speed"}
                assert [got[n] for n in rows.names] == list(pooled.verdict[pr])
                fails += look_rule.decide_pooled(report, duet.MODEL).action == "fail"
    assert checked == 12 and fails >= 1 and actions.count("extend") >= 1  # the −6% builds reach a pooled FAIL: the check is not only of PASSes
