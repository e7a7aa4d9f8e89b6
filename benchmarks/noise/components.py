"""Variance components of nested runs (issue 37): passes within server starts within machines.

On y = ln(metric), a balanced one-way random-effects model per machine and configuration:
    y_kp = μ + a_k + e_kp,   a_k ~ N(0, σ_start²) per server start,  e_kp ~ N(0, σ_pass²) per timed pass
    MSW = Σ(y_kp − ȳ_k)² / (K(P − 1))   estimates σ_pass²                (df K(P − 1), chi-square CI)
    MSB = P·Σ(ȳ_k − ȳ)² / (K − 1)       estimates σ_pass² + P·σ_start²   (df K − 1)
    σ_start² = max(0, (MSB − MSW)/P), its 95% CI by the modified large-sample method (Graybill & Wang;
    Burdick & Graybill, "Confidence Intervals on Variance Components", 1992), which stays inside [0, ∞)
    and keeps its coverage where Satterthwaite's interval does not (few starts, σ_start small).
Between machines (the job effect): with M machines of machine means m_j, each over K_j starts,
    σ_job² = max(0, s²(m_j) − mean_j((σ̂_start² + σ̂_pass²/P)/K_j)),   an upper bound from s²(m_j)'s chi-square
    interval on M − 1 df (with two machines, one df: the bound is wide, and the docs say so). It is reported
    for all machines and for the machines of each GPU model apart (the job effect proper: same GPU, other
    machine); for each pair of machines of one GPU model also the difference of their means with Welch's
    t on the start means (is there a job effect at all?), and the components pooled over the machines of one
    GPU model (machine as a fixed effect: df_start = ΣK_j − M, df_pass = ΣK_j(P − 1)).
Costs (seconds of GPU time): a pass is the client's per-pass wall; a start is everything else one start
took (spawn to healthy, the warm-up pass, the client's own start, the stop).

    python -m benchmarks.noise.components benchmarks/noise/results/nested/nested-*.json --out DIR
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from scipy import stats

LEVEL = 0.95


@dataclass(frozen=True)
class Interval:
    estimate: float
    low: float
    high: float


@dataclass(frozen=True)
class Components:
    """σ's are of ln(metric) (≈ relative SDs); the CIs are two-sided at LEVEL."""
    starts: int
    passes: int
    sigma_pass: Interval
    sigma_start: Interval
    df_pass: int
    df_start: int
    grand_mean: float  # mean of y

    def sigma_run(self) -> float:
        """One start, one pass: today's run-to-run σ."""
        return math.hypot(self.sigma_start.estimate, self.sigma_pass.estimate)


def chi2_interval(variance: float, df: float, level: float = LEVEL) -> tuple[float, float]:
    """CI of σ² from an estimate on df degrees of freedom: df·s²/σ² ~ χ²(df)."""
    tail = (1.0 - level) / 2.0
    return df * variance / stats.chi2.ppf(1.0 - tail, df), df * variance / stats.chi2.ppf(tail, df)


def mls_interval(msb: float, msw: float, n1: int, n2: int, p: int, level: float = LEVEL) -> tuple[float, float]:
    """Modified large-sample CI of σ_start² = (MSB − MSW)/P (Burdick & Graybill 1992, one-way random model)."""
    a = (1.0 - level) / 2.0
    g1 = 1.0 - n1 / stats.chi2.ppf(1.0 - a, n1)
    h1 = n1 / stats.chi2.ppf(a, n1) - 1.0
    g2 = 1.0 - n2 / stats.chi2.ppf(1.0 - a, n2)
    h2 = n2 / stats.chi2.ppf(a, n2) - 1.0
    f1 = stats.f.ppf(1.0 - a, n1, n2)
    f2 = stats.f.ppf(a, n1, n2)
    g12 = ((f1 - 1.0) ** 2 - g1 ** 2 * f1 ** 2 - h2 ** 2) / f1
    h12 = ((1.0 - f2) ** 2 - h1 ** 2 * f2 ** 2 - g2 ** 2) / f2
    vl = g1 ** 2 * msb ** 2 + h2 ** 2 * msw ** 2 + g12 * msb * msw
    vu = h1 ** 2 * msb ** 2 + g2 ** 2 * msw ** 2 + h12 * msb * msw
    low = (msb - msw - math.sqrt(max(vl, 0.0))) / p
    high = (msb - msw + math.sqrt(max(vu, 0.0))) / p
    return max(low, 0.0), max(high, 0.0)


