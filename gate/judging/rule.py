"""The verdict of one model's family of gated rows over B comparisons at once (issue 49): Holm for FAIL and BH for
WARN (gate.stats.decision), then the two WARN-at-least rules, with the cause of every WARN. `compare` calls it
with B = 1 (gate.judging.compare._decide_quality, _decide_speed); the power benchmark with thousands
(benchmarks/power/simulate.py), so the two cannot drift apart.

Facts in, as arrays (B, rows): p (weighted already where a family weighs its rows), whether the change reaches
the floor and half of it, whether the row may FAIL, and the rows' newly catastrophic utterances and instability.
`forced`: rows another rule FAILs whatever Holm says (the few-session rule, gate.judging.few_sessions); the mask
is applied here, once, so `compare` and the benchmark cannot apply it differently.
Codes out: the verdict (gate.stats.decision PASS, WARN, FAIL) and the cause (`CAUSES`' index; 0 = none).
`levels`: the α and WARN q a family of rows is judged at, from the look's Thresholds, for both callers.

`extension` is `gate run`'s first look over one model's rows, B comparisons at once: fail, extend (3+3 more runs)
or pass, with each row's typed causes (ExtendCause). gate.judging.look_rule.decide calls it with B = 1 for the
runner's looks; the power benchmark with thousands."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from gate.formats.reasons import ExtendCause, WarnCause
from gate.stats import decision
from gate.stats.looks import EXTEND_FAMILIES, EXTEND_Q
from gate.stats.multiplicity import bh_array
from gate.stats.thresholds import Thresholds

PASS, WARN, FAIL = decision.PASS, decision.WARN, decision.FAIL
CAUSES: tuple[WarnCause | None, ...] = (None, WarnCause.BEYOND_NOISE, WarnCause.UNSTABLE, WarnCause.NEW_CATASTROPHIC)
_BEYOND_NOISE, _UNSTABLE, _NEW_CATASTROPHIC = 1, 2, 3


@dataclass(frozen=True)
class Verdicts:
    verdict: np.ndarray  # (B, rows) PASS / WARN / FAIL codes
    cause: np.ndarray  # (B, rows) index into CAUSES: why a WARN is one (0 on a row that is not)
    p_adjusted: np.ndarray  # Holm
    q_value: np.ndarray  # BH
    forced: np.ndarray  # (B, rows) FAILed by `forced` where Holm alone did not


def levels(thresholds: Thresholds, family: str) -> tuple[float, float]:
    """A family's FAIL α and WARN q under a look's Thresholds (gate.stats.looks.thresholds_for,
    gate.judging.judge.one_look_thresholds): speed rows spend `alpha` and WARN at `speed_warn_q`, accuracy rows
    `quality_alpha` and `warn_q`."""
    if family == "speed":
        return thresholds.alpha, thresholds.speed_warn_q
    return thresholds.quality_alpha, thresholds.warn_q


def family(p: np.ndarray, above: np.ndarray, half: np.ndarray, can_fail: np.ndarray, *, alpha: float, warn_q: float,
           unstable: np.ndarray | None = None, catastrophic: np.ndarray | None = None,
           forced: np.ndarray | None = None) -> Verdicts:
    """FAIL at Holm p ≤ α with the floor where the row may FAIL; WARN at BH q ≤ `warn_q` with half the floor; then a
    tested row with a newly catastrophic utterance (accuracy) or unstable runs (speed) is at least a WARN; last, a
    tested row in `forced` FAILs (no WARN cause). Rows without a test (NaN p) stay PASS here."""
    found = decision.decide_family(p, above, half, can_fail, alpha=alpha, warn_q=warn_q)
    verdict = found.verdict
    cause = np.where(verdict == WARN, _BEYOND_NOISE, 0)
    tested = ~np.isnan(np.asarray(p, dtype=float))
    for flags, code in ((catastrophic, _NEW_CATASTROPHIC), (unstable, _UNSTABLE)):
        if flags is None:
            continue
        lifted = (np.asarray(flags) > 0) & tested & (verdict < WARN)
        verdict, cause = np.where(lifted, WARN, verdict), np.where(lifted, code, cause)
    pushed = np.zeros(verdict.shape, dtype=bool) if forced is None else np.asarray(forced, dtype=bool) & tested
    pushed &= verdict != FAIL
    verdict, cause = np.where(pushed, FAIL, verdict), np.where(pushed, 0, cause)
    return Verdicts(verdict=verdict, cause=cause, p_adjusted=found.p_adjusted, q_value=found.q_value, forced=pushed)


ACTIONS = ("pass", "extend", "fail")  # a first look's action codes (LookDecision.action spells them)
LOOK_PASS, LOOK_EXTEND, LOOK_FAIL = 0, 1, 2


@dataclass(frozen=True)
class Extension:
    action: np.ndarray  # (B,) index into ACTIONS
    causes: dict[ExtendCause, np.ndarray]  # (B, rows) the rows that extend the model, by cause
    q_value: np.ndarray  # (B, rows) BH q within the row's family (NaN: untested)


def extension(p: np.ndarray, half: np.ndarray, blind: np.ndarray, unstable: np.ndarray, failed: np.ndarray, *,
              family: Sequence[str]) -> Extension:
    """One model's first look: FAIL where a row FAILed (`failed`, (B,)); else extend where a row (B, rows) reaches
    half its floor (`half`) with a BH q, within its family ("speed" / "quality"), at most EXTEND_Q, or is
    blind, or unstable; else pass. p: the rows' p (NaN untested), as the look's report gives them."""
    p = np.asarray(p, dtype=float)
    families = np.asarray(family)
    q = np.full(p.shape, np.nan)
    near = np.zeros(p.shape, dtype=bool)
    for name in EXTEND_FAMILIES:
        cols = families == name
        q[:, cols] = bh_array(p[:, cols])
        near[:, cols] = (np.nan_to_num(q[:, cols], nan=1.0) <= EXTEND_Q) & np.asarray(half, dtype=bool)[:, cols]
    causes = {ExtendCause.NEAR_FLOOR: near, ExtendCause.BLIND: np.asarray(blind, dtype=bool),
              ExtendCause.UNSTABLE: np.asarray(unstable, dtype=bool)}
    extend = np.logical_or.reduce([c.any(axis=-1) for c in causes.values()])
    failed = np.asarray(failed, dtype=bool)
    action = np.where(failed, LOOK_FAIL, np.where(extend, LOOK_EXTEND, LOOK_PASS))
    return Extension(action=action, causes={k: c & ~failed[:, None] for k, c in causes.items()}, q_value=q)
