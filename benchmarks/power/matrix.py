"""The issue-21 noise matrix: the verdict under real GPU noise (σ 1-20%, heavy tails, slow runs, drift, slow
jobs, intermittent regressions, stale calibration, neutral accuracy changes, no calibration).

Written with the issue's list before any rule was changed for it; the committed models of noise.py are left
as they were (tests/e2e/benchmarks/test_power_smoke.py pins them). Every cell is a Scenario of noise.py, run by
benchmarks/verdict_power.py with `--matrix`.
"""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from .noise import CLEAN, NoiseModel, Scenario, TestSet

RUNS = 3  # per arm per look (simulate.RUNS)

SIGMAS = (0.01, 0.02, 0.05, 0.10, 0.20)
# Issue 37: the nested (server start / pass) components of CUDA-graph batch-32 throughput measured with the proxy
# (docs/benchmarks.md, "Where the noise lives"): (σ_start, σ_pass) per machine. Today's design runs one pass a
# start, so a run's σ is hypot(σ_start, σ_pass); the start's share of it is shared by the model's workloads (one
# server start serves them all: an assumption, the study measured asr_en alone).
NESTED = {"h200": (0.0246, 0.0256), "h100": (0.0136, 0.0157)}
NESTED_CHANGES = (0.03, 0.05, 0.08)
# Throughput changes judged per σ: the headline goals at σ 1%, and changes near the printed MDE elsewhere.
POWER_CELLS = {0.01: (0.03, 0.04, 0.05), 0.02: (0.05, 0.08), 0.05: (0.10, 0.15, 0.20), 0.10: (0.25,), 0.20: (0.45,)}


def _model(name: str, sigma: float, **kw) -> NoiseModel:
    return replace(CLEAN, name=name, sigma_run=sigma, p95_own=sigma, **kw)


