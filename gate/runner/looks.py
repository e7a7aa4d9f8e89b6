"""Two looks in one A/B job (`gate run --ab`): the plan, the budget, the outlier rule, and where decisions come from.

First look: warm A, warm B, then 3+3 scored runs interleaved A,B,B,A,A,B. Each model is then decided
by `decide(first_look_report, model)`: pass or fail stops it; extend runs 3+3 more for that model
only, continuing the pattern (run4..run6: B,A,A,B,B,A), decided by `decide_pooled` on all six pairs.
After every scored run, a run the judge's outlier rule flags (gate.stats.outliers: further than max(5 sigma,
3%) from its arm's median on a gated speed metric of the model) is re-measured once with a fresh server; the original is kept under
outliers/run<R>/<model>/ (not a run* folder, so no reader counts it). At most one re-measure per
arm and model, and never more than --max-runs scored runs per model (both arms, re-measures included).

The decisions are statistics, not the runner's: a `Decider` is passed in. The real one
(gate.judging.look_decider.tree_decider, which `gate run` hands in) asks the one judge (gate.judging.judge.decide_look),
which the trusted job also uses to recompute the plan from the finished trees.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol

from gate.formats.abplan import DEFAULT_MAX_RUNS, EXTENSION_RUNS  # noqa: F401 - re-exported for the runner
from gate.formats.reasons import ExtendCause


class Decision(Protocol):
    """gate.judging.look_rule.LookDecision's shape: action is "pass", "fail", "extend" or "undecided" (a row not
    judged); causes, why an "extend" extends."""

    @property
    def action(self) -> str: ...

    @property
    def reasons(self) -> tuple[str, ...]: ...

    @property
    def causes(self) -> tuple[ExtendCause, ...]: ...


class Decider(Protocol):
    def first(self, model: str) -> Decision: ...

    def pooled(self, model: str) -> Decision: ...


Sigma = Callable[[str, str], "float | None"]  # (workload id, metric) -> calibrated sigma_run, None if unknown


def no_sigma(calibration: Path | None) -> Sigma:
    return lambda workload_id, metric: None


@dataclass(frozen=True)
class LookPlan:
    """How the A/B job may grow. `decider` None: one look only (no extension).

    Both the decider and the outlier rule's sigma are made from the calibration file by the runner,
    once it has checked that the calibration is not stale (stamp.py): hence factories."""

    decider: Callable[[Path | None], Decider] | None
    max_runs: int = DEFAULT_MAX_RUNS
    extension: tuple[str, ...] = EXTENSION_RUNS
    remeasure: bool = True
    sigma: Callable[[Path | None], Sigma] = no_sigma
    calibration: Path | None = None  # a baseline file with an A/A calibration
    one_look_because: str | None = None  # why an A/B that could have two looks has one
