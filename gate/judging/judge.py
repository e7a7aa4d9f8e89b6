"""The one judge: two sides on disk -> a Report. Every verdict the gate gives comes from here.

`gate compare` (by hand), the trusted `gate post` (CI), the runner's look decisions (`gate run --ab`)
and the trusted recompute of the run plan all call this module, with one set of defaults, so the same
two trees get the same report wherever they are judged (docs/design.md, "One judge"):

- Calibration: the file given, else BASE's when BASE is a baseline file with one, else CANDIDATE's.
  Its stamp is checked against the candidate's runs (gate.judging.freshness): a stale calibration is named on every
  speed row across jobs (which WARN at most there), and is not used at all inside one job (compare's rule).
- Looks: two trees from `gate run --ab` with look decisions (the candidate's gate-run.json says so, or
  the trusted job says it is such a pair) are judged by the two-look rule, recomputed from the trees:
  the first look on run1..run3 of each side at Holm α₁; a model it leaves undecided must hold the
  extension runs and is judged on all runs at α₂; a model it decided is judged on its 3+3 runs at α₁.
  The report is published at the α of the look that decided (the rule the benchmark simulates), and
  carries the recomputed looks. Anything else (a tree against a baseline file, two hand-made trees,
  `--one-look`) is one final look at the family α.
- Every model is judged on its own (its rows are one family) and the reports are merged, so a model's
  verdict never depends on which other models share the tree, and `gate merge` of CI's per-model
  reports equals `gate compare` of the whole tree.

Reading is the caller's choice only where trust differs: `cache` (the per-utterance cache beside a
tree; off for uploaded trees, whose cache anyone could have written) and `check_side` (the trusted
job's extra checks of an uploaded side against the runs the plan asks for).
"""
from __future__ import annotations

import enum
import shutil
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from gate.formats import abplan, runlog
from gate.formats.config import Suite
from gate.formats.errors import InputError
from gate.formats.report import MAX_TEXT, CalibrationCheck, LookAction, LookName, LookOutcome, LooksFinal, ModelLooks, Report, clip
from gate.judging import duet, look_rule
from gate.judging.compare import compare
from gate.reading import comparability
from gate.reading.copies import refuse_copies, side_hashes
from gate.reading.results import runs_with_model
from gate.reading.side import Side
from gate.stats import looks as rule

RECOMPUTED = "recomputed"


class Design(enum.Enum):
    """How the runs of an A/B pair were planned, hence which look rule applies."""

    AUTO = "auto"  # two looks when the candidate's gate-run.json records an A/B with look decisions
    TWO_LOOKS = "two looks"  # the trusted job: an uploaded A/B pair is always judged by the two-look rule
    ONE_LOOK = "one look"


SideCheck = Callable[[Path, tuple[str, ...]], None]  # (side tree, scored runs the plan asks for) -> raises


@dataclass(frozen=True)
class Request:
    base: Path  # a result tree or a baseline file
    candidate: Path  # a result tree (or a baseline file: two nights compared)
    suite: Suite
    models: tuple[str, ...] | None = None  # default: the candidate's models, else the base's
    allow_diff: tuple[str, ...] = ()
    calibration: Path | None = None  # a baseline file with an A/A calibration; default: see the module doc
    cross_job: bool | None = None  # default: across jobs when either side is a baseline file
    seed: int = 0
    cache: bool = True
    design: Design = Design.AUTO
    max_runs: int | None = None  # the A/B's --max-runs; default: the log's (AUTO), else abplan.DEFAULT_MAX_RUNS
    check_side: SideCheck | None = None


@dataclass(frozen=True)
class FirstLook:
    """The first look at one model, recomputed from run1..run3 of each tree, and the runs it asks for."""

    model: str
    decision: look_rule.LookDecision
    expected: tuple[str, ...]  # the scored runs each side must hold ("run1", ...)
    found: tuple[tuple[str, ...], tuple[str, ...]]  # the scored runs base and candidate hold for the model
    not_extended: str | None  # an "extend" the --max-runs budget did not allow

    @property
    def problems(self) -> tuple[str, ...]:
        return tuple(f"{side}: {self.model} has scored runs {', '.join(runs) or 'none'}; the first look "
                     f"({self.decision.action}) asks for {', '.join(self.expected)}"
                     for side, runs in zip(("base", "candidate"), self.found, strict=True) if runs != self.expected)


def judge(request: Request) -> Report:
    """The report on request.candidate against request.base (see the module doc for the rules)."""
    return judge_scoped(request)[0]


