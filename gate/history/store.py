"""The history store: append-only JSON lines, one file per runner class and month.

Layout (on the baseline branch, beside the baseline files):

    <history>/<runner-class>/<YYYY-MM>.jsonl     one line per night × workload, oldest first
    <history>/.gitattributes                     "*.jsonl merge=union": two appends merge cleanly

One line (schema_version 1), compact and diff-friendly:

    {"v": 1, "time": "2026-11-03T02:10:00+00:00", "kind": "nightly", "commit": "5b0c1f3…",
     "workload": "qwen3/asr_en", "runs": ["run1", "run2", "run3"],
     "values": {"corpus_wer": [0.0138, 0.0138, 0.0137], "throughput_samples_per_s": [98.1, 97.7, 99.0], …},
     "verdict": "pass", "env": "3f2a…" (fingerprint digest), "complete": true}

`kind` is nightly (main, every night whatever the verdict), calibration (an A/A arm) or accepted
(a regression a maintainer accepted). Only trusted jobs write: the nightly, calibration and the
report job. A line is identified by (time, kind, workload, commit): appending it again is a no-op,
so `gate history import` can be rerun.
"""
from __future__ import annotations

import datetime as _dt
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping

from gate.errors import InputError

SCHEMA_VERSION = 1
KINDS = ("nightly", "calibration", "accepted")
GITATTRIBUTES = "*.jsonl merge=union\n"
_INFINITE = (math.inf, -math.inf)


@dataclass(frozen=True)
class Record:
    """One workload of one night (or calibration arm): every metric's value per scored run."""

    time: str  # ISO-8601 with offset, when the runs were made
    kind: str
    commit: str | None
    workload: str
    runs: tuple[str, ...]
    values: Mapping[str, tuple[float | None, ...]]  # metric -> one value per run
    verdict: str | None = None
    env: str | None = None  # fingerprint digest: a change of machine or packages shows as a new digest
    complete: bool = True
    runner_class: str = "default"  # from the file's folder, not stored in the line

    @property
    def key(self) -> tuple:
        return (self.time, self.kind, self.workload, self.commit)

    @property
    def month(self) -> str:
        return self.time[:7]

    def to_json(self) -> dict:
        return {"v": SCHEMA_VERSION, "time": self.time, "kind": self.kind, "commit": self.commit,
                "workload": self.workload, "runs": list(self.runs),
                "values": {m: list(v) for m, v in self.values.items()}, "verdict": self.verdict,
                "env": self.env, "complete": self.complete}


def record_from_json(data: object, runner_class: str, where: str) -> Record:
    """Validate one parsed line; InputError names `where` (file:line) and what was expected."""
    expected = "expected a history record {v: 1, time, kind, commit, workload, runs, values, ...}"
    if not isinstance(data, dict) or data.get("v") != SCHEMA_VERSION:
        raise InputError(f"not a schema_version {SCHEMA_VERSION} record; {expected}", path=where)
    try:
        time, kind, workload = data["time"], data["kind"], data["workload"]
        runs, values = data["runs"], data["values"]
    except KeyError as exc:
        raise InputError(f"{exc.args[0]} is missing; {expected}", path=where) from None
    if kind not in KINDS:
        raise InputError(f"kind is {kind!r}, expected one of {', '.join(KINDS)}", path=where)
    if not isinstance(time, str) or not _is_time(time):
        raise InputError(f"time is {time!r}, expected ISO-8601 with a UTC offset", path=where)
    if not isinstance(runs, list) or not isinstance(values, dict) or not isinstance(workload, str):
        raise InputError(f"runs/values/workload have the wrong type; {expected}", path=where)
    checked = {}
    for metric, per_run in values.items():  # hot loop when reading years: plain type checks, no helpers
        if type(per_run) is not list or len(per_run) != len(runs):
            raise InputError(f"values.{metric} must list one number (or null) per run", path=where)
        for v in per_run:
            if v is not None and (type(v) not in (float, int) or v != v or v in _INFINITE):
                raise InputError(f"values.{metric} must list one number (or null) per run", path=where)
        checked[metric] = tuple(per_run)
    commit = data.get("commit")
    return Record(time=time, kind=kind, commit=commit if isinstance(commit, str) else None, workload=workload,
                  runs=tuple(str(r) for r in runs), values=checked, verdict=data.get("verdict"),
                  env=data.get("env"), complete=bool(data.get("complete", True)), runner_class=runner_class)


