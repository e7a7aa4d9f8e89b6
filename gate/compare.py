"""Baseline vs candidate -> a Report: one verdict per workload × gated metric, and an overall verdict.

Pure: no file I/O and no printing (sides are loaded by gate.sides; reports are rendered by gate.render).

The rules (statistics.md §0; ARCHITECTURE "Decisions already taken"), in the order they apply to a row:

1. INCOMPLETE: the workload is missing, or any of its runs is incomplete, on either side. Means are
   over the complete runs only, labelled "k of N runs". Such a row can never pass.
2. NOT COMPARABLE: a fingerprint fact the row depends on differs (GPU, driver, freeze, dataset,
   evaluation input, model, MOSS token budget) and its kind was not allowed. The numbers are shown.
3. Accuracy with per-utterance data on both sides (same ids): paired sign-flip p (exact), widened by
   the A/A calibration's correlated churn when same-commit runs are not deterministic, with the
   utterances' own variance taken from the runs in one job (gate.stats.overdispersion); paired
   bootstrap CI, worse/better counts.
   Without per-sample data (or with ids that do not pair): the maintainers' tolerance, labelled fallback.
4. Speed (gated: throughput and p95 latency; mean latency and RTF are tested and shown, not gated):
   one-sided log-scale t over the runs kept (gate.stats.outliers sets a wild run aside, and says so),
   σ from the A/A calibration pooled over the model's workloads, plus the between-job variance when
   the sides ran in different jobs (gate.stats.speed). No calibration, a single run on a side, or a
   cross-job comparison without enough cross-job A/A pairs or with a calibration measured on another GPU,
   driver or package set (stale: gate.freshness): the row can WARN at most, and says why.
5. The decision per model and family (gate.stats.decision): FAIL = Holm-adjusted p <= alpha AND the floor reached
   (and the row may fail); WARN = BH q <= warn_q AND half the floor reached, or a newly catastrophic
   utterance (accuracy). Improvements are reported, never gated. Inside `gate run`'s two-look plan alpha
   is split over the looks (gate.stats.looks.thresholds_for).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
from scipy import stats

from gate import comparability
from gate.config import MetricSpec, Suite, Workload
from gate.errors import InputError
from gate.report import (
    MAX_ID,
    MAX_TEXT,
    REPORT_SCHEMA_VERSION,
    Basis,
    CalibrationCheck,
    CoverageEntry,
    CoverageSide,
    EnvDifference,
    Report,
    Row,
    SideInfo,
    SideStats,
    Statistics,
    Utterance,
    clip,
)
from gate.side import MeasureSamples, Side, WorkloadSide
from gate.stats import decision
from gate.stats.overdispersion import Dispersion, widened_p
from gate.stats.performance import MIN_CALIBRATION_DF, Calibration, evidence, ratio_policy
from gate.stats.quality import CATASTROPHIC_MIN_JUMP, paired_quality_test
from gate.stats.speed import (
    AGREEMENT_P,
    OWN_DISAGREES,
    POWER,
    SENSITIVITY_FACTOR,
    SOURCE_TEXT,
    SpeedNoise,
    fail_blockers,
    mde,
    own_noise,
    shift_test,
)
from gate.stats.thresholds import Thresholds  # re-exported: callers import it from here for now
from gate.verdict import Verdict

MAX_UTTERANCES_PER_ROW = 8


@dataclass
class _Draft:
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
    sigma: float | None = None
    df: int | None = None
    above_floor: bool = False  # accuracy: Δ reaches both floors
    above_half_floor: bool = False  # accuracy: Δ reaches half of both floors
    fail_blockers: tuple[str, ...] = ()  # speed: why this row can WARN at most
    base_rate: float | None = None  # accuracy: the baseline's corpus rate over the paired units
    se: float | None = None  # the test's standard error (speed: of Δ ln; accuracy: of Σd_i, in errors)
    can_fail: bool = True  # accuracy: False when churn is possible and no A/A dispersion record says how much
    unstable: bool = False  # speed: a worse candidate run set aside, or the candidate's runs split in two
    mde: float | None = None  # smallest worsening caught with 80% power (speed: relative; accuracy: absolute)
    blind: bool = False  # mde above SENSITIVITY_FACTOR × the floor

    def freeze(self) -> Row:
        return Row(workload=self.workload.id, model=self.workload.model, metric=self.metric.name,
                   kind=self.metric.kind, unit=self.metric.unit, direction=self.metric.direction,
                   baseline=self.baseline, candidate=self.candidate, verdict=self.verdict, basis=self.basis,
                   improved=_improved(self), method=self.method, notes=tuple(clip(n, MAX_TEXT) for n in self.notes),
                   family=self.family, delta_abs=_num(self.delta_abs), delta_rel=_num(self.delta_rel),
                   worse_rel=_num(self.worse_rel), p_value=_num(self.p_value), p_adjusted=_num(self.p_adjusted),
                   q_value=_num(self.q_value), ci=_pair_of_nums(self.ci), ci_kind=self.ci_kind,
                   floor_abs=self.floor_abs, floor_rel=self.floor_rel, tolerance=self.tolerance,
                   p_degradation=_num(self.p_degradation), n_worse=self.n_worse, n_better=self.n_better,
                   new_catastrophic=self.new_catastrophic, sigma=_num(self.sigma), df=self.df,
                   mde=_num(self.mde), blind=self.blind, unstable=self.unstable)


def _improved(row: _Draft) -> bool:
    """Better beyond noise and by at least half the floor (reported, never gated): a noise-sized
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
        return gain >= (row.floor_abs or 0) / 2 and gain >= (row.floor_rel or 0) / 2 * base
    if row.worse_rel is None or row.worse_rel >= 0:
        return False
    gain = -row.worse_rel
    if row.basis is Basis.UNCALIBRATED:
        return row.tolerance is not None and gain >= row.tolerance
    if row.ci is None:
        return False
    lo, hi = row.ci  # ratio candidate / baseline
    beyond_noise = lo > 1 if row.metric.higher_is_better else hi < 1
    return beyond_noise and gain >= (row.floor_rel or 0) / 2


