"""Decision levels and floors of `gate compare` (issue 10 "Decisions taken"; issue 21).

benchmarks/results/verdict_power.md measures them. `gate.judging.compare` re-exports `Thresholds`.
"""
from __future__ import annotations

from dataclasses import dataclass

from gate.stats.quality import DEFAULT_BOOTSTRAP, DEFAULT_FLIPS


@dataclass(frozen=True)
class Thresholds:
    """Decision levels and floors (issue 10 "Decisions taken"; benchmarks/results/verdict_power.md measures them)."""

    # Family-wise levels for FAIL (Holm), per family of each model. A model's two families at 0.005 keep the
    # union bound at 1% per model's verdict whatever their dependence; what an all-model PR gets is measured
    # by benchmarks/verdict_power.py. Inside `gate run`'s two-look plan the looks spend less, 0.0001 + 0.0015
    # (gate.stats.looks.thresholds_for).
    alpha: float = 0.005  # speed family
    quality_alpha: float = 0.005
    # A speed FAIL must also show on σ from the A/B's own runs alone, at `alpha`; with this set (the first look of
    # `gate run`), and in any comparison across jobs (3+3 runs a side), at `alpha` over the model's gated speed rows.
    # There the own runs have few df (8 for a two-workload model), and a calibration that understates σ by half
    # still agreed with them in 7% of models (issue 21's stale cell); a FAIL then rode on both the small
    # calibration σ and an own σ that came out small by chance. Over the rows: in one job 0.88% → 0.78% of
    # no-op PRs, across jobs 1.27% → 0.40% (4,000 PRs). At the pooled look (20 df) the agreement check catches
    # it, and α₂ alone costs less power (benchmarks/verdict_power.py).
    own_runs_bonferroni: bool = False
    # More runs follow this look (`gate run`'s first look): one worse candidate run of three makes a speed row
    # unstable, which extends the model; at a look that ends the comparison it takes two (gate.stats.speed).
    more_runs_follow: bool = False
    # WARN: Benjamini-Hochberg q at most this, with at least half the floor (accuracy). At 0.05 (and 0.02)
    # a simulated all-model no-op PR showed a WARN more than 5% of the time (benchmarks/results/verdict_power.md).
    warn_q: float = 0.01
    # The speed family WARNs at half that. Four models' speed families at 0.01 gave 2.2-3.9% of simulated no-op PRs a
    # speed WARN on noise alone, leaving no room under 5% for the unstable rule on heavy-tailed hosts; at 0.005 the
    # hostile no-op WARNed 3.6% (4.9%), 20% × 8% slow starts 3.7% (5.6%); the intermittent cells, which WARN by the
    # unstable rule, were unchanged (1,000 PRs, seed 4099). Accuracy keeps 0.01: +0.15 pp is WARNed by it.
    speed_warn_q: float = 0.005
    warn_alpha: float = 0.05  # accuracy: the "significant but below the floors" note
    quality_floor_abs: float = 0.001  # ΔWER/CER of at least 0.1 pp ...
    quality_floor_rel: float = 0.03  # ... and at least 3% of the baseline rate
    small_set_size: int = 30  # sets this small (MOSS 20/25 sessions) ...
    small_set_floor_abs: float = 0.005  # ... need 0.5 pp
    n_boot: int = DEFAULT_BOOTSTRAP
    n_flips: int = DEFAULT_FLIPS
