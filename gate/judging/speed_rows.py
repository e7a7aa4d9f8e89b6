"""Speed rows (docs/design.md §Speed): log-scale tests with σ from the A/B's own runs in one job, the A/A
calibration across jobs; the ratio policy without either."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from gate.formats.config import MetricSpec, Suite
from gate.formats.noise_model import MIN_CALIBRATION_DF, Calibration
from gate.formats.reasons import UNSTABLE, CannotFail, WarnCause
from gate.formats.report import (
    Basis,
)
from gate.formats.verdict import Verdict
from gate.judging import eligibility
from gate.judging.draft import Draft, plain_delta
from gate.reading.side import Side
from gate.stats.drift import interleave_positions
from gate.stats.levels import SCREEN_P, STRONG_P
from gate.stats.outliers import MIN_RUNS_TO_CHOOSE
from gate.stats.performance import ratio_policy
from gate.stats.slowmode import model_slow_set, row_on_fast_mode
from gate.stats.speed import (
    ADVISED_PAIRS,
    OWN_DISAGREES,
    SOURCE_TEXT,
    SpeedNoise,
    across_jobs_noise,
    baseline_sigma,
    host_wild_share,
    joint_agreement,
    own_noise,
    own_runs_test,
    shift_test,
    trims,
)

# --- speed ------------------------------------------------------------------------------------------------------

# The note on a speed row of two trees without a run log whose arms are too short to trim σ or to find slow-mode
# starts in (gate.stats.speed.trims, issue 39); {runs}: the fewest runs an arm has.
UNTRIMMED = ("tested without trimming the runs' spread or looking for slow-mode server starts: with {runs} runs a side "
             "(fewer than {least}) and no run log, one slow run cannot be told from noise and no later look checks "
             "what would be set aside; runs 4-6 on both sides would let the row set such runs aside")


def speed_blockers(noise: SpeedNoise | None, n_base_runs: int, n_cand_runs: int, *,
                   cross_job: bool) -> tuple[CannotFail, ...]:
    """Why a speed row cannot FAIL on its noise estimate and runs (it can WARN at most); empty when it can. In one
    job `noise` is the σ in use (gate.stats.speed.own_noise); across jobs, the calibration, and there a speed row
    WARNs at most whatever it is (gate.judging.eligibility.speed_noise_blockers says why)."""
    found = eligibility.speed_noise_blockers(
        np.array([noise is not None]), np.array([noise is not None and noise.usable]),
        np.array([min(n_base_runs, n_cand_runs)]), np.array([ADVISED_PAIRS if noise is None else noise.cross_pairs]),
        cross_job=cross_job)
    return tuple(reason for reason, mask in found.items() if mask[0])


def _blocker_evidence(row: Draft, noise: SpeedNoise | None) -> None:
    """The numbers behind a row's noise blockers, as notes (the reasons themselves are words of gate.render)."""
    if CannotFail.FEW_SIGMA_DF in row.blockers and noise is not None:
        row.notes.append(f"σ has {noise.sigma_df} degrees of freedom (< {MIN_CALIBRATION_DF})")
    if CannotFail.FEW_CROSS_PAIRS in row.blockers and noise is not None:
        row.notes.append(f"{noise.cross_pairs} of the {ADVISED_PAIRS} cross-job A/A pairs that measure the job-to-job "
                         f"spread ({ADVISED_PAIRS - noise.cross_pairs} missing)")


def model_calibrations(calibration: Mapping[str, Mapping[str, Any]], suite: Suite, model: str,
                        metric: str) -> list[Calibration]:
    """The metric's speed calibrations over all the model's workloads (pooled: far more df than one's)."""
    found = [calibration.get(w.id, {}).get(metric) for w in suite.workloads_for((model,))]
    return [c for c in found if isinstance(c, Calibration)]


