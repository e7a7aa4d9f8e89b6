"""Issue 49: one family rule for `compare` (B = 1) and the power benchmark (B in the thousands)."""
from __future__ import annotations

import numpy as np

from gate.formats.reasons import WarnCause
from gate.judging import rule
from gate.stats.decision import decide_family


def _facts(rng: np.random.Generator, batch: int, rows: int) -> dict:
    p = rng.uniform(0, 0.02, (batch, rows)) ** 2
    p[rng.random((batch, rows)) < 0.1] = np.nan  # rows without a test
    above = rng.random((batch, rows)) < 0.7
    return {"p": p, "above": above, "half": above | (rng.random((batch, rows)) < 0.5),
            "can_fail": rng.random((batch, rows)) < 0.8, "unstable": rng.random((batch, rows)) < 0.1,
            "catastrophic": rng.integers(0, 2, (batch, rows)) * (rng.random((batch, rows)) < 0.1)}


def test_a_batch_decides_each_comparison_as_it_alone_would():
    facts = _facts(np.random.default_rng(49), 400, 6)
    batch = rule.family(**facts, alpha=0.005, warn_q=0.01)
    for b in range(400):
        one = rule.family(**{k: v[b:b + 1] for k, v in facts.items()}, alpha=0.005, warn_q=0.01)
        assert np.array_equal(one.verdict[0], batch.verdict[b]) and np.array_equal(one.cause[0], batch.cause[b])


def test_the_warn_at_least_rules_lift_a_tested_pass_and_name_their_cause():
    facts = _facts(np.random.default_rng(50), 2000, 6)
    plain = decide_family(facts["p"], facts["above"], facts["half"], facts["can_fail"], alpha=0.005, warn_q=0.01)
    found = rule.family(**facts, alpha=0.005, warn_q=0.01)
    tested = ~np.isnan(facts["p"])
    lifted = (plain.verdict == rule.PASS) & tested & ((facts["catastrophic"] > 0) | facts["unstable"])
    assert lifted.any() and (found.verdict[lifted] == rule.WARN).all()
    assert (found.verdict[~lifted] == plain.verdict[~lifted]).all()  # nothing else moves
    causes = np.array(rule.CAUSES, dtype=object)[found.cause]
    assert set(causes[found.verdict == rule.WARN]) <= set(WarnCause) and (found.cause[found.verdict != rule.WARN] == 0).all()
    assert (causes[(plain.verdict == rule.WARN)] == WarnCause.BEYOND_NOISE).all()
    assert (found.verdict[~tested] == rule.PASS).all()  # an untested row is never lifted