def one_way(y: np.ndarray, level: float = LEVEL) -> Components:
    """y: K starts × P passes (log scale), balanced; K ≥ 2, P ≥ 2."""
    y = np.asarray(y, dtype=float)
    if y.ndim != 2 or y.shape[0] < 2 or y.shape[1] < 2:
        raise ValueError(f"need at least 2 starts × 2 passes, got shape {y.shape}")
    k, p = y.shape
    means = y.mean(axis=1)
    n1, n2 = k - 1, k * (p - 1)
    msw = float(((y - means[:, None]) ** 2).sum() / n2)
    msb = float(p * ((means - means.mean()) ** 2).sum() / n1)
    pass_low, pass_high = chi2_interval(msw, n2, level)
    start_low, start_high = mls_interval(msb, msw, n1, n2, p, level)
    start_var = max(0.0, (msb - msw) / p)
    return Components(starts=k, passes=p,
                      sigma_pass=Interval(math.sqrt(msw), math.sqrt(pass_low), math.sqrt(pass_high)),
                      sigma_start=Interval(math.sqrt(start_var), math.sqrt(start_low), math.sqrt(start_high)),
                      df_pass=n2, df_start=n1, grand_mean=float(means.mean()))


def job_effect(parts: list[Components], level: float = LEVEL) -> Interval | None:
    """σ_job from machine means (one Components per machine, same configuration); None under two machines."""
    if len(parts) < 2:
        return None
    m = np.array([c.grand_mean for c in parts])
    within = float(np.mean([(c.sigma_start.estimate ** 2 + c.sigma_pass.estimate ** 2 / c.passes) / c.starts
                            for c in parts]))
    spread = float(m.var(ddof=1))
    _, high = chi2_interval(spread, len(parts) - 1, level)
    return Interval(math.sqrt(max(0.0, spread - within)), 0.0, math.sqrt(max(0.0, high - within)))


def pooled(ys: list[np.ndarray], level: float = LEVEL) -> Components:
    """Components pooled over machines (each y: K_j starts × P passes, one P for all), machine means removed:
    MSW = ΣΣ(y − ȳ_jk)² / ΣK_j(P − 1),  MSB = P·ΣΣ(ȳ_jk − ȳ_j)² / (ΣK_j − M)."""
    ys = [np.asarray(y, dtype=float) for y in ys]
    if len({y.shape[1] for y in ys}) != 1 or any(y.ndim != 2 or y.shape[0] < 2 or y.shape[1] < 2 for y in ys):
        raise ValueError(f"need ≥ 2 starts × one P ≥ 2 passes on every machine, got {[y.shape for y in ys]}")
    p = ys[0].shape[1]
    k = sum(y.shape[0] for y in ys)
    n1, n2 = k - len(ys), k * (p - 1)
    msw = float(sum(((y - y.mean(axis=1)[:, None]) ** 2).sum() for y in ys) / n2)
    msb = float(p * sum(((y.mean(axis=1) - y.mean()) ** 2).sum() for y in ys) / n1)
    pass_low, pass_high = chi2_interval(msw, n2, level)
    start_low, start_high = mls_interval(msb, msw, n1, n2, p, level)
    return Components(starts=k, passes=p,
                      sigma_pass=Interval(math.sqrt(msw), math.sqrt(pass_low), math.sqrt(pass_high)),
                      sigma_start=Interval(math.sqrt(max(0.0, (msb - msw) / p)), math.sqrt(start_low),
                                           math.sqrt(start_high)),
                      df_pass=n2, df_start=n1, grand_mean=float(np.mean([y.mean() for y in ys])))