def statistics_of(thresholds: Thresholds, rows: Sequence[Row], seed: int) -> Statistics:
    return Statistics(quality_alpha=thresholds.quality_alpha, quality_warn_alpha=thresholds.warn_alpha,
                      quality_floor_abs=thresholds.quality_floor_abs, quality_floor_rel=thresholds.quality_floor_rel,
                      small_set_size=thresholds.small_set_size, small_set_floor_abs=thresholds.small_set_floor_abs,
                      quality_family_size=sum(1 for r in rows if r.family == "quality"),
                      speed_alpha=thresholds.alpha, warn_q=thresholds.warn_q,
                      speed_family_size=sum(1 for r in rows if r.family == "speed"),
                      min_calibration_df=MIN_CALIBRATION_DF, n_boot=thresholds.n_boot, seed=seed)


def compare(base: Side, cand: Side, suite: Suite, *, models: Sequence[str] | None = None,
            allow_diff: Iterable[str] = (), seed: int = 0, thresholds: Thresholds = Thresholds(),
            calibration: Mapping[str, Mapping[str, Any]] | None = None, cross_job: bool | None = None,
            calibration_check: CalibrationCheck | None = None) -> Report:
    """Judge `cand` against `base`. `calibration` defaults to the baseline's (else the candidate's).

    `cross_job`: the two sides ran in different jobs (a stored baseline, two nightlies), so a job effect adds
    to the variance of every speed difference. Default: True when either side is a baseline file, False for
    two trees (gate run's interleaved A/B).

    `calibration_check` (gate.freshness): a calibration stale for the candidate's GPU, driver or packages
    cannot make a speed row FAIL across jobs; the check is kept in the report.
    """
    allowed = tuple(allow_diff)
    bad = sorted(set(allowed) - set(comparability.KINDS))
    if bad:
        raise InputError(f"--allow-diff {bad[0]}: expected one of {', '.join(comparability.KINDS)}")
    chosen = tuple(models) if models else (cand.models or base.models)
    workloads = _workloads_to_compare(base, cand, suite, chosen)
    calibration = calibration if calibration is not None else (base.calibration or cand.calibration)
    if cross_job is None:
        cross_job = "baseline" in (base.kind, cand.kind)
    differences = tuple(comparability.diff(base.fingerprint, cand.fingerprint, [w.id for w in workloads]))
    stale = bool(calibration_check and calibration_check.status == "stale" and cross_job)
    stale_blockers = (f"calibration stale: {'; '.join(calibration_check.reasons)}",) if calibration_check and stale else ()
    if calibration_check and calibration_check.status == "stale" and not cross_job:
        # In one job a stale σ is not used at all (as `gate run` does for its looks): the rows judge by what
        # the job itself measured, and say why the calibration was left out.
        calibration = {}
        stale_blockers = (f"calibration stale, not used in this job: {'; '.join(calibration_check.reasons)}",)

    drafts: list[_Draft] = []
    coverage: list[CoverageEntry] = []
    utterances: list[Utterance] = []
    for workload in workloads:
        wb, wc = base.workloads.get(workload.id), cand.workloads.get(workload.id)
        coverage.append(CoverageEntry(workload=clip(workload.id, MAX_ID), baseline=_coverage(wb, base),
                                      candidate=_coverage(wc, cand)))
        incomplete = not (wb and wc and wb.complete and wc.complete)
        blocking = comparability.blocking_kinds(differences, workload.id, allowed)
        for metric in workload.metrics:
            if not metric.tested:
                continue
            row = _new_row(workload, metric, wb, wc)
            if incomplete:
                row.verdict = Verdict.INCOMPLETE
                row.method = "not tested: coverage"
                row.notes.append(_incomplete_reason(wb, wc))
                _plain_delta(row)
            elif metric.kind == "accuracy":
                assert wb is not None and wc is not None
                dispersion = (calibration or {}).get(workload.id, {}).get(metric.name)
                utterances += _accuracy(row, workload, metric, wb, wc, suite, thresholds, seed,
                                        dispersion if isinstance(dispersion, Dispersion) else None, cross_job)
            else:
                found = _model_calibrations(calibration or {}, suite, workload.model, metric.name)
                # sources: "3 A/A pairs + 14 nights" when nightly runs are pooled into σ, else ""
                own = _own_arms(base, cand, suite, workload.model, metric.name)
                _speed(row, metric, SpeedNoise.pooled(found), cross_job, stale_blockers, sources=evidence(found),
                       own_arms=own, stale=bool(calibration_check and calibration_check.status == "stale"))
            if blocking and row.verdict is not Verdict.INCOMPLETE:
                row.verdict = Verdict.NOT_COMPARABLE
                row.family = None
                row.notes.insert(0, "not comparable: " + ", ".join(blocking) + " differ")
            drafts.append(row)
    _decide(drafts, thresholds)
    rows = tuple(d.freeze() for d in drafts)
    return Report(schema_version=REPORT_SCHEMA_VERSION, suite=suite.name,
                  verdict=Verdict.worst(r.verdict for r in rows), models=chosen,
                  baseline=_side_info(base), candidate=_side_info(cand), rows=rows, coverage=tuple(coverage),
                  environment_diff=tuple(_difference(d, allowed) for d in differences), allowed_diff=allowed,
                  utterances=tuple(utterances), statistics=statistics_of(thresholds, rows, seed),
                  calibration_checks=(replace(calibration_check, blocks_fail=stale),) if calibration_check else ())


