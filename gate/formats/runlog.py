"""gate-run.json, the log `gate run` keeps at the root of each side's tree: its one typed owner.

The runner writes it (gate.runner.logbook, which checks every document against this model before it
writes); everyone else reads it through `read`: the result reader (which runs were planned and made, so
`summarize`, `baseline create` and `history import` too), the judge (was this an A/B with two looks), the
trusted job (which runs completed), the swap check and the history importer (when the tree was made). One
schema, one strict reader (gate.formats.inputs + gate.formats.typedjson), links refused: a log that is not what the runner
writes (null, a list, a wrong type, an unknown key or status) is one InputError line naming the file
(exit 2), never a silently different reading.

A tree is one side's directory; the log of an A/B run names both sides, and each tree holds a copy.
Times are ISO-8601 with a UTC offset; a naive time is refused (its instant would be a guess).
"""
from __future__ import annotations

import datetime as _dt
import json
import os
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, Mapping

from gate.formats import inputs, typedjson
from gate.formats.calibration_stamp import Stamp
from gate.formats.errors import InputError

FILE = "gate-run.json"
SCHEMA_VERSION = 1


class RunStatus(StrEnum):
    """The run as a whole (`status`): running until it ends."""

    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    INTERRUPTED = "interrupted"


class RunState(StrEnum):
    """One scored or warm run of a side (`runs`: label -> state)."""

    PENDING = "pending"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    INTERRUPTED = "interrupted"
    SKIPPED = "skipped"  # --resume: complete already, kept
    REMEASURING = "re-measuring"


class LoggedAction(StrEnum):
    """What the runner decided for a model at a look (`looks.<model>.first.action`, `.pooled.action`, `.final`)."""

    PASS = "pass"
    FAIL = "fail"
    EXTEND = "extend"
    UNDECIDED = "undecided"


_TIME = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)"
_TEXT = 20_000  # a step's message may carry a log tail
_LABEL = {"max": 200}
_RUN = {"pattern": r"run[A-Za-z0-9_-]{1,40}"}


@dataclass(frozen=True)
class Step:
    """One step of the run as it started and finished (server start, a client, a look decision ...)."""

    step: str = field(metadata={"max": 80})
    side: str | None = field(metadata=_LABEL)
    run: str | None = field(metadata={"max": 40})
    model: str | None = field(metadata={"max": 80})
    command: tuple[str, ...] | None = field(metadata={"max_items": 400, "items": {"max": 4000}})
    start: str = field(metadata={"pattern": _TIME})
    end: str | None = field(metadata={"pattern": _TIME})
    seconds: float | None = field(metadata={"min": 0})
    status: str = field(metadata={"max": 40})
    exit_status: int | None
    message: str | None = field(metadata={"max": _TEXT})


@dataclass(frozen=True)
class Plan:
    """The A/B plan of `gate run --ab`: the first look's steps, the runs a second look may add, and
    whether decisions were made at all (`decider` None: one look, `one_look_because` says why)."""

    first_look: tuple[str, ...] = field(metadata={"max_items": 2000, "items": _LABEL})
    possible_extension: tuple[str, ...] = field(metadata={"max_items": 2000, "items": _LABEL})
    decider: str | None = field(metadata={"max": 200})
    one_look_because: str | None = field(metadata={"max": 400})
    max_runs_per_model: int = field(metadata={"min": 1})
    outlier_rule: str = field(metadata={"max": 1000})


@dataclass(frozen=True)
class LoggedDecision:
    action: LoggedAction
    reasons: tuple[str, ...] = field(metadata={"max_items": 200, "items": {"max": 2000}})


@dataclass(frozen=True)
class LoggedLooks:
    """What the runner decided for one model at each look (the report's looks are recomputed by the judge)."""

    first: LoggedDecision
    extended: bool
    why_extended: tuple[str, ...] = field(metadata={"max_items": 200, "items": {"max": 2000}})
    pooled: LoggedDecision | None
    final: LoggedAction
    not_extended: str | None = field(default=None, metadata={"max": 400})


@dataclass(frozen=True)
class Remeasure:
    side: str = field(metadata=_LABEL)
    run: str = field(metadata=_RUN)
    model: str = field(metadata={"max": 80})
    why: str = field(metadata={"max": 2000})
    original: str = field(metadata={"max": 400})


@dataclass(frozen=True)
class CalibrationUse:
    """Whether the runner used the A/A calibration for its looks and outlier rule (a stale one is not used)."""

    path: str = field(metadata={"max": 4000})
    stamp: Stamp | None  # the calibration's stamp (gate.formats.calibration_stamp), None when it has none
    here: Stamp
    stale: tuple[str, ...] = field(metadata={"max_items": 20, "items": {"max": 2000}})
    used: bool
    stale_unknown: str | None = field(default=None, metadata={"max": 4000})