def machine_difference(y1: np.ndarray, y2: np.ndarray, level: float = LEVEL) -> dict:
    """Second machine's mean − first's on the log scale, from the start means (a start is the independent unit):
    Welch's t, its df and p, and the CI of the difference."""
    m1, m2 = np.asarray(y1).mean(axis=1), np.asarray(y2).mean(axis=1)
    v1, v2 = m1.var(ddof=1) / len(m1), m2.var(ddof=1) / len(m2)
    d, se = float(m2.mean() - m1.mean()), math.sqrt(v1 + v2)
    df = (v1 + v2) ** 2 / (v1 ** 2 / (len(m1) - 1) + v2 ** 2 / (len(m2) - 1))
    q = float(stats.t.ppf(1.0 - (1.0 - level) / 2.0, df))
    t = d / se if se > 0 else float("inf")
    return {"difference": d, "low": d - q * se, "high": d + q * se, "se": se, "t": t, "df": float(df),
            "p_two_sided": float(2 * stats.t.sf(abs(t), df))}


def gpu_model(study: dict) -> str:
    """The GPU's name, as nvidia-smi gave it first (e.g. 'NVIDIA H200')."""
    return (study["machine"].get("gpu") or "unknown").split(",")[0].strip()


def optimal_passes(sigma_start: float, sigma_pass: float, start_cost: float, pass_cost: float, cap: int = 16) -> int:
    """Passes per start that minimise variance × cost of a start mean (Kalibera & Jones 2013):
    P* = √((c_start/c_pass)·σ_pass²/σ_start²), rounded to the better neighbour, at least 1."""
    if sigma_pass <= 0:
        return 1
    if sigma_start <= 0:
        return cap

    def work(p: int) -> float:
        return (sigma_start ** 2 + sigma_pass ** 2 / p) * (start_cost + p * pass_cost)
    guess = math.sqrt(start_cost / pass_cost) * sigma_pass / sigma_start
    low = max(1, min(cap, math.floor(guess)))
    return min({low, min(cap, low + 1)}, key=work)


def work_ratio(sigma_start: float, sigma_pass: float, start_cost: float, pass_cost: float, passes: int) -> float:
    """GPU time for a given precision with `passes` per start, relative to one pass per start (today's design)."""
    def work(p: int) -> float:
        return (sigma_start ** 2 + sigma_pass ** 2 / p) * (start_cost + p * pass_cost)
    return work(passes) / work(1)


def interleave_sd(sigma_run: float, start_cost: float, pass_cost: float, seconds: float) -> float:
    """SD of today's A/B difference (one pass per start, alternating sides) in `seconds` of GPU time:
    K = seconds / (2·(c_start + c_pass)) starts a side, Var = 2σ_run²/K."""
    per_side = seconds / (2.0 * (start_cost + pass_cost))
    return sigma_run * math.sqrt(2.0 / per_side)


# --- the study's JSON --------------------------------------------------------------------------------------

def matrix_of(config: dict, key: str = "throughput") -> tuple[np.ndarray, dict]:
    """K × P log values of the starts that finished all their passes, and the measured costs (s)."""
    rows, start_costs, pass_costs = [], [], []
    for start in config["starts"]:
        passes = start.get("passes") or []
        if "error" in start or len(passes) != config["passes_per_start"]:
            continue
        if any(p.get("skipped") or not p.get(key) for p in passes):
            continue
        rows.append(np.log([float(p[key]) for p in passes]))
        walls = [float(p["wall_s"]) for p in passes]
        pass_costs += walls
        start_costs.append(float(start["wall_s"]) - sum(walls))
    costs = {"start_s": float(np.mean(start_costs)) if start_costs else float("nan"),
             "pass_s": float(np.mean(pass_costs)) if pass_costs else float("nan"),
             "ready_s": float(np.mean([s["ready_s"] for s in config["starts"] if "ready_s" in s]))}
    return np.array(rows), costs


