"""The A/B plan of `gate run --ab`, as data: shared by the runner, which makes the runs, and the judge,
which recomputes from the finished trees which runs the plan asked for (docs/design.md, "Two looks").

First look: the suite's scored runs (run1..run3) of each side, interleaved A,B,B,A,A,B. A model the first
look leaves undecided gets EXTENSION_RUNS more on each side, within MAX_RUNS scored runs per model
(both arms, re-measures included).
"""
from __future__ import annotations

EXTENSION_RUNS = ("4", "5", "6")
DEFAULT_MAX_RUNS = 14


def extension_fits(made: int, max_runs: int) -> bool:
    """Whether the second look's runs fit the budget after `made` scored runs of a model."""
    return made + 2 * len(EXTENSION_RUNS) <= max_runs


def not_extended_reason(made: int, max_runs: int) -> str:
    return f"--max-runs {max_runs}: {made} made, the second look needs {2 * len(EXTENSION_RUNS)} more"
