"""One history line: the typed record format, its strict decoder, and the identity that makes imports idempotent.

A line (schema_version 1) is decoded by the gate's strict reader (gate.formats.inputs: duplicate keys, huge
integers, non-finite numbers and deep nesting refused) and then by gate.formats.typedjson against `StoredLine`:
every key present and of its JSON type (`"complete": "false"` is not a boolean, `"v": 1.0` is not an
integer, a list is not an env digest), a verdict from the closed vocabulary of gate.formats.verdict, a kind
from KINDS. Values are then checked per metric kind (speed in (0, 1e9], accuracy in [0, 10]) so a
value that would overflow a chart or a logarithm never reaches the analysis.

Times are normalised to UTC when read and written: "…Z" and "+08:00" spellings of one instant are one
time. Identity (see `Record.key` and `Record.digest`): a nightly or accepted record is one per
(kind, workload, commit, UTC night date), so a rerun of the night replaces it; a calibration arm is one
per full time (the two arms of an A/A pair share a date). A record whose measured content (runs and
values) is already stored is the same night whatever time it was imported with, and is not added again.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Mapping

from gate.formats import typedjson
from gate.formats.verdict import Verdict

SCHEMA_VERSION = 1
KINDS = ("nightly", "calibration", "accepted")
SPEED_MAX = 1e9  # samples/s, seconds or RTF: anything above is not a measurement
# The nights a record may be of: none before the history store existed, none in the future (a day of clock
# skew allowed). A night dated 0001 or 2099 is a broken line, not a measurement.
HISTORY_BEGAN = _dt.datetime(2025, 1, 1, tzinfo=_dt.timezone.utc)  # before the gate and its store existed
FUTURE_SLACK = _dt.timedelta(days=1)
ACCURACY_MAX = 10.0  # WER/CER as a fraction: 10 = 1000% (insertions can pass 100%)
MAX_RUNS = 100
MAX_METRICS = 50


class StoredKind(str, Enum):
    NIGHTLY = "nightly"
    CALIBRATION = "calibration"
    ACCEPTED = "accepted"


@dataclass(frozen=True)
class StoredLine:
    """The JSON form of one line, as gate.formats.typedjson decodes it (every key required, no other key)."""

    v: int
    time: str = field(metadata={"max": 40})
    kind: StoredKind
    commit: str | None = field(metadata={"max": 500})  # "a | b" when a tree mixes commits
    workload: str = field(metadata={"max": 100, "pattern": r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+"})
    runs: tuple[str, ...] = field(metadata={"max_items": MAX_RUNS, "items": {"max": 100}})
    # Each value: a list of numbers or nulls, one per run. Checked by `checked` in one plain loop (years of
    # nights are read at once; the generic decoder per number cost 20x the parse).
    values: Mapping[str, Any] = field(metadata={"max_items": MAX_METRICS})
    verdict: Verdict | None
    env: str | None = field(metadata={"max": 200})
    complete: bool


class BadRecord(ValueError):
    """A line that is JSON but not a history record; the message says what was expected (one line)."""


@dataclass(frozen=True)
class Record:
    """One workload of one night (or calibration arm): every metric's value per scored run."""

    time: str  # ISO-8601, UTC (normalised), when the runs were made
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
        """One record per key: a rerun of the same night (same date, commit, workload) replaces it."""
        slot = self.time if self.kind == "calibration" else self.time[:10]
        return (self.runner_class, self.kind, self.workload, self.commit, slot)

    @property
    def digest(self) -> str:
        """What was measured (not when it was imported): the same tree imported twice has one digest."""
        facts = json.dumps([self.runner_class, self.kind, self.workload, self.commit, list(self.runs),
                            {m: [None if v is None else float(v) for v in vs] for m, vs in sorted(self.values.items())}],
                           separators=(",", ":"))
        return hashlib.sha256(facts.encode()).hexdigest()

    @property
    def month(self) -> str:
        return self.time[:7]

    def to_json(self) -> dict:
        return {"v": SCHEMA_VERSION, "time": self.time, "kind": self.kind, "commit": self.commit,
                "workload": self.workload, "runs": list(self.runs),
                "values": {m: list(v) for m, v in self.values.items()}, "verdict": self.verdict,
                "env": self.env, "complete": self.complete}

    def line(self) -> str:
        return json.dumps(self.to_json(), separators=(",", ":"), allow_nan=False, ensure_ascii=False)


def utc_time(text: str) -> str | None:
    """`text` as ISO-8601 in UTC ("+00:00"), or None when it is not a time with an offset."""
    if not isinstance(text, str) or len(text) > 40:
        return None
    try:
        moment = _dt.datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
    except ValueError:
        return None
    if moment.tzinfo is None or moment.utcoffset() is None:
        return None
    return moment.astimezone(_dt.timezone.utc).isoformat()


def record_from_json(data: object, runner_class: str, metric_kinds: Mapping[str, str]) -> Record:
    """Decode one parsed line; BadRecord says what is wrong. `metric_kinds`: metric -> speed | accuracy."""
    version = data.get("v") if isinstance(data, dict) else None
    if type(version) is int and version != SCHEMA_VERSION:
        raise BadRecord(f"$.v: schema_version {version} is not supported (this gate reads {SCHEMA_VERSION})")
    try:
        line = typedjson.from_json(StoredLine, data)
    except typedjson.SchemaMismatch as exc:
        raise BadRecord(f"{exc}; expected a history record (schema_version {SCHEMA_VERSION})") from None
    time = utc_time(line.time)
    if time is None:
        raise BadRecord(f"$.time: {typedjson.quoted(line.time)} is not ISO-8601 with a UTC offset")
    values = {}
    for metric, per_run in line.values.items():
        if type(per_run) is not list:
            raise BadRecord(f"$.values.{metric[:40]}: expected a list of one number (or null) per run")
        values[metric] = tuple(per_run)
    return checked(Record(time=time, kind=line.kind.value, commit=line.commit, workload=line.workload,
                          runs=line.runs, values=values, verdict=line.verdict.value if line.verdict else None,
                          env=line.env, complete=line.complete, runner_class=runner_class), metric_kinds)


