"""Baseline vs candidate -> a Report: one verdict per workload × gated metric, and an overall verdict.

Pure: no file I/O and no printing. Sides are loaded, and this is called, by the one judge (gate.judging.judge);
reports are rendered by gate.render.renderer. The row tests live in gate.judging.accuracy_rows and gate.judging.speed_rows.

The rules (docs/design.md), in the order they apply to a row:

1. INCOMPLETE: the workload is missing, or any of its runs is incomplete, on either side. Means are
   over the complete runs only, labelled "k of N runs". Such a row can never pass.
2. NOT COMPARABLE: a fingerprint fact the row depends on differs (GPU, driver, freeze, dataset,
   evaluation input, model, MOSS token budget) and its kind was not allowed. The numbers are shown.
3. Accuracy with per-utterance data on both sides (same ids): paired sign-flip p (exact), widened by
   the A/A calibration's churn (Σd² plus the measured excess) when same-commit runs are not
   deterministic; paired bootstrap CI, worse/better counts. Without a dispersion record, when churn is
   possible, the row can WARN at most. Without per-sample data (or ids that do not pair): the
   maintainers' tolerance, labelled fallback.
4. Speed (gated: throughput and p95 latency; mean latency and RTF are shown, not gated): one-sided
   log-scale t over the runs kept (gate.stats.outliers: one rule, plain median; a worse candidate run set
   aside makes the row unstable, WARN at least). In one job σ comes from the A/B's own runs, pooled with
   the A/A calibration when that is fresh and agrees; a stale calibration is left out. Across jobs σ is
   the calibration's plus the between-job variance, and the row can WARN at most: a whole job running
   slower cannot be told from a regression there (gate.judging.speed_rows.speed_blockers); it also says when the
   calibration is missing, stale, short of cross-job pairs or disagrees with the sides' spread. Each gated
   row states its minimum detectable effect and is "blind" past 3x its floor.
5. The decision per model and family (gate.stats.decision): FAIL = Holm-adjusted p <= alpha AND the floor
   reached (and the row may fail); WARN = BH q <= warn_q (speed: speed_warn_q) AND half the floor reached, or a newly
   catastrophic utterance (accuracy). Improvements are reported, never gated. The judge sets alpha per
   look (gate.stats.looks.thresholds_for).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from math import comb
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from gate.formats.config import MetricSpec, Suite, Workload
from gate.formats.errors import InputError
from gate.formats.noise_model import MIN_CALIBRATION_DF, Dispersion
from gate.formats.reasons import CannotFail
from gate.formats.report import (
    COMOVING_SUFFIX,
    MAX_ID,
    MAX_RETRIED,
    MAX_TEXT,
    NO_RESULTS,
    REPORT_SCHEMA_VERSION,
    CalibrationCheck,
    CiRetry,
    CoverageEntry,
    CoverageProblem,
    CoverageSide,
    EnvDifference,
    Report,
    Row,
    SideInfo,
    SideKind,
    Statistics,
    Utterance,
    Within,
    clip,
)
from gate.formats.verdict import Verdict
from gate.judging import eligibility, few_sessions, floors, freshness, next_steps, rule, sensitivity
from gate.judging.accuracy_rows import judge_accuracy
from gate.judging.draft import Draft, new_row, plain_delta
from gate.judging.duet import Layout, judge_duet_speed, session_facts
from gate.judging.speed_rows import (
    judge_speed,
    model_agreement,
    model_calibrations,
    model_slow_starts,
    runs_of_model,
)
from gate.reading import comparability
from gate.reading.side import Side, WorkloadSide
from gate.stats import decision, slowmode
from gate.stats.performance import evidence
from gate.stats.speed import (
    SpeedNoise,
)
from gate.stats.thresholds import Thresholds


def statistics_of(thresholds: Thresholds, rows: Sequence[Row], seed: int) -> Statistics:
    return Statistics(quality_alpha=thresholds.quality_alpha, quality_warn_alpha=thresholds.warn_alpha,
                      quality_floor_abs=thresholds.quality_floor_abs, quality_floor_rel=thresholds.quality_floor_rel,
                      small_set_size=thresholds.small_set_size, small_set_floor_abs=thresholds.small_set_floor_abs,
                      quality_family_size=sum(1 for r in rows if r.family == "quality"),
                      speed_alpha=thresholds.alpha, warn_q=thresholds.warn_q, speed_warn_q=thresholds.speed_warn_q,
                      speed_family_size=sum(1 for r in rows if r.family == "speed"),
                      min_calibration_df=MIN_CALIBRATION_DF, n_boot=thresholds.n_boot, seed=seed)


def compare(base: Side, cand: Side, suite: Suite, *, models: Sequence[str] | None = None,
            allow_diff: Iterable[str] = (), seed: int = 0, thresholds: Thresholds = Thresholds(),
            calibration: Mapping[str, Mapping[str, Any]] | None = None, cross_job: bool | None = None,
            calibration_check: CalibrationCheck | None = None, run_order: bool = True,
            duet: Layout | None = None) -> Report:
    """Judge `cand` against `base`. `calibration` defaults to the baseline's (else the candidate's).

    `cross_job`: the two sides ran in different jobs (a stored baseline, two nightlies), so a job effect adds
    to the variance of every speed difference. Default: True when either side is a baseline file, False for
    two trees (gate run's interleaved A/B).

    `calibration_check` (gate.judging.freshness): a calibration stale for the candidate's GPU, driver or packages is
    left out in one job and named on every speed row across jobs; the check is kept in the report.

    `run_order`: where the runs sat in the job is known (gate run's interleave, its run log), so σ is taken after
    the run-position terms (gate.stats.drift). Two trees by hand do not record it (issue 39): σ without them, and
    with fewer than 4 runs an arm untrimmed and without slow-mode starts (gate.stats.speed.trims).
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
    stale = bool(calibration_check and calibration_check.status == "stale")
    stale_notes: tuple[str, ...] = ()
    if calibration_check and freshness.left_out(stale, cross_job):
        # In one job a stale σ is not used at all (as `gate run` does for its looks): the rows judge by what
        # the job itself measured, and say why the calibration was left out.
        calibration = {}
        stale_notes = (f"calibration stale, not used in this job: {'; '.join(calibration_check.reasons)}",)
    pair = _Pair(base, cand, suite, calibration or {}, cross_job, run_order, stale, stale_notes, seed, thresholds, duet)
    drafts: list[Draft] = []
    coverage: list[CoverageEntry] = []
    utterances: list[Utterance] = []
    for workload in workloads:
        wb, wc = base.workloads.get(workload.id), cand.workloads.get(workload.id)
        coverage.append(CoverageEntry(workload=clip(workload.id, MAX_ID), baseline=_coverage(wb, base),
                                      candidate=_coverage(wc, cand)))
        blocking = comparability.blocking_kinds(differences, workload.id, allowed)
        for metric in workload.metrics:
            if metric.tested:
                made = _judge_row(pair, workload, metric, wb, wc, utterances)
                drafts += _not_comparable(made, blocking)
    _decide(drafts, thresholds)
    for draft in drafts:
        next_steps.assign(draft, cross_job, duet=pair.duet is not None)
    rows = tuple(d.freeze() for d in drafts)
    return Report(schema_version=REPORT_SCHEMA_VERSION, suite=suite.name,
                  verdict=Verdict.worst(r.verdict for r in rows), models=chosen,
                  baseline=_side_info(base, workloads), candidate=_side_info(cand, workloads), rows=rows, coverage=tuple(coverage),
                  environment_diff=tuple(_difference(d, allowed) for d in differences), allowed_diff=allowed,
                  utterances=tuple(utterances), statistics=statistics_of(thresholds, rows, seed),
                  calibration_checks=(replace(calibration_check, blocks_fail=stale and cross_job),)
                  if calibration_check else ())


@dataclass(frozen=True)
class _Pair:
    """What every row of one comparison is judged with: the sides, the suite, the noise and how the sides ran."""

    base: Side
    cand: Side
    suite: Suite
    calibration: Mapping[str, Mapping[str, Any]]
    cross_job: bool
    run_order: bool
    stale: bool  # the calibration is stale for the candidate's GPU, driver or packages
    stale_notes: tuple[str, ...]  # in one job: why it was left out
    seed: int
    thresholds: Thresholds
    duet: Layout | None = None  # --design duet: speed is judged on the sessions' paired differences


def _judge_row(pair: _Pair, workload: Workload, metric: MetricSpec, wb: WorkloadSide | None,
               wc: WorkloadSide | None, utterances: list[Utterance]) -> Draft:
    """One workload × metric: INCOMPLETE without complete runs on both sides, else tested (accuracy rows add the
    utterances they name to `utterances`)."""
    row = new_row(workload, metric, wb, wc)
    base, cand, suite = pair.base, pair.cand, pair.suite
    if not (wb and wc and wb.complete and wc.complete):
        row.verdict = Verdict.INCOMPLETE
        row.method = "not tested: coverage"
        row.notes.append(_unrooted(_unrooted(_incomplete_reason(wb, wc), base), cand))
        plain_delta(row)
    elif metric.kind == "accuracy":
        dispersion = pair.calibration.get(workload.id, {}).get(metric.name)
        utterances += judge_accuracy(row, workload, metric, wb, wc, suite, pair.thresholds, pair.seed,
                                     dispersion if isinstance(dispersion, Dispersion) else None, pair.cross_job)
    elif pair.duet is not None:  # --design duet: the sessions' facts (gate.judging.duet), the same rule decides
        judge_duet_speed(row, metric, session_facts(wb, wc, metric.name, pair.duet.for_model(workload.model)))
    else:
        found = model_calibrations(pair.calibration, suite, workload.model, metric.name)
        # sources: "3 A/A pairs + 14 nights" when nightly runs are pooled into σ, else ""
        own, at = runs_of_model(base, cand, suite, workload.model, metric.name)
        base_own, base_at = runs_of_model(base, None, suite, workload.model, metric.name, partner=cand)
        # in one job the runs' positions in the interleave are known: σ after a run-position term
        whole = _whole_model(base, cand, suite, workload.model)
        one_job = not pair.cross_job
        # one slow-mode set per model where gate run's order is known (trees by hand: per metric, issue 39's)
        slow = model_slow_starts(base, cand, suite, workload.model, pair.run_order) if whole and one_job else None
        agreement = model_agreement(pair.calibration, base, cand, suite, workload, whole, pair.run_order, slow) \
            if one_job else (None, None)
        judge_speed(row, metric, SpeedNoise.pooled(found), pair.cross_job, pair.stale_notes, sources=evidence(found),
                    own_arms=own, base_arms=base_own,
                    positions=(at, base_at) if one_job and pair.run_order else None,
                    whole_model=whole, slow_starts=slow, run_log=pair.run_order,
                    more_runs_follow=pair.thresholds.more_runs_follow, stale=pair.stale, agreement=agreement)
    return row


def _not_comparable(row: Draft, blocking: Sequence[str]) -> list[Draft]:
    """The row (and its co-moving group's row) made NOT COMPARABLE where a fact it depends on differs."""
    made = [row, row.group] if row.group is not None else [row]
    for draft in made:
        if blocking and draft.verdict is not Verdict.INCOMPLETE:
            draft.verdict = Verdict.NOT_COMPARABLE
            draft.family = None
            draft.differs = tuple(blocking)
    return made


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
                            reasons=(CoverageProblem(NO_RESULTS, "no results for this workload"),))
    return CoverageSide(complete=w.complete, runs_present=len(w.runs), runs_complete=len(w.complete_runs()),
                        expected_runs=max(expected, len(w.runs)),
                        reasons=tuple(_problem(p, side) for p in w.problems[:50]))


def _problem(problem: Any, side: Side) -> CoverageProblem:
    """A coverage problem with the side's own folder in place of its absolute path (reports are published)."""
    found = CoverageProblem.of(problem)
    return replace(found, message=_unrooted(found.message, side),
                   path=None if found.path is None else _unrooted(found.path, side))


def _unrooted(text: str, side: Side) -> str:
    """`text` with the side's absolute location shown as its folder name: no runner path in a published text."""
    if not side.path:
        return text
    root = Path(side.path)
    for shown in dict.fromkeys((str(root.resolve()), str(root.absolute()), str(root))):
        if shown not in (".", "") and shown in text:
            text = text.replace(shown, root.name or shown)
    return text


def _incomplete_reason(wb: WorkloadSide | None, wc: WorkloadSide | None) -> str:
    parts = []
    for name, w in (("baseline", wb), ("candidate", wc)):
        if w is None:
            parts.append(f"{name}: no results")
        elif not w.complete:
            parts.append(f"{name}: {w.problems[0].line}" + (f" (+{len(w.problems) - 1} more)" if len(w.problems) > 1 else ""))
    return "incomplete (" + "; ".join(parts) + "); means are over the complete runs only"


def _side_info(side: Side, workloads: Sequence[Workload]) -> SideInfo:
    # The folder or file name only: a report never shows a local absolute path.
    retried = [CiRetry(workload=clip(w.id, MAX_ID), run=clip(run, MAX_ID), read=clip(a.read, 40),
                       earlier=tuple(clip(e, 40) for e in a.earlier[:20]))
               for w in workloads if w.id in side.workloads
               for run, a in side.workloads[w.id].attempts.items() if a.earlier]
    return SideInfo(kind=SideKind(side.kind).value, name=clip(Path(side.path).name, MAX_ID) if side.path else None,
                    commit=clip(side.commit, MAX_ID) if side.commit else None, runs=len(side.runs),
                    calibrated=bool(side.calibration), retried=tuple(retried[:MAX_RETRIED]))


def _difference(d: comparability.Difference, allowed: tuple[str, ...]) -> EnvDifference:
    return EnvDifference(kind=d.kind, workload=None if d.workload is None else clip(d.workload, MAX_ID),
                         item=clip(d.item, MAX_ID),
                         baseline=None if d.baseline is None else clip(d.baseline, MAX_TEXT),
                         candidate=None if d.candidate is None else clip(d.candidate, MAX_TEXT),
                         known=d.known, blocking=d.known and d.kind not in allowed,
                         within=_within(comparability.disagrees_within(d)))


def _within(side: str | None) -> Within | None:
    return None if side is None else Within(side)


# --- the decision over families --------------------------------------------------------------------------------

def _decide(rows: list[Draft], thresholds: Thresholds) -> None:
    """Holm FAIL and BH WARN per model and family (gate.stats.decision); a newly catastrophic utterance WARNs
    at least. Each model is its own family: CI judges each model in its own job and check, so a model's verdict
    must not depend on which other models share the tree (and `Report.merge` of per-model reports equals one
    compare of them all). The all-model false-FAIL rate this gives is measured by benchmarks/verdict_power.py."""
    for model in dict.fromkeys(r.workload.model for r in rows):
        _decide_quality([r for r in rows if r.workload.model == model and r.family == "quality"], thresholds)
        _decide_speed([r for r in rows if r.workload.model == model and r.family == "speed"], thresholds)


def _whole_model(base: Side, cand: Side, suite: Suite, model: str) -> bool:
    """Every workload of the model complete on both sides (gate.judging.speed_rows.judge_speed's `whole_model`)."""
    return all((side.workloads.get(w.id) is not None and side.workloads[w.id].complete)
               for w in suite.workloads_for((model,)) for side in (base, cand))


def _decide_quality(quality: list[Draft], thresholds: Thresholds) -> None:
    if not quality:
        return
    alpha, warn_q = rule.levels(thresholds, "quality")
    _hidden_groups(quality, alpha)
    weights = _quality_weights(quality)
    _hold_to_the_exact_ps(quality, weights, alpha)
    p = np.array([[r.p_value for r in quality]], dtype=float)
    result = rule.family(
        decision.weighted(p, np.array([weights])), np.array([[r.above_floor for r in quality]]),
        np.array([[r.above_half_floor for r in quality]]), np.array([[r.can_fail for r in quality]]),
        alpha=alpha, warn_q=warn_q,
        catastrophic=np.array([[r.new_catastrophic for r in quality]]), forced=_few_sessions(quality))
    seen = sensitivity.sensitivity(np.array([[math.nan if r.se is None else r.se for r in quality]]), None,
                                   _quality_floors(quality), np.ones((1, len(quality)), bool), alpha=alpha,
                                   family="quality")
    for k, row in enumerate(quality):
        assert row.p_value is not None
        _take(row, result, k)
        row.few_sessions = bool(result.forced[0, k])  # the few-session rule FAILed what Holm could not
        if row.verdict is Verdict.PASS and row.p_value <= thresholds.warn_alpha and not row.above_half_floor:
            row.notes.append("significant but below the floors")
        if row.se is not None:
            row.mde, row.blind = float(seen.mde[0, k]), bool(seen.blind[0, k])


def _few_sessions(quality: list[Draft]) -> np.ndarray:
    """The rows the few-session rule FAILs (gate.judging.few_sessions), a co-moving group's own row left alone."""
    return few_sessions.fires(np.array([[r.candidate.n_samples or 0 for r in quality]]),
                              np.array([[r.delta_abs or 0.0 for r in quality]]),
                              np.array([[r.new_catastrophic for r in quality]]), np.array([[_p(r) for r in quality]]),
                              whole=np.array([[r.subset is None for r in quality]]))


def _quality_floors(quality: list[Draft]) -> np.ndarray:
    """Each row's floors as a rate (gate.judging.floors.quality_floor): what its MDE is weighed against."""
    return floors.quality_floor(np.array([[r.floor_abs or 0.0 for r in quality]]),
                                np.array([[r.floor_rel or 0.0 for r in quality]]),
                                np.array([[r.base_rate or 0.0 for r in quality]]))


def _hold_to_the_exact_ps(quality: list[Draft], weights: list[float], alpha: float) -> None:
    """Where a row has the runs' exact p, a FAIL needs it too, at the row's own Holm first step (_hidden_groups: why;
    gate.judging.eligibility.exact_p_blockers)."""
    exact = eligibility.exact_p_blockers(np.array([[math.nan if r.p_exact is None else r.p_exact for r in quality]]),
                                         np.array([weights]), sum(weights),
                                         np.array([[r.own_churn is not None for r in quality]]), alpha=alpha)
    for k, row in enumerate(quality):
        if exact.blockers[CannotFail.RUNS_EXACT_P][0, k]:
            _hold_to_the_exact_p(row, float(exact.level[0, k]))


def _hold_to_the_exact_p(row: Draft, level: float) -> None:
    """A row whose runs' exact permutation p is above its level can WARN at most: more runs decide."""
    if row.p_exact is None or not row.can_fail:
        return
    ways = comb(row.baseline.n_used + row.candidate.n_used, row.candidate.n_used)
    row.blockers += (CannotFail.RUNS_EXACT_P,)
    row.next_step = next_steps.MORE_RUNS
    swing = ("the group swings as one" if row.subset is not None
             else "utterances churn together in the model's own runs, so the runs' error totals decide")
    row.notes.append(f"{swing}: over its {row.baseline.n_used} + {row.candidate.n_used} runs the exact "
                     f"permutation p is {row.p_exact:.2g}, above {level:.2g} (α over the model's accuracy "
                     f"rows; at least 1/{ways} with this many runs)")


def _quality_weights(quality: list[Draft]) -> list[float]:
    """Each accuracy measure of a workload holds weight 1 in its model's family; where a co-moving group has its own
    row the measure's weight is split between the rest and the group by their numbers of utterances (issue 36;
    gate.judging.eligibility.quality_weights), so the group's row costs the other rows a group's share of α, not a
    whole row's (weighted Holm and BH: gate.stats.decision.weighted). Without the split +0.15 pp spread uniformly
    under hostile churn was caught 25.3% of the time against 33.3% without the group's row (300 PRs, the same draws)."""
    whole = [r for r in quality if r.subset is None]
    groups = {(r.workload.id, r.metric.name): r for r in quality if r.subset is not None}
    found = [groups.get((r.workload.id, r.metric.name + COMOVING_SUFFIX)) for r in whole]
    rest, share = eligibility.quality_weights(np.array([[r.candidate.n_samples or 0 for r in whole]]),
                                              np.array([[0 if g is None else g.candidate.n_samples or 0 for g in found]]),
                                              np.array([[g is not None for g in found]]))
    weight = {id(r): float(rest[0, k]) for k, r in enumerate(whole)}
    weight.update({id(g): float(share[0, k]) for k, g in enumerate(found) if g is not None})
    return [weight[id(r)] for r in quality]


def _hidden_groups(quality: list[Draft], alpha: float) -> None:
    """Rows judged on each side's own runs, where the model's runs show utterances churning together
    (gate.stats.overdispersion: `comovement_p`): a group that stayed put within each side could split them like a real
    change. Where that is more likely than α (`hidden_split_p`) the row cannot FAIL; where it is not, the row's FAIL
    also needs the exact permutation p of the runs' error totals (`p_exact`, held in _decide_quality): the widened
    test's excess comes from those same few runs, and a group's swing is a few large steps, not a bell. A swing that
    size reaches the floors, which then no longer hold a no-op back, so that p is held to what `gate run`'s two looks
    spend, gate.stats.looks.TWO_LOOKS_ALPHA, as one job's speed rows are (gate.judging.judge.one_look_thresholds).
    Under hostile churn at the runbook's 6 + 6 the widened test alone FAILed 2.3% of no-op PRs, with the exact p at
    the one-look α 1.1%, at TWO_LOOKS_ALPHA 0.2% (5,000 PRs; benchmarks/results/verdict_power_runbook.md)."""
    own = [r for r in quality if r.own_churn is not None]
    if not own:
        return
    churn = [r.own_churn for r in own if r.own_churn is not None]
    found = eligibility.hidden_groups(np.array([[c.ss_total for c in churn]]), np.array([[c.ss_units for c in churn]]),
                                      np.array([[c.df for c in churn]]), np.ones((1, len(churn)), bool),
                                      np.array([[c.base_runs for c in churn]]), np.array([[c.cand_runs for c in churn]]),
                                      alpha=alpha)
    for k, (row, c) in enumerate(zip(own, churn, strict=True)):
        if found.exact[0, k]:
            row.p_exact = c.run_p
            continue
        if not found.blockers[CannotFail.HIDDEN_GROUP][0, k] or not row.can_fail:
            continue
        row.blockers += (CannotFail.HIDDEN_GROUP,)
        row.next_step = c.step
        row.notes.append(f"utterances churn together in the model's own runs (p {float(found.p[0]):.2g}), and a group "
                         f"that stayed put within each side's {c.base_runs} + {c.cand_runs} runs would split the sides "
                         f"like a real change as often as {float(found.split[0, k]):.2g} (above α {alpha:g})")


def _decide_speed(speed: list[Draft], thresholds: Thresholds) -> None:
    if not speed:
        return
    # A FAIL must also show on σ from the A/B's own runs alone (gate.stats.speed.own_runs_p), at the look's α, or
    # over the model's gated speed rows where those runs are few: the first look of `gate run`
    # (Thresholds.own_runs_bonferroni). A calibration that understates σ cannot carry a FAIL the runs do not show.
    # Across jobs a speed row WARNs at most anyway (gate.judging.speed_rows.speed_blockers).
    alpha, warn_q = rule.levels(thresholds, "speed")
    own_level = eligibility.own_runs_level(alpha, len(speed), thresholds.own_runs_bonferroni)
    _hold_to_the_runs(speed, thresholds, own_level)
    above, half = floors.speed_reaches(np.array([[r.worse_rel for r in speed]], dtype=float),
                                       np.array([[r.floor_rel or 0.0 for r in speed]]))
    result = rule.family(
        np.array([[r.p_value for r in speed]], dtype=float), above, half,
        np.array([[r.can_fail for r in speed]]), alpha=alpha, warn_q=warn_q,
        unstable=np.array([[r.unstable for r in speed]]))
    _speed_sensitivity(speed, alpha, own_level)
    for k, row in enumerate(speed):
        _take(row, result, k)


def _p(row: Draft) -> float:
    return math.nan if row.p_value is None else row.p_value


def _take(row: Draft, result: rule.Verdicts, k: int) -> None:
    """Row k of the family's one comparison (B = 1): its verdict, cause, adjusted p and q."""
    row.p_adjusted, row.q_value = float(result.p_adjusted[0, k]), float(result.q_value[0, k])
    row.verdict, row.warn_cause = _VERDICT[int(result.verdict[0, k])], rule.CAUSES[int(result.cause[0, k])]


def _hold_to_the_runs(speed: list[Draft], thresholds: Thresholds, own_level: float) -> None:
    """A row below α whose runs do not carry it can WARN at most (gate.judging.eligibility.speed_confirmation_blockers):
    the A/B's own runs alone do not reach `own_level`, or candidate runs have every workload slower alike."""
    # the first look of `gate run` is the one with own_runs_bonferroni (gate.stats.looks.thresholds_for)
    alike = [bool(slowmode.fail_blocker(np.arange(r.slower_alike[1]) < r.slower_alike[0], np.ones(r.slower_alike[1], bool),
                                        thresholds.own_runs_bonferroni))
             for r in speed]
    found = eligibility.speed_confirmation_blockers(
        np.array([[_p(r) for r in speed]]), np.array([[math.nan if r.p_own is None else r.p_own for r in speed]]),
        np.array([alike]), alpha=thresholds.alpha, own_level=own_level,
        has_own=np.array([[r.p_own is not None for r in speed]]))
    for k, row in enumerate(speed):
        if found[CannotFail.OWN_RUNS_DO_NOT_CONFIRM][0, k]:
            assert row.p_own is not None
            shown = "no own-runs σ" if math.isnan(row.p_own) else f"p = {row.p_own:.2g}"
            row.blockers += (CannotFail.OWN_RUNS_DO_NOT_CONFIRM,)
            row.notes.append(f"the A/B's own runs alone: {shown}, not ≤ {own_level:.3g}")
        if found[CannotFail.SLOWER_ALIKE][0, k]:
            count, runs = row.slower_alike
            row.blockers += (CannotFail.SLOWER_ALIKE,)
            row.notes.append(f"{count} of the candidate's {runs} runs have every workload slower alike")


def _speed_sensitivity(speed: list[Draft], alpha: float, own_level: float) -> None:
    """Each row's MDE at Holm's first step, what it detects and whether it is blind (gate.judging.sensitivity)."""
    def value(v: float | None) -> float:
        return math.nan if v is None else float(v)

    se, df = np.array([[value(r.se) for r in speed]]), np.array([[value(r.df) for r in speed]])
    seen = sensitivity.sensitivity(se, df, np.array([[r.floor_rel or 0.0 for r in speed]]),
                                   np.ones((1, len(speed)), bool), alpha=alpha, family="speed")
    # the own runs' test bounds what a row detects where its se and df are both known
    own = [r.own_se_df if r.own_se_df is not None and all(math.isfinite(v) for v in r.own_se_df) else
           (math.nan, math.nan) for r in speed]
    found = sensitivity.detects(se, df, seen.level, np.array([[s for s, _ in own]]), np.array([[d for _, d in own]]),
                                own_level)
    for k, row in enumerate(speed):
        if row.se is None or row.df is None:
            continue
        row.mde, row.detects_mde = float(seen.mde[0, k]), float(found[0, k])
        row.blind = bool(seen.blind[0, k])


_VERDICT = {decision.PASS: Verdict.PASS, decision.WARN: Verdict.WARN, decision.FAIL: Verdict.FAIL}

