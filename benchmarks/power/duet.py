"""The duet's cells of the noise matrix (issue 53): simulated duet A/Bs of one model at the measured components.

    python -m benchmarks.power.duet --prs 2000 --seed 53 --out benchmarks/results

Each simulated A/B is one model (qwen3: its gated speed rows, throughput and p95 of asr_en and asr_zh) run as
`gate run --design duet` runs it: sessions of both builds' servers resident on one GPU, P block pairs a session.
Per session s, pair j and row: ln b = c_s + e_b, ln c = c_s + u_s + δ + e_c, where c_s is the co-residence slowdown
and the machine's state that session (both builds see it alike, so it cancels in ln c − ln b: it moves absolute
figures, never the paired difference), u_s the session's own effect on the pair and e the block spread. The
components are the issue-37 prototype's (benchmarks/noise/results/nested/components.json: σ of a session's
difference over its P₀ = 4 pairs, the pairs' spread within a session, a session's wall time, the co-residence
slowdown) per machine, A (H200) and B (H100); p95 rows are assumed to share throughput's σ (the prototype's
components are throughput's) and rows to be independent (under Holm that is the worst case for a no-op).

Judged by the gate's own functions: gate.judging.duet.session_test (the judge's session test, batched),
gate.judging.eligibility (the A/B's own evidence at the look's level), gate.judging.floors, gate.judging.rule.family
(the family rule, at rule.levels of gate.stats.looks' thresholds) and the extension levels; the plumbing around them
is compare._decide_speed's and looks.decide's (K₁ then K for an undecided model; tests/e2e/benchmarks/test_duet_cells.py checks the verdicts against
`gate.judging.compare.compare` on duet layouts). Today's design's figure at the same GPU minutes is the planner's
(gate.stats.nested.best_within at the budget gate.runner.plan_by_change uses), not simulated here.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

from gate.formats import abplan
from gate.formats.components import load as load_components
from gate.formats.config import load_suite
from gate.formats.noise_model import FEWEST_RUNS, Components, DuetComponents
from gate.formats.reasons import CannotFail
from gate.judging import eligibility, floors, rule
from gate.judging.duet import session_test
from gate.judging.judge import one_look_thresholds
from gate.runner.duet import DuetPlan
from gate.runner.plan_by_change import _budget_minutes
from gate.stats import duet_design, looks
from gate.stats.nested import best_within
from gate.stats.speed import SENSITIVITY_FACTOR, mde

from .noise import TARGET

NESTED = Path(__file__).resolve().parents[1] / "noise" / "results" / "nested"
MODEL = TARGET.split("/")[0]
RUNNER = DuetPlan()  # K₁ and K as `gate run --design duet` plans them (--sessions 5,10), P its default pairs
CHANGES = (-0.02, -0.03, -0.05)
GRID = np.round(np.arange(0.001, 0.2001, 0.001), 4)  # changes searched for the one caught 80% of the time
POWER = 0.8
COMPONENT_MODEL = "whisper"  # the proxy the issue-37 components were measured with
# Two readings of the prototype's spreads (on machine A the pairs' spread within a session, 2.85%, alone implies a
# session σ of 1.43% at 4 pairs, above the 0.92% measured between 3 sessions): both are shown, and the session σ at
# the upper end of its 95% interval (3 sessions on A, 6 on B: the interval is wide).
READINGS = ("session", "blocks", "upper")


@dataclass(frozen=True)
class Machine:
    label: str
    gpu: str
    session_sd: float  # σ of a session's mean difference over `pairs` block pairs
    session_sd_low: float  # its 95% interval (chi-square on `sessions` − 1 df)
    session_sd_high: float
    sessions: int
    session_s: float  # a session's wall time (both starts, warm-ups, 2·pairs blocks, the stop)
    pairs: int
    block_sd: float  # SD of a pair's difference about its session's mean, pooled
    block_s: float  # one block's wall time
    coresidence: float  # ln(duet throughput / solo): both builds alike
    coresidence_sd: float  # its spread from session to session (the A side's level)
    today: Components  # the interleave's components on the same machine
    reading: str = "session"  # READINGS: which measured spread sets the block spread

    def split(self) -> tuple[float, float]:
        """(σ_u, σ_e): a session's own effect and a pair's block spread. "session": consistent with the measured session
        σ at the prototype's P₀ (the block spread capped where it alone would exceed it); "blocks": the block spread as
        measured within the sessions (more df), the session σ it implies at P₀ being larger than the one measured;
        "upper": the session σ at the upper end of its 95% interval."""
        sd = self.session_sd_high if self.reading == "upper" else self.session_sd
        sigma_e = self.block_sd if self.reading == "blocks" else min(self.block_sd, sd * math.sqrt(self.pairs))
        return math.sqrt(max(sd ** 2 - sigma_e ** 2 / self.pairs, 0.0)), sigma_e

    def duet(self, pairs: int) -> DuetComponents:
        """The duet's components at P block pairs a session: σ² = σ_u² + σ_e²/P; blocks cost their wall time."""
        sigma_u, sigma_e = self.split()
        return DuetComponents(math.sqrt(sigma_u ** 2 + sigma_e ** 2 / pairs),
                              self.session_s + 2 * (pairs - self.pairs) * self.block_s, sigma_e)


