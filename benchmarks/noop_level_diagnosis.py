"""Why the pooled look's speed test is anti-conservative in the σ 2% no-op cells (benchmarks/results/noop_level_diagnosis.md).

Draws a cell's PRs as benchmarks/ablation.py does (chunk k of seed S: verdict_power's chunk k of --chunk N), judges them
with the simulator (the gate's own functions), and records the POOLED look's raw speed-row p-values for EVERY model
(extended or not: the pooled test's unconditional level), with σ and df, under the committed rule and with single
steps switched off through ablation.py's patches (the same draws each time):

    python benchmarks/noop_level_diagnosis.py --cell m-noop-stale-known --seed 4949 --prs 1000 --chunks 4

Per variant: P(p < a)/a per row for a = 0.01, 0.001, 0.000375 (α₂ over four rows), and per model the Holm first step
(min p < α₂/m) and the gate's own pooled FAIL of extended models.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import ablation as ab  # noqa: E402
import verdict_power as vp  # noqa: E402
from power import noise as noise_module  # noqa: E402
from power import simulate  # noqa: E402

from gate.stats import looks  # noqa: E402

VARIANTS = {
    "committed": [],
    "no drift terms": ab.BY_NAME["found_p"].patches,
    "no slow-mode set-aside": ab.BY_NAME["slow_mode"].patches,
    "no re-measure": ab.BY_NAME["outlier_remeasure"].patches + ab.BY_NAME["slow_start_remeasure"].patches,
    "no trim/outlier set-aside": ab.BY_NAME["outlier_set_aside"].patches,
    "no outlier re-measure": ab.BY_NAME["outlier_remeasure"].patches,
    "no slow-start re-measure": ab.BY_NAME["slow_start_remeasure"].patches,
}
VARIANTS["all four off"] = [p for k in list(VARIANTS)[1:5] for p in VARIANTS[k]]
# the rule before the fix: a row of unknown σ judged by the re-measure against the 3% alone
VARIANTS["re-measure at 3% (before the fix)"] = ab.BY_NAME["remeasure_own_sigma"].patches


def record(chunk, test_sets, patches):
    """Judge with `patches`; return the pooled look's raw (p, sigma, df) per speed row (B, rows), the rows, the extended
    mask, and the rows' pooled verdicts."""
    seen = {}
    original = simulate._speed_look

    def spy(chunk_, rows, noises, slots, rules, **kw):
        out = original(chunk_, rows, noises, slots, rules, **kw)
        if kw.get("thresholds") is simulate.POOLED:
            seen["p"] = out["p"].copy()
            seen["df"] = out["df"].copy()
            seen["sigma"] = np.stack([np.broadcast_to(np.asarray(noises[(r[1], r[2])].sigma, float), out["p"][:, 0].shape)
                                      for r in rows], 1)
            seen["rows"] = rows
        return out

    simulate._speed_look = spy
    try:
        with ab.patched(patches):
            out = simulate.judge(chunk, test_sets, simulate.Rules.from_gate())
    finally:
        simulate._speed_look = original
    return seen, out


