"""Baseline vs candidate -> one verdict per workload × gated metric, and an overall verdict. Pure: no printing.

The rules (statistics.md §0; ARCHITECTURE "Decisions already taken"), in the order they apply to a row:

1. INCOMPLETE: the workload is missing, or any of its runs is incomplete, on either side. Means are
   still shown, labelled partial. Such a row can never pass.
2. NOT COMPARABLE: a fingerprint fact the row depends on differs (GPU, driver, freeze, dataset,
   evaluation input, model, MOSS token budget) and its kind was not allowed. The numbers are shown.
3. Accuracy with per-utterance data on both sides (same ids): paired sign-flip p (exact), paired
   bootstrap CI, worse/better counts. FAIL needs Holm-adjusted p <= quality_alpha (0.005) over the quality family
   AND Δ >= the absolute and relative floors. WARN: unadjusted p <= 0.05 above the floors, or a newly
   catastrophic utterance. Identical errors: PASS ("identical").
   Without per-sample data (or with ids that do not pair): the maintainers' tolerance, labelled fallback.
4. Speed with an A/A calibration (df >= 4): one-sided log-scale t. FAIL needs Holm-adjusted p <= alpha
   (0.005) over the speed family AND a relative worsening >= the metric's floor. WARN: p <= 0.01 or BH q <= 0.10
   with >= half the floor, or >= the floor at p <= 0.05. Without calibration: the maintainers'
   ratio policy, labelled uncalibrated. Improvements are reported, never gated.
"""
from __future__ import annotations

import math
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from gate import comparability
from gate.baseline import MeasureSamples, Side, WorkloadSide, read_baseline, side_from_tree
from gate.config import MetricSpec, Suite, Workload
from gate.errors import InputError
from gate.stats import decision
from gate.stats.overdispersion import Dispersion, widened_p
from gate.stats.performance import MIN_CALIBRATION_DF, Calibration, ratio_policy
from gate.stats.quality import CATASTROPHIC_MIN_JUMP, DEFAULT_BOOTSTRAP, DEFAULT_FLIPS, paired_quality_test
from gate.stats.speed import SpeedNoise, fail_blockers, shift_test

PASS, WARN, FAIL, INCOMPLETE, NOT_COMPARABLE = "pass", "warn", "fail", "incomplete", "not_comparable"
VERDICTS = (PASS, WARN, FAIL, INCOMPLETE, NOT_COMPARABLE)
PRECEDENCE = (INCOMPLETE, NOT_COMPARABLE, FAIL, WARN, PASS)  # the overall verdict is the first present
# The documented exit code of `gate compare` per overall verdict (2 is a usage error or unreadable input).
EXIT_CODES = {PASS: 0, WARN: 0, FAIL: 1, INCOMPLETE: 3, NOT_COMPARABLE: 4}
REPORT_SCHEMA_VERSION = 1
MAX_UTTERANCES_PER_ROW = 8


@dataclass(frozen=True)
class Thresholds:
    """Decision levels and floors (issue 10 "Decisions taken"; benchmarks/results/verdict_power.md measures them)."""

    # Family-wise levels for FAIL (Holm), per family. Two families at 0.005 keep the union bound at 1% per PR
    # whatever their dependence. Inside `gate run`'s two-look plan the looks split it: 0.001 + 0.004
    # (gate.stats.looks.thresholds_for).
    alpha: float = 0.005  # speed family
    quality_alpha: float = 0.005
    # WARN: Benjamini-Hochberg q at most this, with at least half the floor (both families).
    warn_q: float = 0.05
    warn_alpha: float = 0.05  # accuracy: "significant but below the floors" note
    quality_floor_abs: float = 0.001  # ΔWER/CER of at least 0.1 pp ...
    quality_floor_rel: float = 0.03  # ... and at least 3% of the baseline rate
    small_set_size: int = 30  # sets this small (MOSS 20/25 sessions) ...
    small_set_floor_abs: float = 0.005  # ... need 0.5 pp
    n_boot: int = DEFAULT_BOOTSTRAP
    n_flips: int = DEFAULT_FLIPS

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass(frozen=True)
class SideStats:
    values: tuple[float | None, ...]
    n_samples: int | None
    partial: bool

    @property
    def present(self) -> list[float]:
        return [v for v in self.values if v is not None]

    def to_dict(self) -> dict:
        present = self.present
        return {"mean": float(np.mean(present)) if present else None, "min": min(present) if present else None,
                "max": max(present) if present else None, "n_runs": len(present), "n_samples": self.n_samples,
                "values": list(self.values), "partial": self.partial}


