"""Change points as records: once found, stored for as long as the history exists.

`<history>/<runner-class>/change-points.jsonl`, one line per change point (workload, metric, first night
on the new level, commit range, effect with its CI, p, whether the metric is gated, and the tracking
issue once one is filed). The analysis only re-walks a recent window of nights; what it found before
is read back from here, so a step 90 nights old is still shown by `gate history`, `noise` and the
dashboard, and an issue that could not be filed one night (a GitHub error) is filed the next.

Read as strictly as the month files (gate.formats.inputs + gate.formats.typedjson; a bad line named and skipped),
written whole (gate.formats.atomic) under the store's lock. A change point keeps the numbers of the night it
was first reported (later windows may re-estimate them slightly); only its issue number is added.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

from gate.formats import inputs, typedjson
from gate.history.records import ChangePoint, utc_time

FILE = "change-points.jsonl"
SCHEMA_VERSION = 1
SAME_STEP_DAYS = 3  # a change point this close to a stored one of the same series is that step, re-placed


@dataclass(frozen=True)
class StoredChangePoint:
    v: int
    workload: str = field(metadata={"max": 100})
    metric: str = field(metadata={"max": 100})
    unit: str = field(metadata={"max": 40})
    relative: bool
    worse: bool
    gated: bool
    night: str = field(metadata={"max": 40})
    commit: str | None = field(metadata={"max": 500})
    previous_commit: str | None = field(metadata={"max": 500})
    reported: str = field(metadata={"max": 40})
    before: float
    after: float
    change: float
    ci: tuple[float, float]
    p_value: float = field(metadata={"min": 0.0})
    issue: int | None = field(metadata={"min": 1})


def to_line(cp: ChangePoint) -> str:
    data = {"v": SCHEMA_VERSION, "workload": cp.workload, "metric": cp.metric, "unit": cp.unit, "relative": cp.log,
            "worse": cp.worse, "gated": cp.gated, "night": cp.night, "commit": cp.commit,
            "previous_commit": cp.previous_commit, "reported": cp.reported, "before": cp.before, "after": cp.after,
            "change": cp.change, "ci": list(cp.ci), "p_value": cp.p_value, "issue": cp.issue}
    return json.dumps(data, separators=(",", ":"), allow_nan=False, ensure_ascii=False)


def decode_change_point(data: object) -> ChangePoint:
    """One stored change point; ValueError (one line) when it is not one."""
    line = typedjson.from_json(StoredChangePoint, data)  # SchemaMismatch is a ValueError
    if line.v != SCHEMA_VERSION:
        raise ValueError(f"$.v: schema_version {line.v} is not supported (this gate reads {SCHEMA_VERSION})")
    night, reported = utc_time(line.night), utc_time(line.reported)
    if night is None or reported is None:
        raise ValueError("$.night/$.reported: expected ISO-8601 times with a UTC offset")
    if line.p_value > 1:
        raise ValueError(f"$.p_value: {line.p_value} is not a probability")
    return ChangePoint(workload=line.workload, metric=line.metric, unit=line.unit, log=line.relative, worse=line.worse,
                       night=night, commit=line.commit, previous_commit=line.previous_commit, reported=reported,
                       before=line.before, after=line.after, change=line.change, ci=line.ci, p_value=line.p_value,
                       gated=line.gated, issue=line.issue)


def read_change_points(path: Path, *, root: Path) -> tuple[list[ChangePoint], list[tuple[int, str]]]:
    """(change points, (line, reason) of every line skipped) of one file; Unreadable if the file is not one."""
    good, bad = inputs.load_jsonl_lines(path, inputs.HISTORY, max_line_bytes=inputs.HISTORY_LINE_BYTES, root=root)
    points = []
    for number, data in good:
        try:
            points.append(decode_change_point(data))
        except ValueError as exc:
            bad.append((number, f"{exc}; expected a stored change point"))
    return merge_change_points(points), sorted(bad)


def merge_change_points(points: Iterable[ChangePoint]) -> list[ChangePoint]:
    """One per key, the first one stored wins (its numbers are the ones reported); an issue number is kept."""
    by_key: dict[str, ChangePoint] = {}
    for cp in points:
        old = by_key.get(cp.key)
        if old is None:
            by_key[cp.key] = cp
        elif old.issue is None and cp.issue is not None:
            by_key[cp.key] = dataclasses.replace(old, issue=cp.issue)
    return sorted(by_key.values(), key=lambda c: (c.night, c.workload, c.metric))


def same_step(a: ChangePoint, b: ChangePoint, days: int = SAME_STEP_DAYS) -> bool:
    import datetime as _dt

    if (a.workload, a.metric) != (b.workload, b.metric):
        return False
    gap = abs(_dt.datetime.fromisoformat(a.night) - _dt.datetime.fromisoformat(b.night))
    return gap <= _dt.timedelta(days=days)


def combine(stored: Sequence[ChangePoint], found: Sequence[ChangePoint]) -> list[ChangePoint]:
    """Stored change points, plus those found now that are not a stored step re-placed by a later window;
    an issue number found now is added to its stored change point."""
    out = list(stored)
    for cp in found:
        match = next((i for i, old in enumerate(out) if same_step(cp, old)), None)
        if match is None:
            out.append(cp)
        elif out[match].issue is None and cp.issue is not None:
            out[match] = dataclasses.replace(out[match], issue=cp.issue)
    return merge_change_points(out)