def machines(root: Path = NESTED) -> dict[str, Machine]:
    doc = json.loads((root / "components.json").read_text())
    out = {}
    for versus in doc["duet_vs_interleave"]:
        label = versus["machine"]
        entries = [d for d in doc["duet"] if d["machine"] == label]
        sessions = [s for d in entries for s in d["sessions"]]
        levels = np.array([s["a_level"] for d in entries if d["kind"] == "duet" for s in d["sessions"]])
        pairs = {s["pairs"] for s in sessions}
        assert len(pairs) == 1, "one P₀ per machine"
        p0 = pairs.pop()
        block_var = np.mean([s["pair_sd"] ** 2 for s in sessions])  # pooled: each session has P₀ − 1 df
        raw = json.loads((root / f"nested-{label}.json").read_text())
        walls = [b["wall_s"] for key in ("duet", "duet_ab") if key in raw for s in raw[key]["sessions"]
                 for b in s["blocks"]]
        today = load_components(root / f"gate-components-{label}.json")[COMPONENT_MODEL]
        sd = versus["duet_sd"]
        out[label] = Machine(label, "H200" if label in ("A", "D") else "H100", sd["estimate"], sd["low"], sd["high"],
                             versus["sessions"], versus["session_s"], p0, math.sqrt(block_var),
                             float(np.mean(walls)), math.log1p(versus["duet_vs_solo_throughput"]),
                             float(np.std(levels, ddof=1)), today)
    return out


@dataclass(frozen=True)
class Rows:
    """The model's gated speed rows as the suite defines them."""

    names: tuple[str, ...]
    floors: np.ndarray  # (R,) floor_rel
    higher: np.ndarray  # (R,) higher is better
    target: np.ndarray  # (R,) the rows a build slower on TARGET moves


def model_rows(model: str = MODEL) -> Rows:
    suite = load_suite()
    names, floors, higher, target = [], [], [], []
    for workload in suite.workloads_for((model,)):
        for metric in workload.metrics:
            if metric.kind == "speed" and metric.gated:
                names.append(f"{workload.id} {metric.name}")
                floors.append(metric.floor_rel or 0.0)
                higher.append(metric.higher_is_better)
                target.append(workload.id == TARGET)
    return Rows(tuple(names), np.array(floors), np.array(higher), np.array(target))


def draw_blocks(rng: np.random.Generator, m: Machine, rows: Rows, pairs: int, sessions: int, batch: int,
                change: float) -> tuple[np.ndarray, np.ndarray]:
    """(ln b, ln c), each (B, R, K, P): a build `change` slower on TARGET (throughput × 1 + change, latency ÷ it)."""
    sigma_u, sigma_e = m.split()
    shape = (batch, len(rows.names), sessions, pairs)
    shared = rng.normal(m.coresidence, m.coresidence_sd, (batch, 1, sessions, 1))  # both builds alike
    own = rng.normal(0.0, sigma_u, (batch, len(rows.names), sessions, 1))
    shift = np.where(rows.target, np.where(rows.higher, 1.0, -1.0) * math.log1p(change), 0.0)[None, :, None, None]
    base = shared + rng.normal(0.0, sigma_e / math.sqrt(2), shape)
    cand = shared + own + shift + rng.normal(0.0, sigma_e / math.sqrt(2), shape)
    return base, cand


def session_means(base: np.ndarray, cand: np.ndarray) -> np.ndarray:
    """(B, R, K): each session's mean paired log-difference (what gate.judging.duet.session_facts averages)."""
    return (cand - base).mean(axis=-1)


