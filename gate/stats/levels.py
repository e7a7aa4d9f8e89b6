"""The two diagnostic levels that several rules share, each written once (issue 49: one number per idea, not one
per rule). The one count the rules share, FEWEST_RUNS, is with the noise records it first decides
(gate.formats.noise_model).

- SCREEN_P: a diagnostic that only decides how σ is taken: the position terms are taken out where found
  (gate.stats.drift), and a calibration the A/B's runs disagree with is not pooled (gate.stats.speed).
- STRONG_P: a diagnostic that overrules the default only on strong evidence: a calibration far noisier than the
  A/B's runs is not pooled, and a pattern of worse runs is unstable only when the host's own wild runs make it
  that unlikely (gate.stats.speed).

Each was two constants of the same value before; docs/statistics.md ("Rule ablation") measures the rules, and the
merge moved no verdict (scripts/verdict_snapshot.py: 0 rows differ).
"""
from __future__ import annotations

SCREEN_P = 0.05
STRONG_P = 0.001