def duet_summary(duet: dict | None) -> dict | None:
    """Per session: the mean of its ABBA pair differences ln A − ln B; across sessions: their spread."""
    if not duet or not duet.get("sessions"):
        return None
    sessions = []
    for s in duet["sessions"]:
        blocks = s.get("blocks") or []
        if "error" in s or len(blocks) < 2:
            continue
        pairs = [(blocks[i], blocks[i + 1]) for i in range(0, len(blocks) - 1, 2)]
        d = [math.log(a["throughput"] / b["throughput"]) if a["side"] == "A" else
             math.log(b["throughput"] / a["throughput"]) for a, b in pairs]
        solo_level = float(np.mean([math.log(b["throughput"]) for b in blocks if b["side"] == "A"]))
        sessions.append({"pairs": len(d), "mean_diff": float(np.mean(d)), "pair_sd": float(np.std(d, ddof=1)) if len(d) >= 2 else math.nan,
                         "wall_s": float(s["wall_s"]), "a_level": solo_level})
    if not sessions:
        return None
    means = np.array([s["mean_diff"] for s in sessions])
    out: dict = {"slow_b": duet.get("slow_b", 0.0), "sessions": sessions, "n": len(sessions),
                 "mean_diff": float(means.mean()), "session_wall_s": float(np.mean([s["wall_s"] for s in sessions])),
                 "pair_sd_pooled": _pooled_pair_sd(sessions),
                 "a_throughput": float(np.exp(np.mean([s["a_level"] for s in sessions])))}
    if len(sessions) >= 2:
        sd = float(means.std(ddof=1))
        low, high = chi2_interval(sd ** 2, len(sessions) - 1)
        out["session_sd"] = Interval(sd, math.sqrt(low), math.sqrt(high))
        se = sd / math.sqrt(len(sessions))
        out["t"] = float(means.mean() / se) if se > 0 else float("inf")
        out["p_two_sided"] = float(2 * stats.t.sf(abs(out["t"]), len(sessions) - 1))
    return out


def _pooled_pair_sd(sessions: list[dict]) -> float:
    squares = [s["pair_sd"] ** 2 for s in sessions if not math.isnan(s["pair_sd"])]
    return math.sqrt(float(np.mean(squares))) if squares else math.nan


def analyse(studies: list[dict]) -> dict:
    result: dict = {"machines": [], "configs": {}, "duet": []}
    matrices: dict = {}  # config -> [(label, gpu model, y)]
    for study in studies:
        label = study["machine_label"]
        result["machines"].append({"label": label, "gpu": study["machine"].get("gpu"), "gpu_model": gpu_model(study),
                                   "boot_id": study["machine"].get("boot_id"), "started": study["started"]})
        for config in study["configs"]:
            y, costs = matrix_of(config)
            if y.ndim != 2 or y.shape[0] < 2:
                continue
            comp = one_way(y)
            matrices.setdefault(config["name"], []).append((label, gpu_model(study), y, costs))
            entry = {"machine": label, "gpu_model": gpu_model(study), **asdict(comp), "sigma_run": comp.sigma_run(), **costs,
                     "mean": float(math.exp(comp.grand_mean)),
                     "optimal_passes": optimal_passes(comp.sigma_start.estimate, comp.sigma_pass.estimate,
                                                      costs["start_s"], costs["pass_s"])}
            entry["work_ratio"] = work_ratio(comp.sigma_start.estimate, comp.sigma_pass.estimate, costs["start_s"],
                                             costs["pass_s"], entry["optimal_passes"])
            result["configs"].setdefault(config["name"], []).append(entry)
        for key in ("duet", "duet_ab"):
            summary = duet_summary(study.get(key))
            if summary is not None:
                result["duet"].append({"machine": label, "kind": key, **_plain(summary)})
    result["duet_vs_interleave"] = _duet_vs_interleave(result)
    result["same_gpu"] = _same_gpu(matrices)
    result["pairs"] = {name: [{"first": rows[i][0], "second": rows[j][0], **machine_difference(rows[i][2], rows[j][2])}
                              for i in range(len(rows)) for j in range(i + 1, len(rows))]
                       for name, rows in matrices.items()}
    result["minutes"] = minutes_table(result)
    for name, entries in result["configs"].items():
        parts = [Components(e["starts"], e["passes"], Interval(**e["sigma_pass"]), Interval(**e["sigma_start"]),
                            e["df_pass"], e["df_start"], e["grand_mean"]) for e in entries]
        job = job_effect(parts)
        result.setdefault("jobs", {})[name] = None if job is None else asdict(job)
    return result


