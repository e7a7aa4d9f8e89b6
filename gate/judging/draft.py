"""One row of a report while `compare` decides it: the mutable draft, its facts, and the frozen Row it becomes."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from gate.formats.config import MetricSpec, Workload
from gate.formats.reasons import CannotFail, WarnCause
from gate.formats.report import (
    MAX_TEXT,
    Basis,
    CiKind,
    Direction,
    Family,
    NextStep,
    Row,
    RowKind,
    SideStats,
    Subset,
    clip,
)
from gate.formats.verdict import Verdict
from gate.judging.floors import WARN_SHARE
from gate.reading.side import WorkloadSide


@dataclass(frozen=True)
class OwnChurn:
    """An accuracy row judged on each side's own runs (no A/A record): gate.judging.compare pools the model's rows to
    see whether utterances co-move (gate.stats.overdispersion.comovement_p) and, where they do, holds the row's FAIL
    to `run_p` too."""

    ss_total: float  # Σ_sides (R − 1)·Var_r(Σ_i e_ir)
    ss_units: float  # Σ_sides (R − 1)·Σ_i Var_r(e_ir)
    df: int  # Σ_sides (R − 1)
    base_runs: int
    cand_runs: int
    run_p: float  # the exact permutation p of the sides' per-run error totals (overdispersion.run_permutation_p)
    step: str  # gate.judging.next_steps: what would decide the row


@dataclass
class Draft:
    """A row while `compare` decides it (mutable); `freeze()` makes the report's Row."""

    workload: Workload
    metric: MetricSpec
    baseline: SideStats
    candidate: SideStats
    verdict: Verdict = Verdict.PASS
    basis: Basis = Basis.NOT_TESTED
    method: str = ""
    notes: list[str] = field(default_factory=list)
    family: str | None = None
    delta_abs: float | None = None
    delta_rel: float | None = None
    worse_rel: float | None = None
    p_value: float | None = None
    p_adjusted: float | None = None
    q_value: float | None = None
    ci: tuple[float, float] | None = None
    ci_kind: str | None = None
    floor_abs: float | None = None
    floor_rel: float | None = None
    tolerance: float | None = None
    p_degradation: float | None = None
    n_worse: int | None = None
    n_better: int | None = None
    new_catastrophic: int = 0
    above_half: tuple[float, float] | None = None  # units over 50% errors, mean per run (baseline, candidate)
    few_sessions: bool = False  # FAILed by gate.judging.few_sessions
    sigma: float | None = None
    df: int | None = None
    above_floor: bool = False  # accuracy: Δ reaches both floors
    above_half_floor: bool = False  # accuracy: Δ reaches half of both floors
    blockers: tuple[CannotFail, ...] = ()  # why this row can WARN at most (empty: it may FAIL)
    warn_cause: WarnCause | None = None  # what made it WARN (gate.judging.compare sets it with the verdict)
    differs: tuple[str, ...] = ()  # NOT COMPARABLE: the kinds of fact that differ
    p_own: float | None = None  # speed: the same shift's p on σ from the A/B's own runs alone (gate.judging.compare checks it)
    own_se_df: tuple[float, float] | None = None  # speed: that test's SE and df (bound what the row detects)
    detects_mde: float | None = None  # speed: max(mde, the own-runs test's): what `detects` says
    base_rate: float | None = None  # accuracy: the baseline's corpus rate over the paired units
    se: float | None = None  # the test's standard error (speed: of Δ ln; accuracy: of Σd_i, in errors)
    own_churn: OwnChurn | None = None  # accuracy on each side's own runs (no A/A record)
    # the runs' exact permutation p, which a FAIL needs ≤ α too: a co-moving group's row, and a row on its own runs
    # where the model's runs show utterances churning together (gate.judging.compare._hidden_groups)
    p_exact: float | None = None
    subset: str | None = None  # gate.formats.report.Subset: "comoving" for a co-moving group's own row
    group: "Draft | None" = None  # accuracy: the row of the utterances set aside as co-moving (compare appends it)
    unstable: bool = False  # speed: a worse candidate run set aside, or the candidate's runs split in two
    across_jobs: bool = False  # gated speed row judged across jobs (WARN at most)
    slower_alike: tuple[int, int] = (0, 0)  # speed: candidate runs with every workload slower, of runs (gate.stats.slowmode)
    mde: float | None = None  # smallest worsening caught with 80% power (speed: relative; accuracy: absolute)
    blind: bool = False  # mde above SENSITIVITY_FACTOR × the floor
    next_step: str | None = None  # gate.judging.next_steps: what would make a WARN-at-most or blind row decisive

    @property
    def can_fail(self) -> bool:
        return not self.blockers

    def freeze(self) -> Row:
        return Row(workload=self.workload.id, model=self.workload.model, metric=self.metric.name,
                   kind=RowKind(self.metric.kind), unit=self.metric.unit, direction=Direction(self.metric.direction),
                   baseline=self.baseline, candidate=self.candidate, verdict=self.verdict, basis=self.basis,
                   improved=improved(self), method=self.method, notes=tuple(clip(n, MAX_TEXT) for n in self.notes),
                   family=Family(self.family) if self.family else None, delta_abs=num(self.delta_abs), delta_rel=num(self.delta_rel),
                   worse_rel=num(self.worse_rel), p_value=num(self.p_value), p_adjusted=num(self.p_adjusted),
                   q_value=num(self.q_value), ci=pair_of_nums(self.ci), ci_kind=CiKind(self.ci_kind) if self.ci_kind else None,
                   floor_abs=self.floor_abs, floor_rel=self.floor_rel, tolerance=self.tolerance,
                   p_degradation=num(self.p_degradation), n_worse=self.n_worse, n_better=self.n_better,
                   new_catastrophic=self.new_catastrophic, above_half=self.above_half, few_sessions=self.few_sessions,
                   sigma=num(self.sigma), df=self.df,
                   mde=num(self.mde), detects=num(detects(self)), blind=self.blind, unstable=self.unstable,
                   across_jobs=self.across_jobs, next_step=NextStep(self.next_step) if self.next_step else None,
                   subset=Subset(self.subset) if self.subset else None,
                   cannot_fail=tuple(dict.fromkeys(self.blockers)), warn_cause=self.warn_cause, differs=self.differs)


