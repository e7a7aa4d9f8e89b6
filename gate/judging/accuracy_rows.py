"""Accuracy rows (docs/design.md §Accuracy): paired per-utterance tests, widened by A/A churn; the maintainers'
tolerance when per-sample data does not pair."""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from gate.formats.config import MetricSpec, Suite, Workload
from gate.formats.noise_model import Dispersion
from gate.formats.reasons import CannotFail
from gate.formats.report import (
    COMOVING_SUFFIX,
    MAX_ID,
    MAX_TEXT,
    Basis,
    SideStats,
    Subset,
    Utterance,
    Why,
    clip,
)
from gate.formats.verdict import Verdict
from gate.judging import eligibility, few_sessions, floors, next_steps
from gate.judging.draft import Draft, OwnChurn, plain_delta
from gate.reading.side import MeasureSamples, WorkloadSide
from gate.stats.distributions import t_isf
from gate.stats.overdispersion import (
    OWN_MIN_DF,
    churn_possible,
    group_spread,
    group_test,
    own_runs,
    run_permutation_p,
    widened_p,
)
from gate.stats.quality import CATASTROPHIC_MIN_JUMP, paired_quality_test, sign_flip_p
from gate.stats.thresholds import Thresholds

MAX_UTTERANCES_PER_ROW = 8


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


