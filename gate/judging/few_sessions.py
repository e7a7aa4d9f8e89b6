"""The few-session rule (issue 52): on a set of at most 30 units (MOSS's 20 AISHELL-4 and 25 GoogleTime sessions) a
large error-rate regression confined to a few long sessions cannot reach the family α: with k changed sessions the
exact sign-flip p is at least 2^-k (googletime cpCER 0.02% → 13.0%, 4 of 25 sessions from 0 to over 50% errors:
p = 2^-5, a WARN). Upstream's absolute gate (`n_above_50_pct_cer`, a CER ceiling) would miss it too.

A small-set accuracy row FAILs by this rule when, beside a change that is large in itself, the paired evidence
agrees:
- sessions newly cross 50% errors (`gate.stats.quality.catastrophic_masks`: above it in every candidate run, in
  no baseline run, with a jump) — at least `min_new` of them — or the corpus rate rises by at least `floor_abs`;
- and the paired test's one-sided p is at most `agree_p`: 2^-4, what four changed sessions all worse give.

Its false FAIL on no-op PRs is measured by benchmarks/verdict_power.py (the batched `fires` below is what the
simulator calls); docs/statistics.md states it. Data only: the renderer words a row the rule failed
(`Row.few_sessions`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class FewSessionRule:
    max_units: int = 30  # the small-set size (gate.stats.thresholds.Thresholds.small_set_size)
    min_new: int = 2  # sessions newly over 50% errors
    floor_abs: float = 0.02  # or a rise of the corpus rate this large (2 pp: 4x the small sets' 0.5 pp floor)
    agree_p: float = 0.0625  # the paired test's one-sided p, at most: 2^-4


RULE = FewSessionRule()


def fires(n_units: np.ndarray | int, delta_abs: np.ndarray | float, new_catastrophic: np.ndarray | int,
          p_value: np.ndarray | float, rule: FewSessionRule = RULE, *, whole: np.ndarray | bool = True) -> np.ndarray:
    """Whether the rule FAILs each row (batched over any shape; NaN p never fires). `whole`: the row is a whole set's;
    a co-moving group's own row (Row.subset) is not judged by it: its sessions are the set's, judged in its row."""
    p = np.asarray(p_value, dtype=float)
    large = (np.asarray(new_catastrophic) >= rule.min_new) | (np.asarray(delta_abs, dtype=float) >= rule.floor_abs)
    return np.asarray((np.asarray(n_units) <= rule.max_units) & large & (np.nan_to_num(p, nan=1.0) <= rule.agree_p)
                      & (np.asarray(delta_abs, dtype=float) > 0) & np.asarray(whole, dtype=bool))


def above_half(errors: np.ndarray, ref_len: np.ndarray) -> tuple[int, ...]:
    """Per run, the units over 50% errors (upstream's n_above_50_pct_cer / _wer, from the per-unit errors)."""
    rate = np.asarray(errors, dtype=float) / np.maximum(np.asarray(ref_len, dtype=float), 1.0)
    return tuple(int(v) for v in (rate > 0.5).sum(axis=-1))
