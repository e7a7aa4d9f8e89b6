"""Vectorised simulation of whole PRs judged by gate/stats's rules (the functions `compare` calls).

One chunk = B simulated PRs of one scenario, all ten workloads. Everything the verdict needs is built
as arrays, and the verdict comes from the gate's own batched functions: `gate.stats.speed.shift_test`,
`gate.stats.decision.decide_family`, `gate.stats.overdispersion`, `gate.stats.quality.sign_flip_p_batch`.
What is re-implemented here, and checked against `gate.compare.compare` by benchmarks/power/validate.py,
is only the plumbing: pooling calibrations over a model's workloads, the family membership, the floors,
the two-look plan of `gate run` (decide / extend / decide_pooled) and the re-measure of a wild run.

Two designs:
- two-look: an interleaved A/B in one job. First look 3+3 runs at Holm α₁; models with a gated row at
  BH q <= the family's extension level and at least half its floor get 3+3 more runs; the pooled 6+6 decides at Holm α₂. A run
  flagged by the outlier rule is re-measured once per arm (the runner's job); compare sets aside the rest.
- cross-job: 3 candidate runs against a stored 3-run baseline from another job, one decision at the family α.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from gate.stats import looks
from gate.stats.decision import FAIL, WARN, decide_family
from gate.stats.multiplicity import bh_array
from gate.stats.outliers import flag_runs
from gate.stats.overdispersion import excess_df, run_variance, widened_p_arrays
from gate.stats.quality import catastrophic_masks, sign_flip_p_batch
from gate.stats.speed import ADVISED_PAIRS, SpeedNoise, shift_test

from .noise import MODELS, TARGET, WORKLOADS, NoiseModel, Scenario, TestSet

RUNS = 3  # per arm per look
SLOTS = 2 * RUNS + 1  # two looks and one spare run for a re-measure
SPEED_ROWS = ("throughput", "latency_p95_s")  # the gated speed metrics (throughput's name differs per format)


@dataclass(frozen=True)
class Rules:
    """The decision parameters, read from the gate (benchmarks/power/validate.py checks they agree)."""

    family_alpha: float
    first_alpha: float
    pooled_alpha: float
    warn_q: float
    extend_q_speed: float
    extend_q_quality: float
    floor_thr: float
    floor_p95: float
    quality_floor_abs: float
    quality_floor_rel: float
    small_set_size: int
    small_set_floor_abs: float
    pairs: int  # A/A pairs in the calibration (the advised number)

    @classmethod
    def from_gate(cls, pairs: int = ADVISED_PAIRS) -> "Rules":
        from gate.compare import Thresholds
        from gate.config import load_suite

        suite, t = load_suite(), Thresholds()
        metrics = {m.name: m for m in suite.workload("qwen3/asr_en").metrics}
        return cls(family_alpha=looks.FAMILY_ALPHA, first_alpha=looks.FIRST_ALPHA, pooled_alpha=looks.POOLED_ALPHA,
                   warn_q=t.warn_q, extend_q_speed=looks.EXTEND_Q["speed"],
                   extend_q_quality=looks.EXTEND_Q["quality"], floor_thr=metrics["throughput_samples_per_s"].floor_rel,
                   floor_p95=metrics["latency_p95_s"].floor_rel, quality_floor_abs=t.quality_floor_abs,
                   quality_floor_rel=t.quality_floor_rel, small_set_size=t.small_set_size,
                   small_set_floor_abs=t.small_set_floor_abs, pairs=pairs)


@dataclass(eq=False)
class Chunk:
    """The raw simulated measurements of B PRs (kept so validate.py can feed the same numbers to compare)."""

    speed: dict  # workload -> {"throughput"/"latency_p95_s": (B, 2 arms, SLOTS) ln values}
    cal_speed: dict  # workload -> {metric: (B, pairs, 2 arms, RUNS) ln values}
    errors: dict  # workload -> {measure: (B, 2 arms, SLOTS, n) error counts}
    cal_errors: dict  # workload -> {measure: (B, pairs, 2, RUNS, n)}
    cross_job_calibration: bool


@dataclass(eq=False)
class Outcome:
    """Per PR: the final verdict, what the target rows got, scored runs per model; plus the row verdicts."""

    any_fail: np.ndarray  # (B,)
    any_warn: np.ndarray  # (B,) WARN shown (and no FAIL)
    target_thr_fail: np.ndarray
    target_wer_fail: np.ndarray
    target_wer_warn_or_fail: np.ndarray
    runs_per_model: np.ndarray  # (B, models)
    slots: dict  # model -> (B, 2 arms, n_used) physical slots used (after re-measure), first look and pooled
    extended: np.ndarray  # (B, models)
    rows_first: dict  # (workload, metric) -> (B,) verdict code at the first (or only) look
    rows_pooled: dict  # (workload, metric) -> (B,) verdict code at the pooled look (-1: model not extended)


# --- drawing -----------------------------------------------------------------------------------------------------

def draw_chunk(rng: np.random.Generator, scenario: Scenario, test_sets: dict[str, TestSet], batch: int,
               pairs: int) -> Chunk:
    noise = scenario.noise
    cross = scenario.design == "cross-job"
    speed, cal_speed, errors, cal_errors = {}, {}, {}, {}
    for model in MODELS:
        wls = [w for w in WORKLOADS if w.model == model]
        # PR arms: (B, 2, SLOTS, W). Same job for both arms in the two-look design; a job per arm across jobs.
        thr, p95 = _speed_runs(rng, noise, (batch, 2, SLOTS), len(wls), arm_jobs=cross)
        cal_thr, cal_p95 = _speed_runs(rng, noise, (batch, pairs, 2, RUNS), len(wls), arm_jobs=cross)
        for k, w in enumerate(wls):
            shift = np.log1p(scenario.throughput_change) if w.workload_id == TARGET else 0.0
            thr_w, p95_w = thr[..., k].copy(), p95[..., k].copy()
            thr_w[:, 1] += shift
            p95_w[:, 1] -= shift
            speed[w.workload_id] = {"throughput": thr_w, "latency_p95_s": p95_w}
            cal_speed[w.workload_id] = {"throughput": cal_thr[..., k], "latency_p95_s": cal_p95[..., k]}
    for w in WORKLOADS:
        ts = test_sets[w.workload_id]
        churn = _churn(rng, noise, ts, batch)
        runs = churn.draw(rng, (batch, 2, SLOTS))
        cal = churn.draw(rng, (batch, pairs, 2, RUNS))
        extra = _diffuse(rng, ts, scenario.wer_change_pp, batch) if w.workload_id == TARGET else None
        errors[w.workload_id], cal_errors[w.workload_id] = {}, {}
        for _, measure, _ in w.measures:
            base = ts.errors[measure].astype(np.int16)
            arm_runs = base + runs
            if extra is not None:
                arm_runs[:, 1] += extra[:, None, :]
            cal_runs = base + cal
            if ts.workload.sessions:  # a Skellam jitter could in principle go below zero
                np.maximum(arm_runs, 0, out=arm_runs)
                np.maximum(cal_runs, 0, out=cal_runs)
            errors[w.workload_id][measure] = arm_runs
            cal_errors[w.workload_id][measure] = cal_runs
    return Chunk(speed, cal_speed, errors, cal_errors, cross)


def _speed_runs(rng, noise: NoiseModel, shape: tuple, n_wl: int, *, arm_jobs: bool):
    """ln throughput and ln p95 relative to the truth, shape + (W,). The job axis is shape[-2] (the arm)."""
    full = shape + (n_wl,)
    s = noise.sigma_run * rng.standard_normal(full)
    slow = np.where(rng.random(full) < noise.slow_prob, np.log(noise.slow_factor), 0.0)
    job_shape = shape[:-1] + (1, n_wl) if arm_jobs else shape[:-2] + (1, 1, n_wl)
    shared = rng.standard_normal(job_shape[:-1] + (1,))
    job = noise.tau * np.sqrt(0.5) * (shared + rng.standard_normal(job_shape))
    thr = -s - job + slow
    p95 = s + job - slow + noise.p95_own * rng.standard_normal(full)
    return thr, p95


@dataclass(frozen=True)
class _Churn:
    unstable: np.ndarray  # (B, n) bool
    shared: np.ndarray  # (B, n) bool
    session_lambda: np.ndarray | None  # (n,) Skellam rate for long sessions

    def draw(self, rng, lead: tuple) -> np.ndarray:
        """Run-to-run error changes, lead + (n,); lead starts with B."""
        n = self.unstable.shape[1]
        expand = (slice(None),) + (None,) * (len(lead) - 1)
        if self.session_lambda is not None:
            lam = self.session_lambda
            return (rng.poisson(lam, lead + (n,)) - rng.poisson(lam, lead + (n,))).astype(np.int16)
        bits = rng.integers(0, 2, lead + (n,), dtype=np.int8).view(bool) & self.unstable[expand]
        bits |= (rng.integers(0, 2, lead + (1,), dtype=np.int8).view(bool) & self.shared[expand])
        return bits.view(np.int8)


def _churn(rng, noise: NoiseModel, ts: TestSet, batch: int) -> _Churn:
    n = ts.ref_len.shape[0]
    if ts.workload.sessions:
        first = next(iter(ts.errors.values()))
        return _Churn(np.ones((batch, n), bool), np.zeros((batch, n), bool),
                      noise.session_jitter * np.maximum(first, 1))
    fraction = rng.uniform(*noise.churn_range, size=(batch, 1))
    rank = np.argsort(rng.random((batch, n)), axis=1).argsort(axis=1)
    unstable = rank < np.rint(fraction * n)
    shared = (~unstable) & (rank < np.rint(fraction * n) + round(noise.shared_churn * n))
    return _Churn(unstable, shared, None)


def _diffuse(rng, ts: TestSet, pp: float, batch: int) -> np.ndarray | None:
    """A real, diffuse WER change: net pp/100·Σn more errors, as 1.5× that many +1s and 0.5× that many −1s."""
    if pp == 0:
        return None
    n = ts.ref_len.shape[0]
    net = int(round(pp / 100 * ts.ref_len.sum()))
    up, down = int(round(1.5 * net)), int(round(1.5 * net)) - net
    base = ts.errors[ts.workload.measures[0][1]]
    keys = rng.random((batch, n))
    order = np.argsort(keys, axis=1)
    extra = np.zeros((batch, n), dtype=np.int16)
    np.put_along_axis(extra, order[:, :up], 1, axis=1)
    worse_keys = np.where((base > 0)[None, :] & (extra == 0), keys, 2.0)
    np.put_along_axis(extra, np.argsort(worse_keys, axis=1)[:, :down], -1, axis=1)
    return extra


# --- calibration (as gate.stats.performance.calibrate / overdispersion.from_arms, batched) --------------------------

def speed_calibration(cal: dict, workloads: list[str], metric: str, cross_job: bool) -> SpeedNoise:
    """Per PR (B,), the model's pooled SpeedNoise for one metric, from its workloads' A/A runs."""
    ss = df = cross_sq = cross_h = 0.0
    cross_diffs = 0
    for wid in workloads:
        y = cal[wid][metric]  # (B, K, 2, RUNS)
        first = _pooled_sd(y)
        keep = ~flag_runs(y, first[:, None, None])
        n = keep.sum(axis=-1)
        mean = np.where(keep, y, 0.0).sum(axis=-1) / n
        arm_ss = np.where(keep, (y - mean[..., None]) ** 2, 0.0).sum(axis=-1)
        ss = ss + np.where(n >= 2, arm_ss, 0.0).sum(axis=(1, 2))
        df = df + np.where(n >= 2, n - 1, 0).sum(axis=(1, 2))
        if cross_job:
            delta = mean[..., 1] - mean[..., 0]
            cross_sq = cross_sq + (delta ** 2).sum(axis=1)
            cross_h = cross_h + (1 / n[..., 0] + 1 / n[..., 1]).sum(axis=1)
            cross_diffs += y.shape[1]
    pairs = next(iter(cal.values()))[metric].shape[1]
    return SpeedNoise(sigma=np.sqrt(ss / df), sigma_df=df, cross_pairs=pairs if cross_job else 0,
                      cross_msd=cross_sq / cross_diffs if cross_diffs else 0.0,
                      cross_h=cross_h / cross_diffs if cross_diffs else 0.0, cross_df=cross_diffs)


def _pooled_sd(y: np.ndarray) -> np.ndarray:
    """performance.calibrate's first pass: pooled SD over runs within 8% of their arm's median."""
    keep = ~flag_runs(y, 0.0)
    n = keep.sum(axis=-1)
    mean = np.where(keep, y, 0.0).sum(axis=-1) / n
    ss = np.where(keep, (y - mean[..., None]) ** 2, 0.0).sum(axis=-1)
    ss = np.where(n >= 2, ss, 0.0).sum(axis=(1, 2))
    df = np.where(n >= 2, n - 1, 0).sum(axis=(1, 2))
    return np.sqrt(ss / df)


def dispersion(cal_errors: dict, workloads: list[str], measure: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per PR: one measure's (ss_total, ss_units, df) over these workloads' A/A arms (overdispersion.from_arms)."""
    total = units = 0.0
    df = 0
    for wid in workloads:
        if measure in cal_errors[wid]:
            e = cal_errors[wid][measure]  # (B, K, 2, RUNS, n) int
            c = e - e[..., :1, :]  # variances are shift-invariant: small integers, cheap to square
            sums, squares = c.sum(axis=-2), (c * c).sum(axis=-2)
            units = units + ((squares - sums * sums / RUNS).sum(axis=-1) / (RUNS - 1)).sum(axis=(1, 2)) * (RUNS - 1)
            totals = c.sum(axis=-1).astype(float)
            total = total + totals.var(axis=-1, ddof=1).sum(axis=(1, 2)) * (RUNS - 1)
            df += e.shape[1] * e.shape[2] * (RUNS - 1)
    return total, units, np.full(np.shape(total), df)


