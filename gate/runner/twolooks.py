"""Two looks and outlier re-measures of an A/B gate run (the runner's half that decides what to run next).

After the base side's first run the calibration is checked against where the gate runs (stale: not
used). After each scored run, a run beyond the outlier rule is re-measured once per arm and model with a
fresh server (the original kept under outliers/). After the first look, models decide() leaves
undecided get 3+3 more runs, within --max-runs, then decide_pooled().
"""
from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Callable

from gate.formats import runlog
from gate.formats.calibration_stamp import Stamp, calibration_stamp_path, read_stamp, stale_reasons
from gate.formats.inputs import is_present
from gate.judging.outliers import find_outlier, slow_starts_to_remeasure, speed_directions, speed_values
from gate.render.reasons import extend_line
from gate.runner.cycle import ServerCycle
from gate.runner.logbook import Logbook
from gate.runner.looks import Decider, LookPlan, Sigma
from gate.runner.plan import Arm, RunStep, plan_run
from gate.runner.progress import Progress
from gate.runner.request import RunFailed, RunOutcome, RunRequest
from gate.stats.outlier_rule import rule_text as outlier_rule_text


def logged_plan(request: RunRequest, looks: LookPlan, steps: tuple[RunStep, ...]) -> runlog.Plan:
    """The A/B plan as gate-run.json records it: the first look's runs, those a second look may add, the rules."""
    return runlog.Plan(
        first_look=tuple(step.label for step in steps),
        possible_extension=tuple(step.label for step in request.extension_steps(request.models)),
        decider="decide / decide_pooled" if looks.decider is not None else None,
        one_look_because=looks.one_look_because, max_runs_per_model=looks.max_runs,
        outlier_rule=f"re-measure once per arm and model a run more than {outlier_rule_text(' sigma')} "
                     "from its arm's median on a gated speed metric; the original goes to outliers/run<R>/<model>/")