def detects(row: Draft) -> float | None:
    """The change the row detects with 80% power, the way its metric moves (issue 36): speed relative (a throughput
    drop is negative: 1/(1 + mde) − 1, a latency rise mde), accuracy absolute (an error-rate rise). The MDE itself
    is a worsening ratio; at σ 10% its 29% is a 22.5% throughput drop."""
    size = row.detects_mde if row.detects_mde is not None else row.mde
    if size is None or not math.isfinite(size) or row.family is None:
        return None
    if row.family == "speed" and row.metric.higher_is_better:
        return 1 / (1 + size) - 1
    return size


def improved(row: Draft) -> bool:
    """Better beyond noise and by at least WARN_SHARE (half) of the floor (reported, never gated): a noise-sized
    change is not called an improvement."""
    if row.verdict in (Verdict.INCOMPLETE, Verdict.NOT_COMPARABLE) or row.basis is Basis.NOT_TESTED:
        return False
    if row.metric.kind == "accuracy":
        if row.delta_abs is None or row.delta_abs >= 0:
            return False
        gain = -row.delta_abs
        if row.basis is Basis.FALLBACK:
            return row.tolerance is not None and gain > row.tolerance
        if row.basis is not Basis.PAIRED or row.ci is None or row.ci[1] >= 0:
            return False
        base = row.base_rate or 0.0
        return gain >= (row.floor_abs or 0) * WARN_SHARE and gain >= (row.floor_rel or 0) * WARN_SHARE * base
    if row.worse_rel is None or row.worse_rel >= 0:
        return False
    gain = -row.worse_rel
    if row.basis is Basis.UNCALIBRATED:
        return row.tolerance is not None and gain >= row.tolerance
    if row.ci is None:
        return False
    lo, hi = row.ci  # ratio candidate / baseline
    beyond_noise = lo > 1 if row.metric.higher_is_better else hi < 1
    return beyond_noise and gain >= (row.floor_rel or 0) * WARN_SHARE



def side_stats(w: WorkloadSide | None, metric: MetricSpec, expected: int) -> SideStats:
    if w is None:
        return SideStats.of((), (), expected, None)
    values = tuple(w.values.get(metric.name, ()))
    used_runs = set(w.complete_runs())
    used = tuple(i in used_runs for i in range(len(values)))
    counts = [n for i in used_runs if i < len(w.evaluated) and (n := w.evaluated[i]) is not None]
    return SideStats.of(values, used, max(w.expected_runs or expected, len(values)),
                        min(counts) if counts else None)


def new_row(workload: Workload, metric: MetricSpec, wb: WorkloadSide | None, wc: WorkloadSide | None) -> Draft:
    expected = max((w.expected_runs for w in (wb, wc) if w), default=0)
    return Draft(workload=workload, metric=metric, baseline=side_stats(wb, metric, expected),
                  candidate=side_stats(wc, metric, expected))


def plain_delta(row: Draft) -> None:
    """Δ of the means over complete runs (shown on rows that were not tested, too)."""
    mb, mc = row.baseline.mean, row.candidate.mean
    if mb is not None and mc is not None:
        row.delta_abs = mc - mb
        row.delta_rel = None if mb == 0 else mc / mb - 1



def num(value: float | None) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def pair_of_nums(ci: tuple[float, float] | None) -> tuple[float, float] | None:
    if ci is None:
        return None
    lo, hi = num(ci[0]), num(ci[1])
    return None if lo is None or hi is None else (lo, hi)

