"""`gate run --dry-run --components FILE`: the plan by detectable change (issue 37), as comment lines.

Per model in the run: the server cycles, passes per start and GPU minutes today's design (one timed pass per
start) and the two-level design (P passes per start, gate.stats.nested) need for the target change, and the
change the configured budget (--max-runs scored runs a model) buys under each. Cycles count both sides and
the two warm-up cycles; minutes are the components' measured start and pass costs, nothing else.
"""
from __future__ import annotations

from typing import Mapping

from gate.formats.noise_model import Components, DuetComponents
from gate.stats import duet_design
from gate.stats.nested import WARM_CYCLES, NestedDesign, best_within, cheapest_for


def _cell(d: NestedDesign | None) -> str:
    if d is None:
        return "not reachable within 64 starts a side"
    return (f"{d.starts} starts a side × {d.passes} pass{'es' if d.passes > 1 else ''} = "
            f"{WARM_CYCLES + 2 * d.starts} cycles, {d.gpu_minutes:.1f} GPU min, detects {100 * d.detectable:.1f}%")


def _duet_cell(d: duet_design.DuetDesign | None) -> str:
    if d is None:
        return f"not reachable within {duet_design.MAX_SESSIONS} sessions"
    return f"{d.sessions} sessions, {d.gpu_minutes:.1f} GPU min, detects {100 * d.detectable:.1f}%"


def duet_lines(components: Mapping[str, Components], duet: Mapping[str, DuetComponents],
               models: tuple[str, ...], target: float, max_runs: int) -> list[str]:
    """Both designs side by side (issue 53): the duet's sessions for the target and in today's budget, the variance
    ratio at equal GPU minutes, and the design the planner picks (gate.stats.duet_design.chosen)."""
    out = [f"# --- the duet beside today's design (stored duet A/A components): the duet is picked only where its "
           f"variance at equal GPU minutes is ≥ {duet_design.DEFAULT_RATIO:g}× lower and it detects no larger a change"]
    for model in models:
        c, d = components.get(model), duet.get(model)
        if d is None:
            out.append(f"# {model}: no duet components; design: interleave")
            continue
        out.append(f"# {model}: duet σ of a session's difference {100 * d.session_sd:.2f}%, a session "
                   f"{d.session_cost_s:.1f} s of GPU time")
        out.append(f"#   for {100 * target:.1f}%, duet: {_duet_cell(duet_design.fewest_sessions_for(d, target))}")
        if c is None:
            out.append("#   no interleave components: design: interleave")
            continue
        today = best_within(c, _budget_minutes(c, max_runs), passes=1)
        minutes = today.gpu_minutes if today is not None else _budget_minutes(c, max_runs)
        within = duet_design.sessions_within(d, minutes)
        out.append(f"#   today's budget ({minutes:.1f} GPU min): interleave {_cell(today)}; duet {_duet_cell(within)}")
        ratio = duet_design.variance_ratio(c, d)
        pick = duet_design.chosen(c, d, today.detectable if today else None, within.detectable if within else None)
        out.append(f"#   variance at equal GPU minutes: the duet's {ratio:.1f}× lower; design: {pick}")
    return out


def lines(components: Mapping[str, Components], models: tuple[str, ...], target: float, max_runs: int) -> list[str]:
    out = [f"# --- plan by detectable change (--components): target {100 * target:.1f}% at 80% power, "
           "own-runs df 2(K − 1), a start's mean of its passes is one observation"]
    for model in models:
        c = components.get(model)
        if c is None:
            out.append(f"# {model}: no components in the file; plan as today")
            continue
        out.append(f"# {model}: σ_start {100 * c.sigma_start:.2f}%, σ_pass {100 * c.sigma_pass:.2f}%, "
                   f"start {c.start_cost_s:.1f} s, pass {c.pass_cost_s:.1f} s of GPU time")
        out.append(f"#   for {100 * target:.1f}%, today: {_cell(cheapest_for(c, target, passes=1))}")
        out.append(f"#   for {100 * target:.1f}%, two-level: {_cell(cheapest_for(c, target))}")
        budget = best_within(c, _budget_minutes(c, max_runs), passes=1)
        out.append(f"#   the budget (--max-runs {max_runs}), today: {_cell(budget)}")
        if budget is not None:
            out.append(f"#   the same minutes, two-level: {_cell(best_within(c, budget.gpu_minutes))}")
    return out


def _budget_minutes(c: Components, max_runs: int) -> float:
    per_side = max(2, max_runs // 2)
    return (WARM_CYCLES * (c.start_cost_s + c.pass_cost_s) + 2 * per_side * (c.start_cost_s + c.pass_cost_s)) / 60.0
