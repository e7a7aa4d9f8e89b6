"""Whether a gated row may FAIL, over B comparisons at once (issue 49): the reasons it can WARN at most, each as a
mask (B, rows) under its typed reason (gate.formats.reasons.CannotFail). `compare` and its row tests
(gate.judging.speed_rows, accuracy_rows) call these with B = 1 and keep the reasons and their notes on the row; the
power benchmark calls them with thousands (benchmarks/power/simulate.py) and keeps only whether any holds."""
from __future__ import annotations


def own_runs_level(alpha: float, rows: int, bonferroni: bool) -> float:
    """The level the A/B's own runs alone must reach for a speed FAIL: the look's α, or α over the model's gated speed
    rows where those runs are few (`gate run`'s first look: Thresholds.own_runs_bonferroni)."""
    return alpha / rows if bonferroni else alpha
