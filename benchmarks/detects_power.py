"""Is the printed detectable change honest? (issue 36) For σ 2, 5 and 10%, the share of PRs whose target throughput
row FAILs at several true drops, beside the mean "detects" that row prints at its last look when nothing changed
(what a passing row tells its reader).

    python benchmarks/detects_power.py --prs 200 --jobs 2

The drop caught 80% of the time is read off the curve (linear between the two changes around 80%) and set
against the mean printed drop: issue 36 asks for them within ±15%.
"""
from __future__ import annotations

import argparse
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from power import matrix, simulate  # noqa: E402
from power import noise as noise_module  # noqa: E402
from verdict_power import wilson  # noqa: E402

CHANGES = {0.02: (0.0, 0.03, 0.04, 0.05, 0.06), 0.05: (0.0, 0.08, 0.10, 0.12, 0.14),
           0.10: (0.0, 0.16, 0.20, 0.24, 0.28)}


def point(sigma: float, change: float, prs: int, seed: int) -> tuple[float, float, int, int, float]:
    noise = replace(matrix._model(f"σ {sigma:.0%}, normal", sigma))
    scenario = noise_module.Scenario("detects", "detects", noise, "two-look", throughput_change=-change)
    rules = simulate.Rules.from_gate()
    test_sets = noise_module.draw_test_sets(seed)
    rng = np.random.default_rng([seed, int(sigma * 1000), int(change * 1000)])
    out = simulate.judge(simulate.draw_chunk(rng, scenario, test_sets, prs, rules.pairs), test_sets, rules)
    assert out.target_thr_detects is not None
    return sigma, change, int(out.target_thr_fail.sum()), prs, float(np.mean(out.target_thr_detects))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prs", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=36)
    args = parser.parse_args()
    cells = [(s, c) for s, changes in CHANGES.items() for c in changes]
    with ProcessPoolExecutor(args.jobs) as pool:
        found = list(pool.map(point, [s for s, _ in cells], [c for _, c in cells], [args.prs] * len(cells),
                              [args.seed] * len(cells)))
    print("| σ | true drop | PRs | target FAIL (Wilson 95%) | mean printed detects |")
    print("|---|---|---|---|---|")
    for sigma, change, k, n, printed in found:
        p, lo, hi = wilson(k, n)
        print(f"| {sigma:.0%} | −{change:.0%} | {n} | {100 * p:.1f}% ({100 * lo:.1f}–{100 * hi:.1f}) | {100 * printed:.1f}% |")
    print()
    for sigma in CHANGES:
        rows = [(c, k / n, d) for s, c, k, n, d in found if s == sigma]
        at80 = next((c0 + (0.8 - p0) * (c1 - c0) / (p1 - p0)
                     for (c0, p0, _), (c1, p1, _) in zip(rows, rows[1:], strict=False) if p0 < 0.8 <= p1), float("nan"))
        printed = -next(d for c, _, d in rows if c == 0.0)
        print(f"σ {sigma:.0%}: caught 80% at a {100 * at80:.1f}% drop; printed detects {100 * printed:.1f}% "
              f"(ratio {printed / at80:.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