# --- selection and coverage ----------------------------------------------------------------------------

def _workloads_to_compare(base: Side, cand: Side, suite: Suite, models: tuple[str, ...]) -> tuple[Workload, ...]:
    if not models:
        raise InputError(f"neither side has results for any workload of suite {suite.name!r}", path=cand.path)
    selected = suite.workloads_for(models)
    known = set(base.workloads) | set(cand.workloads) | set(base.missing) | set(cand.missing)
    chosen = tuple(w for w in selected if w.id in known)
    if not set(base.workloads) & set(cand.workloads) & {w.id for w in chosen}:
        raise InputError(f"baseline and candidate share no workload of model(s) {', '.join(models)}: baseline has "
                         f"{_listing(base.workloads)}; candidate has {_listing(cand.workloads)}", path=cand.path)
    return chosen


def _listing(workloads: Mapping) -> str:
    return ", ".join(workloads) or "none"


def _coverage(w: WorkloadSide | None, side: Side) -> CoverageSide:
    expected = (w.expected_runs if w and w.expected_runs else len(side.runs))
    if w is None:
        return CoverageSide(complete=False, runs_present=0, runs_complete=0, expected_runs=expected,
                            reasons=("no results for this workload",))
    return CoverageSide(complete=w.complete, runs_present=len(w.runs), runs_complete=len(w.complete_runs()),
                        expected_runs=max(expected, len(w.runs)),
                        reasons=tuple(clip(p, MAX_TEXT) for p in w.problems[:50]))


def _incomplete_reason(wb: WorkloadSide | None, wc: WorkloadSide | None) -> str:
    parts = []
    for name, w in (("baseline", wb), ("candidate", wc)):
        if w is None:
            parts.append(f"{name}: no results")
        elif not w.complete:
            parts.append(f"{name}: {w.problems[0]}" + (f" (+{len(w.problems) - 1} more)" if len(w.problems) > 1 else ""))
    return "incomplete (" + "; ".join(parts) + "); means are over the complete runs only"


