"""`gate run`: execute the plan, run by run, model by model, fail-fast, and keep completed runs.

Order of a gate run (runbook Steps 3-6):
  preflight (nothing touches the GPU) -> lock the GPU by UUID -> stop the gate's own leftovers ->
  for each (side, run): [skip if --resume and complete] wait GPU free, rm -rf run dir, commit.txt,
  freeze.txt, env.json, telemetry on; per model: port free, server up (/health), clients, server
  group stopped, GPU free; telemetry.json; coverage checked by gate.results.
Every step goes into <out>/<name>/gate-run.json as it starts and as it finishes, so a crash or a
signal leaves an accurate log; an earlier attempt's log is kept under <name>/attempts/. Every
process group the gate starts is recorded in <out>/gate-processes.json before it starts (ledger.py),
so the next run stops what a SIGKILLed gate left behind. SIGINT/SIGTERM finish the stop sequence
of the server and client groups and exit 130/143; a second signal KILLs at once (cancel.py).
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import shutil
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, TextIO

from gate import atomic
from gate.config import Suite
from gate.env import build_env, cached_dataset_ref, gate_version
from gate.errors import GateError
from gate.results import read_workload_run
from gate.runner import clients, procgroup, server
from gate.runner.cancel import Cancellation, Cancelled, installed
from gate.runner.gpu import GpuLock, GpuProvider, wait_until_free
from gate.runner.ledger import Ledger
from gate.runner.looks import Decider, LookPlan, Sigma, find_outlier, speed_values
from gate.runner.plan import RunStep, Setup, Side, plan_run, run_order
from gate.runner.preflight import Preflight, PreflightFailed, run_preflight
from gate.runner.stamp import STAMP_NAME, Stamp, calibration_stamp_path, packages_digest, read_stamp, stale_reasons, write_stamp
from gate.runner.telemetry import Telemetry

__all__ = ["Cancelled", "RunFailed", "RunOutcome", "RunRequest", "Runner"]

RUN_LOG_SCHEMA_VERSION = 1
PORT_WAIT_S = 30.0  # a port held by a live listener: wait this long (it may be shutting down), then fail


class RunFailed(GateError):
    """A run could not be completed (server died or hung, client failed, coverage incomplete)."""

    exit_code = 3


@dataclass(frozen=True)
class RunRequest:
    suite: Suite
    sides: tuple[Side, ...]  # one, or two for A/B (base first)
    setup: Setup
    runs: tuple[str, ...]
    models: tuple[str, ...]
    gpu_index: int | None = None  # None: the single visible GPU
    resume: bool = False
    lock_dir: Path = Path("/tmp")
    lock_wait_s: float = 0.0
    fingerprints: bool = True
    port_wait_s: float = PORT_WAIT_S
    venv_check: bool = True
    argv: tuple[str, ...] = ()
    progress_every_s: float = clients.PROGRESS_EVERY_S
    looks: LookPlan | None = None  # A/B: outlier re-measure and, with a decider, a second look

    def steps(self) -> tuple[RunStep, ...]:
        return tuple(plan_run(self.suite, self.setup, side, run, self.models)
                     for side, run in run_order(self.runs, self.sides, self.suite.warm_run))

    def extension_steps(self, models: tuple[str, ...]) -> tuple[RunStep, ...]:
        """The second look's runs for `models`, continuing the interleave of the first look."""
        if self.looks is None or not models:
            return ()
        extension = self.looks.extension
        order = run_order((*self.runs, *extension), self.sides, self.suite.warm_run)
        return tuple(plan_run(self.suite, self.setup, side, run, models) for side, run in order if run in extension)


@dataclass
class RunOutcome:
    completed: list[str] = field(default_factory=list)  # "main/run1", ...
    skipped: list[str] = field(default_factory=list)
    decisions: dict[str, str] = field(default_factory=dict)  # model -> pass/fail (two looks), "extend" never final
    remeasured: list[str] = field(default_factory=list)  # "base/run3 qwen3"


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds")


