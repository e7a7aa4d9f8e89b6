"""gate-run.json: the log of one gate run, rewritten atomically after every step into each side's tree.

Every step goes in as it starts and as it finishes, so a crash or a signal leaves an accurate log; an
earlier attempt's log is kept under <name>/attempts/. gate.formats.runlog owns the format: every write is checked
against its typed model first (a mismatch is a bug, exit 70), and an earlier attempt's log is read by it.
The runner's parts record and ask through its methods (made, scored_runs, runs_of_model, first_look, ...);
the document itself is the Logbook's alone.
A write that fails (full disk, permissions) is a failed run (outfiles.OutputFailed, exit 3); the log
then says so if it can still be written, and otherwise the next --resume redoes every run it did not
record as completed.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import time
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Iterator

from gate.formats import runlog, typedjson
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


class Logbook:
    """The writer of gate-run.json. Readers ask it (scored_runs, runs_of_model, ...); none indexes the document."""

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
        self.doc: dict[str, Any] = {}

    @property
    def opened(self) -> bool:
        """Whether this attempt's log was started (not yet during preflight and the locks)."""
        return bool(self.doc)

    def open(self) -> None:
        """Keep the earlier attempt's log and start this one (under the GPU lock: nothing is touched before)."""
        archived = [self._archive(path) for path in self.paths]
        self.doc = {
            "schema_version": runlog.SCHEMA_VERSION, "gate_version": gate_version(), "argv": list(self.argv),
            "started": now(), "ended": None, "status": "running", "exit_code": None, "message": None,
            "sides": {s.name: str(s.checkout) for s in self.sides},
            "previous_attempt": next((a for a in archived if a), None),
            "runs": {step.label: "pending" for step in self.steps}, "steps": [],
        }
        if self.plan is not None:
            self.doc["plan"] = typedjson.to_json(self.plan)
            self.doc["looks"] = {}
            self.doc["remeasured"] = []
        self.doc["scored_runs"] = {}  # side -> model -> the scored runs made, in order (what readers should accept)

    def made(self, side: str, model: str, run: str) -> None:
        runs = self.doc["scored_runs"].setdefault(side, {}).setdefault(model, [])
        if f"run{run}" not in runs:
            runs.append(f"run{run}")
        self.write()

    def scored_runs(self, side: str, model: str) -> tuple[str, ...]:
        """The scored runs made so far for one side and model ("run1", ...), in order."""
        return tuple(self.doc["scored_runs"].get(side, {}).get(model, []))

    def remeasured(self, side: str, model: str) -> bool:
        """Whether one side's model has had its re-measure (once per arm and model)."""
        return any(r["side"] == side and r["model"] == model for r in self.doc.get("remeasured", []))

    def runs_of_model(self, model: str) -> int:
        """Scored runs made for a model so far, both arms, re-measures included (the --max-runs budget)."""
        made = sum(len(models.get(model, [])) for models in self.doc["scored_runs"].values())
        return made + sum(1 for r in self.doc.get("remeasured", []) if r["model"] == model)

    def add_remeasure(self, side: str, run: str, model: str, why: str, original: str) -> None:
        """Record a re-measure (written with the next step)."""
        self.doc["remeasured"].append({"side": side, "run": run, "model": model, "why": why, "original": original})

    def add_pending(self, label: str) -> None:
        """A run the second look adds (written with the next step)."""
        self.doc["runs"].setdefault(label, "pending")

    def calibration_use(self, *, path: str, stamp: Stamp | None, here: Stamp, stale: list[str],
                        stale_unknown: str | None) -> None:
        """Whether the calibration is used for the looks and the outlier rule (a stale one is not)."""
        record: dict[str, Any] = {"path": path, "stamp": stamp.to_json() if stamp else None, "here": here.to_json(),
                                  "stale": stale, "used": not stale}
        if stale_unknown is not None:
            record["stale_unknown"] = stale_unknown
        self.doc["calibration"] = record
        self.write()

    def first_look(self, model: str, action: str, reasons: tuple[str, ...]) -> None:
        self.doc["looks"][model] = {"first": {"action": action, "reasons": list(reasons)}, "extended": False,
                                    "why_extended": [], "pooled": None, "final": action}

    def not_extended(self, model: str, why: str) -> None:
        self.doc["looks"][model]["final"] = "undecided"
        self.doc["looks"][model]["not_extended"] = why

    def extended(self, model: str, reasons: tuple[str, ...]) -> None:
        self.doc["looks"][model].update(extended=True, why_extended=list(reasons))

    def pooled(self, model: str, action: str, reasons: tuple[str, ...]) -> None:
        self.doc["looks"][model].update(pooled={"action": action, "reasons": list(reasons)}, final=action)

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
        self.doc["runs"][label] = status
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
             command: list[str] | None = None) -> Iterator[dict]:
        entry: dict[str, Any] = {"step": name, "side": run.side.name if run else None, "run": run.run if run else None,
                                 "model": model, "command": command, "start": now(), "end": None,
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
            entry["end"] = now()
            entry["seconds"] = round(time.monotonic() - began, 3)
            self.write()

    def finish(self, status: str, exit_code: int, message: str | None) -> None:
        self.doc.update(status=status, exit_code=exit_code, message=message, ended=now())
        if self.writes.error is not None:
            self.doc["output_error"] = str(self.writes.error)  # added key: the write that failed the run
        runlog.check_written(self.doc, whole=True)
        with self.writes.quiet():  # the last word: never replaces the error being reported
            self.write()
        if status == "completed":  # nothing else to report: a log left at `running` fails the run (exit 3)
            self.writes.raise_held()

    def write(self) -> None:
        runlog.check_written(self.doc, whole=False)
        text = json.dumps(self.doc, indent=1) + "\n"
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