@dataclass(frozen=True)
class RunLog:
    schema_version: int = field(metadata={"min": 1})
    gate_version: str = field(metadata={"max": 80})
    argv: tuple[str, ...] = field(metadata={"max_items": 400, "items": {"max": 4000}})
    started: str = field(metadata={"pattern": _TIME})
    ended: str | None = field(metadata={"pattern": _TIME})
    status: RunStatus
    exit_code: int | None
    message: str | None = field(metadata={"max": _TEXT})
    sides: Mapping[str, str] = field(metadata={"max_items": 2, "items": {"max": 4000}})
    previous_attempt: str | None = field(metadata={"max": 400})
    runs: Mapping[str, RunState] = field(metadata={"max_items": 400})
    steps: tuple[Step, ...] = field(metadata={"max_items": 50_000})
    scored_runs: Mapping[str, Mapping[str, tuple[str, ...]]] = field(
        metadata={"max_items": 2, "items": {"max_items": 100, "items": {"max_items": 200, "items": _RUN}}})
    plan: Plan | None = None
    looks: Mapping[str, LoggedLooks] | None = None
    remeasured: tuple[Remeasure, ...] | None = field(default=None, metadata={"max_items": 2000})
    calibration: CalibrationUse | None = None
    output_error: str | None = field(default=None, metadata={"max": _TEXT})  # the write that failed the run

    @property
    def two_looks(self) -> bool:
        """An A/B whose plan made look decisions (`gate run --ab` without --one-look)."""
        return self.plan is not None and self.plan.decider is not None

    @property
    def started_utc(self) -> _dt.datetime:
        """When the run started, in UTC (the pattern guarantees an offset)."""
        return _dt.datetime.fromisoformat(self.started).astimezone(_dt.timezone.utc)


def server_starts(log: RunLog, model: str) -> dict[tuple[str, str], int] | None:
    """Where each scored run of `model` sat in the job: (side, "run<R>") -> its place among the model's server
    starts, in the order the steps record them ("server-start"; the warm runs' left out). A re-measured run ran
    again with a fresh server (gate.runner.twolooks): its place is that of its last start, after the runs before
    it, and every start after it is one place later. Without re-measures the places are the A/B interleave's
    (gate.stats.drift.interleave_positions). None where the steps do not account for every scored run of the model
    (a --resume attempt keeps runs it did not start, a log from before the steps were kept)."""
    scored = {(side, run) for side, models in log.scored_runs.items() for run in models.get(model, ())}
    starts = [(s.side, f"run{s.run}") for s in log.steps
              if s.step == "server-start" and s.model == model and s.side is not None and s.run is not None]
    place = {key: i for i, key in enumerate(k for k in starts if k in scored)}
    return place if scored and set(place) == scored else None


def skeleton(sides: Mapping[str, str], runs: Mapping[str, str], *, started: str, status: str = "running",
             scored_runs: Mapping[str, Mapping[str, list[str]]] | None = None, argv: tuple[str, ...] = ("gate", "run"),
             gate_version: str = "0") -> dict[str, Any]:
    """A run log with no step recorded yet (what `gate run` writes before its first step), as plain JSON:
    the runner fills it in; tests build realistic logs from it."""
    return {"schema_version": SCHEMA_VERSION, "gate_version": gate_version, "argv": list(argv), "started": started,
            "ended": None, "status": status, "exit_code": None, "message": None, "sides": dict(sides),
            "previous_attempt": None, "runs": dict(runs), "steps": [],
            "scored_runs": {side: {m: list(r) for m, r in per.items()} for side, per in (scored_runs or {}).items()}}


def read(tree: str | Path) -> RunLog | None:
    """The tree's run log, or None when the tree has none (a tree made by hand with the runbook).
    The runner writes a regular file: a link is refused (as in an uploaded tree), like a FIFO or a device.
    Read once per file version: the same file is decoded once however many readers ask."""
    path = Path(tree) / FILE
    if not inputs.is_present(path):
        return None
    try:
        info = os.lstat(path)
        key = (os.path.realpath(path), info.st_dev, info.st_ino, info.st_mtime_ns, info.st_size)
    except OSError:
        key = None
    if key is not None and key in _memo:
        return _memo[key]
    log = decode(inputs.load_json(path, inputs.RUN_LOG, follow_links=False), path)
    if key is not None:
        if len(_memo) > 64:
            _memo.clear()
        _memo[key] = log
    return log


def decode(data: Any, path: str | Path) -> RunLog:
    """A parsed gate-run.json as a RunLog; InputError naming the file when it is not what the runner writes."""
    try:
        return _decoded(_upgraded(data))
    except typedjson.SchemaMismatch as exc:
        # Both parts can echo keys and values from the file (an uploaded tree's too): one line, bounded.
        where = " ".join(exc.where.split())[:160]
        expected = " ".join(exc.expected.split())
        expected = expected if len(expected) <= 200 else expected[:200] + "..."
        raise InputError(f"{where}: {expected}; expected the run log `gate run` writes", path=path) from None