# --- judging -------------------------------------------------------------------------------------------------------

def judge(chunk: Chunk, test_sets: dict[str, TestSet], rules: Rules) -> Outcome:
    batch = next(iter(chunk.speed.values()))["throughput"].shape[0]
    by_model = {m: [w.workload_id for w in WORKLOADS if w.model == m] for m in MODELS}
    measure_of = {w.workload_id: [m for _, m, _ in w.measures] for w in WORKLOADS}
    noises = {(m, metric): speed_calibration(chunk.cal_speed, by_model[m], metric, chunk.cross_job_calibration)
              for m in MODELS for metric in SPEED_ROWS}
    disp = {(w.workload_id, measure): dispersion(chunk.cal_errors, [w.workload_id], measure)
            for w in WORKLOADS for measure in measure_of[w.workload_id]}
    rows = [(w.workload_id, w.model, metric) for w in WORKLOADS for metric in SPEED_ROWS]
    qrows = [(w.workload_id, w.model, measure, metric) for w in WORKLOADS for metric, measure, _ in w.measures]
    sg = [np.array([i for i, r in enumerate(rows) if r[1] == m]) for m in MODELS]
    qg = [np.array([i for i, r in enumerate(qrows) if r[1] == m]) for m in MODELS]

    if chunk.cross_job_calibration:  # one decision at the family α, 3 + 3 runs, nothing re-measured
        slots = {m: np.broadcast_to(np.arange(RUNS), (batch, 2, RUNS)) for m in MODELS}
        sp = _speed_look(chunk, rows, noises, slots, rules, cross_job=True)
        qu = _quality_look(chunk, test_sets, qrows, disp, slots, rules)
        verdict_s = _family(sp, rules.family_alpha, rules, sg)
        verdict_q = _family(qu, rules.family_alpha, rules, qg, catastrophic=qu["catastrophic"])
        fail = (verdict_s == FAIL).any(1) | (verdict_q == FAIL).any(1)
        warn = ~fail & ((verdict_s == WARN).any(1) | (verdict_q == WARN).any(1))
        tgt = [i for i, r in enumerate(rows) if r[0] == TARGET]
        tq = next(i for i, r in enumerate(qrows) if r[0] == TARGET)
        return Outcome(any_fail=fail, any_warn=warn, target_thr_fail=(verdict_s[:, tgt] == FAIL).any(1),
                       target_wer_fail=verdict_q[:, tq] == FAIL, target_wer_warn_or_fail=verdict_q[:, tq] >= WARN,
                       runs_per_model=np.full((batch, len(MODELS)), 2 * RUNS), slots=slots,
                       extended=np.zeros((batch, len(MODELS)), bool),
                       rows_first={**{(r[0], r[2]): verdict_s[:, i] for i, r in enumerate(rows)},
                                   **{(r[0], r[3]): verdict_q[:, i] for i, r in enumerate(qrows)}},
                       rows_pooled={})

    # First look: slots 0-2, a flagged run re-measured once per arm (slot 6 replaces it).
    slots1, spare_used = {}, {}
    for m in MODELS:
        slots1[m], spare_used[m] = _remeasure(chunk, by_model[m], noises, m, np.tile(np.arange(RUNS), (batch, 2, 1)),
                                              np.zeros((batch, 2), bool))
    sp1 = _speed_look(chunk, rows, noises, slots1, rules, cross_job=False)
    qu1 = _quality_look(chunk, test_sets, qrows, disp, slots1, rules)
    vs1 = _family(sp1, rules.first_alpha, rules, sg)
    vq1 = _family(qu1, rules.first_alpha, rules, qg, catastrophic=qu1["catastrophic"])
    fail1 = np.zeros((batch, len(MODELS)), bool)
    extend = np.zeros((batch, len(MODELS)), bool)
    for k, m in enumerate(MODELS):
        si = [i for i, r in enumerate(rows) if r[1] == m]
        qi = [i for i, r in enumerate(qrows) if r[1] == m]
        fail1[:, k] = (vs1[:, si] == FAIL).any(1) | (vq1[:, qi] == FAIL).any(1)
        # Benjamini-Hochberg within each family of the model (looks.decide): a row near its floor with q at
        # most its family's extension level extends the model.
        q_speed, q_quality = bh_array(sp1["p"][:, si]), bh_array(qu1["p"][:, qi])
        near = ((np.nan_to_num(q_speed, nan=1.0) <= rules.extend_q_speed) & sp1["half"][:, si]).any(1) | \
               ((np.nan_to_num(q_quality, nan=1.0) <= rules.extend_q_quality) & qu1["half"][:, qi]).any(1)
        extend[:, k] = ~fail1[:, k] & near

    # Pooled look for the extended models: slots 3-5 added, then at most one re-measure per arm in all.
    slots2 = {}
    for k, m in enumerate(MODELS):
        more = np.concatenate([slots1[m], np.tile(np.arange(RUNS, 2 * RUNS), (batch, 2, 1))], axis=2)
        slots2[m], _ = _remeasure(chunk, by_model[m], noises, m, more, spare_used[m])
    ext_rows = np.stack([extend[:, MODELS.index(r[1])] for r in rows], axis=1)
    ext_q = np.stack([extend[:, MODELS.index(r[1])] for r in qrows], axis=1)
    sp2 = _speed_look(chunk, rows, noises, slots2, rules, cross_job=False)
    qu2 = _quality_look(chunk, test_sets, qrows, disp, slots2, rules)
    # The pooled report of an extended model compares its 6+6 runs; the other models keep their first
    # look. Holm and BH run over the model's gated rows at both looks: that is what keeps α₁ + α₂ a bound.
    for look, first, member in ((sp2, sp1, ext_rows), (qu2, qu1, ext_q)):
        for key in look:
            look[key] = np.where(member, look[key], first[key])
    vs2 = _family(sp2, rules.pooled_alpha, rules, sg)
    vq2 = _family(qu2, rules.pooled_alpha, rules, qg, catastrophic=qu2["catastrophic"])
    fail = fail1.any(1) | (vs2 == FAIL).any(1) | (vq2 == FAIL).any(1)
    warn = ~fail & ((vs2 == WARN).any(1) | (vq2 == WARN).any(1))
    tgt = [i for i, r in enumerate(rows) if r[0] == TARGET]
    tq = next(i for i, r in enumerate(qrows) if r[0] == TARGET)
    runs = np.zeros((batch, len(MODELS)))
    for k, m in enumerate(MODELS):  # both arms' scored runs, a re-measure counting as one more
        remeasured_pooled = (slots2[m] == 2 * RUNS).any(-1).sum(-1)
        remeasured_first = (slots1[m] == 2 * RUNS).any(-1).sum(-1)
        runs[:, k] = np.where(extend[:, k], 4 * RUNS + remeasured_pooled, 2 * RUNS + remeasured_first)
    return Outcome(
        any_fail=fail, any_warn=warn,
        target_thr_fail=(vs1[:, tgt] == FAIL).any(1) | (vs2[:, tgt] == FAIL).any(1),
        target_wer_fail=(vq1[:, tq] == FAIL) | (vq2[:, tq] == FAIL),
        target_wer_warn_or_fail=(vq1[:, tq] == FAIL) | (vq2[:, tq] >= WARN),
        runs_per_model=runs, slots={"first": slots1, "pooled": slots2}, extended=extend,
        rows_first={**{(r[0], r[2]): vs1[:, i] for i, r in enumerate(rows)},
                    **{(r[0], r[3]): vq1[:, i] for i, r in enumerate(qrows)}},
        rows_pooled={**{(r[0], r[2]): vs2[:, i] for i, r in enumerate(rows)},
                     **{(r[0], r[3]): vq2[:, i] for i, r in enumerate(qrows)}})


