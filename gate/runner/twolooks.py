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
from typing import TYPE_CHECKING, Any, Mapping

from gate.formats.calibration_stamp import Stamp, calibration_stamp_path, packages_digest, read_stamp, stale_reasons
from gate.formats.config import Suite
from gate.formats.inputs import is_present
from gate.judging.outliers import find_outlier, speed_values
from gate.runner.cycle import RunFailed
from gate.runner.logbook import Logbook
from gate.runner.looks import Decider, LookPlan, Sigma
from gate.runner.plan import Arm, ModelStep, RunStep, plan_run
from gate.runner.preflight import Preflight
from gate.runner.progress import Progress

if TYPE_CHECKING:
    from gate.runner.request import RunOutcome, RunRequest


class TwoLooks:
    """The looks half of the Runner (a mixin: the Runner sets these attributes and the cycle methods)."""

    request: RunRequest
    suite: Suite
    log: Logbook | None
    preflight: Preflight | None
    progress: Progress
    _calibration: Path | None
    _calibration_checked: bool
    _decider: Decider | None
    _sigma: Sigma | None

    if TYPE_CHECKING:  # provided by the Runner and ServerCycles
        def _env(self, step: RunStep) -> dict[str, str]: ...

        def _wait_gpu_free(self) -> None: ...

        def _server_cycle(self, step: RunStep, model: ModelStep, env: Mapping[str, str]) -> None: ...

        def _coverage(self, step: RunStep, model: ModelStep) -> list[str]: ...

        def _do_step(self, step: RunStep, outcome: RunOutcome) -> None: ...

    def _stamp(self, step: RunStep) -> Stamp:
        gpu = self.preflight.gpu if self.preflight else None
        return Stamp(gpu=gpu.name if gpu else None, driver=gpu.driver_version if gpu else None,
                     packages_sha256=packages_digest(read_text_or_none(step.run_dir / "freeze.txt")))

    def _check_calibration(self, step: RunStep) -> None:
        """Once, after the base side's first run: is the calibration from this GPU, driver and package set?
        A stale one is reported and not used (decisions and the outlier rule then go without it)."""
        assert self.log is not None and self.request.looks is not None
        calibration = self.request.looks.calibration
        if self._calibration_checked or calibration is None:
            return
        self._calibration_checked = True
        stamp_path = calibration_stamp_path(calibration)
        current = self._stamp(step)
        record: dict[str, Any] = {"path": str(calibration), "stamp": None, "here": current.to_json(), "stale": [],
                                  "used": True}
        if is_present(stamp_path):  # a FIFO or a link is named by the reader, not taken for "not found"
            recorded = read_stamp(stamp_path)
            record["stamp"] = recorded.to_json()
            record["stale"] = stale_reasons(recorded, current)
        else:
            record["stale_unknown"] = f"{stamp_path} not found: where the calibration was measured is unknown"
        if record["stale"]:
            record["used"] = False
            self.progress.say(f"calibration {calibration} is stale ({'; '.join(record['stale'])}); "
                              "not used for the look decisions or the outlier rule")
        else:
            self._calibration = calibration
        self.log.doc["calibration"] = record
        self.log.write()

    def _looks_sigma(self) -> Sigma:
        assert self.request.looks is not None
        if self._sigma is None:
            self._sigma = self.request.looks.sigma(self._calibration)
        return self._sigma

    def _looks_decider(self) -> Decider:
        assert self.request.looks is not None and self.request.looks.decider is not None
        if self._decider is None:
            self._decider = self.request.looks.decider(self._calibration)
        return self._decider

    def _runs_of_model(self, model: str) -> int:
        """Scored runs made for a model so far, both arms, re-measures included (the --max-runs budget)."""
        assert self.log is not None
        made = sum(len(models.get(model, [])) for models in self.log.doc["scored_runs"].values())
        return made + sum(1 for r in self.log.doc.get("remeasured", []) if r["model"] == model)

    def _check_outliers(self, step: RunStep, outcome: RunOutcome) -> None:
        """After a scored run: re-measure the arm's run farthest beyond the outlier rule, once per arm and model."""
        assert self.log is not None and self.request.looks is not None
        looks = self.request.looks
        side = step.side
        for model in step.models:
            done = [r for r in self.log.doc.get("remeasured", []) if r["side"] == side.name and r["model"] == model.model]
            if done:
                continue
            runs = self.log.doc["scored_runs"].get(side.name, {}).get(model.model, [])
            tree = self.request.setup.out / side.name
            arm = {run: speed_values(tree / run, self.suite, model.model) for run in runs}
            outlier = find_outlier(arm, self._looks_sigma())
            if outlier is None:
                continue
            why = outlier.describe() + contention(tree / outlier.run)
            if self._runs_of_model(model.model) + 1 > looks.max_runs:
                with self.log.step("remeasure", run=step, model=model.model) as entry:
                    entry.update(status="skipped", message=f"{why}; not re-measured: --max-runs "
                                                           f"{looks.max_runs} reached")
                continue
            self._remeasure(side, outlier.run[3:], model.model, why, outcome)

    def _remeasure(self, side: Arm, run: str, model: str, why: str, outcome: RunOutcome) -> None:
        """Measure one model of one run again with a fresh server; keep the original under outliers/."""
        assert self.log is not None and self.preflight is not None
        step = plan_run(self.suite, self.request.setup, side, run, (model,))
        model_step = step.models[0]
        original = self.request.setup.out / side.name / "outliers" / f"run{run}" / model
        self.progress.say(f"{step.label} {model}: outlier, re-measuring with a fresh server ({why})")
        self.progress.total += 1
        self.progress.remaining.append(model)
        with self.log.step("remeasure", run=step, model=model, command=["mv", str(model_step.model_dir),
                                                                         str(original)]) as entry:
            entry["message"] = why
            if original.exists():
                shutil.rmtree(original)
            original.parent.mkdir(parents=True, exist_ok=True)
            os.replace(model_step.model_dir, original)
        self.log.doc["remeasured"].append({"side": side.name, "run": f"run{run}", "model": model, "why": why,
                                           "original": str(original.relative_to(self.request.setup.out / side.name))})
        env = self._env(step)
        with self.log.run(step.label, "re-measuring"):
            with self.log.step("gpu-free", run=step):
                self._wait_gpu_free()
            began = time.monotonic()
            self._server_cycle(step, model_step, env)
            self.progress.cycle_done(model, time.monotonic() - began)
            problems = self._coverage(step, model_step)
            if problems:
                raise RunFailed(f"{step.label} (re-measure): coverage incomplete:\n  " + "\n  ".join(problems))
        outcome.remeasured.append(f"{step.label} {model}")

    def _second_look(self, looks: LookPlan, outcome: RunOutcome) -> None:
        """decide() on the first look; models it leaves undecided get 3+3 more runs, then decide_pooled()."""
        assert self.log is not None
        record = self.log.doc["looks"]
        extend: list[str] = []
        for model in self.request.models:
            with self.log.step("decide-first-look", model=model) as entry:
                decision = self._looks_decider().first(model)
                entry["message"] = f"{decision.action}: " + "; ".join(decision.reasons)
            record[model] = {"first": {"action": decision.action, "reasons": list(decision.reasons)},
                             "extended": False, "why_extended": [], "pooled": None, "final": decision.action}
            if decision.action != "extend":
                outcome.decisions[model] = decision.action
                continue
            needed = 2 * len(looks.extension)
            if self._runs_of_model(model) + needed > looks.max_runs:
                record[model]["final"] = "undecided"
                record[model]["not_extended"] = (f"--max-runs {looks.max_runs}: {self._runs_of_model(model)} made, "
                                                 f"the second look needs {needed} more")
                outcome.decisions[model] = "undecided"
                self.progress.say(f"{model}: undecided after the first look, but {record[model]['not_extended']}")
                continue
            record[model].update(extended=True, why_extended=list(decision.reasons))
            extend.append(model)
            self.progress.say(f"{model}: first look undecided ({'; '.join(decision.reasons)}); "
                              f"running {len(looks.extension)}+{len(looks.extension)} more")
        self.log.write()
        self.progress.possible = []  # decided: the ETA now counts only the runs that will be made
        steps = self.request.extension_steps(tuple(extend))
        for step in steps:
            self.log.doc["runs"].setdefault(step.label, "pending")
            self.progress.total += len(step.models)
            self.progress.remaining += [m.model for m in step.models]
        for step in steps:
            self._do_step(step, outcome)
        for model in extend:
            with self.log.step("decide-pooled", model=model) as entry:
                decision = self._looks_decider().pooled(model)
                entry["message"] = f"{decision.action}: " + "; ".join(decision.reasons)
            record[model].update(pooled={"action": decision.action, "reasons": list(decision.reasons)},
                                 final=decision.action)
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


def read_text_or_none(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None