def judge_scoped(request: Request) -> tuple[Report, tuple[str, ...]]:
    """judge(request), and the candidate's models left out of it: without --models, a baseline file is judged on
    the models it holds (a per-model baseline against a tree of every model), and the others are named."""
    _check_allowed(request.allow_diff)
    base = read_side(request.base, request)
    cand = read_side(request.candidate, request)
    if base.kind == cand.kind == "tree":  # a candidate run copied from the base (each tree's own: side_from_tree)
        refuse_copies([(base.path, side_hashes(base)), (cand.path, side_hashes(cand))], path=cand.path)
    models = request.models or cand.models or base.models
    left_out: tuple[str, ...] = ()
    if not request.models and base.kind == "baseline" and cand.kind == "tree":
        shared = tuple(m for m in cand.models if m in base.models)
        if shared:  # none shared: judged on the candidate's, and compare says they share no workload
            models, left_out = shared, tuple(m for m in cand.models if m not in base.models)
    calibration, check = _calibration(request, base, cand, models)
    layout = _duet_layout(request, base, cand)
    if layout is not None:
        reports = [_duet_report(request, base, cand, model, layout, calibration, check) for model in models]
    elif _two_looks(request, base, cand):
        reports = [_two_look_report(request, base, cand, model, calibration, check) for model in models]
    else:
        one_job = not (request.cross_job if request.cross_job is not None else "baseline" in (base.kind, cand.kind))
        why = _one_look_because(request, base, cand)
        # the order the runs ran in is known from gate run's log only; two trees by hand do not record it
        reports = [compare(base, cand, request.suite, models=(model,), allow_diff=request.allow_diff, seed=request.seed,
                           thresholds=one_look_thresholds(one_job and why is None), calibration=calibration,
                           cross_job=request.cross_job, calibration_check=check, run_order=why is not None)
                   for model in models]
        if why is not None:
            reports = [replace(r, looks=(ModelLooks(m, runlog.FILE, (), LooksFinal.ONE_LOOK, note=_clipped_note(why)),))
                       for r, m in zip(reports, models, strict=True)]
    return (reports[0] if len(reports) == 1 else Report.merge(reports)), left_out


def one_look_thresholds(one_job: bool) -> Any:
    """The Thresholds of a comparison judged at one look (Look.FINAL). Two trees of one job without a run log (the
    runbook's hand-made pair; a `gate run --ab` with one look keeps the level its runner decided at) can FAIL on
    speed, so the speed family spends what `gate run`'s two looks spend on it together, α₁ + α₂
    (gate.stats.looks), not the one-look family α: each model is its own family, and at σ 2%, where the floors no
    longer hold the noise back, four models at 0.005 each false-FAILed 2.2% of all-model no-op PRs (issue 39;
    benchmarks/results/verdict_power_runbook.md). Across jobs a speed row WARNs at most, and the family α stays."""
    found = rule.thresholds_for(rule.Look.FINAL)
    return replace(found, alpha=rule.TWO_LOOKS_ALPHA) if one_job else found


def decide_look(request: Request, model: str, look: rule.Look) -> look_rule.LookDecision:
    """The runner's decision at a look (FIRST: pass, fail or extend; POOLED: pass or fail), on the trees as
    they are on disk now: the same judgement the recompute makes of the finished trees."""
    base, cand = read_side(request.base, request), read_side(request.candidate, request)
    calibration, check = _calibration(request, base, cand, (model,))
    layout = _duet_layout(request, base, cand)
    if layout is not None:
        report = compare(base, cand, request.suite, models=(model,), allow_diff=request.allow_diff, seed=request.seed,
                         thresholds=rule.thresholds_for(look), calibration=calibration, cross_job=False,
                         calibration_check=check, duet=layout)
        return look_rule.decide(report, model) if look is rule.Look.FIRST else look_rule.decide_pooled(report, model)
    report = _report(request, base, cand, (model,), look, calibration, check)
    return look_rule.decide(report, model) if look is rule.Look.FIRST else look_rule.decide_pooled(report, model)