def _is_time(text: str) -> bool:
    try:
        return _dt.datetime.fromisoformat(text).tzinfo is not None
    except ValueError:
        return False


@dataclass(frozen=True)
class History:
    """Every record read, oldest first."""

    root: str
    records: tuple[Record, ...] = field(default_factory=tuple)

    def runner_classes(self) -> tuple[str, ...]:
        return tuple(sorted({r.runner_class for r in self.records}))

    def workloads(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(r.workload for r in self.records))

    def select(self, *, workload: str | None = None, kinds: Iterable[str] = ("nightly",),
               runner_class: str | None = None) -> tuple[Record, ...]:
        kinds = tuple(kinds)
        return tuple(r for r in self.records if (workload is None or r.workload == workload) and r.kind in kinds
                     and (runner_class is None or r.runner_class == runner_class))


class HistoryStore:
    """Reads and appends the JSON-lines files under one history directory."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def files(self) -> list[tuple[str, Path]]:
        if not self.root.is_dir():
            return []
        return sorted((d.name, f) for d in self.root.iterdir() if d.is_dir() for f in d.glob("*.jsonl"))

    def read(self, *, runner_class: str | None = None) -> History:
        """All records (of one runner class when given), sorted by time. Missing directory: InputError."""
        if not self.root.is_dir():
            raise InputError("no such history directory; expected <history>/<runner-class>/<YYYY-MM>.jsonl "
                             "(create one with `gate history import`)", path=self.root)
        records: list[Record] = []
        for cls, path in self.files():
            if runner_class is not None and cls != runner_class:
                continue
            records.extend(_read_file(path, cls))
        records.sort(key=lambda r: (r.time, r.kind, r.workload))
        return History(root=str(self.root), records=tuple(records))

    def append(self, records: Iterable[Record]) -> int:
        """Append records not yet stored (same key); returns how many lines were written."""
        by_file: dict[Path, list[Record]] = {}
        for record in records:
            if record.kind not in KINDS:
                raise InputError(f"record kind {record.kind!r} is not one of {', '.join(KINDS)}")
            by_file.setdefault(self.root / record.runner_class / f"{record.month}.jsonl", []).append(record)
        written = 0
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            attributes = self.root / ".gitattributes"
            if not attributes.exists():
                attributes.write_text(GITATTRIBUTES, encoding="utf-8")
            for path, new in sorted(by_file.items()):
                path.parent.mkdir(parents=True, exist_ok=True)
                known = {r.key for r in _read_file(path, path.parent.name)} if path.exists() else set()
                lines = []
                for record in sorted(new, key=lambda r: (r.time, r.kind, r.workload)):
                    if record.key not in known:
                        known.add(record.key)
                        lines.append(json.dumps(record.to_json(), separators=(",", ":"), allow_nan=False))
                if lines:
                    with path.open("a", encoding="utf-8") as handle:
                        handle.write("\n".join(lines) + "\n")
                    written += len(lines)
        except OSError as exc:
            raise InputError(f"cannot write the history ({exc.strerror})", path=exc.filename or self.root) from None
        return written


def _read_file(path: Path, runner_class: str) -> list[Record]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read ({getattr(exc, 'strerror', None) or 'not UTF-8'})", path=path) from None
    lines = text.splitlines()
    try:  # one parse for the whole file: ~10x faster than a json.loads per line
        parsed = json.loads("[" + ",".join(line for line in lines if line.strip()) + "]")
    except json.JSONDecodeError:
        parsed = None
    if parsed is None:  # find the bad line to name it
        parsed = []
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                parsed.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise InputError(f"line {number} is not valid JSON ({exc.msg}); expected one record per line",
                                 path=path) from None
    return [record_from_json(item, runner_class, f"{path}:{n}") for n, item in enumerate(parsed, 1)]


def mean_of_runs(values: Iterable[float | None], *, log: bool) -> float | None:
    """The night's value: geometric mean of the runs for speed (log=True), arithmetic for accuracy."""
    present = [v for v in values if v is not None and (v > 0 or not log)]
    if not present:
        return None
    if log:
        return math.exp(sum(math.log(v) for v in present) / len(present))
    return sum(present) / len(present)
