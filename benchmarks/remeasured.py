"""What a re-measured run costs under drift (issue 36): the target's FAIL rate and the oracle's, split by whether
the target model's last look holds a re-measured run.

    python benchmarks/remeasured.py [--scenarios m-thr-3-drift,m-thr-3-drift-nights] [--prs 1000] [--seed 4099]

The same PRs as `verdict_power.py` draws for these cells (its seeds and chunks). The position terms of
gate.stats.drift place a re-measured run at its slot; the simulator draws it at the job's end (the spare slot,
benchmarks/power/simulate.py: run_order), so under drift its residual holds the steps between and σ̂ grows.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from power import noise as noise_module  # noqa: E402
from power import simulate  # noqa: E402
from verdict_power import _key_seed, all_scenarios, select  # noqa: E402

CHUNK = 250  # verdict_power.py's default: the same draws


def split(key: str, prs: int, seed: int) -> dict[str, float]:
    """Shares and FAIL rates of the PRs whose target model was / was not re-measured at its last look."""
    scenario = next(s for s in all_scenarios() if s.key == key)
    rules = simulate.Rules.from_gate()
    test_sets = noise_module.draw_test_sets(seed)
    model = next(w.model for w in simulate.WORKLOADS if w.workload_id == noise_module.TARGET)
    k = noise_module.MODELS.index(model)
    remeasured, fail, oracle = [], [], []
    for index, start in enumerate(range(0, prs, CHUNK)):
        rng = np.random.default_rng([seed, _key_seed(key), index])
        out = simulate.judge(simulate.draw_chunk(rng, scenario, test_sets, min(CHUNK, prs - start), rules.pairs),
                             test_sets, rules)
        assert out.target_thr_oracle is not None  # main admits two-look cells only
        spare = 2 * simulate.RUNS
        last = np.where(out.extended[:, k], (out.slots["pooled"][model] == spare).any(axis=(1, 2)),
                        (out.slots["first"][model] == spare).any(axis=(1, 2)))
        remeasured.append(last)
        fail.append(out.target_thr_fail)
        oracle.append(out.target_thr_oracle)
    r, f, o = (np.concatenate(x) for x in (remeasured, fail, oracle))
    rest = float(f[~r].mean()) if (~r).any() else float("nan")
    return {"prs": float(len(r)), "remeasured": float(r.mean()),
            "fail_remeasured": float(f[r].mean()) if r.any() else float("nan"), "fail_rest": rest,
            "oracle_remeasured": float(o[r].mean()) if r.any() else float("nan"), "oracle_rest": float(o[~r].mean()),
            "gate_oracle": float(f.sum() / o.sum()),
            "gate_oracle_as_rest": float((f[~r].sum() + r.sum() * rest) / o.sum())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenarios", default="m-thr-3-drift,m-thr-3-drift-nights")
    parser.add_argument("--prs", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=4099)
    args = parser.parse_args(argv)
    try:
        keys = select(args.scenarios)
    except ValueError as exc:
        parser.error(str(exc))
    design = {s.key: s.design for s in all_scenarios()}
    if (other := next((k for k in keys if design[k] != "two-look"), None)) is not None:
        parser.error(f"{other} is a {design[other]} cell; expected a two-look cell (only they re-measure and have "
                     "the oracle)")
    print("| cell | PRs re-measured | FAIL: re-measured / rest | oracle: re-measured / rest | gate / oracle "
          "| had the re-measured FAILed as the rest |")
    print("|---|---|---|---|---|---|")
    for key in keys:
        s = split(key, args.prs, args.seed)
        print(f"| {key} | {s['remeasured']:.1%} | {s['fail_remeasured']:.1%} / {s['fail_rest']:.1%} | "
              f"{s['oracle_remeasured']:.1%} / {s['oracle_rest']:.1%} | {s['gate_oracle']:.3f} | "
              f"{s['gate_oracle_as_rest']:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