def _remeasure(chunk: Chunk, workloads: list[str], noises: dict, model: str, slots: np.ndarray,
               used: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """gate run re-measures the first flagged run of an arm (any gated speed metric of any of the model's
    workloads), once per arm over the whole plan: the spare slot takes its place."""
    flagged = np.zeros(slots.shape, bool)
    for wid in workloads:
        for metric in SPEED_ROWS:
            y = np.take_along_axis(chunk.speed[wid][metric], slots, axis=2)
            flagged |= flag_runs(y, noises[(model, metric)].sigma[:, None])
    redo = flagged.any(-1) & ~used
    first = flagged.argmax(-1)
    slots = slots.copy()
    b, a = np.nonzero(redo)
    slots[b, a, first[b, a]] = 2 * RUNS
    return slots, used | redo


def _speed_look(chunk: Chunk, rows, noises, slots, rules: Rules, *, cross_job: bool) -> dict:
    p, above, half, can_fail = [], [], [], []
    for wid, model, metric in rows:
        y = np.take_along_axis(chunk.speed[wid][metric], slots[model], axis=2)
        noise = noises[(model, metric)]
        test = shift_test(y[:, 0], y[:, 1], noise, higher_is_better=metric == "throughput",
                          cross_job=cross_job)
        floor = rules.floor_thr if metric == "throughput" else rules.floor_p95
        p.append(test.p)
        above.append(test.worse_rel >= floor)
        half.append(test.worse_rel >= floor / 2)
        ok = (noise.sigma_df >= 4) & ~test.favourable_set_aside
        if cross_job:
            ok = ok & (noise.cross_pairs >= ADVISED_PAIRS)
        can_fail.append(np.broadcast_to(ok, test.p.shape))
    return {"p": np.stack(p, 1), "above": np.stack(above, 1), "half": np.stack(half, 1),
            "can_fail": np.stack(can_fail, 1)}


def _quality_look(chunk: Chunk, test_sets, qrows, disp, slots, rules: Rules) -> dict:
    p, above, half, cat = [], [], [], []
    for wid, model, measure, _ in qrows:
        ts = test_sets[wid]
        e = chunk.errors[wid][measure]  # (B, 2, SLOTS, n)
        idx = slots[model][..., None]
        runs = np.take_along_axis(e, np.broadcast_to(idx, idx.shape[:3] + (e.shape[-1],)), axis=2)
        r_b, r_c = runs.shape[2], runs.shape[2]
        mean_b, mean_c = runs[:, 0].mean(axis=1), runs[:, 1].mean(axis=1)
        scaled = runs[:, 1].sum(axis=1) * r_b - runs[:, 0].sum(axis=1) * r_c  # d × R_b·R_c, integers
        n_total = ts.ref_len.sum()
        delta = (mean_c - mean_b).sum(axis=1) / n_total
        base_rate = mean_b.sum(axis=1) / n_total
        small = ts.ref_len.shape[0] <= rules.small_set_size
        floor_abs = rules.small_set_floor_abs if small else rules.quality_floor_abs
        ok_rel = lambda share: (base_rate == 0) | (delta >= share * rules.quality_floor_rel * base_rate)  # noqa: E731
        above.append((delta >= floor_abs - 1e-15) & ok_rel(1.0))
        half.append((delta >= floor_abs / 2 - 1e-15) & ok_rel(0.5))
        identical = ~scaled.any(axis=1)
        total, units, df = disp[(wid, measure)]
        widen = (units > 0) & (total > units)  # Dispersion.widens
        d = scaled / (r_b * r_c)
        sum_sq = (d ** 2).sum(axis=1)
        with np.errstate(all="ignore"):
            approx = stats.norm.sf(d.sum(axis=1) / np.sqrt(sum_sq))
        # The exact null only where it can matter: a p above 0.1 decides nothing (not the row's FAIL, WARN or
        # extension, nor, through Holm or BH, any other row's), and the normal approximation of the
        # sign-flip null is far better than 0.3 vs 0.1 there.
        exact = approx.copy()
        need = ~identical & ~widen & (approx < 0.3)
        if need.any():
            exact[need] = sign_flip_p_batch(scaled[need])
        # compare's utterance variance: from the runs in one job, Σd² across jobs
        own = sum_sq if chunk.cross_job_calibration else run_variance(runs[:, 0], runs[:, 1])
        with np.errstate(all="ignore"):
            wide = widened_p_arrays(d.sum(axis=1), own, (total - units) / df, excess_df(total, units, df),
                                    1 / r_b + 1 / r_c)
        p.append(np.where(identical, np.nan, np.where(widen, wide, exact)))
        cat.append(catastrophic_masks(runs[:, 0], runs[:, 1], ts.ref_len)[0].sum(axis=1))
    return {"p": np.stack(p, 1), "above": np.stack(above, 1), "half": np.stack(half, 1),
            "can_fail": np.ones((len(p[0]), len(p)), bool), "catastrophic": np.stack(cat, 1)}


def _family(look: dict, alpha: float, rules: Rules, groups: list[np.ndarray],
            catastrophic: np.ndarray | None = None) -> np.ndarray:
    """Verdict codes; Holm and BH run within each group of columns (one model: CI compares each model in
    its own job, so each model's report is its own family)."""
    verdict = np.zeros(look["p"].shape, dtype=int)
    for cols in groups:
        verdict[:, cols] = decide_family(look["p"][:, cols], look["above"][:, cols], look["half"][:, cols],
                                         look["can_fail"][:, cols], alpha=alpha, warn_q=rules.warn_q).verdict
    if catastrophic is not None:  # a newly catastrophic utterance is at least a WARN (tested rows only)
        verdict = np.where((catastrophic > 0) & ~np.isnan(look["p"]) & (verdict < WARN), WARN, verdict)
    return verdict
