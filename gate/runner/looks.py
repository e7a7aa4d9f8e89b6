"""Two looks in one A/B job (`gate run --ab`): the plan, the budget, the outlier rule, and where decisions come from.

First look: warm A, warm B, then 3+3 scored runs interleaved A,B,B,A,A,B. Each model is then decided
by `decide(first_look_report, model)`: pass or fail stops it; extend runs 3+3 more for that model
only, continuing the pattern (run4..run6: B,A,A,B,B,A), decided by `decide_pooled` on all six pairs.
After every scored run, a run further than max(5 sigma, 8%) from its arm's median (any gated speed metric
of the model) is re-measured once with a fresh server; the original is kept under
outliers/run<R>/<model>/ (not a run* folder, so no reader counts it). At most one re-measure per
arm and model, and never more than --max-runs scored runs per model (both arms, re-measures included).

The decisions are statistics, not the runner's: a `Decider` is passed in. The real one
(`tree_decider`) compares the two trees with the gate's own compare() and asks gate.stats.looks.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Protocol

from gate.config import Suite
from gate.errors import GateError
from gate.results import read_workload_run

OUTLIER_SIGMAS = 5.0
OUTLIER_MIN_REL = 0.08
DEFAULT_MAX_RUNS = 14
EXTENSION_RUNS = ("4", "5", "6")


class Decision(Protocol):
    """gate.stats.looks.LookDecision's shape: action is "pass", "fail" or "extend"."""

    action: str
    reasons: tuple[str, ...]


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


@dataclass(frozen=True)
class Outlier:
    run: str  # "run3"
    deviation: float  # relative distance from the arm's median
    threshold: float
    row: str  # "qwen3/asr_en throughput_samples_per_s"

    def describe(self) -> str:
        return (f"{self.run}: {self.row} is {self.deviation:.1%} from its arm's median "
                f"(rule: more than {self.threshold:.1%})")


def speed_values(run_dir: Path, suite: Suite, model: str) -> dict[tuple[str, str], float]:
    """The gated speed metrics of one model in one run directory: (workload id, metric) -> value."""
    found = {}
    for workload in suite.workloads_for((model,)):
        run = read_workload_run(run_dir, workload)
        for metric in workload.metrics:
            value = run.metrics.get(metric.name)
            if metric.kind == "speed" and isinstance(value, (int, float)) and value > 0:
                found[(workload.id, metric.name)] = float(value)
    return found


def find_outlier(arm: Mapping[str, Mapping[tuple[str, str], float]],
                 sigma: Callable[[str, str], float | None] = lambda w, m: None) -> Outlier | None:
    """The run of one arm farthest beyond the rule on any speed row, or None. Needs three runs or more
    (with two, both are equally far from their median)."""
    if len(arm) < 3:
        return None
    worst: Outlier | None = None
    rows = set().union(*(values.keys() for values in arm.values()))
    for row in sorted(rows):
        values = {run: v[row] for run, v in arm.items() if row in v}
        if len(values) < 3:
            continue
        median = statistics.median(values.values())
        s = sigma(*row)
        threshold = max(OUTLIER_SIGMAS * s if s else 0.0, OUTLIER_MIN_REL)
        for run, value in values.items():
            deviation = abs(value / median - 1.0)
            if deviation > threshold and (worst is None or deviation - threshold > worst.deviation - worst.threshold):
                worst = Outlier(run, deviation, threshold, f"{row[0]} {row[1]}")
    return worst


class _TreeDecider:
    """decide / decide_pooled on compare() of the two trees as they are on disk when asked (at the first
    look the trees hold run1..run3 only; at the second, run1..run6)."""

    def __init__(self, suite: Suite, base: Path, candidate: Path, calibration: Path | None,
                 decide: Callable, decide_pooled: Callable, compare_trees: Callable) -> None:
        self.suite, self.base, self.candidate, self.calibration = suite, base, candidate, calibration
        self._decide, self._decide_pooled, self._compare = decide, decide_pooled, compare_trees

    def first(self, model: str) -> Decision:
        report = self._compare(self.suite, self.base, self.candidate, model, self.calibration, look="first")
        return self._decide(report, model)

    def pooled(self, model: str) -> Decision:
        report = self._compare(self.suite, self.base, self.candidate, model, self.calibration, look="pooled")
        return self._decide_pooled(report, model)


def decisions_missing() -> str | None:
    """Why the real decision functions cannot be used here (checked before any run), or None."""
    try:
        import gate.stats.looks  # noqa: F401
    except ImportError as exc:
        return f"two looks need gate.stats.looks ({exc})"
    return None


def tree_decider(suite: Suite, base: Path, candidate: Path, calibration: Path | None) -> Decider:
    """The real decider: the gate's compare() and gate.stats.looks. Imported here, lazily, so that a
    one-look `gate run` never needs the statistics libraries."""
    try:
        from gate.stats.looks import decide, decide_pooled
    except ImportError as exc:
        raise GateError(f"two looks need gate.stats.looks ({exc}); run with --one-look") from None
    return _TreeDecider(suite, base, candidate, calibration, decide, decide_pooled, compare_trees)