def scenarios() -> tuple[Scenario, ...]:
    out: list[Scenario] = []
    for sigma in SIGMAS:
        for tails in ("normal", "t3"):
            tag = f"s{round(sigma * 100)}-{tails}"
            noise = _model(f"σ {sigma:.0%}, {tails}", sigma, tails=tails)
            out.append(Scenario(f"m-noop-{tag}", f"no-op, {noise.name}", noise, "two-look"))
            if tails == "normal":
                out += [Scenario(f"m-thr-{round(c * 100)}-{tag}", f"throughput −{c:.0%}, {noise.name}", noise,
                                 "two-look", throughput_change=-c) for c in POWER_CELLS[sigma]]
        noise = _model(f"σ {sigma:.0%}, normal", sigma)
        out.append(Scenario(f"m-cross-noop-s{round(sigma * 100)}", f"no-op vs stored baseline, {noise.name}", noise,
                            "cross-job"))
    for size in (0.06, 0.15):
        noise = _model(f"σ 1%, 5% of runs {size:.0%} slow", 0.01, slow_prob=0.05, slow_factor=1 - size)
        out.append(Scenario(f"m-noop-slow{round(size * 100)}", f"no-op, {noise.name}", noise, "two-look"))
        out.append(Scenario(f"m-thr-3-slow{round(size * 100)}", f"throughput −3%, {noise.name}", noise, "two-look",
                            throughput_change=-0.03))
    drift = _model("σ 1%, drift 0.5% a run", 0.01, drift=0.005)
    out.append(Scenario("m-noop-drift", f"no-op, {drift.name}", drift, "two-look"))
    slow_job = _model("σ 1%, 5% of jobs 10% slow", 0.01, slow_job_prob=0.05)
    out.append(Scenario("m-noop-slowjob", f"no-op, {slow_job.name}", slow_job, "two-look"))
    out.append(Scenario("m-cross-noop-slowjob", f"no-op vs stored baseline, {slow_job.name}", slow_job, "cross-job"))
    for sigma in (0.01, 0.02):
        shared = _model(f"σ {sigma:.0%}, 80% of a run's effect shared by the model's workloads", sigma, run_shared=0.8)
        out.append(Scenario(f"m-noop-runshared-s{round(sigma * 100)}", f"no-op, {shared.name}", shared, "two-look"))
        if sigma == 0.01:
            out.append(Scenario("m-thr-3-runshared-s1", f"throughput −3%, {shared.name}", shared, "two-look",
                                throughput_change=-0.03))
    third = _model("σ 1%, ⅓ of candidate runs 12% slower", 0.01, intermittent_share=1 / 3, intermittent_factor=0.88)
    out.append(Scenario("m-intermittent-third", f"intermittent: {third.name}", third, "two-look"))
    half = _model("σ 1%, half the candidate runs p95 +12%", 0.01, intermittent_share=0.5,
                  intermittent_factor=1 / 1.12, intermittent_p95_only=True)
    out.append(Scenario("m-intermittent-p95", f"intermittent: {half.name}", half, "two-look"))
    out += issue36_cells()
    out += issue49_gaps()
    for known in (True, False):
        stale = _model(f"σ 2%, calibration says 1% ({'known' if known else 'not known'} stale)", 0.02,
                       calibration_sigma=0.01, stale_known=known)
        key = "known" if known else "unknown"
        out.append(Scenario(f"m-noop-stale-{key}", f"no-op, {stale.name}", stale, "two-look"))
    stale = _model("σ 2%, calibration says 1% (not known stale)", 0.02, calibration_sigma=0.01)
    out.append(Scenario("m-cross-noop-stale-unknown", f"no-op vs stored baseline, {stale.name}", stale, "cross-job"))
    neutral = _model("σ 1%, ±1 error on 150 utterances (Δ 0)", 0.01, neutral_changes=75)
    out.append(Scenario("m-noop-neutral-wer", f"no-op, {neutral.name}", neutral, "two-look"))
    hostile_neutral = replace(neutral, name="hostile churn, ±1 error on 150 utterances (Δ 0)",
                              churn_range=(0.02, 0.40), shared_churn=0.03)
    out.append(Scenario("m-noop-neutral-wer-hostile", f"no-op, {hostile_neutral.name}", hostile_neutral, "two-look"))
    for sigma in (0.01, 0.02):
        uncal = _model(f"σ {sigma:.0%}, no calibration", sigma, calibrated=False)
        out.append(Scenario(f"m-uncal-noop-s{round(sigma * 100)}", f"no-op, {uncal.name}", uncal, "two-look"))
        out.append(Scenario(f"m-uncal-thr-6-s{round(sigma * 100)}", f"throughput −6%, {uncal.name}", uncal, "two-look",
                            throughput_change=-0.06))
    for tag, (start, per_pass) in NESTED.items():
        sigma = math.hypot(start, per_pass)
        nested = _model(f"nested {tag}: σ_start {start:.2%}, σ_pass {per_pass:.2%}", sigma,
                        run_shared=start ** 2 / sigma ** 2)
        out.append(Scenario(f"m-noop-nested-{tag}", f"no-op, {nested.name}", nested, "two-look"))
        out.append(Scenario(f"m-thr-10-nested-{tag}", f"throughput −10%, {nested.name}", nested, "two-look",
                            throughput_change=-0.10))
        # Issue 53: today's design at the changes the duet's cells are judged at (benchmarks/power/duet.py)
        out += [Scenario(f"m-thr-{round(c * 100)}-nested-{tag}", f"throughput −{c:.0%}, {nested.name}", nested,
                         "two-look", throughput_change=-c) for c in NESTED_CHANGES]
    # Issue 39: two trees the runbook wrote by hand (3 + 3 runs, no calibration, no run log), judged by `gate compare`
    # alone; accuracy churn is measured in each side's own runs. Clean and hostile churn, σ 1% and 2%.
    for sigma in (0.01, 0.02):
        book = _model(f"σ {sigma:.0%}, 3+3 runbook trees, no calibration", sigma, calibrated=False)
        out.append(Scenario(f"m-runbook-noop-s{round(sigma * 100)}", f"no-op, {book.name}", book, "runbook"))
    hostile_book = replace(_model("hostile churn, σ 1%, 3+3 runbook trees, no calibration", 0.01, calibrated=False),
                           churn_range=(0.02, 0.40), shared_churn=0.03)
    out.append(Scenario("m-runbook-noop-hostile", f"no-op, {hostile_book.name}", hostile_book, "runbook"))
    six = replace(hostile_book, name="hostile churn, σ 1%, 6+6 runbook trees (runs 4-6 added), no calibration")
    out.append(Scenario("m-runbook6-noop-hostile", f"no-op, {six.name}", six, "runbook", extra={"runs": 6}))
    book = _model("σ 1%, 3+3 runbook trees, no calibration", 0.01, calibrated=False)
    out.append(Scenario("m-runbook-wer-15-thr-6", f"WER +0.15 pp and throughput −6%, {book.name}", book, "runbook",
                        throughput_change=-0.06, wer_change_pp=0.15))
    out += comoving_cells()
    out += nights_cells()
    return tuple(out)


