"""What a look of `gate run --ab` decides for one model of a report (issue 10; the levels: gate.stats.looks).

`decide` after the first 3+3: fail, extend (3+3 more runs) or pass, by the batched rule
(gate.judging.rule.extension, B = 1), which gives each extending row its typed cause (ExtendCause); the
reasons it returns are the run log's words for those causes. `decide_pooled` after the pooled 6+6: fail or pass.
Both are pure: they read a report that `compare` made with `thresholds_for(Look.FIRST)` / `thresholds_for(Look.POOLED)`
and return what the runner should do; a row that could not be judged (NOT COMPARABLE) leaves the model undecided.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np

from gate.formats.reasons import ExtendCause
from gate.judging import floors, rule
from gate.stats.looks import EXTEND_FAMILIES, EXTEND_Q, FIRST_ALPHA, POOLED_ALPHA


@dataclass(frozen=True)
class LookDecision:
    action: str  # "pass" (stop; no FAIL), "fail" (stop; a row FAILs), "extend" (3+3 more runs), "undecided" (stop;
    # a row could not be judged: NOT COMPARABLE)
    reasons: tuple[str, ...]  # for the run log, said from the typed causes
    causes: tuple[ExtendCause, ...] = ()  # why an "extend" extends, each cause once, in ExtendCause's order


def decide(first_look: Any, model: str) -> LookDecision:
    """After the first 3+3: fail, extend, or pass for one model of a first-look report."""
    rows = _rows(first_look, model)
    if (stopped := _stopped(rows, f"at Holm α₁ = {FIRST_ALPHA}")):
        return stopped
    gated = [r for r in rows if r.family in EXTEND_FAMILIES]
    p = np.array([[np.nan if r.p_value is None else r.p_value for r in gated]], dtype=float)
    found = rule.extension(
        p, np.array([[floor_share(r) >= floors.WARN_SHARE for r in gated]], dtype=bool),
        # blind: a PASS from a first look that could not have seen three times the floor (SENSITIVITY_FACTOR) says little (issue 21)
        np.array([[bool(getattr(r, "blind", False)) and r.mde is not None for r in gated]], dtype=bool),
        # unstable: a candidate run set aside as worse; at the pooled look it takes two of six (gate.stats.speed)
        np.array([[r.family == "speed" and bool(getattr(r, "unstable", False)) for r in gated]], dtype=bool),
        np.zeros(1, dtype=bool), family=[r.family for r in gated])
    if rule.ACTIONS[int(found.action[0])] == "pass":
        return LookDecision("pass", (f"{model}: no gated row near a regression at the first look",))
    hits = {cause: found.causes[cause][0] for cause in ExtendCause}
    return LookDecision("extend", _reasons(gated, hits, found.q_value[0]), tuple(c for c in ExtendCause if hits[c].any()))


def _reasons(gated: list[Any], hits: dict[ExtendCause, np.ndarray], q: np.ndarray) -> tuple[str, ...]:
    """The run log's line for each extending row: its family's rows near their floor first, then the blind, then the
    unstable."""
    out = []
    for family in EXTEND_FAMILIES:
        tested = sum(1 for r in gated if r.family == family and r.p_value is not None)
        out += [f"{_name(r)}: p = {r.p_value:.3g}, BH q = {q[k]:.3g} ≤ {EXTEND_Q} over the model's {tested} {family} rows, "
                f"with {floor_share(r):.0%} of its floor"
                for k, r in enumerate(gated) if hits[ExtendCause.NEAR_FLOOR][k] and r.family == family]
    out += [f"{_name(r)}: blind below {r.mde:.2%} at the first look" if r.family == "speed" else
            f"{_name(r)}: blind below {r.mde * 100:.2g} pp at the first look"
            for k, r in enumerate(gated) if hits[ExtendCause.BLIND][k]]
    out += [f"{_name(r)}: unstable at the first look (a candidate run set aside as worse)"
            for k, r in enumerate(gated) if hits[ExtendCause.UNSTABLE][k]]
    return tuple(out)


def decide_pooled(pooled: Any, model: str) -> LookDecision:
    """After the pooled 6+6: fail or pass (never extend again)."""
    rows = _rows(pooled, model)
    if (stopped := _stopped(rows, f"on the pooled runs at Holm α₂ = {POOLED_ALPHA}")):
        return stopped
    return LookDecision("pass", (f"{model}: no FAIL on the pooled runs",))


def _stopped(rows: list[Any], level: str) -> LookDecision | None:
    """Either look stops a model where a row FAILs (at the look's `level`) or could not be judged; else None."""
    failed = [_name(r) for r in rows if _verdict(r) == "fail"]
    if failed:
        return LookDecision("fail", tuple(f"{n}: FAIL {level}" for n in failed))
    return _not_comparable(rows)


def _not_comparable(rows: Iterable[Any]) -> LookDecision | None:
    """A row the looks could not judge (NOT COMPARABLE) is undecided, never a pass (issue 39); more runs on the
    same setups would not judge it either, so the model stops there."""
    found = [r for r in rows if _verdict(r) == "not comparable"]
    if not found:
        return None
    differs = getattr(found[0], "differs", ())
    why = f"not comparable: {', '.join(differs)} differ" if differs else "not comparable"
    more = f" (+{len(found) - 1} more rows)" if len(found) > 1 else ""
    return LookDecision("undecided", (f"{_name(found[0])}: {why}{more}; a row that could not be judged is "
                                      "undecided, never a pass",))


def floor_share(row: Any) -> float:
    """How much of its floor a gated row's worsening reaches (1.0 = at the floor; <= 0 for no worsening)."""
    if row.family == "speed":
        return (row.worse_rel or 0.0) / row.floor_rel if row.floor_rel else 0.0
    if row.delta_abs is None or not row.floor_abs:
        return 0.0
    shares = [row.delta_abs / row.floor_abs]
    if row.delta_rel is not None and row.floor_rel:
        shares.append(row.delta_rel / row.floor_rel)
    return float(min(shares))


def _rows(report: Any, model: str) -> list[Any]:
    return [r for r in report.rows if r.model == model]


def _verdict(row: Any) -> str:
    return str(getattr(row.verdict, "value", row.verdict))


def _name(row: Any) -> str:
    return f"{row.workload} {row.metric}"
