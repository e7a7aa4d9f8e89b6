"""Two ceilings on issue 36's open goals that no verdict rule can pass: they follow from what the plan measures.

    python benchmarks/ceilings.py

1. Gate / oracle. The oracle (benchmarks/power/simulate.py: oracle_fail) KNOWS σ and tests with z. A test that
   must estimate σ from d degrees of freedom and means the same thing for every σ (scale-invariant, as any honest
   gate must be) is at best the t test on d df, so gate / oracle <= power_t(d) / power_z. d is what the plan
   gives a model's throughput row (benchmarks/power/matrix.py's design): the calibration's A/A pairs, 3+3 runs on
   each of the model's 2 workloads (4 df a pair and workload), the nights the nightly pooled (2 df a night and
   workload), and the A/B's own 6+6 runs (10 df a workload). Holm's first step over the model's 4 gated speed
   rows at the pooled look's α, as both the gate and the oracle test.
2. Random intermittent hits. Each candidate run is hit with probability p. A first look of 3+3 runs whose three
   candidate runs hold no hit is, run for run, a no-op's first look: the gate can extend it only as often as it
   extends a no-op model, e <= (budget − 6) / 6 with the issue's budget of 7.5 scored runs a no-op model at σ 1%
   (a 3+3 first look, 3+3 more). Assuming every hit that is run is seen, the best any plan can catch is
       one hit enough:  P(H1 >= 1) + P(H1 = 0)·e·P(H2 >= 1)
       two hits needed: P(H1 >= 2) + P(H1 = 1)·P(H2 >= 1) + P(H1 = 0)·e·P(H2 >= 2)
   H1 and H2 the hits among the first look's and the extension's three candidate runs. Two hits are needed
   because one slow run in six is what heavy-tailed hosts show (gate.stats.speed: UNSTABLE_MIN_RUNS).
"""
from __future__ import annotations

import argparse
import math

from scipy import stats

from gate.stats.looks import POOLED_ALPHA

WORKLOADS, RUNS, SPEED_ROWS = 2, 6, 4  # the target model's workloads, runs an arm at the pooled look, gated rows
FIRST_LOOK_RUNS = EXTENSION_RUNS = 6  # scored runs a model: 3+3, then 3+3 more
RUN_BUDGET = 7.5  # issue 36: the no-op's mean scored runs a model at σ 1%


def design_df(pairs: int, nights: int = 0) -> int:
    """The σ df behind the target's throughput row at the pooled look: calibration + nights + the A/B's own runs."""
    return WORKLOADS * (pairs * 4 + nights * 2 + (2 * RUNS - 2))


def oracle_ceiling(drop: float, sigma: float, df: float, alpha: float = POOLED_ALPHA / SPEED_ROWS) -> tuple[float, float]:
    """(the oracle's z power, the best scale-invariant test's: t on df) for a throughput drop at run-to-run σ,
    6+6 runs, one-sided at alpha."""
    shift = -math.log1p(-drop) / (sigma * math.sqrt(2 / RUNS))
    z = float(stats.norm.sf(stats.norm.isf(alpha) - shift))
    t = float(stats.nct.sf(stats.t.isf(alpha, df), df, shift))
    return z, t


def intermittent_ceiling(p_hit: float, budget: float = RUN_BUDGET) -> dict[str, float]:
    """The most a plan within `budget` can catch when each candidate run is hit with probability p_hit: overall
    with one hit enough, overall with two needed, and with two needed among the PRs that have two or more hits in
    the six planned runs, and with two needed when every model runs all six (`two_needed_all_extended`, 12 scored
    runs a no-op model); `extend_for_80` is the share of clean first looks that one-hit-enough would need extended
    to reach 80% (the budget that takes: 6 + 6·share)."""
    e = max(0.0, min(1.0, (budget - FIRST_LOOK_RUNS) / EXTENSION_RUNS))
    h = [math.comb(3, k) * p_hit ** k * (1 - p_hit) ** (3 - k) for k in range(4)]  # hits among three runs
    one = 1 - h[0]
    two_of_three = h[2] + h[3]
    two_needed = two_of_three + h[1] * one + h[0] * e * two_of_three
    planned_two = 1 - sum(math.comb(6, k) * p_hit ** k * (1 - p_hit) ** (6 - k) for k in (0, 1))
    return {"extend_share": e, "one_hit_enough": one + h[0] * e * one, "two_hits_needed": two_needed,
            "two_of_six_caught": two_needed / planned_two, "two_needed_all_extended": planned_two,
            "extend_for_80": (0.8 - one) / (h[0] * one)}


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args(argv)
    print(f"1. gate / oracle ceiling: the t test on the plan's df against z, Holm's first step over "
          f"{SPEED_ROWS} rows at α₂ {POOLED_ALPHA}, 6+6 runs")
    print("| change | σ | calibration | df | oracle (z) | best test without σ (t) | ceiling of gate / oracle |")
    print("|---|---|---|---|---|---|---|")
    for drop, sigma in ((0.05, 0.02), (0.10, 0.05)):
        for label, pairs, nights in (("3 A/A pairs (first day)", 3, 0), ("6 A/A pairs", 6, 0),
                                     ("10 A/A pairs", 10, 0), ("3 pairs + 14 nights", 3, 14)):
            df = design_df(pairs, nights)
            z, t = oracle_ceiling(drop, sigma, df)
            print(f"| −{drop:.0%} | {sigma:.0%} | {label} | {df} | {z:.1%} | {t:.1%} | {t / z:.3f} |")
    print(f"\n2. random intermittent hits: the most any plan catches within {RUN_BUDGET} scored runs a no-op model")
    print("| each run hit with probability | clean first looks extended at most | one hit enough | two hits needed "
          "| two needed, of PRs with ≥ 2 of six hit | two needed, every model extended (12 runs) "
          "| clean looks to extend for 80% with one hit enough |")
    print("|---|---|---|---|---|---|---|")
    for p_hit in (1 / 3, 1 / 2):
        c = intermittent_ceiling(p_hit)
        need = max(c["extend_for_80"], 0.0)
        runs = FIRST_LOOK_RUNS + EXTENSION_RUNS * need
        print(f"| {p_hit:.3g} | {c['extend_share']:.0%} | {c['one_hit_enough']:.1%} | {c['two_hits_needed']:.1%} | "
              f"{c['two_of_six_caught']:.1%} | {c['two_needed_all_extended']:.1%} | {need:.0%} ({runs:.2f} runs a "
              "no-op model) |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