class RunLog:
    """gate-run.json, rewritten atomically after every step into each side's tree."""

    def __init__(self, request: RunRequest, steps: tuple[RunStep, ...]) -> None:
        self.paths = [request.setup.out / side.name / "gate-run.json" for side in request.sides]
        self.previous_runs: dict[str, str] = {}  # run label -> status in the attempt before this one
        self.previous_cycle_s: dict[str, float] = {}  # model -> mean seconds of one server cycle, last attempt
        archived = [self._archive(path) for path in self.paths]
        self.doc: dict[str, Any] = {
            "schema_version": RUN_LOG_SCHEMA_VERSION, "gate_version": gate_version(), "argv": list(request.argv),
            "started": _now(), "ended": None, "status": "running", "exit_code": None, "message": None,
            "sides": {s.name: str(s.checkout) for s in request.sides},
            "previous_attempt": next((a for a in archived if a), None),
            "runs": {step.label: "pending" for step in steps}, "steps": [],
        }
        if request.looks is not None:
            self.doc["plan"] = {
                "first_look": [step.label for step in steps],
                "possible_extension": [step.label for step in request.extension_steps(request.models)],
                "decider": "decide / decide_pooled" if request.looks.decider is not None else None,
                "one_look_because": request.looks.one_look_because,
                "max_runs_per_model": request.looks.max_runs,
                "outlier_rule": "re-measure once per arm and model a run more than max(5 sigma, 8%) from its arm's "
                                "median on a gated speed metric; the original goes to outliers/run<R>/<model>/",
            }
            self.doc["looks"] = {}
            self.doc["remeasured"] = []
        self.doc["scored_runs"] = {}  # side -> model -> the scored runs made, in order (what readers should accept)

    def made(self, side: str, model: str, run: str) -> None:
        runs = self.doc["scored_runs"].setdefault(side, {}).setdefault(model, [])
        if f"run{run}" not in runs:
            runs.append(f"run{run}")
        self.write()

    def _archive(self, path: Path) -> str | None:
        """Keep an earlier attempt's log under attempts/ (never overwrite it) and remember its run statuses."""
        if not path.is_file():
            return None
        try:
            doc = json.loads(path.read_text())
            runs = doc.get("runs", {})
            if isinstance(runs, dict):
                self.previous_runs.update({k: v for k, v in runs.items() if isinstance(v, str)})
            self.previous_cycle_s.update(cycle_durations(doc.get("steps", [])))
        except (OSError, ValueError, AttributeError, TypeError):
            pass
        attempts = path.parent / "attempts"
        attempts.mkdir(exist_ok=True)
        number = 1 + sum(1 for _ in attempts.glob("gate-run.*.json"))
        target = attempts / f"gate-run.{number}.json"
        os.replace(path, target)
        return str(target.relative_to(path.parent))

    def set_run(self, label: str, status: str) -> None:
        self.doc["runs"][label] = status
        self.write()

    @contextmanager
    def step(self, name: str, *, run: RunStep | None = None, model: str | None = None,
             command: list[str] | None = None) -> Iterator[dict]:
        entry: dict[str, Any] = {"step": name, "side": run.side.name if run else None, "run": run.run if run else None,
                                 "model": model, "command": command, "start": _now(), "end": None,
                                 "seconds": None, "status": "running", "exit_status": None, "message": None}
        self.doc["steps"].append(entry)
        self.write()  # a step in progress is visible (and stays so after a SIGKILL)
        began = time.monotonic()
        try:
            yield entry
        except Cancelled as exc:
            entry.update(status="interrupted", message=f"interrupted by {exc}")
            raise
        except BaseException as exc:
            entry.update(status="failed", message=str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
            raise
        else:
            entry["status"] = "ok" if entry["status"] == "running" else entry["status"]
        finally:
            entry["end"] = _now()
            entry["seconds"] = round(time.monotonic() - began, 3)
            self.write()

    def finish(self, status: str, exit_code: int, message: str | None) -> None:
        self.doc.update(status=status, exit_code=exit_code, message=message, ended=_now())
        self.write()

    def write(self) -> None:
        text = json.dumps(self.doc, indent=1) + "\n"
        for path in self.paths:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".json.tmp")
            with open(tmp, "w") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)