# The nightly pools its newest nights' scored runs into the within-job σ (gate.history.noise.NIGHTS_KEPT: 14 nights ×
# 2 df a workload beside the A/A pairs'). The cells above are the gate's first day (A/A pairs alone); these are its
# steady state, where the power cells that σ's degrees of freedom hold back are measured again.
NIGHTS = 14


def nights_cells() -> list[Scenario]:
    out: list[Scenario] = []
    nights = {"nights": NIGHTS}
    for sigma, changes in ((0.02, (0.05,)), (0.05, (0.10,))):
        noise = _model(f"σ {sigma:.0%}, normal, {NIGHTS} nights pooled", sigma)
        tag = f"s{round(sigma * 100)}-nights"
        out.append(Scenario(f"m-noop-{tag}", f"no-op, {noise.name}", noise, "two-look", extra=nights))
        out += [Scenario(f"m-thr-{round(c * 100)}-{tag}", f"throughput −{c:.0%}, {noise.name}", noise, "two-look",
                         throughput_change=-c, extra=nights) for c in changes]
    drift = _model(f"σ 1%, drift 0.5% a run, {NIGHTS} nights pooled", 0.01, drift=0.005)
    out.append(Scenario("m-noop-drift-nights", f"no-op, {drift.name}", drift, "two-look", extra=nights))
    out.append(Scenario("m-thr-3-drift-nights", f"throughput −3%, {drift.name}", drift, "two-look",
                        throughput_change=-0.03, extra=nights))
    slow = _model(f"σ 1%, 5% of runs 6% slow, {NIGHTS} nights pooled", 0.01, slow_prob=0.05, slow_factor=0.94)
    out.append(Scenario("m-noop-slow6-nights", f"no-op, {slow.name}", slow, "two-look", extra=nights))
    out.append(Scenario("m-thr-3-slow6-nights", f"throughput −3%, {slow.name}", slow, "two-look",
                        throughput_change=-0.03, extra=nights))
    start, per_pass = NESTED["h200"]
    sigma = math.hypot(start, per_pass)
    nested = _model(f"nested h200: σ_start {start:.2%}, σ_pass {per_pass:.2%}, {NIGHTS} nights pooled", sigma,
                    run_shared=start ** 2 / sigma ** 2)
    out.append(Scenario("m-noop-nested-h200-nights", f"no-op, {nested.name}", nested, "two-look", extra=nights))
    out.append(Scenario("m-thr-10-nested-h200-nights", f"throughput −10%, {nested.name}", nested, "two-look",
                        throughput_change=-0.10, extra=nights))
    return out


def comoving_cells() -> list[Scenario]:
    """Issue 36's co-moving placement: a WER change put exactly on the utterances that churn together under the
    hostile churn (3% of the set flipping as one), which the A/A calibration finds and sets aside from the workload's
    row; the group's own row must see it. Two-look A/B, calibrated, σ 1%."""
    hostile = _model("hostile churn, σ 1%", 0.01, churn_range=(0.02, 0.40), shared_churn=0.03)
    placed = replace(hostile, wer_on_comoving=True)
    return [Scenario("m-noop-comoving-hostile", f"no-op, {hostile.name}", hostile, "two-look"),
            Scenario("m-wer-50-comoving", f"WER +0.5 pp on the co-moving utterances, {hostile.name}", placed,
                     "two-look", wer_change_pp=0.5),
            Scenario("m-wer-15-comoving", f"WER +0.15 pp on the co-moving utterances, {hostile.name}", placed,
                     "two-look", wer_change_pp=0.15)]


