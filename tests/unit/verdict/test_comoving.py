"""Utterances that churn together (issue 21): found in the A/A runs (gate.stats.overdispersion.comoving), named
in the calibration, left out of the accuracy test and its floors, and said on the row."""
from __future__ import annotations

import numpy as np
import pytest

from gate.formats.baseline_record import AccuracyNoiseRecord, upgrade
from gate.formats.noise_model import Dispersion
from gate.judging.calibration import calibration_from_pairs
from gate.judging.compare import compare
from gate.stats.overdispersion import comoving, from_arms

QWEN_EN = "qwen3/asr_en"
N, GROUP = 1088, slice(500, 533)  # 33 of 1,088 utterances move together, as in the benchmark's hostile model


def _aa_arms(rng, *, independent: int = 300, group: bool = True, arms: int = 6) -> list[np.ndarray]:
    """Same-commit arms of 3 runs: `independent` utterances each flip on their own, and the group all together."""
    out = []
    for _ in range(arms):
        e = np.zeros((3, N), dtype=int)
        e[:, :independent] = rng.integers(0, 2, (3, independent))
        if group:
            e[:, GROUP] = rng.integers(0, 2, (3, 1))
        out.append(e)
    return out


def test_the_group_is_found_whole_and_independent_churners_are_left_alone():
    rng = np.random.default_rng(21)
    arms = _aa_arms(rng)
    while not sum(bool((a[:, GROUP.start] != a[0, GROUP.start]).any()) for a in arms) >= 3:
        arms = _aa_arms(rng)  # the group must have changed within three arms to be seen at all
    found = comoving(arms)
    # The whole group; an independent churner that happens to follow another's pattern (r ≥ 0.8 over 12 df, about
    # one pair in 1,700) is set aside too, which costs its share of power and nothing else.
    assert found[GROUP].all() and found.sum() < N // 5
    assert not comoving(_aa_arms(rng, independent=0, group=False)).any()  # nothing churned: nothing to set aside


def test_utterances_that_changed_in_one_or_two_arms_are_not_a_group():
    """Utterances that changed once or twice in all the runs correlate perfectly whenever they changed in the
    same run; they are not evidence of moving together."""
    rng = np.random.default_rng(3)
    arms = [np.zeros((3, N), dtype=int) for _ in range(6)]
    for i in range(200):
        arm, run = rng.integers(6), rng.integers(3)
        arms[arm][run, i] = 1
    arms[0][1, 300:320] = 1  # twenty that changed together, once
    assert not comoving(arms).any()


def test_too_few_arms_or_a_group_that_is_the_whole_set_sets_nothing_aside():
    rng = np.random.default_rng(5)
    assert not comoving(_aa_arms(rng, arms=2)).any()
    everything = [np.repeat(rng.integers(0, 2, (3, 1)), N, axis=1) for _ in range(6)]
    assert not comoving(everything).any()  # a run-level effect on the whole set: the widened test's job


def test_from_arms_names_the_group_and_measures_the_rest():
    rng = np.random.default_rng(21)
    arms = _aa_arms(rng, arms=40)  # 80 degrees of freedom: φ itself is then known to about ±0.2
    ids = [f"u{i}" for i in range(N)]
    whole, rest = from_arms(arms), from_arms(arms, ids)
    assert whole is not None and rest is not None
    assert set(ids[GROUP]) <= set(rest.comoving) and len(rest.comoving) <= 35 and whole.comoving == ()
    assert whole.phi > 3 and rest.phi == pytest.approx(1.0, abs=0.3)  # the group's covariance was the excess
    assert Dispersion.from_dict(rest.to_dict()) == rest
    assert AccuracyNoiseRecord.of(rest).value() == rest


def test_a_baseline_file_written_before_comoving_reads_as_none_set_aside():
    old = {"ss_total": 30.0, "ss_units": 25.0, "df": 12, "arms": 6, "phi": 1.2, "identical": False}
    upgraded = upgrade({"calibration": {QWEN_EN: {"corpus_wer": old}}})
    assert upgraded["calibration"][QWEN_EN]["corpus_wer"]["comoving"] == []


def _sides(suite, sides, rng, base_errors, cand_errors, calibration):
    ids, ref = [f"u{i}" for i in range(N)], np.full(N, 11)
    values = {QWEN_EN: sides.seedtts_values(rng)}
    base = sides.memory_side(suite, values=values, samples={QWEN_EN: {"wer": (ids, ref, base_errors)}},
                             calibration=calibration)
    cand = sides.memory_side(suite, values=values, samples={QWEN_EN: {"wer": (ids, ref, cand_errors)}}, label="cand")
    return base, cand


def test_a_change_the_group_swing_hid_is_tested_on_the_rest(suite, sides):
    """+1 error on 45 utterances outside the group (+0.38 pp of the rest), while the group swings the other way
    in the candidate's runs: on the whole set the widened test pays for the group's swing on every row and the
    change hides; without the group it FAILs, the floors are held to the rest's Δ, and the row says so."""
    rng = np.random.default_rng(21)
    ids = [f"u{i}" for i in range(N)]
    aa = _aa_arms(rng)
    pairs = [sides.memory_side(suite, values={QWEN_EN: sides.seedtts_values(rng)},
                               samples={QWEN_EN: {"wer": (ids, np.full(N, 11), e)}}, label=f"aa{k}")
             for k, e in enumerate(aa)]
    calibration = calibration_from_pairs(list(zip(pairs[0::2], pairs[1::2], strict=True)), suite)
    record = calibration[QWEN_EN]["corpus_wer"]
    assert isinstance(record, Dispersion) and set(ids[GROUP]) <= set(record.comoving)
    apart = len(record.comoving)

    base_errors = _aa_arms(rng, arms=1)[0]
    base_errors[:, GROUP] = 1  # the group up in every baseline run ...
    cand_errors = _aa_arms(rng, arms=1)[0]
    cand_errors[:, GROUP] = 0  # ... and down in every candidate run
    cand_errors[:, 900:945] += 1  # the real change
    base, cand = _sides(suite, sides, rng, base_errors, cand_errors, calibration)
    row = next(r for r in compare(base, cand, suite, cross_job=False).rows if r.metric == "corpus_wer")
    assert row.verdict.value == "fail" and f"over {N - apart} of {N} utterances" in row.method
    assert row.delta_abs < 0.001  # the whole set's Δ, shown: the group's swing took most of the change away
    rest = ~np.isin(ids, record.comoving)  # the group, and chance pairs among the independent churners, set aside
    rest_delta = float((cand_errors.mean(axis=0) - base_errors.mean(axis=0))[rest].sum()) / (11 * rest.sum())
    assert rest_delta > 0.003  # the +45 errors, about +0.4 pp of the rest
    assert any(n.startswith(f"tested without the {apart} utterances that churned together")
               and f"Δ without them {rest_delta * 100:+.3f} pp" in n for n in row.notes)

    whole = from_arms(aa)  # what the record said before co-moving utterances were set aside
    assert whole is not None
    base_w, cand_w = _sides(suite, sides, rng, base_errors, cand_errors, {QWEN_EN: {"corpus_wer": whole}})
    row_w = next(r for r in compare(base_w, cand_w, suite, cross_job=False).rows if r.metric == "corpus_wer")
    assert row_w.verdict.value != "fail" and row_w.p_value > row.p_value