def arms_of_model(base: Side, cand: Side | None, suite: Suite, model: str, metric: str) -> np.ndarray:
    """ln(value) of every complete run of the model's workloads on both sides (the baseline's only when `cand`
    is None), (arms, runs), NaN-padded: the A/B's own evidence about σ in one job (gate.stats.speed.own_noise)."""
    return runs_of_model(base, cand, suite, model, metric)[0]


def runs_of_model(base: Side, cand: Side | None, suite: Suite, model: str, metric: str, *,
                  partner: Side | None = None) -> tuple[np.ndarray, np.ndarray]:
    """arms_of_model's arms and, alike, each run's position in the job (gate.stats.drift): where the two trees'
    run log places the model's runs (`places_in_job`: a re-measured run where it ran, after the runs before it), else
    from its side and run number in the interleave. `partner`: the candidate whose job the baseline's runs are
    placed in when `cand` is None (the baseline's arms alone)."""
    placed = places_in_job(base, cand if cand is not None else partner, model)
    arms, where, real = [], [], []
    for w in suite.workloads_for((model,)):
        for arm, side in enumerate((base, cand) if cand is not None else (base,)):
            ws = side.workloads.get(w.id)
            if ws is None or not ws.complete:
                continue
            complete = set(ws.complete_runs())
            kept = [(i, v) for i, v in enumerate(ws.values.get(metric, ())) if i in complete]
            if kept and all(v is not None and v > 0 and math.isfinite(v) for _, v in kept):
                arms.append(np.log(np.asarray([v for _, v in kept], dtype=float)))
                index = np.asarray([i for i, _ in kept])
                where.append(interleave_positions(int(index.max()) + 1, arm)[index].astype(float))
                real.append(None if placed is None else [placed[arm].get(ws.runs[i]) for i, _ in kept])
    if real and all(at is not None and None not in at for at in real):  # every run placed by the log, or none
        where = [np.asarray(at, dtype=float) for at in real]
    width = max((len(a) for a in arms), default=0)
    out, positions = np.full((len(arms), width), np.nan), np.zeros((len(arms), width))
    for k, (arm_runs, at) in enumerate(zip(arms, where, strict=True)):
        out[k, :len(arm_runs)] = arm_runs
        positions[k, :len(at)] = at
    return out, positions


def places_in_job(base: Side, cand: Side | None, model: str) -> tuple[Mapping[str, int], Mapping[str, int]] | None:
    """The model's runs' places in the job, (baseline's, candidate's) run label -> place, where both trees hold the
    run log of one A/B job as its first and second side (gate.reading.side.JobOrder) and it places the model's runs;
    None otherwise (trees by hand, or sides of different jobs): the interleave's slots then."""
    orders = (base.order, None if cand is None else cand.order)
    if orders[0] is None or orders[1] is None or orders[0].job != orders[1].job or (orders[0].arm, orders[1].arm) != (0, 1):
        return None
    if model not in orders[0].at or model not in orders[1].at:
        return None
    return orders[0].at[model], orders[1].at[model]


def model_slow_starts(base: Side, cand: Side, suite: Suite, model: str, run_order: bool = True) -> np.ndarray | None:
    """The model's slow-mode server starts, (2, runs), found once on its throughput rows (each workload's gated
    speed metric where higher is better) and set aside from EVERY speed row of the model (issue 36): a server start
    is slow or not for all it serves. Found per metric the sets differed (p95 adds its own noise), and a slow start
    the p95 rows kept made them "intermittent" (WARN) on no-op PRs. Only where the job's run order is known
    (`run_order`); the rule is gate.stats.slowmode.model_slow_set. None when the model has no such metric."""
    metrics = [m.name for w in suite.workloads_for((model,)) for m in w.metrics
               if m.kind == "speed" and m.gated and m.higher_is_better]
    if not metrics:
        return None
    arms, at = runs_of_model(base, cand, suite, model, metrics[0])
    return model_slow_set(arms, at, run_order=run_order)