def issue36_cells() -> list[Scenario]:
    """The noise a GPU host really has (issue 36), each as a no-op and a regression: drift through the job,
    slow-mode server starts, a warm-up leak, AR(1) between successive runs, intermittent hits drawn at random."""
    out: list[Scenario] = []
    drift = _model("σ 1%, drift 0.5% a run", 0.01, drift=0.005)
    out.append(Scenario("m-thr-3-drift", f"throughput −3%, {drift.name}", drift, "two-look", throughput_change=-0.03))
    for sigma in (0.01, 0.02):
        slow = _model(f"σ {sigma:.0%}, 20% of server starts 8% slow", sigma, slow_start_prob=0.2, slow_start_factor=0.92)
        out.append(Scenario(f"m-noop-slowstart-s{round(sigma * 100)}", f"no-op, {slow.name}", slow, "two-look"))
        if sigma == 0.01:
            out.append(Scenario("m-thr-5-slowstart-s1", f"throughput −5%, {slow.name}", slow, "two-look",
                                throughput_change=-0.05))
    # A real build that is slower is slower on every workload of its model, which a slow-mode start also is: the
    # slow-mode guards must leave such a regression a FAIL (issue 36: "never a slow mode").
    plain = _model("σ 1%, normal", 0.01)
    for change in (0.03, 0.04, 0.05):
        out.append(Scenario(f"m-thr-{round(change * 100)}-model-s1", f"throughput −{change:.0%} on every workload of "
                            f"the model, {plain.name}", plain, "two-look", throughput_change=-change, whole_model=True))
    slow = _model("σ 1%, 20% of server starts 8% slow", 0.01, slow_start_prob=0.2, slow_start_factor=0.92)
    out.append(Scenario("m-thr-5-model-slowstart-s1", f"throughput −5% on every workload of the model, {slow.name}",
                        slow, "two-look", throughput_change=-0.05, whole_model=True))
    leak = _model("σ 1%, each arm's first scored run 3% slow", 0.01, warmup_leak=0.03)
    out.append(Scenario("m-noop-warmup", f"no-op, {leak.name}", leak, "two-look"))
    out.append(Scenario("m-thr-3-warmup", f"throughput −3%, {leak.name}", leak, "two-look", throughput_change=-0.03))
    ar1 = _model("σ 1%, AR(1) ρ 0.5 between successive runs", 0.01, ar1=0.5)
    out.append(Scenario("m-noop-ar1", f"no-op, {ar1.name}", ar1, "two-look"))
    out.append(Scenario("m-thr-3-ar1", f"throughput −3%, {ar1.name}", ar1, "two-look", throughput_change=-0.03))
    third = _model("σ 1%, each candidate run 12% slower with probability ⅓", 0.01, intermittent_share=1 / 3,
                   intermittent_factor=0.88, intermittent_random=True)
    out.append(Scenario("m-intermittent-third-random", f"intermittent: {third.name}", third, "two-look"))
    half = _model("σ 1%, each candidate run p95 +12% with probability ½", 0.01, intermittent_share=0.5,
                  intermittent_factor=1 / 1.12, intermittent_p95_only=True, intermittent_random=True)
    out.append(Scenario("m-intermittent-p95-random", f"intermittent: {half.name}", half, "two-look"))
    return out


def issue49_gaps() -> list[Scenario]:
    """The held-out gaps issue 49 names, measured where anyone can rerun them: drift and slow-mode starts together,
    and a bimodal host (σ 2%, 30% of starts 10% slow)."""
    both = _model("σ 1%, drift 0.5% a run, 20% of server starts 8% slow", 0.01, drift=0.005, slow_start_prob=0.2,
                  slow_start_factor=0.92)
    bimodal = _model("σ 2%, 30% of server starts 10% slow", 0.02, slow_start_prob=0.3, slow_start_factor=0.90)
    return [Scenario("m-noop-drift-slowstart", f"no-op, {both.name}", both, "two-look"),
            Scenario("m-thr-5-drift-slowstart", f"throughput −5%, {both.name}", both, "two-look",
                     throughput_change=-0.05),
            Scenario("m-noop-bimodal-s2", f"no-op, {bimodal.name}", bimodal, "two-look")]