def _same_gpu(matrices: dict) -> dict:
    """Per configuration and GPU model with two machines or more: σ_job among those machines alone, the
    difference of each pair's means, and the components pooled over them (an entry like a machine's)."""
    out: dict = {}
    for name, rows in matrices.items():
        for model in sorted({m for _, m, _, _ in rows}):
            group = [(label, y, costs) for label, m, y, costs in rows if m == model]
            if len(group) < 2:
                continue
            parts = [one_way(y) for _, y, _ in group]
            job = job_effect(parts)
            pairs = [{"first": group[i][0], "second": group[j][0], **machine_difference(group[i][1], group[j][1])}
                     for i in range(len(group)) for j in range(i + 1, len(group))]
            entry: dict = {"gpu_model": model, "machines": [g[0] for g in group],
                           "job": None if job is None else asdict(job), "pairs": pairs}
            if len({y.shape[1] for _, y, _ in group}) == 1:
                comp = pooled([y for _, y, _ in group])
                start_s = float(np.mean([c["start_s"] for _, _, c in group]))
                pass_s = float(np.mean([c["pass_s"] for _, _, c in group]))
                best = optimal_passes(comp.sigma_start.estimate, comp.sigma_pass.estimate, start_s, pass_s)
                entry["pooled"] = {"machine": "+".join(g[0] for g in group), "gpu_model": model, **asdict(comp),
                                   "sigma_run": comp.sigma_run(), "start_s": start_s, "pass_s": pass_s,
                                   "mean": float(math.exp(comp.grand_mean)), "optimal_passes": best,
                                   "work_ratio": work_ratio(comp.sigma_start.estimate, comp.sigma_pass.estimate,
                                                            start_s, pass_s, best)}
            out.setdefault(name, []).append(entry)
    return out


def interleave_df(entry: dict) -> float:
    """Satterthwaite df of today's run variance σ_run² = MSB/P + (1 − 1/P)·MSW from a machine's K × P components."""
    p = entry["passes"]
    msw = entry["sigma_pass"]["estimate"] ** 2
    msb = p * entry["sigma_start"]["estimate"] ** 2 + msw
    a, b = msb / p, (1 - 1 / p) * msw
    return (a + b) ** 2 / (a ** 2 / entry["df_start"] + (b ** 2 / entry["df_pass"] if b else 0.0))


def ratio_interval(ratio: float, df_interleave: float, df_duet: float) -> list[float]:
    """95% interval of a ratio of two independent variance estimates (F on their df: both sides uncertain)."""
    return [ratio / float(stats.f.ppf(0.975, df_interleave, df_duet)), ratio / float(stats.f.ppf(0.025, df_interleave, df_duet))]


