"""Slow-mode starts under drift, in the A/B and in the A/A calibration (issue 49: drift and slow starts together).

The job's position terms must be fitted on the fast mode; fitted with the slow starts in, they absorbed them (a
6+6 look found 38% of the 8% slow starts of a σ 1% host drifting 0.5% a run). And the A/A calibration sets its
own slow starts aside, its pair's two arms one sample, so that its σ is the fast mode's, as the A/B's is.
"""
from __future__ import annotations

import math

import numpy as np

from gate.judging.calibration import calibration_from_pairs
from gate.stats.drift import arm_positions
from gate.stats.slowmode import find_slow_starts

SLOW = math.log(0.92)  # a start 8% slow
AT = arm_positions(4, 6)  # two workloads, 6 + 6 runs: [en base, en cand, zh base, zh cand]


def test_slow_starts_under_drift_are_found_with_the_terms_fitted_without_them():
    found = 0
    for seed in range(50):
        y = 0.01 * np.random.default_rng(seed).standard_normal((4, 6)) - 0.005 * AT  # σ 1%, 0.5% slower a run
        y[[1, 3], 1] += SLOW  # two of the candidate's starts slow in both workloads, and one of the baseline's
        y[[1, 3], 4] += SLOW
        y[[0, 2], 2] += SLOW
        slow, _ = find_slow_starts(y, AT, higher_is_better=True)
        found += slow.tolist() == [[False, False, True, False, False, False], [False, True, False, False, True, False]]
    assert found >= 40  # 48 of 50; with the terms fitted on the slow starts too, 0


def test_drift_alone_is_not_a_slow_mode():
    found = 0
    for seed in range(200):
        y = 0.01 * np.random.default_rng(seed).standard_normal((4, 6)) - 0.005 * AT
        found += int(find_slow_starts(y, AT, higher_is_better=True)[0].any())
    assert found <= 2


def test_an_aa_pair_is_one_sample_two_slow_starts_of_an_arms_three_are_found():
    at = arm_positions(4, 3)
    found = 0
    for seed in range(50):
        y = 0.01 * np.random.default_rng(seed).standard_normal((4, 3)) - 0.005 * at
        y[[0, 2], 0] += SLOW  # two of arm a's three starts slow: no minority of the arm, a minority of the pair's six
        y[[0, 2], 2] += SLOW
        one = find_slow_starts(y, at, higher_is_better=True, one_commit=True)[0]
        found += one.tolist() == [[True, False, True], [False, False, False]]
        assert not find_slow_starts(y, at, higher_is_better=True)[0][0].all()  # an arm's own majority never is
    assert found >= 40


def test_the_calibration_sets_the_model_s_slow_starts_aside_from_sigma(suite, sides):
    sigmas, aside = [], 0
    for seed in range(20):  # three A/A pairs of 3 + 3 runs on a σ 1% host with 20% of server starts 8% slow
        rng = np.random.default_rng(seed)
        pairs = []
        for k in range(3):
            arms = []
            for arm in range(2):
                values = {w: sides.seedtts_values(rng, sigma=0.01) for w in ("qwen3/asr_en", "qwen3/asr_zh")}
                for i in np.flatnonzero(rng.random(3) < 0.2):  # a slow start: every workload of the model slower
                    for metrics in values.values():
                        metrics["throughput_samples_per_s"][i] *= 0.92
                        metrics["latency_p95_s"][i] /= 0.92
                arms.append(sides.memory_side(suite, values=values, label=f"aa{seed}{k}{arm}"))
            pairs.append((arms[0], arms[1]))
        entry = calibration_from_pairs(pairs, suite)["qwen3/asr_en"]["throughput_samples_per_s"]
        sigmas.append(entry.sigma)
        aside += entry.set_aside  # the host's wild runs (gate.stats.speed.host_wild_share) count them
    assert np.median(sigmas) < 0.013  # 1.0%; 3.2% with the slow starts in σ (one workload's outlier rule kept them)
    assert aside >= 15


def test_an_aa_pair_mostly_slow_in_one_arm_is_not_decided_by_round_off():
    # issue 49's validation, m-thr-5-drift-slowstart PR 4 (whisper, A/A pair 2): all three of arm a's starts slow.
    # The fit loop left two of them out and fitted arm a's one run exactly; arm b's residuals tied to 1e-17, and the
    # gate (ln of the values the simulator wrote) and the simulator (its ln values, 5.6e-17 apart) set aside
    # different runs, so their calibration σ (2.17% against 1.47%) and re-measures differed.
    y = np.array([[-0.0915259940296243, -0.11002433289916669, -0.10832935490017442],
                  [-4.461077022789401e-05, -0.07609870427368777, -0.017085990825915366],
                  [-0.07619032643444237, -0.08517777799548548, -0.08943415018681679],
                  [0.003132178549001039, -0.08072333502419217, -0.03161225989302557]])
    twin = y - np.array([[1.4e-17, -2.8e-17, -4.2e-17], [-2.4e-17, 1.4e-17, 0.0],
                         [5.6e-17, 4.2e-17, 4.2e-17], [-2.1e-17, 4.2e-17, -6.9e-18]])
    at = arm_positions(4, 3)
    found = [find_slow_starts(v, at, higher_is_better=True, one_commit=True)[0].tolist() for v in (y, twin)]
    assert found[0] == found[1]
