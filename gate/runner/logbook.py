"""gate-run.json: the log of one gate run, rewritten atomically after every step into each side's tree.

Every step goes in as it starts and as it finishes, so a crash or a signal leaves an accurate log; an
earlier attempt's log is kept under <name>/attempts/. gate.formats.runlog owns the format: every write is checked
against its typed model first (a mismatch is a bug, exit 70), and an earlier attempt's log is read by it.
The runner's parts record and ask through its methods (made, scored_runs, runs_of_model, first_look, ...);
the Logbook keeps typed records (gate.formats.runlog's Step, LoggedLooks, Remeasure, CalibrationUse), builds
the typed RunLog at each write, and runlog serialises it (`runlog.dumps`): no reader indexes a document.
A write that fails (full disk, permissions) is a failed run (outfiles.OutputFailed, exit 3); the log
then says so if it can still be written, and otherwise the next --resume redoes every run it did not
record as completed.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import os
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator

from gate.formats import runlog
from gate.formats.env import gate_version
from gate.formats.errors import InputError
from gate.runner.cancel import Cancelled
from gate.runner.outfiles import Writes, output_failed

if TYPE_CHECKING:
    from pathlib import Path

    from gate.formats.calibration_stamp import Stamp
    from gate.runner.plan import Arm, RunStep


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds")


@dataclass
class StepEntry:
    """A step of the log as it runs: the `with log.step(...)` block may set its status, exit status and message;
    the Logbook fills in its end. Written as a runlog.Step."""

    step: str
    side: str | None
    run: str | None
    model: str | None
    command: tuple[str, ...] | None
    start: str
    end: str | None = None
    seconds: float | None = None
    status: str = "running"
    exit_status: int | None = None
    message: str | None = None

    def record(self) -> runlog.Step:
        return runlog.Step(step=self.step, side=self.side, run=self.run, model=self.model, command=self.command,
                           start=self.start, end=self.end, seconds=self.seconds, status=self.status,
                           exit_status=self.exit_status, message=self.message)


@dataclass
class _Ending:
    status: runlog.RunStatus = runlog.RunStatus.RUNNING
    exit_code: int | None = None
    message: str | None = None
    ended: str | None = None


def _readable_for_resume(path: Path) -> None:
    try:
        runlog.read(path.parent)
    except InputError as exc:
        reason = str(exc).removeprefix(f"{path}: ")
        raise InputError(f"{reason}; --resume needs the earlier attempt's log to know which runs it finished: "
                         f"move it away to redo every run, or run without --resume", path=path) from None


class Logbook:
    """The writer of gate-run.json. Readers ask it (scored_runs, runs_of_model, ...); none indexes the log."""

    def __init__(self, out: Path, sides: tuple[Arm, ...], argv: tuple[str, ...], steps: tuple[RunStep, ...],
                 plan: runlog.Plan | None, writes: Writes | None = None) -> None:
        """`plan`: an A/B's (its looks and re-measures are then logged too)."""
        self.sides = sides
        self.argv = argv
        self.steps = steps
        self.plan = plan
        self.writes = writes or Writes()
        self.paths = [out / side.name / runlog.FILE for side in sides]
        self.previous_runs: dict[str, str] = {}  # run label -> status in the attempt before this one
        self.previous_cycle_s: dict[str, float] = {}  # model -> mean seconds of one server cycle, last attempt
        self._started: str | None = None  # None: not opened yet
        self._gate_version = ""
        self._previous_attempt: str | None = None
        self._ending = _Ending()
        self._runs: dict[str, runlog.RunState] = {}  # run label -> state
        self._steps: list[StepEntry] = []
        self._scored: dict[str, dict[str, list[str]]] = {}  # side -> model -> the scored runs made, in order
        self._looks: dict[str, runlog.LoggedLooks] = {}
        self._remeasured: list[runlog.Remeasure] = []
        self._calibration: runlog.CalibrationUse | None = None

    @property
    def opened(self) -> bool:
        """Whether this attempt's log was started (not yet during preflight and the locks)."""
        return self._started is not None

    def open(self, *, resume: bool = False) -> None:
        """Keep the earlier attempt's log and start this one (under the GPU lock: nothing is touched before).
        `resume`: the earlier log says which runs that attempt finished, so one that cannot be read (torn by a
        kill, edited) is an error here, before anything is moved, never taken for "no earlier attempt"."""
        if resume:
            for path in self.paths:
                _readable_for_resume(path)
        archived = [self._archive(path) for path in self.paths]
        self._started = now()
        self._gate_version = gate_version()
        self._previous_attempt = next((a for a in archived if a), None)
        self._runs = {step.label: runlog.RunState.PENDING for step in self.steps}

    def log(self) -> runlog.RunLog:
        """The log as it stands, as the typed model its readers decode (gate.formats.runlog.RunLog)."""
        if self._started is None:
            raise runlog.WriterBug("the run log was about to be written before it was opened")
        ab = self.plan is not None
        return runlog.RunLog(
            schema_version=runlog.SCHEMA_VERSION, gate_version=self._gate_version, argv=tuple(self.argv),
            started=self._started, ended=self._ending.ended, status=self._ending.status,
            exit_code=self._ending.exit_code, message=self._ending.message,
            sides={s.name: str(s.checkout) for s in self.sides}, previous_attempt=self._previous_attempt,
            runs=dict(self._runs), steps=tuple(entry.record() for entry in self._steps),
            scored_runs={side: {model: tuple(runs) for model, runs in models.items()}
                         for side, models in self._scored.items()},
            plan=self.plan, looks=dict(self._looks) if ab else None, remeasured=tuple(self._remeasured) if ab else None,
            calibration=self._calibration,
            output_error=str(self.writes.error) if self._ending.ended is not None and self.writes.error is not None
            else None)

    def made(self, side: str, model: str, run: str) -> None:
        runs = self._scored.setdefault(side, {}).setdefault(model, [])
        if f"run{run}" not in runs:
            runs.append(f"run{run}")
        self.write()

    def scored_runs(self, side: str, model: str) -> tuple[str, ...]:
        """The scored runs made so far for one side and model ("run1", ...), in order."""
        return tuple(self._scored.get(side, {}).get(model, []))

    def remeasured(self, side: str, model: str) -> bool:
        """Whether one side's model has had its re-measure (once per arm and model)."""
        return any(r.side == side and r.model == model for r in self._remeasured)

    def runs_of_model(self, model: str) -> int:
        """Scored runs made for a model so far, both arms, re-measures included (the --max-runs budget)."""
        made = sum(len(models.get(model, [])) for models in self._scored.values())
        return made + sum(1 for r in self._remeasured if r.model == model)

    def add_remeasure(self, side: str, run: str, model: str, why: str, original: str) -> None:
        """Record a re-measure (written with the next step)."""
        self._remeasured.append(runlog.Remeasure(side=side, run=run, model=model, why=why, original=original))

    def add_pending(self, label: str) -> None:
        """A run the second look adds (written with the next step)."""
        self._runs.setdefault(label, runlog.RunState.PENDING)

    def drop_run(self, label: str) -> None:
        """A duet block discarded with its pair (gate.runner.duet): no longer planned, so no reader expects it."""
        self._runs.pop(label, None)
        side, _, run = label.partition("/")
        for runs in self._scored.get(side, {}).values():
            if run in runs:
                runs.remove(run)
        self.write()

    def calibration_use(self, *, path: str, stamp: Stamp | None, here: Stamp, stale: list[str],
                        stale_unknown: str | None) -> None:
        """Whether the calibration is used for the looks and the outlier rule (a stale one is not)."""
        self._calibration = runlog.CalibrationUse(path=path, stamp=stamp, here=here, stale=tuple(stale),
                                                  used=not stale, stale_unknown=stale_unknown)
        self.write()

    def first_look(self, model: str, action: str, reasons: tuple[str, ...]) -> None:
        self._looks[model] = runlog.LoggedLooks(first=runlog.LoggedDecision(action=runlog.LoggedAction(action), reasons=tuple(reasons)),
                                                extended=False, why_extended=(), pooled=None,
                                                final=runlog.LoggedAction(action))

    def not_extended(self, model: str, why: str) -> None:
        self._looks[model] = dataclasses.replace(self._looks[model], final=runlog.LoggedAction.UNDECIDED,
                                                 not_extended=why)

    def extended(self, model: str, reasons: tuple[str, ...]) -> None:
        self._looks[model] = dataclasses.replace(self._looks[model], extended=True, why_extended=tuple(reasons))

    def pooled(self, model: str, action: str, reasons: tuple[str, ...]) -> None:
        self._looks[model] = dataclasses.replace(
            self._looks[model], pooled=runlog.LoggedDecision(action=runlog.LoggedAction(action), reasons=tuple(reasons)),
            final=runlog.LoggedAction(action))

    def _archive(self, path) -> str | None:
        """Keep an earlier attempt's log under attempts/ (never overwrite it) and remember its run statuses."""
        if not path.is_file():
            return None
        try:
            earlier = runlog.read(path.parent)
        except InputError:
            earlier = None  # not a log this gate reads: every run it lists is redone
        if earlier is not None:
            self.previous_runs.update(earlier.runs)
            self.previous_cycle_s.update(cycle_durations(earlier.steps))
        attempts = path.parent / "attempts"
        try:
            attempts.mkdir(exist_ok=True)
            number = 1 + sum(1 for _ in attempts.glob("gate-run.*.json"))
            target = attempts / f"gate-run.{number}.json"
            os.replace(path, target)
        except OSError as exc:
            raise output_failed(path, exc, "keep the earlier attempt's log") from None
        return str(target.relative_to(path.parent))

    def set_run(self, label: str, status: str) -> None:
        self._runs[label] = runlog.RunState(status)
        self.write()

    @contextmanager
    def run(self, label: str, started: str = "running") -> Iterator[None]:
        """A run's status from start to end: `started` as it begins (inside the guard, so a signal as the status
        is written still marks it), then completed, failed or interrupted."""
        try:
            self.set_run(label, started)
            yield
        except Cancelled:
            self.set_run(label, "interrupted")
            raise
        except BaseException:
            self.set_run(label, "failed")
            raise
        self.set_run(label, "completed")

    @contextmanager
    def step(self, name: str, *, run: RunStep | None = None, model: str | None = None,
             command: list[str] | None = None) -> Iterator[StepEntry]:
        entry = StepEntry(step=name, side=run.side.name if run else None, run=run.run if run else None, model=model,
                          command=None if command is None else tuple(command), start=now())
        self._steps.append(entry)
        self.write()  # a step in progress is visible (and stays so after a SIGKILL)
        began = time.monotonic()
        try:
            yield entry
        except Cancelled as exc:
            entry.status, entry.message = "interrupted", f"interrupted by {exc}"
            raise
        except BaseException as exc:
            entry.status, entry.message = "failed", str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise
        else:
            entry.status = "ok" if entry.status == "running" else entry.status
        finally:
            entry.end = now()
            entry.seconds = round(time.monotonic() - began, 3)
            self.write()

    def finish(self, status: str, exit_code: int, message: str | None) -> None:
        """The run's end; a write that failed the run is recorded too (`output_error`)."""
        self._ending = _Ending(status=runlog.RunStatus(status), exit_code=exit_code, message=message, ended=now())
        text = runlog.dumps(self.log(), whole=True)
        with self.writes.quiet():  # the last word: never replaces the error being reported
            self._write_text(text)
        if status == "completed":  # nothing else to report: a log left at `running` fails the run (exit 3)
            self.writes.raise_held()

    def write(self) -> None:
        self._write_text(runlog.dumps(self.log(), whole=False))

    def _write_text(self, text: str) -> None:
        for path in self.paths:
            self.writes.text(path, text)


def cycle_durations(steps: tuple[runlog.Step, ...]) -> dict[str, float]:
    """Mean seconds of one completed server cycle (port check to GPU free) per model, from a gate-run.json's steps."""
    cycles: dict[tuple, float] = {}
    finished: set[tuple] = set()
    for entry in steps:
        if not entry.model or entry.seconds is None:
            continue
        key = (entry.side, entry.run, entry.model)
        cycles[key] = cycles.get(key, 0.0) + entry.seconds
        if entry.step == "server-stop":
            finished.add(key)
    per_model: dict[str, list[float]] = {}
    for key in finished:
        per_model.setdefault(key[2], []).append(cycles[key])
    return {model: sum(v) / len(v) for model, v in per_model.items()}