@dataclass(frozen=True)
class Row:
    """One workload × metric and its verdict (built as a _Draft while `compare` decides, then frozen)."""

    workload: str
    model: str
    metric: str
    kind: str
    unit: str
    direction: str
    baseline: SideStats
    candidate: SideStats
    verdict: str = PASS
    delta_abs: float | None = None
    delta_rel: float | None = None
    p_value: float | None = None
    p_adjusted: float | None = None
    q_value: float | None = None
    ci: tuple[float, float] | None = None
    ci_kind: str | None = None  # "delta_abs" (accuracy) or "ratio" (speed: candidate / baseline)
    floor: Mapping[str, float] = field(default_factory=dict)
    method: str = ""
    notes: tuple[str, ...] = ()
    p_degradation: float | None = None
    n_worse: int | None = None
    n_better: int | None = None
    calibration: Calibration | None = None
    family: str | None = None  # "quality" or "speed" when the row is in a multiplicity family
    worse_rel: float | None = None  # speed: relative worsening (positive = worse)
    new_catastrophic: int = 0
    above_floor: bool = False  # accuracy: Δ reaches both floors
    above_half_floor: bool = False  # accuracy: Δ reaches half of both floors
    fail_blockers: tuple[str, ...] = ()  # why this row can WARN at most

    def to_dict(self) -> dict:
        return {
            "workload": self.workload, "model": self.model, "metric": self.metric, "kind": self.kind,
            "unit": self.unit, "direction": self.direction, "verdict": self.verdict,
            "baseline": self.baseline.to_dict(), "candidate": self.candidate.to_dict(),
            "delta_abs": _num(self.delta_abs), "delta_rel": _num(self.delta_rel), "p_value": _num(self.p_value),
            "p_adjusted": _num(self.p_adjusted), "q_value": _num(self.q_value),
            "ci": None if self.ci is None else [_num(self.ci[0]), _num(self.ci[1])], "ci_kind": self.ci_kind,
            "floor": dict(self.floor), "method": self.method, "note": "; ".join(self.notes),
            "p_degradation": _num(self.p_degradation), "n_worse": self.n_worse, "n_better": self.n_better,
            "new_catastrophic": self.new_catastrophic,
            "calibration": None if self.calibration is None else {"sigma": self.calibration.sigma, "df": self.calibration.df},
        }


class _Draft(dict):
    """A row while `compare` decides it: Row's fields with attribute access; `freeze()` makes the Row."""

    __getattr__ = dict.__getitem__
    __setattr__ = dict.__setitem__

    def freeze(self) -> Row:
        return Row(**{**self, "notes": tuple(self["notes"]), "fail_blockers": tuple(self["fail_blockers"])})


_ROW_DEFAULTS = {f.name: (f.default_factory() if f.default_factory is not MISSING else f.default)
                 for f in fields(Row) if f.default is not MISSING or f.default_factory is not MISSING}


