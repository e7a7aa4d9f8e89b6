"""GitHub Actions' text protocols: step outputs, job summary, and `::error::` annotations.

Pure formatting plus appending to the files Actions names (GITHUB_OUTPUT, GITHUB_STEP_SUMMARY); the
paths come from gate.publish.settings. Syntax and escaping follow actions/toolkit's command.js:
https://docs.github.com/en/actions/reference/workflows-and-actions/workflow-commands
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping

from gate.formats.errors import GateError
from gate.formats.report import Row
from gate.render import escape
from gate.render.reasons import cause_line

# GitHub shows at most 10 errors and 10 warnings per step; the rest are dropped silently.
MAX_ANNOTATIONS_PER_LEVEL = 10


@dataclass(frozen=True)
class Annotation:
    level: str  # "error", "warning" or "notice"
    title: str
    message: str

    def command(self) -> str:
        return f"::{self.level} title={escape_property(self.title)}::{escape_data(self.message)}"


def escape_data(text: str) -> str:
    """Message text: `%`, CR and LF would otherwise end or alter the command; control and bidi
    characters (ESC, NUL, U+202E, ...) are removed so a log line shows what it says."""
    return escape.annotation(text)


def escape_property(text: str) -> str:
    """Property values (title=...): additionally `:` and `,`, which delimit properties."""
    return escape.annotation_property(text)


def normalise_verdict(verdict: object) -> str:
    """'NOT COMPARABLE', 'not-comparable' and 'not_comparable' are one verdict."""
    return str(verdict).strip().lower().replace(" ", "_").replace("-", "_")


def row_annotations(rows: Iterable[Row]) -> list[Annotation]:
    """One annotation per fail/incomplete (error) and warn/not-comparable (warning) row, within GitHub's limits.

    When a level has more rows than GitHub shows, the last visible annotation says how many were left out,
    so a reader never mistakes ten for all of them.
    """
    by_level: dict[str, list[Annotation]] = {"error": [], "warning": []}
    for row in rows:
        level = row.verdict.annotation_level
        if level is None:
            continue
        title = f"ASR gate {row.verdict.word.upper()}: {row.workload} {row.metric}"
        by_level[level].append(Annotation(level, title=title, message=_row_message(row)))
    shown: list[Annotation] = []
    for level, items in by_level.items():
        if len(items) > MAX_ANNOTATIONS_PER_LEVEL:
            kept = items[: MAX_ANNOTATIONS_PER_LEVEL - 1]
            left = len(items) - len(kept)
            kept.append(Annotation(level, title=f"ASR gate: {left} more {level} rows",
                                   message=f"{left} more rows at this level are listed in the job summary."))
            items = kept
        shown.extend(items)
    return shown


def _row_message(row: Row) -> str:
    parts = [f"baseline {_num(row.baseline.mean)} -> candidate {_num(row.candidate.mean)}"]
    if row.delta_rel is not None:
        parts.append(f"change {row.delta_rel * 100:+.2f}%")
    if row.p_value is not None:
        parts.append(f"p={_num(row.p_value)}")
    parts.append(cause_line(row)[:500])  # the cause, the number that decided it, the next step (issue 49)
    if row.notes:
        parts.append("; ".join(row.notes)[:500])
    return "; ".join(parts)


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4g}"


def format_outputs(values: Mapping[str, str]) -> str:
    """GITHUB_OUTPUT text; multi-line values use a random heredoc delimiter that cannot occur in them."""
    lines = []
    for name, value in values.items():
        if "\n" in value or "\r" in value:
            delimiter = f"gate_{uuid.uuid4().hex}"
            lines += [f"{name}<<{delimiter}", value, delimiter]
        else:
            lines.append(f"{name}={value}")
    return "\n".join(lines) + "\n"


def append_file(path: str | Path, text: str, *, what: str) -> None:
    """Append to a file named by Actions; one line on failure (e.g. GITHUB_OUTPUT in a read-only dir)."""
    try:
        with open(path, "a", encoding="utf-8", errors="backslashreplace") as handle:  # a non-UTF-8 path: escaped
            handle.write(text)
    except OSError as exc:
        raise GateError(f"cannot append the {what} ({exc.strerror})", path=path) from None
