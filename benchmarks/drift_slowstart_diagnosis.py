"""Why the −5% drift + slow-start cell misses (issue 49, held_out_gaps.md "Where the power goes"): for each of N
simulated PRs of `m-thr-5-drift-slowstart`, the target row as `gate compare` judges it at the look the simulator
reached (verdict, worse, p, σ and where σ came from, notes) and the A/A calibration's σ of the target's throughput
with how many runs it set aside. The true run-to-run σ of the cell is 1%.

    PYTHONPATH=. python benchmarks/drift_slowstart_diagnosis.py [N]
"""
from __future__ import annotations

import sys

import numpy as np

from gate.formats.config import load_suite
from gate.judging.calibration import calibration_from_pairs
from gate.judging.compare import compare
from gate.stats import looks

sys.path.insert(0, "benchmarks")
from power import simulate, validate  # noqa: E402
from power.matrix import scenarios  # noqa: E402
from power.noise import draw_test_sets  # noqa: E402


def main(n: int = 24, seed: int = 4099) -> None:
    suite, test_sets, rules = load_suite(), draw_test_sets(seed), simulate.Rules.from_gate()
    cell = {s.key: s for s in scenarios()}["m-thr-5-drift-slowstart"]
    chunk = simulate.draw_chunk(np.random.default_rng([seed, 5, 0]), cell, test_sets, n, rules.pairs)
    out = simulate.judge(chunk, test_sets, rules)
    target = simulate.TARGET
    model = target.split("/")[0]
    workloads = [w for w in validate.WORKLOADS if w.model == model]
    pairs = chunk.cal_speed[workloads[0].workload_id]["throughput"].shape[1]
    print(f"{target} throughput, {n} PRs: the simulator FAILs {out.target_thr_fail.mean():.0%}")
    for pr in range(n):
        calibration = calibration_from_pairs(validate._aa_sides(suite, chunk, test_sets, pr, workloads), suite,
                                             cross_job=[False] * pairs)
        extended = bool(out.extended[pr, simulate.MODELS.index(model)])
        look = looks.Look.POOLED if extended else looks.Look.FIRST
        slots = out.slots["pooled" if extended else "first"][model][pr]
        report = compare(*validate._sides(suite, chunk, test_sets, pr, workloads, slots, False), suite, models=(model,),
                         calibration=calibration, thresholds=looks.thresholds_for(look), cross_job=False)
        row = next(r for r in report.rows if r.workload == target and r.metric.startswith("throughput"))
        cal = next(c for k, c in calibration[target].items() if k.startswith("throughput"))
        print(f"PR {pr:2} {look.name:6} {row.verdict.value:4} worse {row.worse_rel:+.3f} p {row.p_value:.2g} "
              f"σ {row.sigma:.4f} (calibration σ {cal.sigma:.4f}, {cal.set_aside} A/A runs set aside) "
              f"{(row.method or '')[25:95]} | {'; '.join(n[:90] for n in row.notes[:2])}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 24)