class SuiteRules(dict):
    """metric -> speed | accuracy (a Mapping, as every caller reads it), and the suite's own facts a record must
    fit: its workloads, and per workload × metric the range the tree reader holds a result file to
    (gate.reading.result_files.metric_check), so the history takes no value a tree would refuse."""

    def __init__(self, kinds: Mapping[str, str], ranges: Mapping[str, Mapping[str, Any]]) -> None:
        super().__init__(kinds)
        self.ranges = ranges


def checked(record: Record, metric_kinds: Mapping[str, str]) -> Record:
    """`record` if every value fits its metric's range and the runs, and its night lies in the store's span;
    else BadRecord. With SuiteRules, the workload must be the suite's and each value in the tree reader's range."""
    if record.kind not in KINDS:
        raise BadRecord(f"kind {record.kind!r}: expected one of {', '.join(KINDS)}")
    if record.verdict is not None and record.verdict not in {v.value for v in Verdict}:
        raise BadRecord(f"verdict {record.verdict!r}: expected one of {', '.join(v.value for v in Verdict)} or null")
    if utc_time(record.time) != record.time:
        raise BadRecord(f"time {record.time!r}: expected ISO-8601 in UTC")
    night = _dt.datetime.fromisoformat(record.time)
    latest = _dt.datetime.now(_dt.timezone.utc) + FUTURE_SLACK
    if not HISTORY_BEGAN <= night <= latest:
        raise BadRecord(f"time {record.time!r}: expected a night from {HISTORY_BEGAN.date()} (when the history store "
                        f"began) to today")
    for metric, per_run in record.values.items():
        if len(per_run) != len(record.runs):
            raise BadRecord(f"values.{metric[:40]}: {len(per_run)} values for {len(record.runs)} runs; "
                            "expected one number (or null) per run")
        kind = metric_kinds.get(metric)
        low, high, closed = (0.0, SPEED_MAX, False) if kind == "speed" else (0.0, ACCURACY_MAX, True) \
            if kind == "accuracy" else (0.0, SPEED_MAX, True)
        for v in per_run:
            if v is None:
                continue
            if type(v) not in (int, float) or not math.isfinite(v) or v > high or v < low or (v == low and not closed):
                shown = "(0" if not closed else "[0"
                raise BadRecord(f"values.{metric[:40]}: {typedjson.quoted(v)} is outside {shown}, {high:g}] "
                                f"({kind or 'metric'})")
    ranges = getattr(metric_kinds, "ranges", None)  # after the generic checks: their messages come first
    if ranges is not None and record.workload not in ranges:
        raise BadRecord(f"workload {typedjson.quoted(record.workload[:80])}: not a workload of the suite")
    for metric, per_run in record.values.items():
        check = ranges[record.workload].get(metric) if ranges is not None else None
        if check is None:
            continue
        for v in per_run:
            if not check.test(v):
                raise BadRecord(f"values.{metric[:40]}: {typedjson.quoted(v)} is outside {check.expected} "
                                "(the range a result file's value must have)")
    return record


def merge(records: list[Record]) -> tuple[list[Record], int]:
    """Records in order with duplicates resolved: a later record of the same key replaces the earlier
    one (a rerun), a record whose content is already present is dropped (the same night imported again,
    or both sides of a union merge). Returns (kept, dropped as duplicates), sorted by time."""
    by_key: dict[tuple, Record] = {}
    seen: dict[str, tuple] = {}
    dropped = 0
    for record in records:
        if record.digest in seen:
            dropped += 1
            continue
        old = by_key.get(record.key)
        if old is not None:
            del seen[old.digest]
            dropped += 1
        by_key[record.key] = record
        seen[record.digest] = record.key
    kept = sorted(by_key.values(), key=lambda r: (r.time, r.kind, r.workload))
    return kept, dropped


@dataclass(frozen=True)
class ChangePoint:
    workload: str
    metric: str
    unit: str
    log: bool  # speed metric: change is relative
    worse: bool  # in the metric's bad direction
    night: str  # time of the first night on the new level
    commit: str | None  # first commit measured on the new level
    previous_commit: str | None  # last commit measured on the old level: the range is previous..commit
    reported: str  # time of the night it was first reported
    before: float  # level before (metric units)
    after: float  # level after
    change: float  # relative (speed) or absolute (accuracy) change
    ci: tuple[float, float]  # 95% CI of `change`, same units
    p_value: float
    gated: bool = False  # the metric decides verdicts (only gated metrics open tracking issues)
    issue: int | None = None  # tracking issue, once filed (stored in change-points.jsonl)

    @property
    def key(self) -> str:
        """Stable identity for the tracking issue: workload, metric and the first night's date."""
        return f"{self.workload}:{self.metric}:{self.night[:10]}"

    def to_json(self) -> dict:
        return {"workload": self.workload, "metric": self.metric, "unit": self.unit, "relative": self.log,
                "worse": self.worse, "night": self.night, "commit": self.commit,
                "previous_commit": self.previous_commit, "reported": self.reported, "before": self.before,
                "after": self.after, "change": self.change, "ci": list(self.ci), "p_value": self.p_value,
                "gated": self.gated, "issue": self.issue, "key": self.key}