@dataclass(frozen=True)
class Utterance:
    workload: str
    measure: str
    id: str
    why: str  # "new_catastrophic", "worse", "better", "fixed_catastrophic"
    ref_len: int
    baseline_errors: float
    candidate_errors: float
    reference: str
    baseline_hypothesis: str
    candidate_hypothesis: str

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Comparison:
    suite: str
    verdict: str
    rows: tuple[Row, ...]
    coverage: Mapping[str, Mapping[str, Any]]
    differences: tuple[comparability.Difference, ...]
    allowed: tuple[str, ...]
    models: tuple[str, ...]
    sides: Mapping[str, Mapping[str, Any]]
    utterances: tuple[Utterance, ...]
    thresholds: Thresholds
    seed: int
    cross_job: bool = False

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.verdict]

    def to_dict(self) -> dict:
        """The JSON report (gate/schemas/report.schema.json). Renderers read only this."""
        families = {f: sum(1 for r in self.rows if r.family == f) for f in ("quality", "speed")}
        return {
            "schema_version": REPORT_SCHEMA_VERSION,
            "suite": self.suite,
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "models": list(self.models),
            "sides": {k: dict(v) for k, v in self.sides.items()},
            "counts": {v: sum(1 for r in self.rows if r.verdict == v) for v in VERDICTS},
            "rows": [r.to_dict() for r in self.rows],
            "coverage": {w: dict(c) for w, c in self.coverage.items()},
            "environment_diff": [d.to_dict(self.allowed) for d in self.differences],
            "allowed_diff": list(self.allowed),
            "utterances": [u.to_dict() for u in self.utterances],
            "statistics": {
                "alpha": self.thresholds.alpha,
                "quality": {"test": "one-sided paired sign-flip randomization on Σd (exact)",
                            "ci": f"paired bootstrap of (d_i, n_i), {self.thresholds.n_boot} resamples, 95% percentile",
                            "fail": f"Holm-adjusted p ≤ {self.thresholds.quality_alpha} and Δ ≥ both floors",
                            "warn": f"BH q ≤ {self.thresholds.warn_q} with Δ ≥ half of both floors, or a newly "
                                    "catastrophic utterance",
                            "alpha": self.thresholds.quality_alpha,
                            "warn_alpha": self.thresholds.warn_alpha, "family_size": families["quality"],
                            "floor_abs": self.thresholds.quality_floor_abs, "floor_rel": self.thresholds.quality_floor_rel,
                            "small_set_size": self.thresholds.small_set_size,
                            "small_set_floor_abs": self.thresholds.small_set_floor_abs,
                            "catastrophic": "an utterance newly above 50% errors in the candidate (at least WARN)"},
                "speed": {"test": "one-sided t on ln(value) over the runs kept (a run beyond max(5σ, 8%) of its arm's "
                                  "median is set aside); run = unit; σ from A/A calibration pooled over the model's "
                                  "workloads; across jobs plus the cross-job A/A variance",
                          "fail": f"Holm-adjusted p ≤ {self.thresholds.alpha} and relative worsening ≥ floor, with a "
                                  "calibration, two runs a side and (across jobs) enough cross-job A/A pairs",
                          "alpha": self.thresholds.alpha,
                          "warn": f"BH q ≤ {self.thresholds.warn_q} with ≥ half the floor",
                          "jobs": "across jobs" if self.cross_job else "one job",
                          "family_size": families["speed"], "min_calibration_df": MIN_CALIBRATION_DF},
                "seed": self.seed,
            },
        }


def overall_verdict(verdicts: Iterable[str]) -> str:
    """incomplete > not_comparable > fail > warn > pass; no rows at all is incomplete."""
    present = set(verdicts)
    if not present:
        return INCOMPLETE
    unknown = present - set(VERDICTS)
    if unknown:
        raise ValueError(f"unknown verdict(s): {', '.join(sorted(unknown))}")
    return next(v for v in PRECEDENCE if v in present)


def load_side(path: str | Path, suite: Suite, models: Sequence[str] | None = None) -> Side:
    """A result tree directory or a baseline JSON file."""
    path = Path(path)
    models = tuple(models) if models else None
    if path.is_dir():
        return side_from_tree(path, suite, models=models)
    if path.is_file():
        return read_baseline(path, suite, models=models)
    raise InputError("no such file or directory; expected a result tree or a baseline JSON file", path=path)


