"""The outlier rule's constants and its wording, without numpy or scipy: the runner states the rule (its dry
run, gate-run.json's plan) in a Python that may lack the statistics libraries; gate.stats.outliers applies it."""
from __future__ import annotations

OUTLIER_SIGMAS = 5.0
OUTLIER_MIN_REL = 0.03  # below this a run is never wild, however small σ is (3% is a real slowdown's size)


def rule_text(sigma: str = "σ") -> str:
    """The rule in words, from its constants ("max(5σ, 3%)"): every place that states it uses this."""
    return f"max({OUTLIER_SIGMAS:g}{sigma}, {OUTLIER_MIN_REL:.0%})"
