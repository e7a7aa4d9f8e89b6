"""The duet's session facts (gate.judging.duet) and its plan (gate.stats.duet_design), on synthetic data with known
components (issue 53)."""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from gate.formats import duet_log
from gate.formats.noise_model import Components, DuetComponents
from gate.judging.duet import read_layout, session_facts
from gate.reading.side import WorkloadSide
from gate.stats import duet_design
from tests.helpers import duet_records


def _side(values: list[float]) -> WorkloadSide:
    runs = tuple(f"run{i}" for i in range(1, len(values) + 1))
    return WorkloadSide(workload_id="whisper/asr_en", runs=runs, values={"throughput": tuple(values)}, complete=True,
                        problems=(), samples={}, run_complete=(True,) * len(values))


def test_a_session_is_one_observation_and_its_blocks_are_averaged():
    rng = np.random.default_rng(7)
    k, pairs, shift = 400, 2, math.log(0.97)
    session = rng.normal(0, 0.01, k)  # what a session shares on both sides cancels; its own effect on the pair stays
    base, cand, sessions = [], [], []
    for s in range(k):
        runs = []
        for j in range(pairs):
            level = rng.normal(0, 0.05)  # a machine-state effect both resident servers see alike
            base.append(math.exp(4 + level + rng.normal(0, 0.005)))
            cand.append(math.exp(4 + level + shift + session[s] + rng.normal(0, 0.005)))
            runs.append(f"run{s * pairs + j + 1}")
        sessions.append(tuple(runs))
    facts = session_facts(_side(base), _side(cand), "throughput", tuple(sessions))
    assert facts is not None and facts.df == k - 1 and facts.sessions == k
    assert facts.difference == pytest.approx(shift, abs=0.002)
    # σ of a session's mean: √(0.01² + 2·0.005²/2) — the shared level cancels
    assert facts.session_sd == pytest.approx(math.sqrt(0.01 ** 2 + 0.005 ** 2), rel=0.1)
    assert facts.se == pytest.approx(facts.session_sd / math.sqrt(k))
    assert facts.block_sd == pytest.approx(math.sqrt(2) * 0.005, rel=0.15)


def test_one_session_is_not_enough():
    assert session_facts(_side([1.0, 1.1]), _side([1.0, 1.0]), "throughput", (("run1", "run2"),)) is None


def test_a_failed_session_is_not_paired(tmp_path):
    log = duet_records.record(2, discarded={1: "1"})
    failed = dataclasses.replace(log.sessions[1], status=duet_log.SessionStatus.FAILED)
    duet_records.write(tmp_path, dataclasses.replace(log, sessions=(log.sessions[0], failed)))
    assert read_layout(tmp_path).for_model("qwen3") == ()



def test_the_planner_picks_the_duet_only_at_half_the_variance_or_less():
    today = Components(sigma_start=0.0157, sigma_pass=0.0266, start_cost_s=8.5, pass_cost_s=2.31)
    duet = DuetComponents(session_sd=0.0092, session_cost_s=35.8)
    ratio = duet_design.variance_ratio(today, duet)
    # by hand: 4·σ_run²·(c_start + c_pass) / (σ_session²·c_session)
    assert ratio == pytest.approx(4 * (0.0157 ** 2 + 0.0266 ** 2) * 10.81 / (0.0092 ** 2 * 35.8))
    assert duet_design.chosen(today, duet, 0.067, 0.032) == "duet"
    noisy = DuetComponents(session_sd=0.0092 * math.sqrt(ratio / 1.9), session_cost_s=35.8)
    assert duet_design.variance_ratio(today, noisy) < 2
    assert duet_design.chosen(today, noisy, 0.067, 0.05) == "interleave"  # smaller change, but not 2× the variance
    assert duet_design.chosen(today, None, 0.067, None) == "interleave"
    d = duet_design.sessions_design(duet, 5)
    assert d.gpu_minutes == pytest.approx(5 * 35.8 / 60) and d.detectable > 0
