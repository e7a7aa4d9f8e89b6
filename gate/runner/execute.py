"""`gate run`: execute the plan, run by run, model by model, fail-fast, and keep completed runs.

Order of a gate run (runbook Steps 3-6):
  preflight (nothing touches the GPU) -> lock the GPU by UUID -> stop the gate's own leftovers ->
  for each (side, run): [skip if --resume and complete] wait GPU free, rm -rf run dir, commit.txt,
  freeze.txt, env.json, telemetry on; per model a server cycle (cycle.py); telemetry.json; coverage
  checked by gate.reading.results; for A/B, outlier re-measures and the second look (twolooks.py).
Every step goes into <out>/<name>/gate-run.json (logbook.py). Every process group the gate starts is
recorded in <out>/gate-processes.json before it starts (ledger.py), so the next run stops what a
SIGKILLed gate left behind. SIGINT/SIGTERM finish the stop sequence of the server and client groups and
exit 130/143; a second signal KILLs at once (cancel.py). A file under --out that cannot be written
(full disk, permissions) fails the run with exit 3 once everything is stopped (outfiles.py).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Mapping, TextIO

from gate.formats.calibration_stamp import STAMP_NAME, Stamp, packages_digest, write_stamp
from gate.formats.commit_record import FILE as COMMIT_FILE
from gate.formats.commit_record import read_commit
from gate.formats.env import build_env, cached_dataset_ref
from gate.formats.errors import GateError, OutputError
from gate.formats.inputs import Unreadable
from gate.reading.result_files import read_workload_run
from gate.runner import server
from gate.runner.cancel import Cancellation, Cancelled, installed
from gate.runner.cycle import ServerCycle
from gate.runner.gpu import GpuLock, GpuProvider
from gate.runner.ledger import Ledger
from gate.runner.logbook import Logbook
from gate.runner.outfiles import OutputFailed, Writes, os_error_text, output_failed
from gate.runner.plan import RunStep
from gate.runner.preflight import Preflight, PreflightFailed, run_preflight
from gate.runner.progress import Progress
from gate.runner.request import RunFailed, RunOutcome, RunRequest
from gate.runner.telemetry import Telemetry
from gate.runner.twolooks import Looks, logged_plan


class Runner:
    """The orchestration; each part is an object handed what it uses: the log (logbook.py), one server
    cycle (cycle.py) and, for an A/B, the looks (twolooks.py)."""

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
        if request.looks is not None and request.looks.decider is not None:
            self.progress.possible = [m.model for s in request.extension_steps(request.models) for m in s.models]
        self.preflight: Preflight | None = None
        self.gpu_index = request.gpu_index or 0
        self.cancel = Cancellation(say=lambda line: self.progress.say(line))
        self.writes = Writes()  # every file the runner writes under --out; the first failure is the run's
        self.ledger = Ledger(request.setup.out, self.writes)
        plan = None if request.looks is None else logged_plan(request, request.looks, self.steps)
        self.log = Logbook(request.setup.out, request.sides, request.argv, self.steps, plan,
                           self.writes)  # opened under the GPU lock
        self.cycle = ServerCycle(request.suite, port=request.setup.port, port_wait_s=request.port_wait_s,
                                 progress_every_s=request.progress_every_s, log=self.log, gpu=gpu,
                                 gpu_index=self.gpu_index, cancel=self.cancel, ledger=self.ledger, writes=self.writes,
                                 progress=self.progress)
        self.looks = None if request.looks is None else Looks(
            request, request.looks, log=self.log, cycle=self.cycle, progress=self.progress, env=self._env,
            do_step=self._do_step)

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
                self.cycle.become_subreaper()
                self.log.open(resume=self.request.resume)
                self.progress.prior = self.log.previous_cycle_s
                self._run_logged(outcome)
            finally:
                self.ledger.unlock()
                lock.release()
        return outcome

    def _run_logged(self, outcome: RunOutcome) -> None:
        try:
            self._run_all(outcome)
        except Cancelled as exc:
            self.log.finish("interrupted", exc.exit_code, f"interrupted by {exc}")
            raise
        except GateError as exc:
            failed = self._blame_the_disk(OutputFailed(str(exc)) if isinstance(exc, OutputError) else exc)
            self.log.finish("failed", failed.exit_code, str(failed))
            if failed is exc:
                raise
            raise failed from None
        except OSError as exc:  # a file under --out the gate writes directly (mkdir, a log to append to)
            failed = OutputFailed(f"cannot write {exc.filename or 'under --out'} ({os_error_text(exc)})")
            self.log.finish("failed", failed.exit_code, str(failed))
            raise failed from None
        except BaseException as exc:
            self.log.finish("failed", 1, f"{type(exc).__name__}: {exc}")
            raise
        else:
            self.log.finish("completed", 0, None)

    def _blame_the_disk(self, exc: GateError) -> GateError:
        """A run that failed after a write under --out failed: the write is the cause (a client on a full
        disk fails too); one line says both."""
        error = self.writes.error
        if error is None or error is exc:
            return exc
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return OutputFailed(f"{error}; the run failed: {first}")

    def _stop_leftovers(self) -> None:
        """Before anything starts: stop what an earlier gate run (perhaps SIGKILLed) left running."""
        grace = self.suite.server.stop_grace_s
        with self.log.step("stop-leftovers") as entry, self.cancel.shielded():
            lines = self.ledger.stop_leftovers(grace_s=grace, hurry=self.cancel.hurried)
            for side in self.request.sides:  # records of gate versions before the ledger
                lines += server.stop_leftovers(self.request.setup.out / side.name, grace_s=grace)
            for line in lines:
                self.progress.say(line)
            entry.message = "; ".join(lines) or "none found"

    def _run_all(self, outcome: RunOutcome) -> None:
        self._stop_leftovers()
        with self.log.step("port-free", command=[str(self.request.setup.port)]):
            try:
                server.wait_port_free(self.request.setup.port, timeout_s=self.request.port_wait_s,
                                      say=self.progress.say)
            except server.ServerFailed as exc:
                raise PreflightFailed([str(exc)]) from None
        for step in self.steps:
            self._do_step(step, outcome)
        if self.looks is not None and self.looks.plan.decider is not None and len(self.request.sides) == 2:
            self.looks.second_look(outcome)

    def _do_step(self, step: RunStep, outcome: RunOutcome) -> None:
        if self.request.resume and self._complete(step):
            self.log.set_run(step.label, "skipped")
            with self.log.step("resume-skip", run=step) as entry:
                entry.message = "coverage complete and same commit; kept"
            outcome.skipped.append(step.label)
            # as a completed run writes it: a kill between the run's closing log write and its stamp left none
            write_stamp(self.request.setup.out / step.side.name / STAMP_NAME, self._stamp(step))
            self.progress.say(f"{step.label}: complete already, skipped (--resume)")
            self.progress.total -= len(step.models)
            for m in step.models:
                self.progress.remaining.remove(m.model)
        else:
            with self.log.run(step.label):
                self._one_run(step)
            outcome.completed.append(step.label)
            write_stamp(self.request.setup.out / step.side.name / STAMP_NAME, self._stamp(step))
        if step.side == self.request.sides[0] and self.looks is not None:
            self.looks.check_calibration(self._stamp(step))
        if step.run != self.suite.warm_run:
            for model in step.models:
                self.log.made(step.side.name, model.model, step.run)
            if self.looks is not None and self.looks.plan.remeasure:
                self.looks.check_outliers(step, outcome)

    def _complete(self, step: RunStep) -> bool:
        """--resume keeps a run only if the last attempt finished it (or, for a tree without a gate log,
        its coverage is complete) and it was made from the same commit."""
        before = self.log.previous_runs.get(step.label)
        if before is not None and before not in ("completed", "skipped"):
            return False  # interrupted, failed or running when the last attempt ended: redo it
        if not step.run_dir.is_dir():
            return False
        current = git_commit(step.side.checkout)
        if current is not None and _recorded_commit(step.run_dir) != current:
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
        assert self.preflight is not None
        log = self.log
        env = self._env(step)
        checkout = step.side.checkout
        self.progress.say(f"{step.label}: starting ({checkout})")
        with log.step("gpu-free", run=step):
            self.cycle.wait_gpu_free()
        self._prepare_run(step, env)
        coverage: list[str] = []  # every model's coverage problems, reported together
        telemetry = Telemetry(self.gpu, self.gpu_index)
        try:
            telemetry.start()
            for model in step.models:
                began = time.monotonic()
                try:
                    self.cycle.run(step, model, env)
                except GateError as exc:
                    if coverage:
                        exc.args = (f"{exc}\n(earlier in {step.label}: coverage incomplete:\n  "
                                    + "\n  ".join(coverage) + ")",)
                    raise
                self.progress.cycle_done(model.model, time.monotonic() - began)
                coverage += self.cycle.coverage(step, model)
        finally:
            telemetry.stop()
            with self.writes.quiet():  # on the way out of a failure, the failure is what gets reported
                self.writes.text(step.run_dir / "telemetry.json", json.dumps(telemetry.document(), indent=1) + "\n")
        self.writes.raise_held()
        if coverage:
            raise RunFailed(f"{step.label}: coverage incomplete (redo the run):\n  " + "\n  ".join(coverage))
        self.progress.say(f"{step.label}: complete")

    def _prepare_run(self, step: RunStep, env: Mapping[str, str]) -> None:
        """A run's folder made anew (runbook Step 4): commit.txt, freeze.txt and env.json (the duet's blocks too)."""
        assert self.preflight is not None
        log = self.log
        checkout = step.side.checkout
        with log.step("prepare", run=step, command=["rm", "-rf", str(step.run_dir)]):
            try:  # a run is always redone whole (runbook Step 4)
                shutil.rmtree(step.run_dir)
            except FileNotFoundError:
                pass
            except OSError as exc:  # e.g. a folder the user cannot read or enter: named, never "file exists"
                raise output_failed(exc.filename or step.run_dir, exc, "remove the earlier run") from None
            try:
                step.run_dir.mkdir(parents=True)
            except OSError as exc:
                raise output_failed(step.run_dir, exc, "create") from None
        notes: list[str] = list(self.preflight.notes)
        with log.step("commit", run=step, command=["git", "rev-parse", "HEAD"]) as entry:
            commit = git_commit(checkout)
            if commit is None:
                entry.status = "warning"
                notes.append(f"{checkout}: not a git checkout (or git missing); commit.txt not written")
                self.progress.say(f"warning: {notes[-1]} (compare cannot name the commit measured)")
            else:
                self.writes.text(step.run_dir / COMMIT_FILE, commit + "\n")
        freeze_cmd = [str(step.side.python), "-m", "pip", "freeze", "--exclude-editable"]
        with log.step("freeze", run=step, command=freeze_cmd) as entry:
            self.progress.say(f"{step.label}: pip freeze of {step.side.python} (up to 300 s)")
            done = subprocess.run(freeze_cmd, cwd=checkout, env=env, capture_output=True, text=True, timeout=300)
            entry.exit_status = done.returncode
            if done.returncode == 0:
                self.writes.text(step.run_dir / "freeze.txt", done.stdout)
            else:
                entry.status = "warning"
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
        self.writes.text(step.run_dir / "env.json", json.dumps(env_doc, indent=1) + "\n")

    def _stamp(self, step: RunStep) -> Stamp:
        """Where a run was made: the GPU, its driver and the run's package set."""
        gpu = self.preflight.gpu if self.preflight else None
        return Stamp(gpu=gpu.name if gpu else None, driver=gpu.driver_version if gpu else None,
                     packages_sha256=packages_digest(read_text_or_none(step.run_dir / "freeze.txt")))


def _recorded_commit(run_dir: Path) -> str | None:
    """The run's commit (gate.formats.commit_record), None when it has none or one the reader refuses: either way
    --resume cannot show the run was made from this commit, so it is redone (its folder is made anew)."""
    try:
        return read_commit(run_dir)
    except Unreadable:
        return None


def git_commit(checkout: Path) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


def read_text_or_none(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None
