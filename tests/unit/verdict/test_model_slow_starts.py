"""One slow-mode set per model, found on its throughput rows, set aside from every speed row (issue 36): a server
start is slow or not for all it serves, and the p95 rows' own noise made them miss starts the throughput rows saw."""
from __future__ import annotations

import numpy as np

from gate.formats.config import load_suite
from gate.formats.report import SideStats
from gate.judging.draft import Draft
from gate.judging.speed_rows import judge_speed
from gate.stats.drift import arm_positions
from gate.stats.slowmode import steady_given, without_terms
from gate.stats.speed import SpeedNoise


def _p95_row(slow_starts):
    suite = load_suite()
    workload = suite.workload("qwen3/asr_en")
    metric = next(m for m in workload.metrics if m.name == "latency_p95_s")
    rng = np.random.default_rng(7)
    y = 0.004 * rng.standard_normal((4, 6))  # ln p95 [en base, en cand, zh base, zh cand]
    y[1, [1, 4]] += np.log(1.08)  # two candidate starts slow: en's p95 8% up ...
    y[3, [1, 4]] += np.log(1.025)  # ... zh's only 2.5% (its own noise): found per metric, not a slow start
    base, cand = np.exp(y[0]), np.exp(y[1])
    row = Draft(workload=workload, metric=metric,
                baseline=SideStats.of(list(base), [True] * 6, 6, 100),
                candidate=SideStats.of(list(cand), [True] * 6, 6, 100))
    at = arm_positions(4, 6)
    judge_speed(row, metric, SpeedNoise(sigma=0.01, sigma_df=40), False, own_arms=y, base_arms=y[0::2],
                positions=(at, at[0::2]), whole_model=True, slow_starts=slow_starts)
    return row


def test_the_models_slow_starts_are_set_aside_from_its_p95_rows():
    found = np.zeros((2, 6), dtype=bool)
    found[1, [1, 4]] = True  # what the throughput rows found
    shared = _p95_row(found)
    assert not shared.unstable and shared.worse_rel < 0.01
    alone = _p95_row(None)
    assert alone.unstable or alone.worse_rel > 0.015


def test_steady_given_fits_the_terms_without_the_slow_starts():
    y = 0.001 * np.random.default_rng(3).standard_normal((4, 6)) - 0.005 * arm_positions(4, 6)
    slow = np.zeros((2, 6), dtype=bool)
    slow[1, 2] = True
    y[[1, 3], 2] += np.log(0.9)
    at = arm_positions(4, 6)
    assert np.allclose(steady_given(y, at, slow), without_terms(y, at, left_out=slow[[0, 1, 0, 1]]))
    assert steady_given(y, None, slow) is y or np.array_equal(steady_given(y, None, slow), y)


def test_one_set_per_model_only_where_the_run_order_is_known():
    """gate.stats.slowmode.model_slow_set: the speed rows and the power simulator ask it (issue 49)."""
    from gate.stats.slowmode import find_slow_starts, model_slow_set

    rng = np.random.default_rng(3)
    y = 0.004 * rng.standard_normal((5, 4, 6))  # B = 5 A/Bs at once
    y[:, 1::2, 2] -= np.log(1.1)  # the candidate's third start slow in every workload
    at = arm_positions(4, 6)
    found = model_slow_set(y, at, run_order=True)
    assert found is not None and np.array_equal(found, find_slow_starts(y, at, higher_is_better=True)[0])
    assert found[:, 1, 2].all()
    assert model_slow_set(y, at, run_order=False) is None
    assert model_slow_set(np.zeros((0, 0)), None, run_order=True) is None


def test_a_row_uses_the_models_set_where_it_matches_and_none_untrimmed():
    """gate.stats.slowmode.row_on_fast_mode: untrimmed arms stay as they are, a model's set of other runs is not used,
    and batched it gives what each A/B gives alone."""
    from gate.stats.slowmode import on_fast_mode, row_on_fast_mode, whole_model_slower

    rng = np.random.default_rng(5)
    y = 0.004 * rng.standard_normal((3, 4, 6))
    y[:, 1::2, 4] -= np.log(1.1)
    at = arm_positions(4, 6)
    given = np.zeros((3, 2, 6), dtype=bool)
    given[:, 1, 4] = True
    fast, slow, slower, _ = row_on_fast_mode(y, at, higher_is_better=True, trim=True, model_slow=given)
    assert np.array_equal(slow, given) and np.isnan(fast[:, 1::2, 4]).all()
    for b in range(3):  # one A/B at a time, as speed_rows asks it
        one = row_on_fast_mode(y[b], at, higher_is_better=True, trim=True, model_slow=given[b])
        assert np.array_equal(one[0], fast[b], equal_nan=True) and np.array_equal(one[2], slower[b])
    mismatched = row_on_fast_mode(y, at, higher_is_better=True, trim=True, model_slow=given[..., :5])
    alone = on_fast_mode(y, at, higher_is_better=True)
    assert all(np.array_equal(a, b, equal_nan=True) for a, b in zip(mismatched, alone, strict=True))
    kept, none, counted, terms = row_on_fast_mode(y, at, higher_is_better=True, trim=False, model_slow=given)
    assert none is None and terms is None and np.array_equal(kept, y)
    assert np.array_equal(counted, whole_model_slower(y, higher_is_better=True))