def compare_trees(suite: Suite, base: Path, candidate: Path, model: str, calibration: Path | None, *,
                  look: str = "final"):
    """compare() of two result trees for one model, with the A/A calibration of a baseline file if given,
    at the FAIL level of `look` ("first", "pooled" or "final": gate.stats.looks splits α over the two looks)."""
    from gate.compare import compare
    from gate.sides import load_side
    from gate.stats.looks import Look, thresholds_for
    table = load_side(calibration, suite, (model,)).calibration if calibration is not None else None
    return compare(load_side(base, suite, (model,)), load_side(candidate, suite, (model,)), suite,
                   models=(model,), calibration=table or None, thresholds=thresholds_for(Look(look)))


def calibration_sigma(suite: Suite, calibration: Path | None, models: tuple[str, ...]) -> Callable[[str, str], float | None]:
    """sigma_run (SD of ln value, about the relative SD) per (workload, metric) from a baseline file's A/A
    calibration, for the outlier rule; None where the baseline has no usable calibration."""
    if calibration is None:
        return lambda workload_id, metric: None
    from gate.sides import load_side
    from gate.stats.performance import Calibration
    table = load_side(calibration, suite, models).calibration or {}

    def sigma(workload_id: str, metric: str) -> float | None:
        entry = table.get(workload_id, {}).get(metric)
        return entry.sigma if isinstance(entry, Calibration) and entry.usable else None
    return sigma


# --- the trusted side checks the plan -------------------------------------------------------------

@dataclass(frozen=True)
class PlanCheck:
    """What decide() on the first look asks for, against the runs a pair of trees holds for one model."""

    model: str
    first_look: str  # the recomputed first-look action
    expected: tuple[str, ...]  # scored runs each side must hold
    found: Mapping[str, tuple[str, ...]]  # side tree -> scored runs holding the model
    problems: tuple[str, ...]
    first_reasons: tuple[str, ...] = ()  # why the first look decided so
    first_runs: tuple[str, ...] = ()  # the runs the first look saw on each side ("run1", ...)
    not_extended: str | None = None  # an "extend" the --max-runs budget did not allow

    @property
    def ok(self) -> bool:
        return not self.problems


def runs_with_model(tree: Path, suite: Suite, model: str) -> tuple[str, ...]:
    """Scored run folders (run<R>, not the warm run) of a tree that hold the model's folder, in order."""
    found = [p.name for p in Path(tree).iterdir()
             if p.is_dir() and p.name.startswith("run") and p.name != f"run{suite.warm_run}" and (p / model).is_dir()]
    return tuple(sorted(found, key=lambda n: (0, int(n[3:]), "") if n[3:].isdigit() else (1, 0, n)))


def check_plan(suite: Suite, base: Path, candidate: Path, model: str, *, decide: Callable,
               first_runs: tuple[str, ...] = ("1", "2", "3"), extension: tuple[str, ...] = EXTENSION_RUNS,
               max_runs: int = DEFAULT_MAX_RUNS, calibration: Path | None = None,
               compare: Callable = compare_trees) -> PlanCheck:
    """Recompute the first-look decision from the trees alone (their first 3+3 runs) and check that each
    tree holds exactly the scored runs that decision asks for: a pure function of the trees, so the
    trusted report job can reject an uploaded tree whose run count does not match the plan."""
    import shutil
    import tempfile

    first = tuple(f"run{r}" for r in first_runs)
    found = {str(tree): runs_with_model(tree, suite, model) for tree in (base, candidate)}
    with tempfile.TemporaryDirectory(prefix="gate-plan-") as tmp:
        views = []
        for name, tree in (("base", base), ("candidate", candidate)):
            view = Path(tmp) / name
            for run in first:
                if (Path(tree) / run).is_dir():
                    shutil.copytree(Path(tree) / run, view / run)
            view.mkdir(exist_ok=True)
            views.append(view)
        decision = decide(compare(suite, views[0], views[1], model, calibration, look="first"), model)
    expected = first
    not_extended = None
    if decision.action == "extend":
        remeasured = sum(1 for tree in (base, candidate) for run in first
                         if (Path(tree) / "outliers" / run / model).is_dir())
        made = 2 * len(first) + remeasured
        if made + 2 * len(extension) <= max_runs:
            expected = first + tuple(f"run{r}" for r in extension)
        else:  # the runner's words (execute.py)
            not_extended = f"--max-runs {max_runs}: {made} made, the second look needs {2 * len(extension)} more"
    problems = tuple(f"{tree}: {model} has scored runs {', '.join(runs) or 'none'}; the first look "
                     f"({decision.action}) asks for {', '.join(expected)}"
                     for tree, runs in found.items() if runs != expected)
    return PlanCheck(model, decision.action, expected, found, problems,
                     first_reasons=tuple(getattr(decision, "reasons", ())), first_runs=first, not_extended=not_extended)