def judge_accuracy(row: Draft, workload: Workload, metric: MetricSpec, wb: WorkloadSide, wc: WorkloadSide, suite: Suite,
              thresholds: Thresholds, seed: int, dispersion: Dispersion | None, cross_job: bool) -> list[Utterance]:
    plain_delta(row)
    paired = _pair(metric.samples, wb, wc)
    if isinstance(paired, _Unpaired):
        _accuracy_fallback(row, metric, suite, paired.reason)
        return []
    test = paired_quality_test(paired.base_errors, paired.cand_errors, paired.ref_len, n_boot=thresholds.n_boot,
                               n_flips=thresholds.n_flips, seed=seed)
    n = len(paired.ids)
    small = n <= thresholds.small_set_size
    row.floor_abs = float(floors.quality_floor_abs(n, small_set_size=thresholds.small_set_size,
                                                   small_set_floor_abs=thresholds.small_set_floor_abs,
                                                   floor_abs=thresholds.quality_floor_abs))
    row.floor_rel = thresholds.quality_floor_rel
    row.baseline = SideStats.of(row.baseline.values, row.baseline.used, row.baseline.expected_runs, n)
    row.candidate = SideStats.of(row.candidate.values, row.candidate.used, row.candidate.expected_runs, n)
    row.delta_abs, row.delta_rel, row.base_rate = test.delta, test.delta_rel, test.base_rate
    row.n_worse, row.n_better = test.n_worse, test.n_better
    row.above_floor = _reaches(test.delta, test.base_rate, row.floor_abs, row.floor_rel, 1.0)
    row.above_half_floor = _reaches(test.delta, test.base_rate, row.floor_abs, row.floor_rel, floors.WARN_SHARE)
    row.new_catastrophic = len(test.new_catastrophic)
    row.above_half = tuple(float(np.mean(few_sessions.above_half(e, paired.ref_len)))  # type: ignore[assignment]
                           for e in (paired.base_errors, paired.cand_errors))
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
    d, apart = test.d, ""
    rest = _not_comoving(paired.ids, dispersion)
    if rest is not None:
        # Utterances that churned together in the A/A runs are left out of the test (gate.stats.overdispersion);
        # the row's Δ and its CI stay those of the whole set.
        d, kept = test.d[rest], int(rest.sum())
        row.p_value, method = (sign_flip_p(d, scale=r_b * r_c, n_flips=thresholds.n_flips, seed=seed) if d.any()
                               else (1.0, "sign-flip (no change among them)"))
        apart = f"; {n - kept} {unit} that co-move in the A/A runs set aside"
        row.method = f"paired {method} over {kept} of {n} {unit}"
        # The floors too are held to the change without the group's swing: the change is estimated on the rest.
        total, base_total = float(paired.ref_len[rest].sum()), float(test.base_mean_errors[rest].sum())
        delta_rest, base_rest = float(d.sum()) / total, base_total / total
        row.above_floor = _reaches(delta_rest, base_rest, row.floor_abs, row.floor_rel, 1.0)
        row.above_half_floor = _reaches(delta_rest, base_rest, row.floor_abs, row.floor_rel, floors.WARN_SHARE)
        row.notes.append(f"tested without the {n - kept} {unit} that churned together in the A/A runs (they swing "
                         f"together from run to run): Δ without them {delta_rest * 100:+.3f} pp, the one held to the "
                         "floors; the row's Δ is the whole set's; the group has its own row")
        assert dispersion is not None
        row.group = _group_row(row, paired, test, ~rest, dispersion, unit)
    units = float((d ** 2).sum())  # the sign-flip's null variance of Σd; never dropped (issue 21)
    row.se = math.sqrt(units) / paired.ref_len.sum()
    if dispersion is not None and dispersion.widens:
        # Same-commit runs churn together (A/A calibration): their covariance widens the null, added to Σd²
        # (gate.stats.overdispersion).
        row.p_value = widened_p(float(d.sum()), units, dispersion, 1 / r_b + 1 / r_c)
        row.se = math.sqrt(units + (1 / r_b + 1 / r_c) * dispersion.excess) / paired.ref_len.sum()
        row.method = (f"paired test widened for correlated churn (φ {dispersion.phi:.2f}, {dispersion.arms} A/A "
                      f"arms, df {dispersion.df}; Σd² + excess) over {n} {unit}{apart}")
    elif dispersion is None and _churn_possible(paired):
        own = own_runs(paired.base_errors, paired.cand_errors)
        if own is not None:
            row.own_churn = OwnChurn(own.ss_total, own.ss_units, own.df, r_b, r_c,
                                     float(run_permutation_p(paired.base_errors.sum(axis=1),
                                                             paired.cand_errors.sum(axis=1))),
                                     next_steps.for_accuracy(cross_job))
        # no record, churn possible: too few runs to measure it from bars a FAIL (gate.judging.eligibility)
        if eligibility.churn_blockers(np.array([False]), np.array([True]),
                                      np.array([own is not None]))[CannotFail.NO_CHURN_RECORD][0]:
            # Nothing says how much the utterances churn together: the sign-flip's independence is an assumption
            # (correlated churn would make it too liberal).
            row.blockers += (CannotFail.NO_CHURN_RECORD,)
            row.next_step = next_steps.for_accuracy(cross_job)
            row.notes.append(f"same-commit transcripts not shown identical, and fewer than {OWN_MIN_DF // 2 + 1} runs "
                             "a side to measure the churn from")
        if own is not None and own.widens:
            # Each side's same-commit runs are A/A evidence (gate.stats.overdispersion.own_runs).
            row.p_value = widened_p(float(d.sum()), units, own, 1 / r_b + 1 / r_c)
            row.se = math.sqrt(units + (1 / r_b + 1 / r_c) * own.excess) / paired.ref_len.sum()
            row.method = (f"paired test widened for correlated churn measured in each side's own runs (φ "
                          f"{own.phi:.2f}, {r_b} + {r_c} runs, df {own.df}; Σd² + excess) over {n} {unit}{apart}")
        elif own is not None:
            row.method += f"; churn independent in each side's own runs ({r_b} + {r_c} runs, df {own.df})"
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