def encode(log: RunLog) -> dict[str, Any]:
    """The document `gate run` writes for `log`, key for key in the order it has always had: the header, the
    steps, an A/B's plan, looks and re-measures, the scored runs, then the calibration's use and the failed write
    where there are any (optional keys absent, never null)."""
    doc: dict[str, Any] = {
        "schema_version": log.schema_version, "gate_version": log.gate_version, "argv": list(log.argv),
        "started": log.started, "ended": log.ended, "status": log.status.value, "exit_code": log.exit_code,
        "message": log.message, "sides": dict(log.sides), "previous_attempt": log.previous_attempt,
        "runs": {label: state.value for label, state in log.runs.items()}, "steps": [typedjson.to_json(step) for step in log.steps],
    }
    if log.plan is not None:
        doc["plan"] = typedjson.to_json(log.plan)
        doc["looks"] = {model: _without_none(typedjson.to_json(record), "not_extended")
                        for model, record in (log.looks or {}).items()}
        doc["remeasured"] = [typedjson.to_json(r) for r in log.remeasured or ()]
    doc["scored_runs"] = {side: {model: list(runs) for model, runs in models.items()}
                          for side, models in log.scored_runs.items()}
    if log.calibration is not None:
        doc["calibration"] = _without_none(typedjson.to_json(log.calibration), "stale_unknown")
    if log.output_error is not None:
        doc["output_error"] = log.output_error
    return doc


def dumps(log: RunLog, *, whole: bool) -> str:
    """gate-run.json's text for `log`, checked first as every reader will read it (`check_written`: WriterBug,
    exit 70, on a mismatch; `whole=False` checks the header and the last step only)."""
    doc = encode(log)
    check_written(doc, whole=whole)
    return json.dumps(doc, indent=1) + "\n"


def _without_none(data: dict[str, Any], key: str) -> dict[str, Any]:
    """`data` without `key` when it is None: an optional key the writer leaves out rather than writing null."""
    if data.get(key, 0) is None:
        del data[key]
    return data


class WriterBug(RuntimeError):
    """The runner was about to write a log its own readers would refuse: a bug of the gate (exit 70)."""


def check_written(doc: Mapping[str, Any], *, whole: bool) -> None:
    """The writer's check before each write: `doc` decodes with this model. `whole=False` checks the header
    and the last step only (what a write adds; ~1 ms, cheap enough for every write); the runner checks the
    whole log as it finishes. A mismatch raises WriterBug naming the field."""
    data = doc if whole else {**doc, "steps": list(doc.get("steps", ()))[-1:]}
    try:
        _decoded(data)
    except typedjson.SchemaMismatch as exc:
        raise WriterBug(f"the run log about to be written does not decode: {exc.where}: {exc.expected}") from None


def _decoded(data: Any) -> RunLog:
    if isinstance(data, dict):
        data = {**{name: None for name in _OPTIONAL}, **data}
        if isinstance(data.get("calibration"), dict):
            data["calibration"] = {"stale_unknown": None, **data["calibration"]}
        if isinstance(data.get("looks"), dict):
            data["looks"] = {model: ({"not_extended": None, **record} if isinstance(record, dict) else record)
                             for model, record in data["looks"].items()}
    log = typedjson.from_json(RunLog, data)
    _check_values(log)
    return log


_OPTIONAL = ("plan", "looks", "remeasured", "calibration", "output_error")


def _upgraded(data: Any) -> Any:
    """A log of schema_version 1 written before 2026-12-03 lacks `previous_attempt` (no earlier attempt) and
    `scored_runs` (readers then plan the runs from `runs`, as for a tree without the key); the reader fills
    them, the writer's own check does not (tests/fixtures/formats/gate-run)."""
    if isinstance(data, dict):
        return {"previous_attempt": None, "scored_runs": {}, **data}
    return data
_memo: dict[tuple, RunLog] = {}


def _check_values(log: RunLog) -> None:
    if log.schema_version != SCHEMA_VERSION:
        raise typedjson.SchemaMismatch("$.schema_version", f"expected {SCHEMA_VERSION}, got {log.schema_version}")
    for label in log.runs:
        side = label.rsplit("/", 1)[0] if "/" in label else None
        if side is not None and side not in log.sides:  # the runner labels every run <side>/run<R> of a side it lists
            raise typedjson.SchemaMismatch(typedjson.key_path("$.runs", label),
                                           f"side {typedjson.quoted(side[:60])} is not one of $.sides "
                                           f"({', '.join(sorted(log.sides)) or 'none'})")
    for side in log.scored_runs:
        if side not in log.sides:
            raise typedjson.SchemaMismatch(typedjson.key_path("$.scored_runs", side), "expected a side of $.sides")