def _duet_vs_interleave(result: dict) -> list[dict]:
    """Per machine: every duet session's difference about its kind's mean (A/A and A/B alike: the slower build
    moves the mean, not the spread), pooled; against today's interleave on that machine's graphs-b32
    components at the duet session's GPU time."""
    rows = []
    for machine in {d["machine"] for d in result["duet"]}:
        solo = next((e for e in result["configs"].get("graphs-b32", []) if e["machine"] == machine), None)
        groups = [d for d in result["duet"] if d["machine"] == machine and d["n"] >= 2]
        if solo is None or not groups:
            continue
        squares = sum(sum((x["mean_diff"] - d["mean_diff"]) ** 2 for x in d["sessions"]) for d in groups)
        df = sum(d["n"] - 1 for d in groups)
        sd = math.sqrt(squares / df)
        low, high = chi2_interval(sd ** 2, df)
        seconds = float(np.mean([x["wall_s"] for d in groups for x in d["sessions"]]))
        inter = interleave_sd(solo["sigma_run"], solo["start_s"], solo["pass_s"], seconds)
        rows.append({"machine": machine, "sessions": sum(d["n"] for d in groups), "df": df,
                     "duet_sd": asdict(Interval(sd, math.sqrt(low), math.sqrt(high))), "session_s": seconds,
                     "interleave_sd": inter, "variance_ratio": (inter / sd) ** 2,
                     "variance_ratio_low": (inter / math.sqrt(high)) ** 2,
                     "variance_ratio_ci": ratio_interval((inter / sd) ** 2, interleave_df(solo), df),
                     "duet_vs_solo_throughput": next(d["a_throughput"] for d in groups) / solo["mean"] - 1.0})
    return sorted(rows, key=lambda r: r["machine"])


TARGETS = (0.02, 0.03, 0.05)