def _group_row(row: Draft, paired: _Paired, test, group: np.ndarray, dispersion: Dispersion, unit: str) -> Draft:
    """The co-moving group's own row (issue 36): never dropped, tested against its own A/A spread (pooled with each
    side's own runs: gate.stats.overdispersion.group_test), its Δ shown as its share of the workload's rate, held to
    the workload's floors. The whole set's row tests the rest; together they see a change wherever it is put."""
    total_ref = float(paired.ref_len.sum())
    b_runs, c_runs = paired.base_errors[:, group].sum(axis=1), paired.cand_errors[:, group].sum(axis=1)
    r_b, r_c = len(b_runs), len(c_runs)
    shift = float(test.d[group].sum())  # Σ d_i over the group: the change in its mean total errors
    own_ss, own_df = group_spread(b_runs, c_runs)
    p, se, df = (float(v) for v in group_test(shift, own_ss, own_df, dispersion.group_ss, dispersion.group_df,
                                              1 / r_b + 1 / r_c))
    k = int(group.sum())
    out = Draft(workload=row.workload, metric=replace(row.metric, name=row.metric.name + COMOVING_SUFFIX),
                baseline=SideStats.of(tuple(float(v) / total_ref for v in b_runs), (True,) * r_b, row.baseline.expected_runs, k),
                candidate=SideStats.of(tuple(float(v) / total_ref for v in c_runs), (True,) * r_c, row.candidate.expected_runs, k),
                subset=Subset.COMOVING.value, family="quality", basis=Basis.PAIRED, floor_abs=row.floor_abs,
                floor_rel=row.floor_rel, base_rate=row.base_rate)
    delta = shift / total_ref
    out.delta_abs = delta
    out.delta_rel = None if not row.base_rate else delta / row.base_rate
    out.n_worse, out.n_better = int((test.d[group] > 0).sum()), int((test.d[group] < 0).sum())
    base = row.base_rate or 0.0
    out.above_floor = _reaches(delta, base, out.floor_abs or 0.0, out.floor_rel or 0.0, 1.0)
    out.above_half_floor = _reaches(delta, base, out.floor_abs or 0.0, out.floor_rel or 0.0, floors.WARN_SHARE)
    shown = f"{k} {unit} that churned together in the A/A runs, judged on their own"
    if math.isfinite(p):
        out.p_value, out.se, out.df = p, se / total_ref, int(df)
        out.p_exact = float(run_permutation_p(b_runs, c_runs))  # a FAIL needs it too (gate.judging.compare)
        half = float(t_isf(0.025, max(df, 1.0))) * se / total_ref
        out.ci, out.ci_kind = (delta - half, delta + half), "delta_abs"
        out.method = (f"t on the group's total errors against their own run-to-run spread (A/A df {dispersion.group_df}"
                      f" + own runs df {own_df}; a FAIL also needs the runs' exact permutation p, {out.p_exact:.2g}) "
                      f"over {k} {unit}")
        out.notes.append(f"{shown}: Δ is their share of the workload's rate, held to its floors")
    else:
        # a record written before the group's spread was kept: the sign-flip over the group, which its swing makes
        # too liberal, so WARN at most
        out.p_value = sign_flip_p(test.d[group], scale=r_b * r_c)[0] if test.d[group].any() else 1.0
        out.se = math.sqrt(float((test.d[group] ** 2).sum())) / total_ref
        out.blockers += (CannotFail.GROUP_SPREAD_UNRECORDED,)
        out.next_step = next_steps.CALIBRATE
        out.method = f"paired sign-flip over {k} {unit} (no A/A spread of the group recorded)"
        out.notes.append(shown)
    return out


def _not_comoving(ids: tuple[str, ...], dispersion: Dispersion | None) -> np.ndarray | None:
    """The utterances to test when the A/A runs found some that co-move (a mask over `ids`); None for all."""
    if dispersion is None or not dispersion.comoving:
        return None
    together = set(dispersion.comoving)
    rest = np.fromiter((i not in together for i in ids), dtype=bool, count=len(ids))
    return rest if 0 < rest.sum() < len(ids) else None


def _churn_possible(paired: _Paired) -> bool:
    """Churn is possible unless each side ran twice or more and its runs gave identical errors everywhere."""
    return bool(churn_possible(paired.base_errors, paired.cand_errors))


def _reaches(delta: float, base_rate: float, floor_abs: float, floor_rel: float, share: float) -> bool:
    return bool(floors.quality_reaches(delta, base_rate, floor_abs, floor_rel, share))


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


def _accuracy_fallback(row: Draft, metric: MetricSpec, suite: Suite, reason: str) -> None:
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
            workload=clip(workload.id, MAX_ID), measure=measure, id=clip(utt, MAX_ID), why=Why(why),
            ref_len=int(paired.ref_len[i]), baseline_errors=float(test.base_mean_errors[i]),
            candidate_errors=float(test.cand_mean_errors[i]), reference=clip(reference, MAX_TEXT),
            baseline_hypothesis=clip(hyp_b or (reference if test.base_mean_errors[i] == 0 else ""), MAX_TEXT),
            candidate_hypothesis=clip(hyp_c or (reference if test.cand_mean_errors[i] == 0 else ""), MAX_TEXT)))
    return out