def model_agreement(calibration: Mapping[str, Mapping[str, Any]], base: Side, cand: Side, suite: Suite,
                    workload: Any, whole_model: bool = False, run_log: bool = True,
                    slow_starts: np.ndarray | None = None) -> tuple[float | None, float | None]:
    """The joint F test (gate.stats.speed.joint_agreement) of the A/B's own spread against the calibration over
    the model's gated speed metrics, upper tail and lower tail; None when there is nothing to test. In one job only (σ after a run-position
    term, as the rows' own σ). `run_log`: as for judge_speed (σ untrimmed and no slow-mode starts where
    gate.stats.speed.trims says so)."""
    parts: list[tuple[np.ndarray, SpeedNoise | None]] = []
    where: list[np.ndarray | None] = []
    trim = True
    for metric in workload.metrics:
        if metric.kind != "speed" or not metric.gated:
            continue
        noise = SpeedNoise.pooled(model_calibrations(calibration, suite, workload.model, metric.name))
        arms, at = runs_of_model(base, cand, suite, workload.model, metric.name)
        trimmed = trims(arms, run_log)
        trim = trim and trimmed
        if whole_model and arms.size:  # σ on the fast mode, as the rows' own (judge_speed): no positions by hand
            arms = row_on_fast_mode(arms, at if run_log else None, higher_is_better=metric.higher_is_better,
                                    trim=trimmed, model_slow=slow_starts)[0]
        if noise is not None and noise.usable and arms.size:
            parts.append((arms, noise))
            where.append(at if run_log else None)  # trees without a run log record no positions (as the rows)
    if not parts:
        return None, None
    p = float(joint_agreement(parts, where, trim=trim))
    low = float(joint_agreement(parts, where, low_tail=True, trim=trim))
    return (p if math.isfinite(p) else None), (low if math.isfinite(low) else None)


@dataclass
class _Runs:
    """A speed row's runs as judge_speed works on them: the row's values on each side, the model's arms (own: both
    sides, base: the baseline's) with their positions in the job, and the slow-mode starts set aside from them."""

    b: list[float]
    c: list[float]
    own_arms: np.ndarray | None
    base_arms: np.ndarray | None
    own_at: np.ndarray | None
    base_at: np.ndarray | None
    trim: bool
    slow: np.ndarray | None = None
    kept: tuple[np.ndarray, np.ndarray] | None = None  # the runs the shift test kept, per side
    terms: np.ndarray | None = None  # (2, runs) the job's position terms in each side's runs (slowmode.steady_given)

    @property
    def has_own(self) -> bool:
        return self.own_arms is not None and bool(self.own_arms.size)

    def log(self) -> tuple[np.ndarray, np.ndarray]:
        """ln of each side's runs, less the job's position terms where they were found (`terms`)."""
        b, c = np.log(np.asarray(self.b, dtype=float))[None], np.log(np.asarray(self.c, dtype=float))[None]
        if self.terms is not None and self.terms.shape[-1] == b.shape[-1] == c.shape[-1]:
            return b - self.terms[0], c - self.terms[1]
        return b, c