def _side_info(side: Side) -> SideInfo:
    # The folder or file name only: a report never shows a local absolute path.
    return SideInfo(kind=side.kind, name=clip(Path(side.path).name, MAX_ID) if side.path else None,
                    commit=clip(side.commit, MAX_ID) if side.commit else None, runs=len(side.runs),
                    calibrated=bool(side.calibration))


def _difference(d: comparability.Difference, allowed: tuple[str, ...]) -> EnvDifference:
    return EnvDifference(kind=d.kind, workload=None if d.workload is None else clip(d.workload, MAX_ID),
                         item=clip(d.item, MAX_ID),
                         baseline=None if d.baseline is None else clip(d.baseline, MAX_TEXT),
                         candidate=None if d.candidate is None else clip(d.candidate, MAX_TEXT),
                         known=d.known, blocking=d.known and d.kind not in allowed)


def _side_stats(w: WorkloadSide | None, metric: MetricSpec, expected: int) -> SideStats:
    if w is None:
        return SideStats.of((), (), expected, None)
    values = tuple(w.values.get(metric.name, ()))
    used_runs = set(w.complete_runs())
    used = tuple(i in used_runs for i in range(len(values)))
    counts = [n for i in used_runs if i < len(w.evaluated) and (n := w.evaluated[i]) is not None]
    return SideStats.of(values, used, max(w.expected_runs or expected, len(values)),
                        min(counts) if counts else None)


def _new_row(workload: Workload, metric: MetricSpec, wb: WorkloadSide | None, wc: WorkloadSide | None) -> _Draft:
    expected = max((w.expected_runs for w in (wb, wc) if w), default=0)
    return _Draft(workload=workload, metric=metric, baseline=_side_stats(wb, metric, expected),
                  candidate=_side_stats(wc, metric, expected))


def _plain_delta(row: _Draft) -> None:
    """Δ of the means over complete runs (shown on rows that were not tested, too)."""
    mb, mc = row.baseline.mean, row.candidate.mean
    if mb is not None and mc is not None:
        row.delta_abs = mc - mb
        row.delta_rel = None if mb == 0 else mc / mb - 1


# --- accuracy -------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Paired:
    """Two sides' per-utterance errors of one measure, aligned by utterance id (valid on both sides)."""

    ids: tuple[str, ...]
    base_errors: np.ndarray  # (R_b, N)
    cand_errors: np.ndarray  # (R_c, N)
    ref_len: np.ndarray  # (N,)
    base: MeasureSamples
    cand: MeasureSamples