def _wilson(x) -> str:
    k, n = int(np.sum(x)), len(x)
    share, lo, hi = vp.wilson(k, n)
    return f"{k}/{n} = {100 * share:.2f}% [{100 * lo:.2f}, {100 * hi:.2f}]"


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--cell", required=True)
    ap.add_argument("--seed", type=int, default=4949)
    ap.add_argument("--prs", type=int, default=1000)
    ap.add_argument("--chunks", type=int, default=1)
    ap.add_argument("--variants", default="")
    args = ap.parse_args(argv)
    names = args.variants.split(",") if args.variants else list(VARIANTS)
    test_sets = noise_module.draw_test_sets(args.seed)
    sc = {s.key: s for s in vp.all_scenarios()}[args.cell]
    acc = {n: {"p": [], "sigma": [], "df": [], "ext": [], "fail_model": [], "any_fail": [], "re": []} for n in names}
    rows = None
    for k in range(args.chunks):
        rng = np.random.default_rng([args.seed, vp._key_seed(args.cell), k])
        chunk = simulate.draw_chunk(rng, sc, test_sets, args.prs, simulate.Rules.from_gate().pairs)
        for n in names:
            seen, out = record(chunk, test_sets, VARIANTS[n])
            rows = seen["rows"]
            for f in ("p", "sigma", "df"):
                acc[n][f].append(seen[f])
            acc[n]["ext"].append(out.extended)
            fm = np.stack([np.stack([out.rows_pooled[(r[0], r[2])] == 2 for r in rows if r[1] == m], 1).any(1)
                           for m in noise_module.MODELS], 1)
            acc[n]["fail_model"].append(fm)
            acc[n]["any_fail"].append(np.asarray(out.any_fail, bool))
            # which arms of the row's model hold the re-measure (slot 2·RUNS) at the pooled look: 0 none, 1 base, 2 cand, 3 both
            re = {m: (out.slots["pooled"][m] == 2 * simulate.RUNS).any(-1) for m in noise_module.MODELS}
            acc[n]["re"].append(np.stack([re[r[1]][:, 0] + 2 * re[r[1]][:, 1] for r in rows], 1))
        print(f"chunk {k} done", file=sys.stderr, flush=True)
    models = noise_module.MODELS
    truth = {"throughput": sc.noise.sigma_run, "latency_p95_s": float(np.hypot(sc.noise.sigma_run, sc.noise.p95_own))}
    a2 = looks.POOLED_ALPHA
    print(f"cell {args.cell}, seed {args.seed}, {args.chunks} x {args.prs} PRs; pooled look, every model (unconditional)")
    print("| variant | rows | P(p<0.01)/0.01 | P(p<0.001)/0.001 | P(p<α₂/4)/(α₂/4) | models: P(min p < α₂/m)/α₂ |"
          " σ̂²/σ² mean (thr, p95) | df median | models with a speed row FAIL (rows_pooled) | PRs FAIL (any row), Wilson 95% |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for n in names:
        p, sig, df, ext, fm = (np.concatenate(acc[n][f]) for f in ("p", "sigma", "df", "ext", "fail_model"))
        ok = ~np.isnan(p)
        N = ok.sum()
        r = [((p < a) & ok).sum() / N / a for a in (0.01, 0.001, a2 / 4)]
        hits = [((p < a) & ok).sum() for a in (0.01, 0.001, a2 / 4)]
        cnt = tot = 0
        for m in models:
            cols = [i for i, rr in enumerate(rows) if rr[1] == m]
            mp = np.nanmin(p[:, cols], 1) * len(cols)
            cnt += (mp < a2).sum()
            tot += len(mp)
        ratio = []
        for metric in ("throughput", "latency_p95_s"):
            cols = [i for i, rr in enumerate(rows) if rr[2] == metric]
            ratio.append(np.nanmean(sig[:, cols] ** 2) / truth[metric] ** 2)
        print(f"| {n} | {N} | {r[0]:.2f} ({hits[0]}) | {r[1]:.2f} ({hits[1]}) | {r[2]:.2f} ({hits[2]}) | "
              f"{cnt / tot / a2:.2f} ({cnt}/{tot}) | {ratio[0]:.3f}, {ratio[1]:.3f} | {np.nanmedian(df):.0f} | "
              f"{fm.sum()} of {fm.size} ({ext.sum()} extended) | {_wilson(np.concatenate(acc[n]['any_fail']))} |")
    for n in names:
        p, re = np.concatenate(acc[n]["p"]), np.concatenate(acc[n]["re"])
        ok = ~np.isnan(p)
        print(f"\n{n}: rows by which arms of the model were re-measured (pooled look's slots)")
        print("| re-measured | rows | share | P(p<0.01)/0.01 | P(p<0.001)/0.001 | P(p>0.99)/0.01 |")
        print("|---|---|---|---|---|---|")
        for code, label in enumerate(("neither arm", "baseline only", "candidate only", "both arms")):
            sel = ok & (re == code)
            k = max(sel.sum(), 1)
            print(f"| {label} | {sel.sum()} | {sel.sum() / ok.sum():.1%} | {((p < 0.01) & sel).sum() / k / 0.01:.2f} | "
                  f"{((p < 0.001) & sel).sum() / k / 0.001:.2f} | {((p > 0.99) & sel).sum() / k / 0.01:.2f} |")
    # split the committed rule's rows by df (a tag of what the σ step did)
    n = names[0]
    p, df = np.concatenate(acc[n]["p"]), np.concatenate(acc[n]["df"])
    print(f"\n{n}: rows by σ df (2-workload models' rows; 20 = 4 arms x 5, nothing taken out)")
    two = np.array([sum(rr[1] == m for rr in rows) == 4 for m in [rr[1] for rr in rows]])
    pp, dd = p[:, two], df[:, two]
    for d in np.unique(dd[~np.isnan(dd)]):
        sel = (dd == d) & ~np.isnan(pp)
        print(f"  df {d:.0f}: {sel.sum()} rows, P(p<0.01)/0.01 = {((pp < 0.01) & sel).sum() / max(sel.sum(), 1) / 0.01:.2f},"
              f" P(p<0.001)/0.001 = {((pp < 0.001) & sel).sum() / max(sel.sum(), 1) / 0.001:.2f}")


if __name__ == "__main__":
    main()
