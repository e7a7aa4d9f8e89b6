"""The duet's speed facts (issue 53): a session, not a block, is the unit of independence.

`gate run --design duet` (gate.runner.duet) pairs block j of session s on both sides (run<R> in each tree) and
records the sessions in gate-duet.json. Here each session's paired log-differences ln c − ln b are averaged
(blocks within the session), and the sessions' means give the facts the one speed rule takes: the difference
(their mean), its standard error (their SD / √K) and df = K − 1. The verdict stays the rule's
(gate.judging.compare._decide_speed: Holm over the model's gated speed rows, the floors, the blockers); this
module only states the facts, on the row, in the rule's own fields. Accuracy rows are untouched: they pair
utterances across the blocks as for any two trees.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gate.formats import duet_log
from gate.formats.config import MetricSpec
from gate.formats.noise_model import FEWEST_RUNS
from gate.formats.reasons import CannotFail
from gate.formats.report import Basis
from gate.formats.verdict import Verdict
from gate.judging.draft import Draft, plain_delta
from gate.reading.side import WorkloadSide
from gate.stats.distributions import t_ppf, t_sf

FILE = duet_log.FILE  # gate.formats.duet_log owns it (the runner writes it; the judge reads it)


@dataclass(frozen=True)
class Layout:
    """What gate-duet.json says the judge needs: the kept block pairs of each session, per model."""

    sessions: tuple[tuple[int, tuple[str, ...], tuple[str, ...]], ...]  # (session, models, kept pair runs "run<R>")
    departure: str
    looks: dict  # model -> {"first": action, "pooled": action?}
    first_sessions: int = 0  # K₁: the sessions the first look saw

    def first_look(self) -> "Layout":
        """The layout as the first look saw it: sessions 1..K₁."""
        return Layout(tuple(s for s in self.sessions if s[0] <= self.first_sessions), self.departure, self.looks,
                      self.first_sessions)

    def for_model(self, model: str) -> tuple[tuple[str, ...], ...]:
        return tuple(runs for _, models, runs in self.sessions if model in models and runs)


def read_layout(tree: Path) -> Layout | None:
    """The tree's duet record, or None (an interleaved tree). A record that is not the runner's is one InputError
    line naming the file (gate.formats.duet_log, its owner)."""
    log = duet_log.read(tree)
    return None if log is None else layout_of(log)


def layout_of(log: duet_log.DuetLog) -> Layout:
    """The kept block pairs of each completed session (a discarded pair's runs left out), and the looks' actions."""
    sessions = []
    for s in log.completed():
        dropped = {d.run for d in s.discarded}
        runs = tuple(f"run{r}" for r in log.session_runs(s.session) if r not in dropped)
        sessions.append((s.session, s.models, runs))
    looks = {m: {"first": look.first.value, **({"pooled": look.pooled.value} if look.pooled else {})}
             for m, look in log.looks.items()}
    return Layout(tuple(sessions), log.departure, looks, log.first_sessions)


@dataclass(frozen=True)
class SessionFacts:
    """One speed row's facts from the sessions: mean ln c − ln b, its SE and df, and the spreads behind them."""

    difference: float
    se: float
    df: int
    sessions: int
    session_sd: float  # SD of a session's mean difference
    block_sd: float  # SD of a pair's difference about its session's mean (pooled); NaN with one pair a session
    means: tuple[float, ...]  # each session's mean difference, in session order


@dataclass(frozen=True)
class SessionTest:
    """The session test over B comparisons at once (arrays of the leading shape; df one number)."""

    difference: np.ndarray  # mean over the sessions of their mean ln c − ln b
    se: np.ndarray  # SD of the sessions' means / √K
    sd: np.ndarray
    worse: np.ndarray  # the difference signed so that > 0 is worse for the metric
    p: np.ndarray  # one-sided t on K − 1 df that the candidate is worse
    df: int


def session_test(means: np.ndarray, higher_is_better: bool | np.ndarray) -> SessionTest:
    """The duet's test on the sessions' mean paired log-differences, sessions on the last axis. The judge calls it with
    one comparison (judge_duet_speed); the power benchmark (benchmarks/power/duet.py) with thousands, so the two are
    one rule. `higher_is_better` broadcasts against the leading shape (a row's metric direction)."""
    m = np.asarray(means, dtype=float)
    k = m.shape[-1]
    difference = m.mean(axis=-1)
    sd = m.std(axis=-1, ddof=1)
    se = sd / math.sqrt(k)
    worse = np.where(higher_is_better, -difference, difference)
    with np.errstate(all="ignore"):
        p = np.where(se > 0, t_sf(worse / se, k - 1), np.where(worse > 0, 0.0, 1.0))
    return SessionTest(difference=difference, se=se, sd=sd, worse=worse, p=p, df=k - 1)


def session_facts(base: WorkloadSide, cand: WorkloadSide, metric: str,
                  sessions: tuple[tuple[str, ...], ...]) -> SessionFacts | None:
    """The facts over the sessions with at least one complete pair; None with fewer than two such sessions."""
    def values(side: WorkloadSide) -> dict[str, float]:
        kept = set(side.complete_runs())
        return {run: float(v) for i, (run, v) in enumerate(zip(side.runs, side.values.get(metric, ()), strict=False))
                if i in kept and v is not None and v > 0 and math.isfinite(v)}
    b, c = values(base), values(cand)
    means, within, within_df = [], 0.0, 0
    for runs in sessions:
        d = np.array([math.log(c[r]) - math.log(b[r]) for r in runs if r in b and r in c])
        if d.size:
            means.append(float(d.mean()))
            within += float(((d - d.mean()) ** 2).sum())
            within_df += d.size - 1
    if len(means) < 2:
        return None
    found = session_test(np.array(means), True)
    return SessionFacts(difference=float(found.difference), se=float(found.se), df=found.df, sessions=len(means),
                        session_sd=float(found.sd), block_sd=math.sqrt(within / within_df) if within_df else math.nan,
                        means=tuple(means))


def judge_duet_speed(row: Draft, metric: MetricSpec, facts: SessionFacts | None) -> None:
    """State the sessions' facts on the row in the speed rule's fields (p, CI, worse, σ, SE, df); the rule decides."""
    plain_delta(row)
    if facts is None:
        row.verdict = Verdict.INCOMPLETE
        row.method = "not tested: fewer than 2 duet sessions with a complete block pair"
        return
    found = session_test(np.array(facts.means), metric.higher_is_better)  # the one session test, B = 1
    worse, p = float(found.worse), float(found.p)
    half = float(t_ppf(0.975, facts.df)) * facts.se
    row.floor_rel = metric.floor_rel or 0.0
    row.basis = Basis.CALIBRATED
    row.p_value, row.ci, row.ci_kind = p, (math.exp(facts.difference - half), math.exp(facts.difference + half)), "ratio"
    row.worse_rel = math.expm1(worse)
    row.delta_rel = math.expm1(facts.difference)
    row.sigma, row.df, row.se = facts.session_sd, facts.df, facts.se
    row.p_own, row.own_se_df = p, (facts.se, float(facts.df))  # the sessions are the A/B's own evidence
    row.family = "speed" if metric.gated else None
    if facts.sessions < FEWEST_RUNS:
        row.blockers += (CannotFail.FEW_DUET_SESSIONS,)
        row.notes.append(f"{facts.sessions} duet sessions (a FAIL needs {FEWEST_RUNS})")
    blocks = "" if math.isnan(facts.block_sd) else f", block pairs' spread within a session {facts.block_sd:.2%}"
    row.method = (f"duet: each session's mean paired log-difference, {facts.sessions} sessions (df {facts.df}), "
                  f"session σ {facts.session_sd:.2%}{blocks}; one job")
    if not metric.gated:
        row.notes.append("shown, not gated")