def _accuracy(row: _Draft, workload: Workload, metric: MetricSpec, wb: WorkloadSide, wc: WorkloadSide, suite: Suite,
              thresholds: Thresholds, seed: int, dispersion: Dispersion | None, cross_job: bool) -> list[Utterance]:
    _plain_delta(row)
    paired = _pair(metric.samples, wb, wc)
    if isinstance(paired, _Unpaired):
        _accuracy_fallback(row, metric, suite, paired.reason)
        return []
    test = paired_quality_test(paired.base_errors, paired.cand_errors, paired.ref_len, n_boot=thresholds.n_boot,
                               n_flips=thresholds.n_flips, seed=seed)
    n = len(paired.ids)
    small = n <= thresholds.small_set_size
    row.floor_abs = thresholds.small_set_floor_abs if small else thresholds.quality_floor_abs
    row.floor_rel = thresholds.quality_floor_rel
    row.baseline = SideStats.of(row.baseline.values, row.baseline.used, row.baseline.expected_runs, n)
    row.candidate = SideStats.of(row.candidate.values, row.candidate.used, row.candidate.expected_runs, n)
    row.delta_abs, row.delta_rel, row.base_rate = test.delta, test.delta_rel, test.base_rate
    row.n_worse, row.n_better = test.n_worse, test.n_better
    row.above_floor = _reaches(test, row.floor_abs, row.floor_rel, 1.0)
    row.above_half_floor = _reaches(test, row.floor_abs, row.floor_rel, 0.5)
    row.new_catastrophic = len(test.new_catastrophic)
    unit = "sessions" if small else "utterances"
    if test.identical:
        row.basis = Basis.IDENTICAL
        row.method = f"paired over {n} {unit}: identical per-utterance errors"
        return []
    row.basis = Basis.PAIRED
    row.p_value, row.ci, row.ci_kind = test.p_value, test.ci, "delta_abs"
    row.p_degradation = test.p_degradation
    row.method = f"paired {test.p_method} over {n} {unit}"
    r_b, r_c = paired.base_errors.shape[0], paired.cand_errors.shape[0]
    units = float((test.d ** 2).sum())  # the sign-flip's null variance of Σd; never dropped (issue 21)
    row.se = math.sqrt(units) / paired.ref_len.sum()
    if dispersion is not None and dispersion.widens:
        # Same-commit runs churn together (A/A calibration): their covariance widens the null, added to Σd²
        # (gate.stats.overdispersion).
        row.p_value = widened_p(float(test.d.sum()), units, dispersion, 1 / r_b + 1 / r_c)
        row.se = math.sqrt(units + (1 / r_b + 1 / r_c) * dispersion.excess) / paired.ref_len.sum()
        row.method = (f"paired test widened for correlated churn (φ {dispersion.phi:.2f}, {dispersion.arms} A/A "
                      f"arms, df {dispersion.df}; Σd² + excess) over {n} {unit}")
    elif dispersion is None and _churn_possible(paired):
        # Nothing says how much the utterances churn together: the sign-flip's independence is an assumption.
        row.can_fail = False
        row.notes.append("can WARN at most: no A/A dispersion record and same-commit transcripts not shown "
                         "identical (correlated churn would make the sign-flip test too liberal)")
    row.family = "quality"
    if test.new_catastrophic:
        # What was found and its evidence, on its own: the row's p-value speaks of the whole set, not of this.
        shown = ", ".join(clip(paired.ids[i], 80) for i in test.new_catastrophic[:3])
        more = f" (+{len(test.new_catastrophic) - 3} more)" if len(test.new_catastrophic) > 3 else ""
        row.notes.append(f"{len(test.new_catastrophic)} newly catastrophic: >50% errors in all "
                         f"{paired.cand_errors.shape[0]} candidate runs and none of the {paired.base_errors.shape[0]} "
                         f"baseline runs, ≥ {CATASTROPHIC_MIN_JUMP} errors above the baseline's worst: {shown}{more}")
    if test.fixed_catastrophic:
        row.notes.append(f"{len(test.fixed_catastrophic)} no longer catastrophic")
    if test.catastrophic_sign_p is not None:
        row.notes.append(f"sign test, new vs no-longer catastrophic: p={test.catastrophic_sign_p:.3g}")
    return _notable(workload, metric.samples or "", test, paired)


def _churn_possible(paired: _Paired) -> bool:
    """Churn is possible unless each side ran twice or more and its runs gave identical errors everywhere."""
    return any(e.shape[0] < 2 or bool((e != e[:1]).any()) for e in (paired.base_errors, paired.cand_errors))


def _reaches(test, floor_abs: float, floor_rel: float, share: float) -> bool:
    return test.delta >= share * floor_abs - 1e-15 and (test.base_rate == 0 or test.delta >= share * floor_rel * test.base_rate)


@dataclass(frozen=True)
class _Unpaired:
    reason: str


def _pair(measure: str | None, wb: WorkloadSide, wc: WorkloadSide) -> _Paired | _Unpaired:
    """Pair the two sides by utterance id, or say why not (the caller then falls back)."""
    sb, sc = wb.samples.get(measure or ""), wc.samples.get(measure or "")
    if sb is None or sc is None:
        notes = [n for w in (wb, wc) for n in w.sample_notes if n.startswith(f"{measure}:")]
        whose = " and ".join(name for name, s in (("baseline", sb), ("candidate", sc)) if s is None)
        return _Unpaired(f"no per-sample data on the {whose}" + (f" ({notes[0]})" if notes else ""))
    only_b, only_c = set(sb.ids) - set(sc.ids), set(sc.ids) - set(sb.ids)
    if only_b or only_c:
        example = clip(sorted(only_b or only_c)[0], 80)
        return _Unpaired(f"utterance ids do not match ({len(only_b)} only in the baseline, {len(only_c)} only in the "
                         f"candidate, e.g. {example!r}); not paired")
    order = {i: k for k, i in enumerate(sc.ids)}
    to_c = np.fromiter((order[i] for i in sb.ids), dtype=np.int64, count=len(sb.ids))
    ref_b, ref_c = sb.ref_len, sc.ref_len[to_c]
    if not np.array_equal(ref_b, ref_c):
        return _Unpaired(f"reference lengths differ for {int((ref_b != ref_c).sum())} utterances (the references "
                         "or their normalization changed); not paired")
    valid = sb.valid.all(axis=0) & sc.valid[:, to_c].all(axis=0) & (ref_b > 0)
    if not valid.any():
        return _Unpaired("no utterance is valid on both sides")
    keep = np.flatnonzero(valid)
    return _Paired(ids=tuple(sb.ids[k] for k in keep), base_errors=sb.errors[:, keep],
                   cand_errors=sc.errors[:, to_c[keep]], ref_len=ref_b[keep], base=sb, cand=sc)