def compare(base: Side, cand: Side, suite: Suite, *, models: Sequence[str] | None = None,
            allow_diff: Iterable[str] = (), seed: int = 0, thresholds: Thresholds = Thresholds(),
            calibration: Mapping[str, Mapping[str, Any]] | None = None, cross_job: bool | None = None) -> Comparison:
    """Judge `cand` against `base`. `calibration` defaults to the baseline's (else the candidate's).

    `cross_job`: the two sides ran in different jobs (a stored baseline, two nightlies), so a job effect adds
    to the variance of every speed difference. Default: True when either side is a baseline file, False for
    two trees (gate run's interleaved A/B).
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

    rows: list[_Draft] = []
    coverage: dict[str, dict] = {}
    utterances: list[Utterance] = []
    for workload in workloads:
        wb, wc = base.workloads.get(workload.id), cand.workloads.get(workload.id)
        coverage[workload.id] = {"baseline": _coverage(wb, base), "candidate": _coverage(wc, cand)}
        incomplete = not (wb and wc and wb.complete and wc.complete)
        blocking = comparability.blocking_kinds(differences, workload.id, allowed)
        for metric in workload.metrics:
            if not metric.tested:
                continue
            row = _new_row(workload, metric, wb, wc, incomplete)
            if incomplete:
                row.verdict = INCOMPLETE
                row.method = "not tested: coverage"
                row.notes.append(_incomplete_reason(wb, wc))
                _plain_delta(row)
            elif metric.kind == "accuracy":
                dispersion = (calibration or {}).get(workload.id, {}).get(metric.name)
                utterances += _accuracy(row, workload, metric, wb, wc, suite, thresholds, seed,
                                        dispersion if isinstance(dispersion, Dispersion) else None)
            else:
                _speed(row, metric, _speed_noise(calibration or {}, suite, workload.model, metric.name), suite,
                       cross_job)
            if blocking and row.verdict != INCOMPLETE:
                row.verdict = NOT_COMPARABLE
                row.family = None
                row.notes.insert(0, "not comparable: " + ", ".join(blocking) + " differ")
            rows.append(row)
    _decide(rows, thresholds)
    sides = {"baseline": _side_info(base), "candidate": _side_info(cand)}
    return Comparison(suite=suite.name, verdict=overall_verdict(r.verdict for r in rows),
                      rows=tuple(r.freeze() for r in rows),
                      coverage=coverage, differences=differences, allowed=allowed, models=chosen, sides=sides,
                      utterances=tuple(utterances), thresholds=thresholds, seed=seed, cross_job=cross_job)


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


def _coverage(w: WorkloadSide | None, side: Side) -> dict:
    if w is None:
        return {"complete": False, "runs": 0, "expected_runs": len(side.runs), "reasons": ["no results for this workload"]}
    return {"complete": w.complete, "runs": len(w.runs), "expected_runs": len(side.runs), "reasons": list(w.problems),
            "evaluated": list(w.evaluated), "sample_notes": list(w.sample_notes)}


def _incomplete_reason(wb: WorkloadSide | None, wc: WorkloadSide | None) -> str:
    parts = []
    for name, w in (("baseline", wb), ("candidate", wc)):
        if w is None:
            parts.append(f"{name}: no results")
        elif not w.complete:
            parts.append(f"{name}: {w.problems[0]}" + (f" (+{len(w.problems) - 1} more)" if len(w.problems) > 1 else ""))
    return "incomplete (" + "; ".join(parts) + "); means shown are partial"


def _side_info(side: Side) -> dict:
    return {"kind": side.kind, "path": side.path, "commit": side.commit, "runs": len(side.runs),
            "calibrated": bool(side.calibration)}


def _new_row(workload: Workload, metric: MetricSpec, wb: WorkloadSide | None, wc: WorkloadSide | None,
             incomplete: bool) -> _Draft:
    def stats_of(w: WorkloadSide | None) -> SideStats:
        if w is None:
            return SideStats(values=(), n_samples=None, partial=True)
        evaluated = [e for e in w.evaluated if e is not None]
        return SideStats(values=tuple(w.values.get(metric.name, ())), n_samples=min(evaluated) if evaluated else None,
                         partial=incomplete)

    return _Draft(_ROW_DEFAULTS, notes=[], fail_blockers=[], floor={}, workload=workload.id, model=workload.model, metric=metric.name,
                  kind=metric.kind, unit=metric.unit, direction=metric.direction, baseline=stats_of(wb),
                  candidate=stats_of(wc))


def _plain_delta(row: _Draft) -> None:
    b, c = row.baseline.present, row.candidate.present
    if b and c:
        mb, mc = float(np.mean(b)), float(np.mean(c))
        row.delta_abs = mc - mb
        row.delta_rel = None if mb == 0 else mc / mb - 1


# --- accuracy -------------------------------------------------------------------------------------------------

def _accuracy(row: _Draft, workload: Workload, metric: MetricSpec, wb: WorkloadSide, wc: WorkloadSide, suite: Suite,
              thresholds: Thresholds, seed: int, dispersion: Dispersion | None) -> list[Utterance]:
    _plain_delta(row)
    paired = _pair(metric.samples, wb, wc)
    if isinstance(paired, str):
        _accuracy_fallback(row, metric, suite, paired)
        return []
    ids, base_errors, cand_errors, ref_len, sb, sc = paired
    test = paired_quality_test(base_errors, cand_errors, ref_len, n_boot=thresholds.n_boot,
                               n_flips=thresholds.n_flips, seed=seed)
    small = len(ids) <= thresholds.small_set_size
    floor_abs = thresholds.small_set_floor_abs if small else thresholds.quality_floor_abs
    row.floor = {"abs": floor_abs, "rel": thresholds.quality_floor_rel}
    row.baseline = SideStats(row.baseline.values, len(ids), False)
    row.candidate = SideStats(row.candidate.values, len(ids), False)
    row.delta_abs, row.delta_rel = test.delta, test.delta_rel
    row.n_worse, row.n_better = test.n_worse, test.n_better
    row.above_floor = _reaches(test, floor_abs, thresholds.quality_floor_rel, 1.0)
    row.above_half_floor = _reaches(test, floor_abs, thresholds.quality_floor_rel, 0.5)
    row.new_catastrophic = len(test.new_catastrophic)
    if test.identical:
        row.method = "paired: identical per-utterance errors"
        row.notes.append("unchanged: every utterance has the same errors")
        return []
    row.p_value, row.ci, row.ci_kind = test.p_value, test.ci, "delta_abs"
    row.p_degradation = test.p_degradation
    unit = "sessions" if small else "utterances"
    row.method = f"paired {test.p_method} over {len(ids)} {unit}"
    if dispersion is not None and dispersion.widens:
        # Same-commit runs churn together (A/A calibration): their covariance widens the sign-flip null.
        a = 1 / base_errors.shape[0] + 1 / cand_errors.shape[0]
        row.p_value = widened_p(float(test.d.sum()), float((test.d ** 2).sum()), dispersion, a)
        row.method = (f"paired sign-flip, widened for correlated churn (φ = {dispersion.phi:.2f} from "
                      f"{dispersion.arms} A/A arms, df {dispersion.df}) over {len(ids)} {unit}")
    elif dispersion is None:
        row.notes.append("accuracy null not calibrated: assumes utterances churn independently")
    row.family = "quality"
    if test.new_catastrophic:
        # What was found and its evidence, on its own: the row's p-value speaks of the whole set, not of this.
        shown = ", ".join(ids[i] for i in test.new_catastrophic[:3])
        more = f" (+{len(test.new_catastrophic) - 3} more)" if len(test.new_catastrophic) > 3 else ""
        row.notes.append(f"{len(test.new_catastrophic)} newly catastrophic: >50% errors in all {cand_errors.shape[0]} "
                         f"candidate runs and none of the {base_errors.shape[0]} baseline runs, at least "
                         f"{CATASTROPHIC_MIN_JUMP} errors above the baseline's worst run: {shown}{more}")
    if test.fixed_catastrophic:
        row.notes.append(f"{len(test.fixed_catastrophic)} no longer catastrophic")
    if test.catastrophic_sign_p is not None:
        row.notes.append(f"sign test, new vs no-longer catastrophic: p={test.catastrophic_sign_p:.3g}")
    return _notable(workload, metric.samples, ids, test, ref_len, sb, sc)


def _reaches(test, floor_abs: float, floor_rel: float, share: float) -> bool:
    return test.delta >= share * floor_abs - 1e-15 and (test.base_rate == 0 or test.delta >= share * floor_rel * test.base_rate)


def _pair(measure: str | None, wb: WorkloadSide, wc: WorkloadSide):
    """Pair the two sides by utterance id, or say why not (the caller then falls back)."""
    sb, sc = wb.samples.get(measure or ""), wc.samples.get(measure or "")
    if sb is None or sc is None:
        notes = [n for w in (wb, wc) for n in w.sample_notes if n.startswith(f"{measure}:")]
        whose = " and ".join(name for name, s in (("baseline", sb), ("candidate", sc)) if s is None)
        return f"no per-sample data on the {whose}" + (f" ({notes[0]})" if notes else "")
    only_b, only_c = set(sb.ids) - set(sc.ids), set(sc.ids) - set(sb.ids)
    if only_b or only_c:
        example = sorted(only_b or only_c)[0]
        return (f"utterance ids do not match ({len(only_b)} only in the baseline, {len(only_c)} only in the "
                f"candidate, e.g. {example!r}); not paired")
    order = {i: k for k, i in enumerate(sc.ids)}
    to_c = np.fromiter((order[i] for i in sb.ids), dtype=np.int64, count=len(sb.ids))
    ref_b, ref_c = sb.ref_len, sc.ref_len[to_c]
    if not np.array_equal(ref_b, ref_c):
        return f"reference lengths differ for {int((ref_b != ref_c).sum())} utterances (normalization changed?); not paired"
    valid = sb.valid.all(axis=0) & sc.valid[:, to_c].all(axis=0) & (ref_b > 0)
    if not valid.any():
        return "no utterance is valid on both sides"
    keep = np.flatnonzero(valid)
    ids = tuple(sb.ids[k] for k in keep)
    return ids, sb.errors[:, keep], sc.errors[:, to_c[keep]], ref_b[keep], sb, sc


def _accuracy_fallback(row: _Draft, metric: MetricSpec, suite: Suite, reason: str) -> None:
    tolerance = suite.policy.accuracy_tolerance_abs.get(metric.name)
    row.method = "fallback: maintainers' tolerance"
    row.notes.append(f"fallback ({reason})")
    if tolerance is None or row.delta_abs is None:
        row.notes.append("no tolerance for this metric in the suite policy; not gated")
        return
    row.floor = {"abs": tolerance}
    if row.delta_abs > tolerance + 1e-12:
        row.verdict = FAIL
        row.notes.append(f"Δ {row.delta_abs:+.4f} exceeds the tolerance +{tolerance:g}")


def _notable(workload: Workload, measure: str, ids: tuple[str, ...], test, ref_len: np.ndarray,
             sb: MeasureSamples, sc: MeasureSamples) -> list[Utterance]:
    chosen: list[tuple[int, str]] = [(i, "new_catastrophic") for i in test.new_catastrophic]
    seen = {i for i, _ in chosen}
    worse = [i for i in np.argsort(-test.d, kind="stable") if test.d[i] > 0 and i not in seen]
    chosen += [(int(i), "worse") for i in worse[:5]]
    better = [i for i in np.argsort(test.d, kind="stable") if test.d[i] < 0 and i not in seen]
    chosen += [(int(i), "better") for i in better[:3]]
    out = []
    for i, why in chosen[:MAX_UTTERANCES_PER_ROW]:
        utt = ids[i]
        ref_c, hyp_c = sc.texts.get(utt, ("", ""))
        ref_b, hyp_b = sb.texts.get(utt, ("", ""))
        reference = ref_c or ref_b
        out.append(Utterance(workload=workload.id, measure=measure, id=utt, why=why, ref_len=int(ref_len[i]),
                             baseline_errors=float(test.base_mean_errors[i]),
                             candidate_errors=float(test.cand_mean_errors[i]), reference=reference,
                             baseline_hypothesis=hyp_b or (reference if test.base_mean_errors[i] == 0 else ""),
                             candidate_hypothesis=hyp_c or (reference if test.cand_mean_errors[i] == 0 else "")))
    return out


# --- speed ------------------------------------------------------------------------------------------------------

def _speed_noise(calibration: Mapping[str, Mapping[str, Any]], suite: Suite, model: str, metric: str) -> SpeedNoise | None:
    """The metric's calibrations over all the model's workloads, pooled (far more df than one workload's)."""
    found = [calibration.get(w.id, {}).get(metric) for w in suite.workloads_for((model,))]
    return SpeedNoise.pooled([c for c in found if isinstance(c, Calibration)])


def _speed(row: _Draft, metric: MetricSpec, noise: SpeedNoise | None, suite: Suite, cross_job: bool) -> None:
    b, c = row.baseline.values, row.candidate.values
    missing = [name for name, values in (("baseline", b), ("candidate", c)) if not values or any(v is None or v <= 0 for v in values)]
    _plain_delta(row)
    if missing:
        row.verdict = INCOMPLETE
        row.method = "not tested: missing values"
        row.notes.append(f"{' and '.join(missing)}: a run has no positive value for {metric.name}")
        return
    floor = metric.floor_rel or 0.0
    row.floor = {"rel": floor}
    higher = metric.higher_is_better
    row.fail_blockers = list(fail_blockers(noise, len(b), len(c), cross_job=cross_job))
    if noise is not None and noise.usable:
        test = shift_test(np.log(np.asarray(b, dtype=float))[None], np.log(np.asarray(c, dtype=float))[None], noise,
                          higher_is_better=higher, cross_job=cross_job)
        low, high = test.ratio_ci(higher)
        row.p_value, row.ci, row.ci_kind = float(test.p[0]), (float(low[0]), float(high[0])), "ratio"
        row.worse_rel = float(test.worse_rel[0])
        row.delta_rel = math.exp(-float(test.worse[0]) if higher else float(test.worse[0])) - 1
        row.family = "speed" if metric.gated else None
        where = "across jobs" if cross_job else "one job"
        row.method = (f"log-scale t, σ={noise.sigma:.2%} pooled over the model's workloads (df {noise.sigma_df}), "
                      f"{where}, df {float(test.df[0]):.0f}")
        for side, kept in (("baseline", test.kept_base[0]), ("candidate", test.kept_cand[0])):
            values = b if side == "baseline" else c
            for index in np.flatnonzero(~kept):
                median = float(np.quantile(np.asarray(values, dtype=float), 0.5, method="lower"))
                row.notes.append(f"set aside {side} run {index + 1} ({values[index]:.4g}, "
                                 f"{values[index] / median - 1:+.0%} from its arm's median): one wild run must not decide")
        if not metric.gated:
            row.notes.append("shown, not gated")
        elif row.fail_blockers:
            row.notes.append("can WARN at most: " + "; ".join(row.fail_blockers))
        return
    ratio, _ = ratio_policy(b, c, higher_is_better=higher, tolerance=floor)
    row.method = "uncalibrated: ratio of means against the floor"
    row.delta_rel = ratio - 1
    row.worse_rel = (1 / ratio - 1) if higher else ratio - 1
    if not metric.gated:
        row.notes.append("shown, not gated")
        return
    row.notes.append("can WARN at most: " + "; ".join(row.fail_blockers))
    if row.worse_rel >= floor:
        row.verdict = WARN
    elif row.worse_rel <= -floor:
        row.notes.append(f"improved by {-row.worse_rel:.1%}")


# --- the decision over families --------------------------------------------------------------------------------

def _decide(rows: list[_Draft], thresholds: Thresholds) -> None:
    """Holm FAIL and BH WARN per family (gate.stats.decision); a newly catastrophic utterance WARNs at least."""
    quality = [r for r in rows if r.family == "quality"]
    if quality:
        result = decision.decide_family(
            np.array([[r.p_value for r in quality]], dtype=float), np.array([[r.above_floor for r in quality]]),
            np.array([[r.above_half_floor for r in quality]]), np.ones((1, len(quality)), bool),
            alpha=thresholds.quality_alpha, warn_q=thresholds.warn_q)
        for k, row in enumerate(quality):
            row.p_adjusted, row.q_value = float(result.p_adjusted[0, k]), float(result.q_value[0, k])
            row.verdict = _VERDICT[int(result.verdict[0, k])]
            if row.verdict == PASS and row.new_catastrophic:
                row.verdict = WARN
            if row.verdict == PASS and row.p_value <= thresholds.warn_alpha and not row.above_half_floor:
                row.notes.append("significant but below the floors")
            elif row.p_value >= 1 - thresholds.warn_alpha:  # reported, never gated
                row.notes.append(f"improved by {-row.delta_abs * 100:.3f} pp")
    speed = [r for r in rows if r.family == "speed"]
    if speed:
        worse = np.array([[r.worse_rel for r in speed]])
        floors = np.array([[r.floor["rel"] for r in speed]])
        result = decision.decide_family(
            np.array([[r.p_value for r in speed]], dtype=float), worse >= floors, worse >= floors / 2,
            np.array([[not r.fail_blockers for r in speed]]), alpha=thresholds.alpha, warn_q=thresholds.warn_q)
        for k, row in enumerate(speed):
            row.p_adjusted, row.q_value = float(result.p_adjusted[0, k]), float(result.q_value[0, k])
            row.verdict = _VERDICT[int(result.verdict[0, k])]
            if row.worse_rel <= -row.floor["rel"] and row.p_value >= 1 - thresholds.alpha:
                row.notes.append(f"improved by {-row.worse_rel:.1%}")


_VERDICT = {decision.PASS: PASS, decision.WARN: WARN, decision.FAIL: FAIL}


def _num(value: float | None) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None
