"""The few-session rule (issue 52, gate.judging.few_sessions): on a set of at most 30 sessions a large regression
confined to a few of them FAILs when the paired evidence agrees; a small change on a few sessions does not."""
from __future__ import annotations

import numpy as np
import pytest

from gate.formats.config import load_suite
from gate.formats.verdict import Verdict
from gate.judging import few_sessions
from gate.judging.compare import compare
from tests.helpers.memory_sides import memory_side


@pytest.fixture(scope="module")
def suite():
    return load_suite()


def _values(wer: float) -> dict[str, list[float]]:
    return {"cer": [wer] * 3, "cp_cer": [wer] * 3, "cer_valid_samples": [25.0] * 3, "cp_cer_valid_samples": [25.0] * 3,
            "speaker_timestamp_der": [0.1] * 3, "speaker_timestamp_der_skipped_parse_error": [0.0] * 3,
            "failed_requests": [0.0] * 3, "throughput_qps": [0.046, 0.0461, 0.0459],
            "latency_mean_s": [250.0, 251.0, 249.0], "latency_p95_s": [330.0, 331.0, 329.0],
            "rtf_mean": [0.097, 0.0971, 0.0969]}


def _pair(suite, workload: str, ref_len: np.ndarray, base: np.ndarray, cand: np.ndarray):
    ids = tuple(f"session_{i:02d}" for i in range(len(ref_len)))
    sides = []
    for label, errors in (("base", base), ("cand", cand)):
        rate = float(errors.sum(axis=1).mean() / ref_len.sum())
        sides.append(memory_side(suite, values={workload: _values(rate)}, label=label,
                                 samples={workload: {m: (ids, ref_len, errors) for m in ("cer", "cp_cer")}}))
    return compare(sides[0], sides[1], suite, models=("moss_td",))


def _row(report, workload: str, metric: str):
    return next(r for r in report.rows if r.workload == workload and r.metric == metric)


def test_googletime_four_sessions_newly_catastrophic_fails(suite):
    """cpCER 0.02% -> 13.0%: 4 of 25 long sessions go from no errors to over 50%; the sign-flip p is 2^-4 at best."""
    n = 25
    ref_len = np.full(n, 3000)
    base = np.zeros((3, n), dtype=np.int64)
    base[:, 7] = 15  # 0.02% of the corpus: one session with a few errors
    cand = base.copy()
    for i in (2, 9, 14, 21):
        cand[:, i] = [2440, 2437, 2443]  # 81% of these sessions' characters (13.0% of the corpus)
    report = _pair(suite, "moss_td/googletime", ref_len, base, cand)
    row = _row(report, "moss_td/googletime", "cp_cer")
    assert row.delta_abs == pytest.approx(0.130, abs=0.001)
    assert row.new_catastrophic == 4 and row.above_half == (0.0, 4.0)
    assert row.verdict is Verdict.FAIL and row.few_sessions, row
    assert report.verdict is Verdict.FAIL


def test_a_small_rise_on_five_of_twenty_sessions_passes(suite):
    """+0.3 pp on 5 of 20 AISHELL-4 sessions: below every floor, no session crosses 50%."""
    n = 20
    ref_len = np.full(n, 2000)
    rng = np.random.default_rng(3)
    base = np.repeat(rng.integers(200, 360, n)[None], 3, axis=0).astype(np.int64)  # about 14% CER
    cand = base.copy()
    cand[:, :5] += 24  # 5 x 24 = 120 errors of 40,000 characters: +0.3 pp
    report = _pair(suite, "moss_td/aishell4_long", ref_len, base, cand)
    row = _row(report, "moss_td/aishell4_long", "cer")
    assert row.delta_abs == pytest.approx(0.003)
    assert not row.few_sessions and row.verdict is not Verdict.FAIL, row


def test_the_rule_is_data_and_batched():
    fired = few_sessions.fires(np.array([25, 25, 800, 20]), np.array([0.13, 0.13, 0.13, 0.003]), np.array([4, 4, 4, 0]),
                               np.array([0.0625, 0.2, 0.0625, 0.03]))
    assert fired.tolist() == [True, False, False, False]
    assert few_sessions.above_half(np.array([[0, 2000, 999], [0, 1001, 1001]]), np.array([10, 2000, 2000])) == (1, 2)