def _accuracy_fallback(row: _Draft, metric: MetricSpec, suite: Suite, reason: str) -> None:
    tolerance = suite.policy.accuracy_tolerance_abs.get(metric.name)
    row.basis = Basis.FALLBACK
    row.method = "fallback: maintainers' tolerance"
    row.notes.append(f"fallback ({reason})")
    if tolerance is None or row.delta_abs is None:
        row.notes.append("no tolerance for this metric in the suite policy; not gated")
        return
    row.tolerance = tolerance
    if row.delta_abs > tolerance + 1e-12:
        row.verdict = Verdict.FAIL
        row.notes.append(f"Δ {row.delta_abs * 100:+.3f} pp exceeds the tolerance +{tolerance * 100:g} pp")


def _notable(workload: Workload, measure: str, test, paired: _Paired) -> list[Utterance]:
    chosen: list[tuple[int, str]] = [(i, "new_catastrophic") for i in test.new_catastrophic]
    seen = {i for i, _ in chosen}
    worse = [i for i in np.argsort(-test.d, kind="stable") if test.d[i] > 0 and i not in seen]
    chosen += [(int(i), "worse") for i in worse[:5]]
    better = [i for i in np.argsort(test.d, kind="stable") if test.d[i] < 0 and i not in seen]
    chosen += [(int(i), "better") for i in better[:3]]
    out = []
    for i, why in chosen[:MAX_UTTERANCES_PER_ROW]:
        utt = paired.ids[i]
        ref_c, hyp_c = paired.cand.texts.get(utt, ("", ""))
        ref_b, hyp_b = paired.base.texts.get(utt, ("", ""))
        reference = ref_c or ref_b
        out.append(Utterance(
            workload=clip(workload.id, MAX_ID), measure=measure, id=clip(utt, MAX_ID), why=why,
            ref_len=int(paired.ref_len[i]), baseline_errors=float(test.base_mean_errors[i]),
            candidate_errors=float(test.cand_mean_errors[i]), reference=clip(reference, MAX_TEXT),
            baseline_hypothesis=clip(hyp_b or (reference if test.base_mean_errors[i] == 0 else ""), MAX_TEXT),
            candidate_hypothesis=clip(hyp_c or (reference if test.cand_mean_errors[i] == 0 else ""), MAX_TEXT)))
    return out


# --- speed ------------------------------------------------------------------------------------------------------

def _model_calibrations(calibration: Mapping[str, Mapping[str, Any]], suite: Suite, model: str,
                        metric: str) -> list[Calibration]:
    """The metric's speed calibrations over all the model's workloads (pooled: far more df than one's)."""
    found = [calibration.get(w.id, {}).get(metric) for w in suite.workloads_for((model,))]
    return [c for c in found if isinstance(c, Calibration)]


def _own_arms(base: Side, cand: Side, suite: Suite, model: str, metric: str) -> np.ndarray:
    """ln(value) of every complete run of the model's workloads on both sides, (arms, runs), NaN-padded: the
    A/B's own evidence about σ in one job (gate.stats.speed.own_noise)."""
    arms = []
    for w in suite.workloads_for((model,)):
        for side in (base, cand):
            ws = side.workloads.get(w.id)
            if ws is None or not ws.complete:
                continue
            complete = set(ws.complete_runs())
            values = [v for i, v in enumerate(ws.values.get(metric, ())) if i in complete]
            if values and all(v is not None and v > 0 and math.isfinite(v) for v in values):
                arms.append(np.log(np.asarray(values, dtype=float)))
    width = max((len(a) for a in arms), default=0)
    out = np.full((len(arms), width), np.nan)
    for k, arm in enumerate(arms):
        out[k, :len(arm)] = arm
    return out


