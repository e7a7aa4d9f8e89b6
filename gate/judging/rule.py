"""The verdict of one model's family of gated rows over B comparisons at once (issue 49): Holm for FAIL and BH for
WARN (gate.stats.decision), then the two WARN-at-least rules, with the cause of every WARN. `compare` calls it
with B = 1 (gate.judging.compare._decide_quality, _decide_speed); the power benchmark with thousands
(benchmarks/power/simulate.py), so the two cannot drift apart.

Facts in, as arrays (B, rows): p (weighted already where a family weighs its rows), whether the change reaches
the floor and half of it, whether the row may FAIL, and the rows' newly catastrophic utterances and instability.
Codes out: the verdict (gate.stats.decision PASS, WARN, FAIL) and the cause (`CAUSES`' index; 0 = none)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gate.formats.reasons import WarnCause
from gate.stats import decision

PASS, WARN, FAIL = decision.PASS, decision.WARN, decision.FAIL
CAUSES: tuple[WarnCause | None, ...] = (None, WarnCause.BEYOND_NOISE, WarnCause.UNSTABLE, WarnCause.NEW_CATASTROPHIC)
_BEYOND_NOISE, _UNSTABLE, _NEW_CATASTROPHIC = 1, 2, 3


@dataclass(frozen=True)
class Verdicts:
    verdict: np.ndarray  # (B, rows) PASS / WARN / FAIL codes
    cause: np.ndarray  # (B, rows) index into CAUSES: why a WARN is one (0 on a row that is not)
    p_adjusted: np.ndarray  # Holm
    q_value: np.ndarray  # BH


def family(p: np.ndarray, above: np.ndarray, half: np.ndarray, can_fail: np.ndarray, *, alpha: float, warn_q: float,
           unstable: np.ndarray | None = None, catastrophic: np.ndarray | None = None) -> Verdicts:
    """FAIL at Holm p ≤ α with the floor where the row may FAIL; WARN at BH q ≤ `warn_q` with half the floor; then a
    tested row with a newly catastrophic utterance (accuracy) or unstable runs (speed) is at least a WARN. Rows
    without a test (NaN p) stay PASS here."""
    found = decision.decide_family(p, above, half, can_fail, alpha=alpha, warn_q=warn_q)
    verdict = found.verdict
    cause = np.where(verdict == WARN, _BEYOND_NOISE, 0)
    tested = ~np.isnan(np.asarray(p, dtype=float))
    for flags, code in ((catastrophic, _NEW_CATASTROPHIC), (unstable, _UNSTABLE)):
        if flags is None:
            continue
        lifted = (np.asarray(flags) > 0) & tested & (verdict < WARN)
        verdict, cause = np.where(lifted, WARN, verdict), np.where(lifted, code, cause)
    return Verdicts(verdict=verdict, cause=cause, p_adjusted=found.p_adjusted, q_value=found.q_value)