def unseen_hosts() -> tuple[Scenario, ...]:
    """Hosts the matrix does not hold and the rule was not tuned on (issue 49's held-out check): new combinations of
    its noises, slow-mode starts above all. Named by --scenarios only, never in the default run
    (benchmarks/results/held_out_gaps.md, "Unseen no-op hosts")."""
    def slow(name: str, sigma: float, share: float, factor: float, **kw) -> NoiseModel:
        return _model(name, sigma, slow_start_prob=share, slow_start_factor=factor, **kw)

    hosts = [("drift-slow-s2", slow("σ 2%, drift 0.5% a run, 20% of starts 8% slow", 0.02, 0.2, 0.92, drift=0.005)),
             ("warmup-slow", slow("σ 1%, warm-up 3%, 20% of starts 8% slow", 0.01, 0.2, 0.92, warmup_leak=0.03)),
             ("bimodal-drift", slow("σ 2%, drift 0.5% a run, 30% of starts 10% slow", 0.02, 0.3, 0.90, drift=0.005)),
             ("ar1-slow", slow("σ 1%, AR(1) 0.5, 20% of starts 8% slow", 0.01, 0.2, 0.92, ar1=0.5)),
             ("bimodal-s1", slow("σ 1%, 30% of starts 10% slow", 0.01, 0.3, 0.90)),
             ("shared-slow", slow("σ 2%, 80% of a run's effect shared, 20% of starts 8% slow", 0.02, 0.2, 0.92,
                                  run_shared=0.8)),
             ("drift1-s2", _model("σ 2%, drift 1% a run", 0.02, drift=0.01)),
             ("bimodal-40", slow("σ 2%, 40% of starts 10% slow", 0.02, 0.4, 0.90)),
             ("bimodal-20", slow("σ 2%, 20% of starts 10% slow", 0.02, 0.2, 0.90)),
             ("bimodal-15pct", slow("σ 2%, 30% of starts 15% slow", 0.02, 0.3, 0.85))]
    out = [Scenario(f"u-noop-{key}", f"no-op, {model.name}", model, "two-look") for key, model in hosts]
    changes = dict(hosts)
    out += [Scenario(f"u-thr-5-{key}", f"throughput −5%, {changes[key].name}", changes[key], "two-look",
                     throughput_change=-0.05) for key in ("warmup-slow", "drift-slow-s2")]
    return tuple(out)


# --- the draws these cells need (used by simulate.draw_chunk) ---------------------------------------------

def standard_noise(rng, tails: str, shape: tuple) -> np.ndarray:
    if tails == "t3":
        return rng.standard_t(3, shape) / np.sqrt(3.0)
    return rng.standard_normal(shape)


def intermittent_slots(rng, batch: int, share: float) -> np.ndarray:
    """(B, 2 * RUNS + 1) 0/1: which candidate run slots are slow. Each look's three runs hold share×3 slow runs, rounded
    at random to keep the share (⅓: one of three; ½: one or two); the spare slot is slow with probability share."""
    out = np.zeros((batch, 2 * RUNS + 1))
    for start in (0, RUNS):
        low = int(np.floor(share * RUNS))
        count = low + (rng.random(batch) < share * RUNS - low)
        rank = np.argsort(rng.random((batch, RUNS)), axis=1).argsort(axis=1)
        out[:, start:start + RUNS] = rank < count[:, None]
    out[:, 2 * RUNS] = rng.random(batch) < share
    return out


def neutral_change(rng, ts: TestSet, k: int, batch: int) -> np.ndarray:
    """(B, n): k utterances one error worse and k with errors one better (Δ 0), the same in every run."""
    n = ts.ref_len.shape[0]
    base = ts.errors[ts.workload.measures[0][1]]
    keys = np.where((base > 0)[None, :], rng.random((batch, n)), 2.0 + rng.random((batch, n)))
    order = np.argsort(keys, axis=1)
    out = np.zeros((batch, n), dtype=np.int16)
    np.put_along_axis(out, order[:, :k], -1, axis=1)
    np.put_along_axis(out, order[:, -k:], 1, axis=1)
    return out