def _speed(row: _Draft, metric: MetricSpec, noise: SpeedNoise | None, cross_job: bool,
           extra_blockers: tuple[str, ...] = (), *, sources: str = "", own_arms: np.ndarray | None = None,
           stale: bool = False) -> None:
    b, c = row.baseline.present, row.candidate.present
    _plain_delta(row)
    missing = [name for name, values in (("baseline", b), ("candidate", c)) if not values or any(v <= 0 for v in values)]
    if missing:
        row.verdict = Verdict.INCOMPLETE
        row.method = "not tested: missing values"
        row.notes.append(f"{' and '.join(missing)}: a run has no positive value for {metric.name}")
        return
    row.floor_rel = metric.floor_rel or 0.0
    higher = metric.higher_is_better
    source = ""
    if not cross_job and own_arms is not None and own_arms.size:
        # One job: the A/B's own runs carry σ; a fresh calibration that agrees adds degrees of freedom.
        usable = noise if noise is not None and noise.usable else None
        in_use, code, agreement = own_noise(own_arms, usable, stale=stale and usable is not None)
        source = SOURCE_TEXT[int(code)]
        if int(code) == OWN_DISAGREES:
            source += f" (F test p = {float(agreement):.2g} < {AGREEMENT_P})"
        noise = in_use if in_use.sigma_df > 0 else None
        row.fail_blockers = fail_blockers(noise, len(b), len(c), cross_job=False)
        row.notes.extend(extra_blockers)  # in one job: why a stale calibration was left out (it blocks nothing)
    else:
        row.fail_blockers = fail_blockers(noise, len(b), len(c), cross_job=cross_job) + (extra_blockers if noise else ())
        if noise is not None and noise.usable and own_arms is not None and own_arms.size:
            # Across jobs too, the sides' own spread must agree with the calibration's σ for a FAIL.
            _, code, agreement = own_noise(own_arms, noise)
            if int(code) == OWN_DISAGREES:
                row.fail_blockers += (f"the sides' own spread disagrees with the calibration's σ (F test p = "
                                      f"{float(agreement):.2g} < {AGREEMENT_P})",)
    if noise is not None and noise.usable:
        test = shift_test(np.log(np.asarray(b, dtype=float))[None], np.log(np.asarray(c, dtype=float))[None], noise,
                          higher_is_better=higher, cross_job=cross_job)
        low, high = test.ratio_ci(higher)
        row.basis = Basis.CALIBRATED
        row.p_value, row.ci, row.ci_kind = float(test.p[0]), (float(low[0]), float(high[0])), "ratio"
        row.worse_rel = float(test.worse_rel[0])
        row.delta_rel = math.exp(-float(test.worse[0]) if higher else float(test.worse[0])) - 1
        row.sigma, row.df, row.se = float(noise.sigma), int(round(float(test.df[0]))), float(test.se[0])
        row.family = "speed" if metric.gated else None
        if source:
            row.method = (f"log-scale t, run-to-run σ {float(noise.sigma):.2%} from {source}, "
                          f"df {int(noise.sigma_df)}, one job")
        else:
            row.method = (f"log-scale t, run-to-run σ {float(noise.sigma):.2%} pooled over the model's workloads "
                          f"({sources + ', ' if sources else ''}df {noise.sigma_df}), across jobs")
        if test.favourable_set_aside[0]:
            row.fail_blockers += ("a candidate run better than the others was set aside: its runs disagree; "
                                  "re-measure",)
        if test.worse_set_aside[0] or test.split_cand[0]:
            row.unstable = True
            row.fail_blockers += ("unstable: " + ("a candidate run worse than the others was set aside"
                                                  if test.worse_set_aside[0] else
                                                  "the candidate's runs fall in two clusters") + "; WARN at least",)
        for side, values, kept in (("baseline", b, test.kept_base[0]), ("candidate", c, test.kept_cand[0])):
            median = float(np.median(np.asarray(values, dtype=float)))
            for index in np.flatnonzero(~kept):
                row.notes.append(f"{side} run {index + 1} set aside ({values[index]:.4g}, {values[index] / median - 1:+.0%} "
                                 "from its arm's median): one wild run must not decide")
        if not metric.gated:
            row.notes.append("shown, not gated")
        elif row.fail_blockers:
            row.notes.append("can WARN at most: " + "; ".join(row.fail_blockers))
        return
    ratio, _ = ratio_policy(b, c, higher_is_better=higher, tolerance=row.floor_rel)
    row.basis = Basis.UNCALIBRATED
    row.method = f"uncalibrated: ratio of means against the {row.floor_rel:.0%} floor"
    row.tolerance = row.floor_rel
    row.delta_rel = ratio - 1
    row.worse_rel = (1 / ratio - 1) if higher else ratio - 1
    if not metric.gated:
        row.notes.append("shown, not gated")
    else:
        row.notes.append("can WARN at most: " + "; ".join(row.fail_blockers))
        if row.worse_rel >= row.floor_rel:
            row.verdict = Verdict.WARN