@dataclass(frozen=True)
class Look:
    verdict: np.ndarray  # (B, R) rule codes
    fail: np.ndarray  # (B,) a row FAILs
    extend: np.ndarray  # (B,) looks.decide would extend (first look only)


def judge_look(means: np.ndarray, rows: Rows, thresholds, first: bool) -> Look:
    """One look on the sessions given: compare._decide_speed's plumbing around the session test and the family rule,
    and the runner's extension (gate.judging.rule.extension: BH q within the speed rows at half the floor, or blind)."""
    k, r = means.shape[-1], means.shape[-2]
    found = session_test(means, rows.higher)
    worse = np.expm1(found.worse)
    alpha, warn_q = rule.levels(thresholds, "speed")
    own_level = eligibility.own_runs_level(alpha, r, thresholds.own_runs_bonferroni)
    # the A/B's own evidence (here the sessions themselves) must reach own_level: the judge's rule
    # (gate.judging.eligibility, as compare._hold_to_the_runs asks it), no slow-mode starts in a duet
    unconfirmed = eligibility.speed_confirmation_blockers(found.p, found.p, np.zeros(found.p.shape, bool), alpha=alpha,
                                                          own_level=own_level)[CannotFail.OWN_RUNS_DO_NOT_CONFIRM]
    can_fail = ~unconfirmed & (k >= FEWEST_RUNS)
    above, half = floors.speed_reaches(worse, rows.floors)
    result = rule.family(found.p, above, half, can_fail, alpha=alpha, warn_q=warn_q, unstable=np.zeros_like(can_fail))
    fail = (result.verdict == rule.FAIL).any(axis=-1)
    extend = np.zeros_like(fail)
    if first:
        blind = mde(found.se, found.df, alpha / r) > SENSITIVITY_FACTOR * rows.floors
        decided = rule.extension(found.p, worse / rows.floors >= floors.WARN_SHARE, blind,
                                 np.zeros_like(blind), fail, family=["speed"] * r)
        extend = decided.action == rule.LOOK_EXTEND
    return Look(result.verdict, fail, extend)