def judge_speed(row: Draft, metric: MetricSpec, noise: SpeedNoise | None, cross_job: bool,
                stale_notes: tuple[str, ...] = (), *, sources: str = "", own_arms: np.ndarray | None = None,
                base_arms: np.ndarray | None = None, stale: bool = False,
                agreement: tuple[float | None, float | None] = (None, None),
                positions: tuple[np.ndarray, np.ndarray] | None = None, whole_model: bool = False,
                run_log: bool = True, slow_starts: np.ndarray | None = None, more_runs_follow: bool = False) -> None:
    """`positions`: where own_arms' and base_arms' runs sat in the job (one job only: gate.stats.drift).
    `whole_model`: every workload of the model is complete on both sides, so own_arms alternate base, candidate
    workload by workload and slow-mode server starts can be told (gate.stats.slowmode). `run_log`: the job's run
    log is there (`gate run`); without it (two trees by hand) and with fewer than 4 runs in an arm σ is the plain
    spread of the runs and no slow-mode start is looked for (gate.stats.speed.trims), and the row says so.
    `slow_starts`: the model's slow-mode starts found on its throughput rows (`model_slow_starts`), used for every
    speed row of the model where the runs match; else they are found on the row's own metric. `more_runs_follow`:
    `gate run`'s first look, where one worse candidate run makes the row unstable (gate.stats.speed)."""
    own_at, base_at = positions if positions is not None else (None, None)
    plain_delta(row)
    runs = _Runs(row.baseline.present, row.candidate.present, own_arms, base_arms, own_at, base_at,
                 trim=cross_job or own_arms is None or trims(own_arms, run_log))
    if _missing_values(row, metric, runs):
        return
    row.floor_rel = metric.floor_rel or 0.0
    _set_slow_starts_aside(row, runs, metric.higher_is_better, cross_job, whole_model, slow_starts)
    if not cross_job and runs.has_own:
        in_use, source = _noise_in_one_job(row, runs, noise, stale, agreement, stale_notes)
    else:
        in_use, source = _noise_across_jobs(row, runs, noise, cross_job, stale, metric.gated)
    _blocker_evidence(row, in_use)
    if in_use is not None and in_use.usable:
        # `noise`, the calibration, stays evidence of the host's wild runs
        _test_shift(row, metric, runs, in_use, noise, cross_job, more_runs_follow)
        row.method = _method(in_use, source, sources, cross_job)
        if runs.terms is not None and np.any(runs.terms != 0):  # Δ beside the raw medians differs: say why
            row.notes.append("Δ and the test are taken less the job's drift and warm-up terms; the medians are raw")
        _set_aside_notes(row, runs)
    else:
        _ratio_of_means(row, metric, runs)
    if not metric.gated:
        row.notes.append("shown, not gated")


def _missing_values(row: Draft, metric: MetricSpec, runs: _Runs) -> bool:
    """A side without a positive value in every run: INCOMPLETE, not tested."""
    missing = [name for name, values in (("baseline", runs.b), ("candidate", runs.c))
               if not values or any(v <= 0 for v in values)]
    if missing:
        row.verdict = Verdict.INCOMPLETE
        row.method = "not tested: missing values"
        row.notes.append(f"{' and '.join(missing)}: a run has no positive value for {metric.name}")
    return bool(missing)


def _set_slow_starts_aside(row: Draft, runs: _Runs, higher: bool, cross_job: bool, whole_model: bool,
                           slow_starts: np.ndarray | None) -> None:
    """Slow-mode server starts are found first and left out of everything after, σ included (gate.stats.slowmode);
    candidate runs with every workload slower alike are counted (an escaped slow mode still bars a FAIL). Untrimmed
    arms (gate.stats.speed.trims) look for no slow start, and the row says so."""
    own = runs.own_arms
    matches = whole_model and own is not None and own.shape[-1] == len(runs.b) == len(runs.c)
    if not runs.trim:
        assert own is not None
        present = ~np.isnan(own)
        least = int(present.sum(axis=-1)[present.any(axis=-1)].min(initial=own.shape[-1]))
        row.notes.append(UNTRIMMED.format(runs=least, least=MIN_RUNS_TO_CHOOSE))
    if cross_job or not matches:  # (untrimmed arms are never across jobs)
        return
    assert own is not None
    fast, slow, alike, terms = row_on_fast_mode(own, runs.own_at, higher_is_better=higher, trim=runs.trim,
                                                model_slow=slow_starts)
    row.slower_alike = (int(alike.sum()), int((~np.isnan(fast[1::2])).all(axis=0).sum()))
    if slow is None:  # untrimmed: no slow-mode start looked for
        return
    runs.own_arms, runs.slow, runs.terms = fast, slow, terms
    if runs.base_arms is not None and runs.base_arms.size and runs.base_arms.shape[-1] == slow.shape[-1]:
        runs.base_arms = np.where(slow[0], np.nan, runs.base_arms)