class Looks:
    """The looks of an A/B run. What they run beyond a re-measure (the second look's runs) goes through
    `do_step`, the Runner's own run of a step, so a look's run is made as every other run is."""

    def __init__(self, request: RunRequest, looks: LookPlan, *, log: Logbook, cycle: ServerCycle, progress: Progress,
                 env: Callable[[RunStep], dict[str, str]], do_step: Callable[[RunStep, RunOutcome], None]) -> None:
        self.request = request
        self.suite = request.suite
        self.plan = looks
        self.log = log
        self.cycle = cycle
        self.progress = progress
        self.env = env
        self.do_step = do_step
        self._calibration: Path | None = None  # the calibration once checked against where we run (None: stale/none)
        self._calibration_checked = False
        self._decider: Decider | None = None
        self._sigma: Sigma | None = None

    def check_calibration(self, current: Stamp) -> None:
        """Once, after the base side's first run (`current`: where it ran): is the calibration from this GPU,
        driver and package set? A stale one is reported and not used (decisions and the outlier rule then go
        without it)."""
        calibration = self.plan.calibration
        if self._calibration_checked or calibration is None:
            return
        self._calibration_checked = True
        stamp_path = calibration_stamp_path(calibration)
        recorded: Stamp | None = None
        stale: list[str] = []
        stale_unknown = None
        if is_present(stamp_path):  # a FIFO or a link is named by the reader, not taken for "not found"
            recorded = read_stamp(stamp_path)
            stale = stale_reasons(recorded, current)
        else:
            stale_unknown = f"{stamp_path} not found: where the calibration was measured is unknown"
        if stale:
            self.progress.say(f"calibration {calibration} is stale ({'; '.join(stale)}); "
                              "not used for the look decisions or the outlier rule")
        else:
            self._calibration = calibration
        self.log.calibration_use(path=str(calibration), stamp=recorded, here=current, stale=stale,
                                 stale_unknown=stale_unknown)

    def _looks_sigma(self) -> Sigma:
        if self._sigma is None:
            self._sigma = self.plan.sigma(self._calibration)
        return self._sigma

    def _looks_decider(self) -> Decider:
        assert self.plan.decider is not None
        if self._decider is None:
            self._decider = self.plan.decider(self._calibration)
        return self._decider

    def check_outliers(self, step: RunStep, outcome: RunOutcome) -> None:
        """After a scored run: where both arms of a model hold a look's runs (3+3, 6+6), re-measure each arm's deepest
        slow-mode server start (every workload worse than the other arm's median: gate.judging.outliers.slow_starts_to_remeasure);
        then the arm's run farthest beyond the outlier rule (a run worse in some workloads only stays). Once per
        arm and model, both arms alike."""
        side = step.side
        for model in step.models:
            self._slow_starts(model.model, outcome)
            if self.log.remeasured(side.name, model.model):
                continue
            runs = self.log.scored_runs(side.name, model.model)
            tree = self.request.setup.out / side.name
            arm = {run: speed_values(tree / run, self.suite, model.model) for run in runs}
            outlier = find_outlier(arm, self._looks_sigma(), speed_directions(self.suite, model.model))
            if outlier is None:
                continue
            self._budgeted_remeasure(side, outlier.run, model.model, outlier.describe() + contention(tree / outlier.run),
                                     step, outcome)

    def _slow_starts(self, model: str, outcome: RunOutcome) -> None:
        """At a look's end (both arms with as many scored runs, 3 or more): the slow-mode starts of both arms, found on
        the runs as they are, then re-measured (gate.judging.outliers.slow_starts_to_remeasure)."""
        if len(self.request.sides) != 2:
            return
        sides = dict(zip(("base", "candidate"), self.request.sides, strict=True))  # the first side is the baseline
        runs = {key: self.log.scored_runs(arm.name, model) for key, arm in sides.items()}
        if len(runs["base"]) != len(runs["candidate"]) or len(runs["base"]) % 3 or not runs["base"]:
            return
        arms = {key: {run: speed_values(self.request.setup.out / sides[key].name / run, self.suite, model)
                      for run in made} for key, made in runs.items()}
        for key, start in slow_starts_to_remeasure(arms, self.suite, model).items():
            arm = sides[key]
            if self.log.remeasured(arm.name, model):
                continue
            tree = self.request.setup.out / arm.name
            self._budgeted_remeasure(arm, start.run, model, start.describe() + contention(tree / start.run), None,
                                     outcome)

    def _budgeted_remeasure(self, side: Arm, run: str, model: str, why: str, step: RunStep | None,
                            outcome: RunOutcome) -> None:
        if self.log.runs_of_model(model) + 1 > self.plan.max_runs:
            with self.log.step("remeasure", run=step, model=model) as entry:
                entry.status = "skipped"
                entry.message = f"{why}; not re-measured: --max-runs {self.plan.max_runs} reached"
            return
        self._remeasure(side, run[3:], model, why, outcome)

    def _remeasure(self, side: Arm, run: str, model: str, why: str, outcome: RunOutcome) -> None:
        """Measure one model of one run again with a fresh server; keep the original under outliers/."""
        step = plan_run(self.suite, self.request.setup, side, run, (model,))
        model_step = step.models[0]
        original = self.request.setup.out / side.name / "outliers" / f"run{run}" / model
        self.progress.say(f"{step.label} {model}: outlier, re-measuring with a fresh server ({why})")
        self.progress.total += 1
        self.progress.remaining.append(model)
        with self.log.step("remeasure", run=step, model=model, command=["mv", str(model_step.model_dir),
                                                                         str(original)]) as entry:
            entry.message = why
            if original.exists():
                shutil.rmtree(original)
            original.parent.mkdir(parents=True, exist_ok=True)
            os.replace(model_step.model_dir, original)
        self.log.add_remeasure(side.name, f"run{run}", model, why,
                               str(original.relative_to(self.request.setup.out / side.name)))
        env = self.env(step)
        with self.log.run(step.label, "re-measuring"):
            with self.log.step("gpu-free", run=step):
                self.cycle.wait_gpu_free()
            began = time.monotonic()
            self.cycle.run(step, model_step, env)
            self.progress.cycle_done(model, time.monotonic() - began)
            problems = self.cycle.coverage(step, model_step)
            if problems:
                raise RunFailed(f"{step.label} (re-measure): coverage incomplete:\n  " + "\n  ".join(problems))
        outcome.remeasured.append(f"{step.label} {model}")

    def second_look(self, outcome: RunOutcome) -> None:
        """decide() on the first look; models it leaves undecided get 3+3 more runs, then decide_pooled()."""
        looks = self.plan
        extend: list[str] = []
        for model in self.request.models:
            with self.log.step("decide-first-look", model=model) as entry:
                decision = self._looks_decider().first(model)
                entry.message = f"{decision.action}: " + "; ".join(decision.reasons)
            self.log.first_look(model, decision.action, decision.reasons)
            if decision.action != "extend":
                outcome.decisions[model] = decision.action
                continue
            needed = 2 * len(looks.extension)
            if self.log.runs_of_model(model) + needed > looks.max_runs:
                why = (f"--max-runs {looks.max_runs}: {self.log.runs_of_model(model)} made, "
                       f"the second look needs {needed} more")
                self.log.not_extended(model, why)
                outcome.decisions[model] = "undecided"
                self.progress.say(f"{model}: undecided after the first look, but {why}")
                continue
            self.log.extended(model, decision.reasons)
            extend.append(model)
            why = extend_line(decision.causes)  # the run log keeps each row's reason
            self.progress.say(f"{model}: first look undecided{f' ({why})' if why else ''}; "
                              f"running {len(looks.extension)}+{len(looks.extension)} more")
        self.log.write()
        self.progress.possible = []  # decided: the ETA now counts only the runs that will be made
        steps = self.request.extension_steps(tuple(extend))
        for step in steps:
            self.log.add_pending(step.label)
            self.progress.total += len(step.models)
            self.progress.remaining += [m.model for m in step.models]
        for step in steps:
            self.do_step(step, outcome)
        for model in extend:
            with self.log.step("decide-pooled", model=model) as entry:
                decision = self._looks_decider().pooled(model)
                entry.message = f"{decision.action}: " + "; ".join(decision.reasons)
            self.log.pooled(model, decision.action, decision.reasons)
            outcome.decisions[model] = decision.action
        self.log.write()