def cycle_durations(steps: list) -> dict[str, float]:
    """Mean seconds of one completed server cycle (port check to GPU free) per model, from a gate-run.json's steps."""
    cycles: dict[tuple, float] = {}
    finished: set[tuple] = set()
    for entry in steps:
        if not isinstance(entry, dict) or not entry.get("model") or not isinstance(entry.get("seconds"), (int, float)):
            continue
        key = (entry.get("side"), entry.get("run"), entry["model"])
        cycles[key] = cycles.get(key, 0.0) + float(entry["seconds"])
        if entry.get("step") == "server-stop":
            finished.add(key)
    per_model: dict[str, list[float]] = {}
    for key in finished:
        per_model.setdefault(key[2], []).append(cycles[key])
    return {model: sum(v) / len(v) for model, v in per_model.items()}


class Progress:
    """Concise progress on stderr: what runs now, elapsed time, a rough ETA from earlier server cycles."""

    def __init__(self, total_cycles: int, stream: TextIO | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.clock = clock
        self.start = clock()
        self.total = total_cycles
        self.done = 0
        self.durations: dict[str, list[float]] = {}  # model -> seconds per server cycle
        self.remaining: list[str] = []  # models of the cycles still to run
        self.prior: dict[str, float] = {}  # model -> seconds per cycle in the previous gate run (gate-run.json)

    def say(self, message: str) -> None:
        elapsed = self.clock() - self.start
        eta = self._eta()
        tail = f", ETA ~{_clock(eta)}" if eta is not None else ""
        print(f"gate run [{self.done}/{self.total} cycles, {_clock(elapsed)} elapsed{tail}] {message}",
              file=self.stream, flush=True)

    def cycle_done(self, model: str, seconds: float) -> None:
        self.done += 1
        self.durations.setdefault(model, []).append(seconds)
        if model in self.remaining:
            self.remaining.remove(model)

    def _eta(self) -> float | None:
        """Seconds left: each remaining cycle at its model's mean so far, else the previous run's, else the
        mean cycle so far. None until there is something to go on."""
        every = [d for ds in self.durations.values() for d in ds]
        if not self.remaining or not (every or self.prior):
            return None
        known = every or list(self.prior.values())
        overall = sum(known) / len(known)

        def guess(model: str) -> float:
            if model in self.durations:
                return sum(self.durations[model]) / len(self.durations[model])
            return self.prior.get(model, overall)
        return sum(guess(m) for m in self.remaining)


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}h{seconds // 60 % 60:02d}m" if seconds >= 3600 else f"{seconds // 60}m{seconds % 60:02d}s"


class Runner:
    def __init__(self, request: RunRequest, *, gpu: GpuProvider, base_env: Mapping[str, str],
                 progress_stream: TextIO | None = None) -> None:
        self.request = request
        self.suite = request.suite
        self.gpu = gpu
        self.base_env = dict(base_env)
        self.steps = request.steps()
        cycles = [m.model for s in self.steps for m in s.models]
        self.progress = Progress(len(cycles), progress_stream)
        self.progress.remaining = list(cycles)
        self.log: RunLog | None = None
        self.preflight: Preflight | None = None
        self.gpu_index = request.gpu_index or 0
        self.cancel = Cancellation(say=lambda line: self.progress.say(line))
        self.ledger = Ledger(request.setup.out)
        self.subreaper = False
        self._calibration: Path | None = None  # the calibration once checked against where we run (None: stale/none)
        self._calibration_checked = False
        self._decider: Decider | None = None
        self._sigma: Sigma | None = None

    # --- the whole gate run ---------------------------------------------------------------------

    def run(self) -> RunOutcome:
        outcome = RunOutcome()
        with installed(self.cancel):
            self.progress.say("preflight: checkout, venv pins and datasets (offline, in the checkout's python; "
                              "loading them can take minutes), snapshots, GPU")
            self.preflight = run_preflight(self.suite, self.steps, gpu=self.gpu, gpu_index=self.request.gpu_index,
                                           base_env=self.base_env, fingerprints=self.request.fingerprints,
                                           venv_check=self.request.venv_check)
            for note in self.preflight.notes:
                self.progress.say(f"note: {note}")
            gpu = self.preflight.gpu
            key = gpu.uuid if gpu and gpu.uuid else f"no-gpu-port{self.request.setup.port}"
            lock = GpuLock(self.request.lock_dir, key)
            lock.acquire(wait_s=self.request.lock_wait_s, say=self.progress.say)
            try:
                self.ledger.lock()
                self.subreaper = procgroup.become_subreaper()
                self.log = RunLog(self.request, self.steps)
                self.progress.prior = self.log.previous_cycle_s
                self._run_logged(outcome)
            finally:
                self.ledger.unlock()
                lock.release()
        return outcome

    def _run_logged(self, outcome: RunOutcome) -> None:
        assert self.log is not None
        try:
            self._run_all(outcome)
        except Cancelled as exc:
            self.log.finish("interrupted", exc.exit_code, f"interrupted by {exc}")
            raise
        except GateError as exc:
            self.log.finish("failed", exc.exit_code, str(exc))
            raise
        except BaseException as exc:
            self.log.finish("failed", 1, f"{type(exc).__name__}: {exc}")
            raise
        else:
            self.log.finish("completed", 0, None)

    def _stop_leftovers(self) -> None:
        """Before anything starts: stop what an earlier gate run (perhaps SIGKILLed) left running."""
        assert self.log is not None
        grace = self.suite.server.stop_grace_s
        with self.log.step("stop-leftovers") as entry, self.cancel.shielded():
            lines = self.ledger.stop_leftovers(grace_s=grace, hurry=self.cancel.hurried)
            for side in self.request.sides:  # records of gate versions before the ledger
                lines += server.stop_leftovers(self.request.setup.out / side.name, grace_s=grace)
            for line in lines:
                self.progress.say(line)
            entry["message"] = "; ".join(lines) or "none found"

    def _run_all(self, outcome: RunOutcome) -> None:
        assert self.log is not None
        self._stop_leftovers()
        with self.log.step("port-free", command=[str(self.request.setup.port)]):
            try:
                server.wait_port_free(self.request.setup.port, timeout_s=self.request.port_wait_s,
                                      say=self.progress.say)
            except server.ServerFailed as exc:
                raise PreflightFailed([str(exc)]) from None
        for step in self.steps:
            self._do_step(step, outcome)
        looks = self.request.looks
        if looks is not None and looks.decider is not None and len(self.request.sides) == 2:
            self._second_look(looks, outcome)

    def _do_step(self, step: RunStep, outcome: RunOutcome) -> None:
        assert self.log is not None
        if self.request.resume and self._complete(step):
            self.log.set_run(step.label, "skipped")
            with self.log.step("resume-skip", run=step) as entry:
                entry["message"] = "coverage complete and same commit; kept"
            outcome.skipped.append(step.label)
            self.progress.say(f"{step.label}: complete already, skipped (--resume)")
            self.progress.total -= len(step.models)
            for m in step.models:
                self.progress.remaining.remove(m.model)
        else:
            self.log.set_run(step.label, "running")
            try:
                self._one_run(step)
            except Cancelled:
                self.log.set_run(step.label, "interrupted")
                raise
            except BaseException:
                self.log.set_run(step.label, "failed")
                raise
            self.log.set_run(step.label, "completed")
            outcome.completed.append(step.label)
            write_stamp(self.request.setup.out / step.side.name / STAMP_NAME, self._stamp(step))
        if step.side == self.request.sides[0] and self.request.looks is not None:
            self._check_calibration(step)
        if step.run != self.suite.warm_run:
            for model in step.models:
                self.log.made(step.side.name, model.model, step.run)
            if self.request.looks is not None and self.request.looks.remeasure:
                self._check_outliers(step, outcome)

    # --- two looks and outliers (A/B) -------------------------------------------------------------

    def _stamp(self, step: RunStep) -> Stamp:
        gpu = self.preflight.gpu if self.preflight else None
        return Stamp(gpu=gpu.name if gpu else None, driver=gpu.driver_version if gpu else None,
                     packages_sha256=packages_digest(_read(step.run_dir / "freeze.txt")))

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
        if stamp_path.is_file():
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
            if self._runs_of_model(model.model) + 1 > looks.max_runs:
                with self.log.step("remeasure", run=step, model=model.model) as entry:
                    entry.update(status="skipped", message=f"{outlier.describe()}; not re-measured: --max-runs "
                                                           f"{looks.max_runs} reached")
                continue
            self._remeasure(side, outlier.run[3:], model.model, outlier.describe(), outcome)

    def _remeasure(self, side: Side, run: str, model: str, why: str, outcome: RunOutcome) -> None:
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
        self.log.set_run(step.label, "re-measuring")
        env = self._env(step)
        try:
            with self.log.step("gpu-free", run=step):
                self._wait_gpu_free()
            began = time.monotonic()
            self._server_cycle(step, model_step, env)
            self.progress.cycle_done(model, time.monotonic() - began)
            problems = self._coverage(step, model_step)
            if problems:
                raise RunFailed(f"{step.label} (re-measure): coverage incomplete:\n  " + "\n  ".join(problems))
        except Cancelled:
            self.log.set_run(step.label, "interrupted")
            raise
        except BaseException:
            self.log.set_run(step.label, "failed")
            raise
        self.log.set_run(step.label, "completed")
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

    def _complete(self, step: RunStep) -> bool:
        """--resume keeps a run only if the last attempt finished it (or, for a tree without a gate log,
        its coverage is complete) and it was made from the same commit."""
        assert self.log is not None
        before = self.log.previous_runs.get(step.label)
        if before is not None and before not in ("completed", "skipped"):
            return False  # interrupted, failed or running when the last attempt ended: redo it
        if not step.run_dir.is_dir():
            return False
        recorded = _read(step.run_dir / "commit.txt")
        current = git_commit(step.side.checkout)
        if current is not None and (recorded or "").strip() != current:
            return False
        return all(read_workload_run(step.run_dir, c.workload).complete for m in step.models for c in m.clients)

    # --- one run --------------------------------------------------------------------------------

    def _env(self, step: RunStep) -> dict[str, str]:
        env = {**self.base_env, **step.environment}
        venv_bin = str(step.side.venv_bin)
        env["PATH"] = venv_bin + os.pathsep + env.get("PATH", os.defpath)  # as `. .venv/bin/activate` does
        env["VIRTUAL_ENV"] = str(step.side.venv_bin.parent)
        if self.request.gpu_index is not None and self.preflight and self.preflight.gpu and self.preflight.gpu.uuid:
            env["CUDA_VISIBLE_DEVICES"] = self.preflight.gpu.uuid
        return env

    def _one_run(self, step: RunStep) -> None:
        assert self.log is not None and self.preflight is not None
        log = self.log
        env = self._env(step)
        checkout = step.side.checkout
        self.progress.say(f"{step.label}: starting ({checkout})")
        with log.step("gpu-free", run=step):
            self._wait_gpu_free()
        with log.step("prepare", run=step, command=["rm", "-rf", str(step.run_dir)]):
            shutil.rmtree(step.run_dir, ignore_errors=True)  # a run is always redone whole (runbook Step 4)
            step.run_dir.mkdir(parents=True)
        notes: list[str] = list(self.preflight.notes)
        with log.step("commit", run=step, command=["git", "rev-parse", "HEAD"]) as entry:
            commit = git_commit(checkout)
            if commit is None:
                entry["status"] = "warning"
                notes.append(f"{checkout}: not a git checkout (or git missing); commit.txt not written")
            else:
                _write_atomic(step.run_dir / "commit.txt", commit + "\n")
        freeze_cmd = [str(step.side.python), "-m", "pip", "freeze", "--exclude-editable"]
        with log.step("freeze", run=step, command=freeze_cmd) as entry:
            self.progress.say(f"{step.label}: pip freeze of {step.side.python} (up to 300 s)")
            done = subprocess.run(freeze_cmd, cwd=checkout, env=env, capture_output=True, text=True, timeout=300)
            entry["exit_status"] = done.returncode
            if done.returncode == 0:
                _write_atomic(step.run_dir / "freeze.txt", done.stdout)
            else:
                entry["status"] = "warning"
                notes.append(f"pip freeze failed (exit {done.returncode}); freeze.txt not written")
                self.progress.say(f"warning: {notes[-1]}")
        side_facts = self.preflight.sides.get(step.side.name)
        env_doc = build_env(
            gpu=self.preflight.gpu, cpu_set=self.preflight.cpu_set,
            python=side_facts.python_version if side_facts else None, commit=commit, checkout=str(checkout),
            datasets={k: {**v, "cached_main_ref": cached_dataset_ref(self.request.setup.hf_hub, k)}
                      for k, v in (side_facts.datasets if side_facts else {}).items()},
            models={m.model: {"model_id": m.model_id, "revision": m.revision, "snapshot": str(m.snapshot)}
                    for m in step.models},
            notes=tuple(notes))
        _write_atomic(step.run_dir / "env.json", json.dumps(env_doc, indent=1) + "\n")
        coverage: list[str] = []  # every model's coverage problems, reported together
        telemetry = Telemetry(self.gpu, self.gpu_index).start()
        try:
            for model in step.models:
                began = time.monotonic()
                try:
                    self._server_cycle(step, model, env)
                except GateError as exc:
                    if coverage:
                        exc.args = (f"{exc}\n(earlier in {step.label}: coverage incomplete:\n  "
                                    + "\n  ".join(coverage) + ")",)
                    raise
                self.progress.cycle_done(model.model, time.monotonic() - began)
                coverage += self._coverage(step, model)
        finally:
            telemetry.stop()
            _write_atomic(step.run_dir / "telemetry.json", json.dumps(telemetry.document(), indent=1) + "\n")
        if coverage:
            raise RunFailed(f"{step.label}: coverage incomplete (redo the run):\n  " + "\n  ".join(coverage))
        self.progress.say(f"{step.label}: complete")

    def _coverage(self, step: RunStep, model) -> list[str]:
        """Check one model's coverage as soon as its clients are done; the run goes on to the next model,
        so one failure report names every model whose coverage is short."""
        assert self.log is not None
        with self.log.step("coverage", run=step, model=model.model) as entry:
            problems = [str(p) for c in model.clients for p in read_workload_run(step.run_dir, c.workload).coverage.problems]
            if problems:
                entry["status"] = "incomplete"
                entry["message"] = "; ".join(problems)
                self.progress.say(f"{step.label} {model.model}: coverage incomplete: " + "; ".join(problems))
        return problems

    def _wait_gpu_free(self) -> None:
        s = self.suite.server
        wait_until_free(self.gpu, self.gpu_index, below_mib=s.gpu_free_below_mib, timeout_s=s.gpu_free_timeout_s,
                        say=self.progress.say)

    def _stop_group(self, group: procgroup.Group, grace_s: float, *, raise_after: bool = True,
                    what: str = "the process group") -> str:
        """Stop a group whatever happens meanwhile: a first signal waits for the stop, a second one hurries it."""
        with self.cancel.shielded(raise_after=raise_after):
            how = procgroup.stop(group, grace_s=grace_s, hurry=self.cancel.hurried, say=self.progress.say, what=what)
            self.ledger.remove(group.tag)
        return how

    def _report_escaped(self, step: RunStep, model: str) -> None:
        """Descendants that left the session AND dropped the tag are found only because the gate is
        their subreaper: kill them and say so (they would otherwise outlive the run unnoticed)."""
        if not self.subreaper:
            return
        found = procgroup.escaped(known=set())
        if not found:
            return
        assert self.log is not None
        with self.log.step("escaped-processes", run=step, model=model) as entry:
            procgroup.kill([pid for pid, _ in found])
            entry["status"] = "warning"
            entry["message"] = "; ".join(f"pid {pid} ({cmd})" for pid, cmd in found)
        self.progress.say(f"warning: {len(found)} process(es) escaped the server's process group and its tag "
                          f"(setsid and a cleared environment); killed: {entry['message']}")

    def _server_cycle(self, step: RunStep, model, env: Mapping[str, str]) -> None:
        assert self.log is not None
        log, s = self.log, self.suite.server
        port = self.request.setup.port
        model.model_dir.mkdir(parents=True, exist_ok=True)
        with log.step("port-free", run=step, model=model.model, command=[str(port)]):
            server.wait_port_free(port, timeout_s=self.request.port_wait_s, say=self.progress.say)
        self.progress.say(f"{step.label} {model.model}: starting server")
        tag = procgroup.new_tag()
        with log.step("server-start", run=step, model=model.model, command=list(model.server_argv)):
            self.ledger.add(tag, kind="server", label=f"{step.label}/{model.model}", argv=model.server_argv)
            srv = server.start(model.server_argv, cwd=step.side.checkout, env=env, port=port,
                               log=model.server_log, pid_file=model.server_pid, tag=tag)
            self.ledger.started(tag, srv.group.pgid)
        failure: BaseException | None = None
        try:
            with log.step("server-ready", run=step, model=model.model) as entry:
                ready = server.wait_healthy(srv, timeout_s=s.startup_timeout_s, say=self.progress.say)
                entry["message"] = f"healthy after {ready:.2f} s"
            for client in model.clients:
                self.progress.say(f"{step.label} {model.model}: client {client.workload.name}")
                with log.step("client", run=step, model=model.model, command=list(client.argv)) as entry:
                    client_tag = procgroup.new_tag()
                    self.ledger.add(client_tag, kind="client", label=f"{step.label}/{client.workload.id}",
                                    argv=client.argv)
                    result = clients.run_client(
                        client, cwd=step.side.checkout, env=env, server_alive=lambda: srv.alive,
                        server_report=srv.exit_report, tag=client_tag,
                        on_start=lambda g: self.ledger.started(g.tag, g.pgid),
                        stop_group=lambda g: self._stop_group(g, clients.STOP_GRACE_S, what="the client"),
                        say=lambda line: self.progress.say(f"{step.label} {model.model}: {line}"),
                        progress_every_s=self.request.progress_every_s)
                    entry["exit_status"] = result.exit_code
        except BaseException as exc:
            failure = exc
            raise
        finally:
            with log.step("server-stop", run=step, model=model.model) as entry:
                if self.cancel.signum is not None:
                    self.progress.say(f"{step.label} {model.model}: stopping the server (TERM, "
                                      f"{s.stop_grace_s:g} s grace, then KILL)")
                how = self._stop_group(srv.group, s.stop_grace_s, raise_after=False,  # log the stop first
                                       what=f"the {model.model} server")
                hurried = " (second signal: no grace)" if self.cancel.hurry and how == "kill" else ""
                entry["message"] = {"term": "stopped by SIGTERM", "kill": f"SIGKILL after {s.stop_grace_s:g} s grace",
                                    "gone": "had already exited"}[how] + hurried
                entry["exit_status"] = srv.group.proc.returncode
            self._report_escaped(step, model.model)
            if not self.cancel.hurry:  # after a second signal, leave at once
                try:
                    with log.step("gpu-free", run=step, model=model.model):
                        self._wait_gpu_free()
                except GateError as gpu_exc:
                    if failure is None:
                        raise
                    if isinstance(failure, GateError):
                        failure.args = (f"{failure}\n(and then: {gpu_exc})",)
            self.cancel.raise_pending()  # a signal that came during the stop cancels now


def git_commit(checkout: Path) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def _write_atomic(path: Path, text: str) -> None:
    atomic.write_text(path, text, what=path.name)
