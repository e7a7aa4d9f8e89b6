"""Do BASE and CANDIDATE of `gate compare` look swapped? A warning only: it never changes the verdict.

Three signs, each enough:
  - BASE was recorded after CANDIDATE: a tree's `gate-run.json` "started", a baseline file's
    "created" (two trees from one `gate run --ab` share their start and say nothing);
  - CANDIDATE is a baseline file while BASE is a result tree (baselines are what a tree is judged against);
  - every gated row that was tested improved beyond noise (a real change rarely improves everything).
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

RUN_LOG = "gate-run.json"
_MAX_BYTES = 64 << 20  # a baseline file is a few MB; anything larger is not read for a warning


@dataclass(frozen=True)
class Recorded:
    """When a comparison side was recorded, and from what."""

    kind: str  # "tree" or "baseline"
    when: _dt.datetime | None
    source: str  # "gate-run.json started", "baseline created", or why unknown


@dataclass(frozen=True)
class RowOutcome:
    """What the check needs of one report row."""

    gated: bool  # a row that can fail the gate (accuracy or speed), and was tested (not incomplete)
    improved: bool


def recorded(path: str | Path) -> Recorded:
    """When the tree or baseline file at `path` was recorded; `when` is None when nothing says."""
    path = Path(path)
    if path.is_dir():
        document = _small_json(path / RUN_LOG)
        when = _time(document.get("started")) if isinstance(document, dict) else None
        return Recorded("tree", when, f"{RUN_LOG} started" if when else f"no {RUN_LOG}")
    document = _small_json(path)
    when = _time(document.get("created")) if isinstance(document, dict) else None
    return Recorded("baseline", when, "baseline created" if when else "no creation time")


def swap_warnings(base: Recorded, cand: Recorded, rows: Iterable[RowOutcome]) -> list[str]:
    """One line per sign that BASE and CANDIDATE were given the wrong way round (empty when none)."""
    reasons = []
    if base.when and cand.when and base.when > cand.when:
        reasons.append(f"BASE was recorded after CANDIDATE ({base.source} {base.when:%Y-%m-%d %H:%M} UTC, "
                       f"{cand.source} {cand.when:%Y-%m-%d %H:%M} UTC)")
    if cand.kind == "baseline" and base.kind == "tree":
        reasons.append("CANDIDATE is a baseline file and BASE a result tree")
    gated = [row for row in rows if row.gated]
    if len(gated) >= 2 and all(row.improved for row in gated):
        reasons.append(f"all {len(gated)} gated rows improved beyond noise")
    return [f"arguments may be swapped: {reason}; `gate compare` takes BASE first, then CANDIDATE "
            "(the verdict is unchanged)" for reason in reasons]


def _small_json(path: Path) -> object:
    """A regular file's JSON, or None: never blocks on a FIFO, never reads a huge file (a warning is optional)."""
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_size > _MAX_BYTES:
            return None
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None


def _time(value: object) -> _dt.datetime | None:
    if not isinstance(value, str):
        return None
    try:
        when = _dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=_dt.timezone.utc)
    return when.astimezone(_dt.timezone.utc)