def minutes_table(result: dict) -> list[dict]:
    """Per machine with graphs-b32 components: GPU minutes for each target change (80% power, one-sided
    α 0.005, the A/B's own df) under today's design, the two-level design and the duet; and what today's
    budget (--max-runs 14: 7 starts a side) buys under each."""
    from gate.stats import nested
    from gate.stats.speed import mde
    from gate.stats.thresholds import Thresholds
    alpha = Thresholds().alpha
    rows = []
    pooled_rows = [g["pooled"] for g in result.get("same_gpu", {}).get("graphs-b32", []) if "pooled" in g]
    for e in result["configs"].get("graphs-b32", []) + pooled_rows:
        c = nested.Components(e["sigma_start"]["estimate"], e["sigma_pass"]["estimate"], e["start_s"], e["pass_s"])
        duet = next((d for d in result.get("duet_vs_interleave", []) if d["machine"] == e["machine"]), None)
        row: dict = {"machine": e["machine"], "targets": {}}
        budget = nested.design(c, 7, 1)
        row["budget"] = {"minutes": budget.gpu_minutes, "today": budget.detectable,
                         "two_level": _detectable(nested.best_within(c, budget.gpu_minutes))}
        for target in TARGETS:
            today, two = nested.cheapest_for(c, target, passes=1), nested.cheapest_for(c, target)
            cell = {"today": None if today is None else today.gpu_minutes,
                    "two_level": None if two is None else two.gpu_minutes,
                    "two_level_design": None if two is None else [two.starts, two.passes]}
            if duet is not None:
                cell["duet"] = _duet_minutes(duet, target, mde, alpha)
            row["targets"][f"{target:.2f}"] = cell
        if duet is not None:
            sessions = max(2, int(budget.gpu_minutes * 60 // duet["session_s"]))
            row["budget"]["duet"] = float(mde(duet["duet_sd"]["estimate"] / math.sqrt(sessions), sessions - 1, alpha))
        rows.append(row)
    return rows


def _detectable(d) -> float | None:
    return None if d is None else d.detectable


def _duet_minutes(duet: dict, target: float, mde, alpha: float) -> float | None:
    """Duet sessions (fresh servers each) until the mean session difference detects `target`: df n − 1."""
    for n in range(2, 200):
        if float(mde(duet["duet_sd"]["estimate"] / math.sqrt(n), n - 1, alpha)) <= target:
            return n * duet["session_s"] / 60.0
    return None


def _plain(value):
    if isinstance(value, Interval):
        return asdict(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _pct(i: dict) -> str:
    return f"{100 * i['estimate']:.2f}% [{100 * i['low']:.2f}, {100 * i['high']:.2f}]"


def markdown(result: dict) -> str:
    lines = ["# Variance components (issue 37)", "", "| machine | GPU | boot id | started |", "|---|---|---|---|"]
    lines += [f"| {m['label']} | {m['gpu']} | {m.get('boot_id')} | {m['started']} |" for m in result["machines"]]
    lines += ["", "Throughput, y = ln(req/s); 95% CIs (σ_pass: chi-square; σ_start: modified large-sample).", "",
              "| config | machine | starts × passes | mean req/s | σ_pass | σ_start | σ_run (1 pass) | start cost s "
              "| pass cost s | P* | GPU time at P* vs 1 pass |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, entries in result["configs"].items():
        for e in entries:
            lines.append(f"| {name} | {e['machine']} | {e['starts']} × {e['passes']} | {e['mean']:.2f} | "
                          f"{_pct(e['sigma_pass'])} | {_pct(e['sigma_start'])} | {100 * e['sigma_run']:.2f}% | "
                          f"{e['start_s']:.2f} | {e['pass_s']:.2f} | {e['optimal_passes']} | "
                          f"{e['work_ratio']:.2f}× |")
    lines += ["", "| config | σ_job between machines (estimate, 95% upper bound) | second − first [95% CI], t (df, p) |",
              "|---|---|---|"]
    for name, job in result.get("jobs", {}).items():
        cell = "n/a (one machine)" if job is None else f"{100 * job['estimate']:.2f}% (≤ {100 * job['high']:.2f}%)"
        lines.append(f"| {name} | {cell} | {_differences(result.get('pairs', {}).get(name, []))} |")
    same = [(name, g) for name, groups in result.get("same_gpu", {}).items() for g in groups]
    if same:
        lines += ["", "Machines of one GPU model (the job effect proper): σ_job among them, each pair's difference of "
                  "means (Welch t on start means), and the components pooled over them (machine a fixed effect).", "",
                  "| config | GPU | machines | σ_job (95% upper bound) | second − first [95% CI], t (df, p) |",
                  "|---|---|---|---|---|"]
        for name, g in same:
            job = g["job"]
            diffs = _differences(g["pairs"])
            lines.append(f"| {name} | {g['gpu_model']} | {', '.join(g['machines'])} | "
                         f"{100 * job['estimate']:.2f}% (≤ {100 * job['high']:.2f}%) | {diffs} |")
        lines += ["", "| config | pooled over | starts × passes | σ_pass | σ_start | σ_run (1 pass) | start cost s "
                  "| pass cost s | P* | GPU time at P* vs 1 pass |", "|---|---|---|---|---|---|---|---|---|---|"]
        for name, g in same:
            e = g.get("pooled")
            if e is not None:
                lines.append(f"| {name} | {e['machine']} ({g['gpu_model']}) | {e['starts']} × {e['passes']} | "
                             f"{_pct(e['sigma_pass'])} | {_pct(e['sigma_start'])} | {100 * e['sigma_run']:.2f}% | "
                             f"{e['start_s']:.2f} | {e['pass_s']:.2f} | {e['optimal_passes']} | "
                             f"{e['work_ratio']:.2f}× |")
    if result["duet"]:
        lines += ["", "| duet | machine | sessions × pairs | A req/s | mean ln A − ln B | σ across sessions [95% CI] "
                  "| pair SD within | t (p) | session s |", "|---|---|---|---|---|---|---|---|---|"]
        for d in result["duet"]:
            sd = d.get("session_sd")
            pairs = d["sessions"][0]["pairs"]
            lines.append(f"| {d['kind']} (slow_b {d['slow_b']}) | {d['machine']} | {d['n']} × {pairs} | "
                         f"{d['a_throughput']:.2f} | {100 * d['mean_diff']:+.2f}% | "
                         f"{_pct(sd) if sd else 'n/a'} | {100 * d['pair_sd_pooled']:.2f}% | "
                         f"{d.get('t', float('nan')):+.2f} ({d.get('p_two_sided', float('nan')):.3f}) | "
                         f"{d['session_wall_s']:.1f} |")
    if result.get("duet_vs_interleave"):
        lines += ["", "| machine | duet sessions (df) | duet σ of a session's difference [95% CI] | session s "
                  "| interleave σ in that time | variance ratio (lower 95%, duet's σ alone) | ratio 95% CI (both uncertain) "
                  "| duet A throughput vs solo |",
                  "|---|---|---|---|---|---|---|---|"]
        for r in result["duet_vs_interleave"]:
            lines.append(f"| {r['machine']} | {r['sessions']} ({r['df']}) | {_pct(r['duet_sd'])} | {r['session_s']:.1f} | "
                         f"{100 * r['interleave_sd']:.2f}% | {r['variance_ratio']:.1f}× ({r['variance_ratio_low']:.1f}×) | "
                         + (f"[{r['variance_ratio_ci'][0]:.1f}, {r['variance_ratio_ci'][1]:.1f}]×" if r.get("variance_ratio_ci")
                            else "n/a")
                         + f" | {100 * r['duet_vs_solo_throughput']:+.1f}% |")
    if result.get("minutes"):
        head = " | ".join(f"{100 * t:.0f}%: today / two-level (K×P) / duet" for t in TARGETS)
        lines += ["", "GPU minutes per model (one Whisper-shaped model, graphs-b32 components; 80% power, one-sided "
                  "α 0.005, own-runs df) for a detectable change, and the change today's budget (7 starts a side, "
                  "2 warm cycles) buys:", "",
                  f"| machine | {head} | budget min | budget buys: today / two-level / duet |",
                  "|---|" + "---|" * (len(TARGETS) + 2)]
        for r in result["minutes"]:
            cells = []
            for t in TARGETS:
                c = r["targets"][f"{t:.2f}"]
                k, p = c["two_level_design"] or ("-", "-")
                cells.append(f"{_m(c['today'])} / {_m(c['two_level'])} ({k}×{p}) / {_m(c.get('duet'))}")
            b = r["budget"]
            lines.append(f"| {r['machine']} | " + " | ".join(cells) + f" | {b['minutes']:.1f} | "
                         f"{_p(b['today'])} / {_p(b['two_level'])} / {_p(b.get('duet'))} |")
    return "\n".join(lines) + "\n"


def _differences(pairs: list[dict]) -> str:
    """Each pair's difference of means on the log scale (≈ relative), with its CI and Welch's t."""
    return "; ".join(f"{d['second']} − {d['first']}: {100 * d['difference']:+.2f}% [{100 * d['low']:+.2f}, "
                     f"{100 * d['high']:+.2f}], t {d['t']:+.2f} ({d['df']:.1f}, {d['p_two_sided']:.3f})"
                     for d in pairs) or "n/a"


def _m(minutes: float | None) -> str:
    return "n/a" if minutes is None else f"{minutes:.1f}"


def _p(change: float | None) -> str:
    return "n/a" if change is None else f"{100 * change:.1f}%"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("studies", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    try:
        studies = [json.loads(p.read_text()) for p in args.studies]
        result = analyse(studies)
    except (OSError, ValueError, KeyError, TypeError) as err:
        print(f"components: {err}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "components.json").write_text(json.dumps(result, indent=1) + "\n")
    pooled_rows = [g["pooled"] for g in result.get("same_gpu", {}).get("graphs-b32", []) if "pooled" in g]
    for entry in result["configs"].get("graphs-b32", []) + pooled_rows:  # the proxy is Whisper-shaped: whisper's
        doc = {"schema": "gate-components/1",
               "source": f"benchmarks/noise/components.py, graphs-b32 on machine {entry['machine']}",
               "models": {"whisper": {"sigma_start": entry["sigma_start"]["estimate"],
                                      "sigma_pass": entry["sigma_pass"]["estimate"],
                                      "start_cost_s": entry["start_s"], "pass_cost_s": entry["pass_s"]}}}
        (args.out / f"gate-components-{entry['machine']}.json").write_text(json.dumps(doc, indent=1) + "\n")
    text = markdown(result)
    (args.out / "components.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
