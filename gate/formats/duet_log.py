"""gate-duet.json, the duet's record at the root of each side's tree (issue 53): its one typed owner.

`gate run --design duet` (gate.runner.duet) writes it through `dumps`, which checks the document as every reader
will read it; the judge (gate.judging.duet: which runs pair in which session) and `gate baseline calibrate` (a
duet A/A's session times) read it through `read`. A file that is not what the runner writes (torn, a wrong type,
an unknown key, a session numbered twice, a discarded pair outside its session) is one InputError line naming
the file (exit 2), never a silently different pairing.

Session S of P block pairs writes run<(S-1)·P + j> (j = 1..P) on both sides; `blocks` lists them in the order they
ran, `discarded` the pairs moved to duet-discarded/ (incomplete coverage), `seconds` the session's GPU time
(GPU-free wait to GPU free; absent until the session completes).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, Mapping

from gate.formats import inputs, typedjson
from gate.formats.errors import InputError
from gate.formats.runlog import LoggedAction, WriterBug

FILE = "gate-duet.json"
SCHEMA = "gate-duet/1"
MAX_SESSIONS = 40  # --sessions allows K <= 40
_NAME = {"max": 200}
_REASONS = {"max_items": 200, "items": {"max": 2000}}


class SessionStatus(StrEnum):
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    INTERRUPTED = "interrupted"


@dataclass(frozen=True)
class Block:
    """One block as it ran: a complete client pass of `model` against `side`'s server, into `run` of that side."""

    model: str = field(metadata={"max": 80})
    side: str = field(metadata=_NAME)
    run: str = field(metadata={"pattern": r"run[0-9]{1,6}"})
    seconds: float = field(metadata={"min": 0})


@dataclass(frozen=True)
class Discarded:
    """A block pair discarded whole (either block's coverage incomplete): its run number (no "run") and why."""

    run: str = field(metadata={"pattern": r"[0-9]{1,6}"})
    why: tuple[str, ...] = field(metadata=_REASONS)


@dataclass(frozen=True)
class Session:
    session: int = field(metadata={"min": 1, "max": MAX_SESSIONS})
    models: tuple[str, ...] = field(metadata={"max_items": 100, "items": {"max": 80}})
    status: SessionStatus
    blocks: tuple[Block, ...] = field(metadata={"max_items": 20_000})
    discarded: tuple[Discarded, ...] = field(metadata={"max_items": 2000})
    seconds: float | None = field(default=None, metadata={"min": 0})


@dataclass(frozen=True)
class Look:
    """What the runner's look decided for a model: after K₁ sessions (`first`), after K (`pooled`, if extended)."""

    first: LoggedAction
    reasons: tuple[str, ...] = field(metadata=_REASONS)
    pooled: LoggedAction | None = None


@dataclass(frozen=True)
class DuetLog:
    schema: str = field(metadata={"max": 40})
    design: str = field(metadata={"max": 20})
    departure: str = field(metadata={"max": 1000})
    sides: tuple[str, str] = field(metadata=_NAME)  # base, candidate
    ports: Mapping[str, int] = field(metadata={"max_items": 2, "items": {"min": 1, "max": 65535}})
    first_sessions: int = field(metadata={"min": 1, "max": MAX_SESSIONS})
    max_sessions: int = field(metadata={"min": 1, "max": MAX_SESSIONS})
    pairs_per_session: int = field(metadata={"min": 1, "max": 1000})
    mem_fraction_static: Mapping[str, float] = field(metadata={"max_items": 100, "items": {"min": 0, "max": 1}})
    sessions: tuple[Session, ...] = field(metadata={"max_items": MAX_SESSIONS})
    looks: Mapping[str, Look] = field(metadata={"max_items": 100})

    def session_runs(self, session: int) -> tuple[str, ...]:
        """The run numbers (without "run") of a session's block pairs: the same on both sides."""
        pairs = self.pairs_per_session
        return tuple(str((session - 1) * pairs + j) for j in range(1, pairs + 1))

    def completed(self) -> tuple[Session, ...]:
        return tuple(s for s in self.sessions if s.status is SessionStatus.COMPLETED)


def read(tree: str | Path) -> DuetLog | None:
    """The tree's duet record, or None (an interleaved tree, no record). A link is refused, as for gate-run.json."""
    path = Path(tree) / FILE
    if not inputs.is_present(path):
        return None
    return decode(inputs.load_json(path, inputs.DUET_LOG, follow_links=False), path)


def decode(data: Any, path: str | Path) -> DuetLog:
    """A parsed gate-duet.json as a DuetLog; one InputError line naming the file when it is not the runner's."""
    try:
        return _decoded(data)
    except typedjson.SchemaMismatch as exc:
        where = " ".join(exc.where.split())[:160]
        expected = " ".join(exc.expected.split())[:200]
        raise InputError(f"{where}: {expected}; expected the duet record `gate run --design duet` writes "
                         f"({SCHEMA})", path=path) from None


def dumps(log: DuetLog) -> str:
    """The file's text, checked first as every reader reads it (a mismatch is the gate's bug: WriterBug, exit 70)."""
    doc = typedjson.to_json(log)
    try:
        _decoded(doc)
    except typedjson.SchemaMismatch as exc:
        raise WriterBug(f"the duet record about to be written does not decode: {exc}") from None
    return json.dumps(doc, indent=1) + "\n"


def _decoded(data: Any) -> DuetLog:
    if isinstance(data, dict) and isinstance(data.get("sessions"), list):
        # optional keys a running session (seconds) or an unextended look (pooled) has not written yet
        data = {**data, "sessions": [{"seconds": None, **s} if isinstance(s, dict) else s for s in data["sessions"]]}
    if isinstance(data, dict) and isinstance(data.get("looks"), dict):
        data = {**data, "looks": {m: {"pooled": None, **v} if isinstance(v, dict) else v
                                  for m, v in data["looks"].items()}}
    log = typedjson.from_json(DuetLog, data)
    _check_values(log)
    return log


def _check_values(log: DuetLog) -> None:
    if log.schema != SCHEMA:
        raise typedjson.SchemaMismatch("$.schema", f"expected {SCHEMA}, got {typedjson.quoted(log.schema[:40])}")
    if log.design != "duet":
        raise typedjson.SchemaMismatch("$.design", "expected \"duet\"")
    if log.first_sessions > log.max_sessions:
        raise typedjson.SchemaMismatch("$.first_sessions", "expected at most max_sessions")
    seen: set[int] = set()
    for k, session in enumerate(log.sessions):
        where = f"$.sessions[{k}]"
        if session.session in seen:
            raise typedjson.SchemaMismatch(f"{where}.session", f"session {session.session} is recorded twice")
        seen.add(session.session)
        runs = log.session_runs(session.session)
        for d in session.discarded:
            if d.run not in runs:
                raise typedjson.SchemaMismatch(f"{where}.discarded", f"run {d.run} is not a pair of session "
                                                                     f"{session.session} ({', '.join(runs)})")
        for block in session.blocks:
            if block.run[3:] not in runs or block.side not in log.sides:
                raise typedjson.SchemaMismatch(f"{where}.blocks", f"{block.side}/{block.run[:12]} is not a block of "
                                                                  f"session {session.session} on a side of $.sides")