# --- the decision over families --------------------------------------------------------------------------------

def _decide(rows: list[_Draft], thresholds: Thresholds) -> None:
    """Holm FAIL and BH WARN per model and family (gate.stats.decision); a newly catastrophic utterance WARNs
    at least. Each model is its own family: CI judges each model in its own job and check, so a model's verdict
    must not depend on which other models share the tree (and `Report.merge` of per-model reports equals one
    compare of them all). The all-model false-FAIL rate this gives is measured by benchmarks/verdict_power.py."""
    for model in dict.fromkeys(r.workload.model for r in rows):
        _decide_quality([r for r in rows if r.workload.model == model and r.family == "quality"], thresholds)
        _decide_speed([r for r in rows if r.workload.model == model and r.family == "speed"], thresholds)


def _decide_quality(quality: list[_Draft], thresholds: Thresholds) -> None:
    if not quality:
        return
    result = decision.decide_family(
        np.array([[r.p_value for r in quality]], dtype=float), np.array([[r.above_floor for r in quality]]),
        np.array([[r.above_half_floor for r in quality]]), np.array([[r.can_fail for r in quality]]),
        alpha=thresholds.quality_alpha, warn_q=thresholds.warn_q)
    level = thresholds.quality_alpha / len(quality)  # Holm's first step: what a single regressed row must reach
    for k, row in enumerate(quality):
        assert row.p_value is not None
        row.p_adjusted, row.q_value = float(result.p_adjusted[0, k]), float(result.q_value[0, k])
        row.verdict = _VERDICT[int(result.verdict[0, k])]
        if row.verdict is Verdict.PASS and row.new_catastrophic:
            row.verdict = Verdict.WARN
        if row.verdict is Verdict.PASS and row.p_value <= thresholds.warn_alpha and not row.above_half_floor:
            row.notes.append("significant but below the floors")
        if row.se is not None:
            row.mde = (stats.norm.isf(level) + stats.norm.ppf(POWER)) * row.se
            _sensitivity(row, max(row.floor_abs or 0.0, (row.floor_rel or 0.0) * (row.base_rate or 0.0)), "pp", 100)


def _decide_speed(speed: list[_Draft], thresholds: Thresholds) -> None:
    if not speed:
        return
    worse = np.array([[r.worse_rel for r in speed]], dtype=float)
    floors = np.array([[r.floor_rel or 0.0 for r in speed]])
    result = decision.decide_family(
        np.array([[r.p_value for r in speed]], dtype=float), worse >= floors, worse >= floors / 2,
        np.array([[not r.fail_blockers for r in speed]]), alpha=thresholds.alpha, warn_q=thresholds.warn_q)
    level = thresholds.alpha / len(speed)  # Holm's first step: what a single regressed row must reach
    for k, row in enumerate(speed):
        row.p_adjusted, row.q_value = float(result.p_adjusted[0, k]), float(result.q_value[0, k])
        row.verdict = _VERDICT[int(result.verdict[0, k])]
        if row.unstable and row.verdict is Verdict.PASS:
            row.verdict = Verdict.WARN
        if row.se is not None and row.df is not None:
            row.mde = float(mde(row.se, row.df, level))
            _sensitivity(row, row.floor_rel or 0.0, "%", 100)


def _sensitivity(row: _Draft, floor: float, unit: str, scale: float) -> None:
    """Say what the row could not see: blind below its MDE when that exceeds SENSITIVITY_FACTOR × the floor."""
    if row.mde is None or not math.isfinite(row.mde) or floor <= 0:
        return
    row.blind = bool(row.mde > SENSITIVITY_FACTOR * floor)
    if row.blind:
        row.notes.append(f"blind below {row.mde * scale:.2g}{unit}: a worsening smaller than that is caught less than "
                         f"80% of the time at this look (floor {floor * scale:.2g}{unit}); a PASS here is a caveat")


_VERDICT = {decision.PASS: Verdict.PASS, decision.WARN: Verdict.WARN, decision.FAIL: Verdict.FAIL}


def _num(value: float | None) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _pair_of_nums(ci: tuple[float, float] | None) -> tuple[float, float] | None:
    if ci is None:
        return None
    lo, hi = _num(ci[0]), _num(ci[1])
    return None if lo is None or hi is None else (lo, hi)