def _noise_in_one_job(row: Draft, runs: _Runs, noise: SpeedNoise | None, stale: bool,
                      agreement: tuple[float | None, float | None],
                      stale_notes: tuple[str, ...]) -> tuple[SpeedNoise | None, str]:
    """One job: the A/B's own runs carry σ; a fresh calibration that agrees adds degrees of freedom. The σ in use
    and where it came from, in words."""
    assert runs.own_arms is not None
    usable = noise if noise is not None and noise.usable else None
    upper, lower = agreement
    in_use, code, p_agree = own_noise(runs.own_arms, usable, stale=stale and usable is not None,
                                      agreement=None if upper is None else np.asarray(upper),
                                      positions=runs.own_at, agreement_low=None if lower is None else np.asarray(lower),
                                      trim=runs.trim)
    source = SOURCE_TEXT[int(code)]
    if int(code) == OWN_DISAGREES:
        noisier = lower is not None and lower < STRONG_P
        level = STRONG_P if noisier else SCREEN_P
        source += (f" (the calibration is noisier than the runs: F test over the model's gated speed metrics "
                   f"p = {float(p_agree):.2g} < {level})" if noisier else
                   f" (F test over the model's gated speed metrics p = {float(p_agree):.2g} < {SCREEN_P})"
                   if upper is not None else f" (F test p = {float(p_agree):.2g} < {SCREEN_P})")
    found = in_use if in_use.sigma_df > 0 else None
    row.blockers = speed_blockers(found, len(runs.b), len(runs.c), cross_job=False)
    row.notes.extend(stale_notes)  # in one job: why a stale calibration was left out (it blocks nothing)
    return found, source


def _noise_across_jobs(row: Draft, runs: _Runs, noise: SpeedNoise | None, cross_job: bool, stale: bool,
                       gated: bool) -> tuple[SpeedNoise | None, str]:
    """Across jobs (or without the A/B's own runs) the test rests on the calibration's σ; where the sides' own
    spread is larger beyond chance, their σ takes the within-job part (gate.stats.speed.across_jobs_noise), and
    the row says so. A stale calibration still in use blocks a FAIL (the header names why it is stale)."""
    row.blockers = speed_blockers(noise, len(runs.b), len(runs.c), cross_job=cross_job) + (
        (CannotFail.CALIBRATION_STALE,) if cross_job and stale and noise else ())
    row.across_jobs = cross_job and gated
    if noise is None or not noise.usable or not runs.has_own:
        return noise, ""
    assert runs.own_arms is not None
    in_use, p_cross = across_jobs_noise(runs.own_arms, noise)
    if in_use.sigma == noise.sigma:
        return in_use, ""
    row.blockers += (CannotFail.SPREAD_ABOVE_CALIBRATION,)
    row.notes.append(f"the sides' own spread disagrees with the calibration's σ (F test p = "
                     f"{float(p_cross):.2g} < {SCREEN_P}): σ from their runs")
    return in_use, "the sides' own runs, within each job (their spread is larger than the calibration's)"