def contention(run_dir: Path) -> str:
    """What the run's telemetry says about its GPU and host, for the outlier's record: throttling, the lowest SM
    clock, host load and stolen CPU time ("" when the run has no telemetry)."""
    try:
        summary = json.loads((run_dir / "telemetry.json").read_text())["summary"]
    except (OSError, ValueError, KeyError, TypeError):
        return ""
    if not isinstance(summary, dict):
        return ""
    facts = []
    if isinstance(summary.get("throttled_share"), (int, float)):
        reasons = ", ".join(sorted(summary.get("throttle_reasons") or {})) or "none"
        facts.append(f"GPU throttled {summary['throttled_share']:.0%} of samples ({reasons})")
    if isinstance(summary.get("sm_clock_mhz_min"), (int, float)):
        facts.append(f"SM clock min {summary['sm_clock_mhz_min']:.0f} MHz")
    if isinstance(summary.get("load1_max"), (int, float)):
        facts.append(f"host load1 max {summary['load1_max']:.1f} on {summary.get('host_cpus')} CPUs")
    if isinstance(summary.get("cpu_steal_share"), (int, float)):
        facts.append(f"CPU steal {summary['cpu_steal_share']:.1%}")
    return f" [telemetry: {'; '.join(facts)}]" if facts else ""
