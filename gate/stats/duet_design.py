"""The duet's plan (issue 53): K sessions of two resident servers, each session one observation.

A session's comparison is the mean of its paired block differences ln c − ln b; sessions are independent (a fresh
pair of servers each), so K sessions give SE σ_session/√K on K − 1 df. A session costs c_session seconds of GPU
time (both starts, the warm-up passes, the blocks, the stop). Against today's interleave (K starts a side, one
pass each, df 2(K − 1)) the planner compares the detectable change the same GPU minutes buy, and the variance of
the comparison at equal GPU time: the duet becomes a model's design only where that variance is at least
DEFAULT_RATIO times lower (a smaller detectable change alone is not enough to leave the runbook's operating point).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from gate.formats.noise_model import FEWEST_RUNS, Components, DuetComponents
from gate.stats.speed import mde
from gate.stats.thresholds import Thresholds

DEFAULT_RATIO = 2.0  # the duet is chosen only where its variance at equal GPU minutes is this many times lower
MAX_SESSIONS = 40


@dataclass(frozen=True)
class DuetDesign:
    sessions: int
    detectable: float  # relative change caught with 80% power at alpha (one-sided), df sessions − 1
    gpu_minutes: float


def sessions_design(c: DuetComponents, sessions: int, alpha: float = Thresholds().alpha) -> DuetDesign:
    if sessions < 2:
        raise ValueError("a duet needs at least 2 sessions")
    change = float(mde(c.session_sd / math.sqrt(sessions), sessions - 1, alpha))
    return DuetDesign(sessions, change, sessions * c.session_cost_s / 60.0)


def fewest_sessions_for(c: DuetComponents, target: float, alpha: float = Thresholds().alpha) -> DuetDesign | None:
    # A FAIL needs FEWEST_RUNS sessions (df 2): fewer say nothing about the session-to-session spread.
    for k in range(FEWEST_RUNS, MAX_SESSIONS + 1):
        d = sessions_design(c, k, alpha)
        if d.detectable <= target:
            return d
    return None


def sessions_within(c: DuetComponents, minutes: float, alpha: float = Thresholds().alpha) -> DuetDesign | None:
    k = int(minutes * 60.0 // c.session_cost_s)
    return sessions_design(c, min(k, MAX_SESSIONS), alpha) if k >= FEWEST_RUNS else None


def interleave_variance_per_minute(c: Components) -> float:
    """Var of today's A/B difference × its GPU minutes (K starts a side, one pass: 2σ_run²/K for 2K cycles)."""
    cycle_min = (c.start_cost_s + c.pass_cost_s) / 60.0
    return 2.0 * c.sigma_run() ** 2 * 2.0 * cycle_min


def variance_ratio(interleave: Components, duet: DuetComponents) -> float:
    """How many times lower the duet's variance is at equal GPU time (warm-up cycles left out on both sides)."""
    duet_per_minute = duet.session_sd ** 2 * duet.session_cost_s / 60.0
    return math.inf if duet_per_minute == 0 else interleave_variance_per_minute(interleave) / duet_per_minute


def chosen(interleave: Components | None, duet: DuetComponents | None, detect_interleave: float | None,
           detect_duet: float | None, ratio_needed: float = DEFAULT_RATIO) -> str:
    """"duet" where its variance at equal GPU minutes is ≥ ratio_needed× lower and it detects no larger a change in
    the budget; else "interleave" (also where either design's components are missing)."""
    if interleave is None or duet is None or detect_duet is None:
        return "interleave"
    better = detect_interleave is None or detect_duet <= detect_interleave
    return "duet" if better and variance_ratio(interleave, duet) >= ratio_needed else "interleave"