def judge_plan(means: np.ndarray, rows: Rows, first: int, most: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(the model FAILs, TARGET's throughput row FAILs, sessions run) per A/B under `--sessions first,most`: one look
    at the one-look level where first == most (the runner records no looks then), else the first look after K₁ and
    the pooled one after K for a model the first look extends."""
    target = int(np.flatnonzero(rows.target & rows.higher)[0])
    if first == most:
        one = judge_look(means[..., :first], rows, one_look_thresholds(True), first=False)
        return one.fail, one.verdict[:, target] == rule.FAIL, np.full(means.shape[0], first)
    look1 = judge_look(means[..., :first], rows, looks.thresholds_for(looks.Look.FIRST), first=True)
    pooled = judge_look(means[..., :most], rows, looks.thresholds_for(looks.Look.POOLED), first=False)
    final = np.where(look1.extend[:, None], pooled.verdict, look1.verdict)
    return final.max(axis=-1) == rule.FAIL, final[:, target] == rule.FAIL, np.where(look1.extend, most, first)


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float, float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return p, max(0.0, centre - half), min(1.0, centre + half)


def cell(m: Machine, rows: Rows, pairs: int, first: int, most: int, prs: int, seed: int) -> dict:
    """No-op false FAIL, power at CHANGES, the change caught 80% of the time and GPU minutes, for one design. The
    same draws serve every change (common random numbers), so power grows with the change and the search is exact."""
    rng = np.random.default_rng([seed, ord(m.label), READINGS.index(m.reading), pairs, first, most])
    base, cand = draw_blocks(rng, m, rows, pairs, most, prs, 0.0)
    noise = session_means(base, cand)
    shift = np.where(rows.target, np.where(rows.higher, 1.0, -1.0), 0.0)[None, :, None]

    def judged(change: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return judge_plan(noise + shift * math.log1p(change), rows, first, most)

    # power: the model FAILs (only TARGET's rows move). The changed throughput row alone (the matrix's
    # target_thr_fail) is shown beside it: a first look that FAILs on the p95 row stops the model there.
    noop, _, used = judged(0.0)
    power = {f"{c:.0%}": float(judged(c)[0].mean()) for c in CHANGES}
    target = {f"{c:.0%}": float(judged(c)[1].mean()) for c in CHANGES}
    caught = next((float(c) for c in GRID if judged(-float(c))[0].mean() >= POWER), None)
    d = m.duet(pairs)
    p, lo, hi = wilson(int(noop.sum()), prs)
    return {"machine": m.label, "gpu": m.gpu, "reading": m.reading, "pairs": pairs, "sessions": [first, most], "prs": prs,
            "session_sd": d.session_sd, "session_s": d.session_cost_s,
            "false_fail": p, "false_fail_low": lo, "false_fail_high": hi, "power": power, "power_target_throughput": target,
            "caught_80": caught,
            "sessions_mean": float(used.mean()), "gpu_minutes_mean": float(used.mean()) * d.session_cost_s / 60.0,
            "planner_detectable": duet_design.sessions_design(d, most).detectable}


def today(m: Machine) -> dict:
    """Today's design at its budget (7 + 7 starts, the warm cycles included) by the planner, as `gate run
    --dry-run --components` prints it."""
    budget = best_within(m.today, _budget_minutes(m.today, abplan.DEFAULT_MAX_RUNS), passes=1)
    assert budget is not None
    return {"starts": budget.starts, "gpu_minutes": budget.gpu_minutes, "detectable": budget.detectable}


def run(prs: int, seed: int) -> dict:
    rows = model_rows()
    out: dict = {"prs": prs, "seed": seed, "rows": list(rows.names), "runner": [RUNNER.first_sessions,
                                                                                 RUNNER.max_sessions],
                 "machines": {}, "cells": []}
    for measured in machines().values():
        now = today(measured)
        out["machines"][measured.label] = {**{k: v for k, v in asdict(measured).items() if k not in ("today", "reading")},
                                           "today_components": asdict(measured.today), "today": now}
        for reading in READINGS:
            m = replace(measured, reading=reading)
            out["machines"][m.label][f"variance_ratio_{reading}"] = {
                p: duet_design.variance_ratio(m.today, m.duet(p)) for p in sorted({m.pairs, RUNNER.pairs})}
            for pairs in sorted({m.pairs, RUNNER.pairs}, reverse=True):
                within = duet_design.sessions_within(m.duet(pairs), now["gpu_minutes"])
                plans = [(RUNNER.first_sessions, RUNNER.max_sessions)]
                if within is not None:
                    plans.insert(0, (within.sessions, within.sessions))  # `--sessions K,K` within today's minutes
                for first, most in plans:
                    found = cell(m, rows, pairs, first, most, prs, seed)
                    found["today_detectable"], found["today_minutes"] = now["detectable"], now["gpu_minutes"]
                    out["cells"].append(found)
    return out


def table(result: dict) -> str:
    lines = ["| machine, reading | `--sessions`, `--pairs` | session σ, GPU s | GPU min (mean) | false FAIL (Wilson 95%) "
             "| −2% / −3% / −5% FAIL | caught 80%: duet (× today's) | planner at today's minutes: duet / today |",
             "|---|---|---|---|---|---|---|---|"]
    for c in result["cells"]:
        m = result["machines"][c["machine"]]
        power = " / ".join(f"{100 * v:.1f}%" for v in c["power"].values())
        caught = (f"{100 * c['caught_80']:.1f}% ({c['caught_80'] / m['today']['detectable']:.2f}×)"
                  if c["caught_80"] is not None else "> 20%")
        plan = f"{c['sessions'][0]},{c['sessions'][1]}, {c['pairs']}"
        lines.append(
            f"| {c['machine']} ({c['gpu']}), {c['reading']} | {plan} | {100 * c['session_sd']:.2f}%, {c['session_s']:.1f} s | "
            f"{c['gpu_minutes_mean']:.1f} | {100 * c['false_fail']:.2f}% ({100 * c['false_fail_low']:.2f}–"
            f"{100 * c['false_fail_high']:.2f}) | {power} | {caught} | {100 * c['planner_detectable']:.1f}% / "
            f"{100 * m['today']['detectable']:.1f}% ({m['today']['gpu_minutes']:.1f} min) |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prs", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=53)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    result = run(args.prs, args.seed)
    result["seconds"] = time.perf_counter() - started
    text = (f"# Duet cells of the noise matrix (issue 53)\n\n`python -m benchmarks.power.duet --prs {args.prs} "
            f"--seed {args.seed} --out benchmarks/results` ({result['seconds']:.0f} s). Rows: "
            f"{', '.join(result['rows'])}.\n\n{table(result)}\n")
    print(text)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "duet-matrix.json").write_text(json.dumps(result, indent=1) + "\n")
        (args.out / "duet-matrix.md").write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