def _test_shift(row: Draft, metric: MetricSpec, runs: _Runs, noise: SpeedNoise, calibration: SpeedNoise | None,
                cross_job: bool, more_runs_follow: bool) -> None:
    """The log-scale shift test on the σ in use (gate.stats.speed.shift_test), and the A/B's own-runs test a FAIL
    must also pass (gate.judging.compare holds it to the look's level)."""
    higher, slow, base_arms = metric.higher_is_better, runs.slow, runs.base_arms
    gap_sigma = baseline_sigma(base_arms, runs.base_at, trim=runs.trim) if base_arms is not None and base_arms.size \
        else None
    base_slow = None if slow is None or base_arms is None or base_arms.shape[-1] != slow.shape[-1] else slow[0]
    log_b, log_c = runs.log()
    test = shift_test(log_b, log_c, noise, higher_is_better=higher, cross_job=cross_job, gap_sigma=gap_sigma,
                      slow_mode=None if slow is None else slow[None], more_runs_follow=more_runs_follow,
                      wild_share=host_wild_share(base_arms, noise, calibration, gap_sigma, base_slow))
    low, high = test.ratio_ci(higher)
    row.basis = Basis.CALIBRATED
    row.p_value, row.ci, row.ci_kind = float(test.p[0]), (float(low[0]), float(high[0])), "ratio"
    row.worse_rel = float(test.worse_rel[0])
    row.delta_rel = math.exp(-float(test.worse[0]) if higher else float(test.worse[0])) - 1
    row.sigma, row.df, row.se = float(noise.sigma), int(round(float(test.df[0]))), float(test.se[0])
    row.family = "speed" if metric.gated else None
    if runs.own_arms is not None and runs.own_arms.size:
        p_own, se_own, df_own = own_runs_test(log_b, log_c, runs.own_arms, higher_is_better=higher,
                                              positions=runs.own_at, trim=runs.trim)
        row.p_own, row.own_se_df = float(p_own[0]), (float(se_own[0]), float(df_own[0]))
    found = eligibility.speed_run_blockers(test.favourable_set_aside, test.worse_set_aside, test.intermittent)
    row.blockers += tuple(reason for reason, mask in found.items() if mask[0])
    if any(mask[0] for reason, mask in found.items() if reason in UNSTABLE):
        row.unstable = True
    runs.kept = (test.kept_base[0], test.kept_cand[0])


def _method(noise: SpeedNoise, source: str, sources: str, cross_job: bool) -> str:
    """How the row was tested, in words: σ, where it came from, its df, one job or across jobs."""
    sigma = f"log-scale t, run-to-run σ {float(noise.sigma):.2%}"
    if source and cross_job:
        return f"{sigma} from {source}, df {int(noise.sigma_df)}, job effect from the calibration, across jobs"
    if source:
        return f"{sigma} from {source}, df {int(noise.sigma_df)}, one job"
    return f"{sigma} pooled over the model's workloads ({sources + ', ' if sources else ''}df {noise.sigma_df}), across jobs"


def _set_aside_notes(row: Draft, runs: _Runs) -> None:
    """The slow-mode starts and the wild runs left out of the test, each named."""
    slow = runs.slow
    assert runs.kept is not None
    if slow is not None and slow.any():
        starts = "; ".join(f"{side} run{'s' if slow[k].sum() > 1 else ''} "
                           + ", ".join(str(i + 1) for i in np.flatnonzero(slow[k]))
                           for k, side in enumerate(("baseline", "candidate")) if slow[k].any())
        row.notes.append(f"{int(slow.sum())} slow-mode server start{'s' if slow.sum() > 1 else ''} set aside "
                         f"({starts}): every workload of the model was slower in that run; judged on the fast mode")
    for arm, (side, values, kept) in enumerate((("baseline", runs.b, runs.kept[0]), ("candidate", runs.c, runs.kept[1]))):
        median = float(np.median(np.asarray(values, dtype=float)))
        for index in np.flatnonzero(~kept & (slow[arm] == 0 if slow is not None else True)):
            row.notes.append(f"{side} run {index + 1} set aside ({values[index]:.4g}, {values[index] / median - 1:+.0%} "
                             "from its arm's median): one wild run must not decide")


def _ratio_of_means(row: Draft, metric: MetricSpec, runs: _Runs) -> None:
    """No usable σ: the maintainers' ratio policy against the floor, WARN at most (gate.stats.performance)."""
    higher = metric.higher_is_better
    ratio, _ = ratio_policy(runs.b, runs.c, higher_is_better=higher, tolerance=row.floor_rel or 0.0)
    row.basis = Basis.UNCALIBRATED
    row.method = f"uncalibrated: ratio of means against the {row.floor_rel:.0%} floor"
    row.tolerance = row.floor_rel
    row.delta_rel = ratio - 1
    row.worse_rel = (1 / ratio - 1) if higher else ratio - 1
    if metric.gated and row.worse_rel >= (row.floor_rel or 0.0):
        row.verdict, row.warn_cause = Verdict.WARN, WarnCause.OVER_FLOOR