def first_look(request: Request, model: str) -> FirstLook:
    """Recompute the first-look decision of one model from the trees alone (their run1..run3) and the
    scored runs it asks each tree to hold: what the trusted job checks an uploaded pair against."""
    found = (runs_with_model(request.base, request.suite, model), runs_with_model(request.candidate, request.suite, model))
    first = tuple(f"run{r}" for r in request.suite.scored_runs)
    with tempfile.TemporaryDirectory(prefix="gate-first-look-") as tmp:
        views = []
        for name, tree in (("base", request.base), ("candidate", request.candidate)):
            view = Path(tmp) / name / Path(tree).name  # the tree's own folder name, as the runner saw it
            for run in first:
                if (Path(tree) / run).is_dir():
                    shutil.copytree(Path(tree) / run, view / run, symlinks=True)
            view.mkdir(parents=True, exist_ok=True)
            views.append(view)
        view_request = replace(request, base=views[0], candidate=views[1], cache=False, design=Design.ONE_LOOK)
        decision = decide_look(view_request, model, rule.Look.FIRST)
    expected, not_extended = first, None
    if decision.action == "extend":
        remeasured = sum(1 for tree in (request.base, request.candidate) for run in first
                         if (Path(tree) / "outliers" / run / model).is_dir())
        made = 2 * len(first) + remeasured
        budget = _max_runs(request)
        if abplan.extension_fits(made, budget):
            expected = first + tuple(f"run{r}" for r in abplan.EXTENSION_RUNS)
        else:
            not_extended = abplan.not_extended_reason(made, budget)
    return FirstLook(model, decision, expected, found, not_extended)


# --- the duet (gate.judging.duet) ---------------------------------------------------------------------------

def _duet_layout(request: Request, base: Side, cand: Side) -> duet.Layout | None:
    """The candidate tree's duet record (`gate run --design duet`), None for anything else."""
    if base.kind != "tree" or cand.kind != "tree":
        return None
    return duet.read_layout(request.candidate)


def _duet_report(request: Request, base: Side, cand: Side, model: str, layout: duet.Layout,
                 calibration: Mapping[str, Mapping[str, Any]] | None, check: CalibrationCheck | None) -> Report:
    """A duet's model judged on its sessions, at the level of the look that decided it (the runner's record says
    which: the first look after K₁ sessions, or the one after K); the note says the design in one line."""
    looks = layout.looks.get(model, {})
    look = rule.Look.POOLED if "pooled" in looks else rule.Look.FIRST if "first" in looks else None
    thresholds = rule.thresholds_for(look) if look is not None else one_look_thresholds(True)
    report = compare(base, cand, request.suite, models=(model,), allow_diff=request.allow_diff, seed=request.seed,
                     thresholds=thresholds, calibration=calibration, cross_job=False, calibration_check=check,
                     duet=layout)
    sessions = len(layout.for_model(model))
    outcomes: tuple[LookOutcome, ...] = ()
    final = LooksFinal.ONE_LOOK
    if look is not None:
        first_layout = layout.first_look()
        first_report = report if look is rule.Look.FIRST else compare(
            base, cand, request.suite, models=(model,), allow_diff=request.allow_diff, seed=request.seed,
            thresholds=rule.thresholds_for(rule.Look.FIRST), calibration=calibration, cross_job=False,
            calibration_check=check, duet=first_layout)
        first = look_rule.decide(first_report, model)
        seen = len(first_layout.for_model(model))
        outcomes = (LookOutcome(LookName.FIRST, LookAction(first.action), _clipped(first.reasons), seen, seen),)
        final = LooksFinal.UNDECIDED if first.action == "extend" else LooksFinal(first.action)
        if look is rule.Look.POOLED:
            pooled = look_rule.decide_pooled(report, model)
            outcomes += (LookOutcome(LookName.POOLED, LookAction(pooled.action), _clipped(pooled.reasons), sessions,
                                     sessions),)
            final = LooksFinal(pooled.action)
    note = f"{layout.departure} ({sessions} sessions)"
    return replace(report, looks=(ModelLooks(model, RECOMPUTED, outcomes, final, note=_clipped_note(note),
                                             design="duet"),))


# --- the two-look rule ----------------------------------------------------------------------------------

def _two_looks(request: Request, base: Side, cand: Side) -> bool:
    if request.design is Design.ONE_LOOK or base.kind != "tree" or cand.kind != "tree":
        return False
    if request.design is Design.TWO_LOOKS:
        return True
    log = runlog.read(request.candidate)
    return log is not None and log.two_looks


def _one_look_because(request: Request, base: Side, cand: Side) -> str | None:
    """Why an A/B of `gate run --ab` had one look (its log says), for the report; None for anything else."""
    if request.design is not Design.AUTO or base.kind != "tree" or cand.kind != "tree":
        return None
    log = runlog.read(request.candidate)
    if log is None or log.plan is None or log.plan.decider is not None:
        return None
    return log.plan.one_look_because or "one look"


