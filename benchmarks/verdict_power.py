"""Verdict power benchmark (issue 10): false FAIL / WARN per no-op PR, FAIL power, scored runs per model.

    python benchmarks/verdict_power.py --out benchmarks/results            # the design table: 1,000 PRs a scenario
    python benchmarks/verdict_power.py --validate 200 --out benchmarks/results   # + the check against compare
    python benchmarks/verdict_power.py --smoke --out /tmp/power             # CI smoke: a few PRs, seconds

Each scenario simulates whole all-model PRs (ten workloads; throughput and p95 latency gated, corpus error
rates per utterance) under a noise model of benchmarks/power/noise.py, judged by the gate's own batched
rule functions (benchmarks/power/simulate.py). Rates come with Wilson 95% intervals. `--validate N`
feeds the first N PRs of every scenario run, unchanged, to `gate.judging.compare.compare` (and the runner's
two-look plan via gate.judging.look_rule, and its re-measures) and counts what differs (benchmarks/power/validate.py).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from power import matrix, simulate  # noqa: E402
from power import noise as noise_module  # noqa: E402

FIELDS = ("any_fail", "any_warn", "target_thr_fail", "target_thr_warn_or_fail", "target_wer_fail",
          "target_wer_warn_or_fail")


def all_scenarios() -> tuple:
    """The committed scenarios of noise.py, then the issue-21 noise matrix (power/matrix.py)."""
    return noise_module.scenarios() + matrix.scenarios()


def nameable_scenarios() -> tuple:
    """all_scenarios, then the unseen hosts (power/matrix.py), which only --scenarios names."""
    return all_scenarios() + matrix.unseen_hosts()


def run_scenario(key: str, prs: int, chunk: int, seed: int, pairs: int | None = None,
                 target_factor: float = 1.0) -> dict:
    scenario = next(s for s in nameable_scenarios() if s.key == key)
    rules = simulate.Rules.from_gate() if pairs is None else simulate.Rules.from_gate(pairs)
    test_sets = noise_module.draw_test_sets(seed, target_factor)
    counts = {f: 0 for f in FIELDS}
    runs_sum, runs_max, done = 0.0, 0.0, 0
    started = time.perf_counter()
    for index, start in enumerate(range(0, prs, chunk)):
        size = min(chunk, prs - start)
        rng = np.random.default_rng([seed, _key_seed(key), index])
        out = simulate.judge(simulate.draw_chunk(rng, scenario, test_sets, size, rules.pairs), test_sets, rules)
        for f in FIELDS:
            counts[f] += int(getattr(out, f).sum())
        if out.target_hits6 is not None:  # intermittent hits drawn at random: the rate where 2 or more of 6 are hit
            many = out.target_hits6 >= 2
            counts["hits2_prs"] = counts.get("hits2_prs", 0) + int(many.sum())
            counts["hits2_warn_or_fail"] = counts.get("hits2_warn_or_fail", 0) + int(
                (many & out.target_thr_warn_or_fail).sum())
            # ... and among the runs the gate scored: a hit only in runs it never ran is one no rule can see
            seen = out.target_hits_scored
            for name, mask in (("scored_hits0", seen == 0), ("scored_hits1", seen == 1), ("scored_hits2", seen >= 2)):
                counts[f"{name}_prs"] = counts.get(f"{name}_prs", 0) + int(mask.sum())
                counts[f"{name}_warn_or_fail"] = counts.get(f"{name}_warn_or_fail", 0) + int(
                    (mask & out.target_thr_warn_or_fail).sum())
        if out.few_sessions_fail is not None:  # issue 52: PRs the few-session rule FAILs a row in
            counts["few_sessions_fail"] = counts.get("few_sessions_fail", 0) + int(out.few_sessions_fail.sum())
        if out.target_thr_oracle is not None:
            counts["target_thr_oracle"] = counts.get("target_thr_oracle", 0) + int(out.target_thr_oracle.sum())
        runs_sum += float(out.runs_per_model.sum())
        runs_max = max(runs_max, float(out.runs_per_model.max()))
        done += size
    return {"key": key, "label": scenario.label, "design": scenario.design, "prs": done, "counts": counts,
            "runs_mean": runs_sum / (done * len(noise_module.MODELS)), "runs_max": runs_max,
            "seconds": time.perf_counter() - started}


def _key_seed(key: str) -> int:
    return sum((i + 1) * ord(c) for i, c in enumerate(key))


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float, float]:
    if n == 0:
        return float("nan"), float("nan"), float("nan")
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return p, max(0.0, centre - half), min(1.0, centre + half)


def rate(result: dict, field: str) -> str:
    p, lo, hi = wilson(result["counts"][field], result["prs"])
    return f"{100 * p:.1f}% ({100 * lo:.1f}–{100 * hi:.1f})"


def oracle_share(result: dict) -> float | None:
    """The gate's target FAIL rate over the oracle's (simulate.oracle_fail); None where the oracle FAILed nothing
    or is not modelled."""
    k = result["counts"].get("target_thr_oracle")
    return result["counts"]["target_thr_fail"] / k if k else None


def _oracle(result: dict) -> str:
    """The oracle's FAIL rate on the target's speed rows and the gate's share of it; "—" for a no-op, an accuracy
    change, or a design without the oracle."""
    if result["counts"].get("target_thr_oracle") is None or "noop" in result["key"] or "wer" in result["key"]:
        return "— | —"
    share = oracle_share(result)
    return f"{rate(result, 'target_thr_oracle')} | {'—' if share is None else f'{share:.2f}'}"


def table(results: list[dict], rules: simulate.Rules) -> str:
    lines = [
        "| Scenario | PRs | FAIL (any row) | WARN shown (no FAIL) | target FAIL | target WARN or FAIL | "
        "scored runs per model, mean / max | oracle FAIL (knows σ) | gate / oracle |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        target = "target_wer_fail" if "wer" in r["key"] else "target_thr_fail"
        either = rate(r, "target_wer_warn_or_fail" if "wer" in r["key"] else "target_thr_warn_or_fail")
        shown = "—" if "noop" in r["key"] else rate(r, target)
        either = "—" if "noop" in r["key"] and "wer" not in r["key"] else either
        lines.append(f"| {r['label']} ({r['design']}) | {r['prs']} | {rate(r, 'any_fail')} | {rate(r, 'any_warn')} | "
                     f"{shown} | {either} | {r['runs_mean']:.2f} / {r['runs_max']:.0f} | {_oracle(r)} |")
    head = (f"Rules: FAIL at Holm α₁ = {rules.first_alpha} (first look, 3+3), α₂ = {rules.pooled_alpha} (pooled 6+6; "
            "a model is extended when a gated row is near its floor or blind at the first look), "
            f"family α = {rules.family_alpha} (one look, cross-job); WARN at BH q ≤ {rules.speed_warn_q} (speed) or "
            f"{rules.warn_q} (accuracy) above half the floor; "
            f"floors: throughput {rules.floor_thr:.0%}, p95 {rules.floor_p95:.0%}, WER {rules.quality_floor_abs * 100:g} pp "
            f"and {rules.quality_floor_rel:.0%}; calibration: {rules.pairs} A/A pairs. Rates: Wilson 95% intervals. "
            "Target: qwen3/asr_en (any of its gated speed rows; its corpus WER row). In one job σ comes from the A/B's "
            "own runs, pooled with the calibration when that is fresh and agrees (gate.stats.speed.own_noise). Rows "
            "from 'no-op, σ 1%, normal' on are the issue-21 noise matrix (benchmarks/power/matrix.py). The oracle (issue "
            "36; simulate.oracle_fail) judges the target's speed rows by a z test that knows σ, on the runs the gate's "
            "plan gave it, at the same family α and floors; 'gate / oracle' is the target FAIL rate over the oracle's.")
    many = [r for r in results if r["counts"].get("hits2_prs")]
    if many:
        lines.append("")
        lines.append("Intermittent cells, PRs whose slowdown hit 2 or more of the six planned candidate runs (run1..run6): "
                     + "; ".join(f"{r['label']}: target WARN or FAIL {_share(r['counts']['hits2_warn_or_fail'], r['counts']['hits2_prs'])}"
                                 f" of {r['counts']['hits2_prs']}" for r in many) + ".")
        lines.append("")
        lines.append("The same PRs by the hits among the candidate runs the gate scored (a clean first look ends the "
                     "comparison, so a hit only in runs 4-6 is never run): "
                     + "; ".join(f"{r['label']}: {_scored_hits(r['counts'])}" for r in many) + ".")
    return head + "\n\n" + "\n".join(lines)


def _share(k: int, n: int) -> str:
    p, lo, hi = wilson(k, n)
    return f"{100 * p:.1f}% ({100 * lo:.1f}–{100 * hi:.1f})"


def _scored_hits(counts: dict) -> str:
    """An intermittent cell's WARN-or-FAIL rate by the hits among the runs scored (run_scenario's scored_hits*)."""
    parts = []
    for name, label in (("scored_hits0", "no hit scored"), ("scored_hits1", "one hit"), ("scored_hits2", "2 or more")):
        prs = counts[f"{name}_prs"]
        parts.append(f"{label} {_share(counts[f'{name}_warn_or_fail'], prs)} of {prs}" if prs else f"{label}: none")
    return ", ".join(parts)


def select(scenarios: str) -> list[str]:
    """The scenario keys a comma-separated --scenarios names, in the benchmark's order (all for ""); ValueError
    naming the first unknown one."""
    if not scenarios:
        return [s.key for s in all_scenarios()]
    keys = [s.key for s in nameable_scenarios()]
    unknown = sorted(set(scenarios.split(",")) - set(keys))
    if unknown:
        raise ValueError(f"unknown scenario {unknown[0]!r}; expected one of {', '.join(keys)}")
    return [k for k in keys if k in scenarios.split(",")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prs", type=int, default=1000, help="simulated PRs per scenario (default 1000)")
    parser.add_argument("--chunk", type=int, default=250)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--scenarios", default="", help="comma-separated scenario keys (default: all)")
    parser.add_argument("--pairs", type=int, default=None,
                        help="A/A pairs in each calibration (default: the advised gate.stats.speed.ADVISED_PAIRS)")
    parser.add_argument("--validate", type=int, default=0, help="also check N PRs per scenario against compare")
    parser.add_argument("--target-factor", type=float, default=1.0,
                        help="scale the target workload's utterances by this factor (how many a change needs)")
    parser.add_argument("--smoke", action="store_true", help="a few PRs per scenario, for CI")
    parser.add_argument("--out", type=Path, default=None, help="write verdict_power.md and .json here")
    args = parser.parse_args(argv)
    if args.target_factor <= 0 or (args.target_factor != 1.0 and args.validate):
        parser.error("--target-factor: expected a positive factor, and no --validate with it (the validation "
                     "builds the suite's own test sets)")
    try:
        keys = select(args.scenarios)
    except ValueError as exc:
        parser.error(str(exc))
    prs = 40 if args.smoke else args.prs
    chunk = min(args.chunk, prs)
    started = time.perf_counter()
    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs) as pool:
            results = list(pool.map(run_scenario, keys, [prs] * len(keys), [chunk] * len(keys),
                                    [args.seed] * len(keys), [args.pairs] * len(keys),
                                    [args.target_factor] * len(keys)))
    else:
        results = [run_scenario(k, prs, chunk, args.seed, args.pairs, args.target_factor) for k in keys]
    elapsed = time.perf_counter() - started
    rules = simulate.Rules.from_gate() if args.pairs is None else simulate.Rules.from_gate(args.pairs)
    text = "# Verdict power (benchmarks/verdict_power.py)\n\n" + table(results, rules)
    text += f"\n\nSimulated {sum(r['prs'] for r in results)} PRs in {elapsed:.0f} s ({args.jobs} processes, seed {args.seed})"
    text += (f"; the target workload {noise_module.TARGET} with {args.target_factor:g}× its utterances.\n"
             if args.target_factor != 1.0 else ".\n")
    validation = None
    if args.validate:
        from power import validate

        validation = validate.check(keys, args.validate, args.seed, rules)
        text += "\n" + validate.describe(validation) + "\n"
    print(text)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "verdict_power.md").write_text(text, encoding="utf-8")
        (args.out / "verdict_power.json").write_text(json.dumps(
            {"seed": args.seed, "seconds": elapsed, "scenarios": results, "validation": validation,
             "rules": rules.__dict__}, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