def _two_look_report(request: Request, base: Side, cand: Side, model: str, calibration: Mapping[str, Mapping[str, Any]] | None,
                     check: CalibrationCheck | None) -> Report:
    first = first_look(request, model)
    if first.problems and request.design is Design.TWO_LOOKS:  # the trusted job: the runs are not the plan's
        raise InputError(first.problems[0], path=request.candidate)
    if request.check_side is not None:
        for tree in (request.base, request.candidate):
            request.check_side(tree, first.expected)
    first_runs = tuple(f"run{r}" for r in request.suite.scored_runs)
    extended = len(first.expected) > len(first_runs)
    report = _report(request, base, cand, (model,), rule.Look.POOLED if extended else rule.Look.FIRST,
                     calibration, check)
    saw = [sum(1 for run in runs if run in first_runs) for runs in first.found]
    first_record = LookOutcome(LookName.FIRST, LookAction(first.decision.action), _clipped(first.decision.reasons), saw[0], saw[1])
    # A tree by hand whose runs differ from the plan is judged as it is (its coverage says what is missing).
    note = first.problems[0] if first.problems else first.not_extended
    if extended:
        pooled = look_rule.decide_pooled(report, model)
        second = LookOutcome(LookName.POOLED, LookAction(pooled.action), _clipped(pooled.reasons), len(first.found[0]), len(first.found[1]))
        looks = ModelLooks(model, RECOMPUTED, (first_record, second), LooksFinal(pooled.action), note=_clipped_note(note))
    else:
        final = LooksFinal.UNDECIDED if first.decision.action == "extend" else LooksFinal(first.decision.action)
        looks = ModelLooks(model, RECOMPUTED, (first_record,), final, note=_clipped_note(note))
    return replace(report, looks=(looks,))


def _max_runs(request: Request) -> int:
    if request.max_runs is not None:
        return request.max_runs
    if request.design is Design.AUTO:
        log = runlog.read(request.candidate)
        if log is not None and log.plan is not None:
            return log.plan.max_runs_per_model
    return abplan.DEFAULT_MAX_RUNS


# --- one comparison ------------------------------------------------------------------------------------

def _report(request: Request, base: Side, cand: Side, models: Sequence[str], look: rule.Look,
            calibration: Mapping[str, Mapping[str, Any]] | None, check: CalibrationCheck | None) -> Report:
    return compare(base, cand, request.suite, models=models, allow_diff=request.allow_diff, seed=request.seed,
                   thresholds=rule.thresholds_for(look), calibration=calibration, cross_job=request.cross_job,
                   calibration_check=check)


def read_side(path: Path, request: Request) -> Side:
    """One side as the judge reads it: a result tree (through its per-utterance cache unless request.cache is
    off) or a baseline file."""
    from gate.reading.side_loader import load_side

    if request.cache and Path(path).is_dir():
        from gate.reading.sample_cache import CachedSampleReader
        from gate.reading.tree_side import side_from_tree

        return side_from_tree(path, request.suite, models=request.models, sample_reader=CachedSampleReader(path))
    return load_side(path, request.suite, request.models)


def _calibration(request: Request, base: Side, cand: Side,
                 models: Sequence[str]) -> tuple[Mapping[str, Mapping[str, Any]] | None, CalibrationCheck | None]:
    """The calibration table compare() uses (None: the sides' own) and the freshness check of its file."""
    from gate.judging.freshness import check_calibration

    table = None
    source = request.calibration
    if source is not None:
        from gate.reading.baseline_file import read_baseline

        table = read_baseline(source, request.suite, models=tuple(models)).calibration or {}
    else:
        source = next((Path(path) for path, side in ((request.base, base), (request.candidate, cand))
                       if side.kind == "baseline" and side.calibration), None)
    check = check_calibration(source, request.candidate, request.suite, tuple(models)) if source is not None else None
    return table, check


def _check_allowed(allowed: Sequence[str]) -> None:
    bad = sorted(set(allowed) - set(comparability.KINDS))
    if bad:
        raise InputError(f"--allow-diff {bad[0]}: expected one of {', '.join(comparability.KINDS)}")


def _clipped(reasons: Sequence[str]) -> tuple[str, ...]:
    return tuple(clip(r, MAX_TEXT) for r in list(reasons)[:20])


def _clipped_note(note: str | None) -> str | None:
    return clip(note, MAX_TEXT) if note else None
