"""The history store: JSON lines, one file per runner class and month, that its own writer cannot break.

Layout (on the baseline branch, beside the baseline files):

    <history>/<runner-class>/<YYYY-MM>.jsonl        one line per night × workload (gate.history.records)
    <history>/<runner-class>/change-points.jsonl    change points once found (gate.history.changes)
    <history>/.gitattributes                        "*.jsonl merge=union": two appends merge cleanly

Reading is as strict as a result tree (gate.formats.inputs): regular files only, a size cap per file and per
line, links that leave the store refused, every line decoded by the typed record format. A line that
cannot be read (a torn last line after a crash, a hand edit, a loose type) is *named and skipped*:
the nightly keeps running on the rest; `gate history repair` moves such lines to `<file>.rejected`.
A whole file that cannot be read (a FIFO, a device, over the cap) is named and skipped by readers and
refused by writers (they would overwrite what they could not read).

Writing never appends in place: under an exclusive lock on the store directory (fcntl, so concurrent
imports serialise), each month file touched is read, merged with the new records (see
records.merge: a rerun replaces, a repeat is a no-op), and written whole to a temporary file that is
renamed over it (gate.formats.atomic). A full disk leaves the old file as it was; a kill leaves the old or the
new one. Lines the reader skipped are carried over verbatim (a writer never deletes what it did not
write), each on its own line.
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import fcntl
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator, Mapping, Sequence

from gate.formats import atomic, inputs
from gate.formats.errors import InputError
from gate.history.records import (
    BadRecord,
    Record,
    SuiteRules,
    checked,
    merge,
    record_from_json,
    utc_time,
)

GITATTRIBUTES = "*.jsonl merge=union\n"
CHANGE_POINTS = "change-points.jsonl"
MONTH_FILE = re.compile(r"\d{4}-\d{2}\.jsonl")
CLASS_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


@dataclass(frozen=True)
class Skipped:
    """A line (or a whole file, line 0) the reader could not use, and why."""

    path: str
    line: int
    reason: str
    text: str | None = None  # the line as it was (kept by writers), None for a whole file

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        if self.line:
            return f"{where}: {self.reason}; line not read (gate history repair moves bad lines aside)"
        return f"{where}: {self.reason}; file not read (move or delete it by hand)"


def warn_stderr(message: str) -> None:
    print(f"gate: warning: {message}", file=sys.stderr)


@dataclass(frozen=True)
class History:
    """Every record read, oldest first, and what was skipped."""

    root: str
    records: tuple[Record, ...] = field(default_factory=tuple)
    skipped: tuple[Skipped, ...] = ()
    change_points: tuple = ()  # gate.history.records.ChangePoint, as stored by `gate history detect`

    def runner_classes(self) -> tuple[str, ...]:
        return tuple(sorted({r.runner_class for r in self.records}))

    def workloads(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(r.workload for r in self.records))

    def select(self, *, workload: str | None = None, kinds: Iterable[str] = ("nightly",),
               runner_class: str | None = None) -> tuple[Record, ...]:
        kinds = tuple(kinds)
        return tuple(r for r in self.records if (workload is None or r.workload == workload) and r.kind in kinds
                     and (runner_class is None or r.runner_class == runner_class))


@dataclass
class _MonthFile:
    records: list[Record]
    bad: list[Skipped]


def metric_kinds_of(suite) -> SuiteRules:
    """metric name -> speed | accuracy, from the suite (names mean the same in every workload), with the
    suite's workloads and the tree reader's range of each of their metrics."""
    from gate.reading.result_files import metric_check

    kinds = {m.name: m.kind for w in suite.workloads for m in w.metrics if m.kind in ("speed", "accuracy")}
    ranges = {w.id: {m.name: metric_check(m, w.expected_samples) for m in w.metrics} for w in suite.workloads}
    return SuiteRules(kinds, ranges)


class HistoryStore:
    """Reads and writes the month files under one history directory."""

    def __init__(self, root: str | Path, *, suite=None) -> None:
        self.root = Path(root)
        self._suite = suite

    @property
    def metric_kinds(self) -> Mapping[str, str]:
        if self._suite is None:
            from gate.formats.config import load_suite

            self._suite = load_suite()
        return metric_kinds_of(self._suite)

    def class_dirs(self) -> list[tuple[str, Path]]:
        """(runner class, folder) of every runner-class folder (real directories only, never links)."""
        if not self.root.is_dir():
            return []
        out = []
        for entry in sorted(os.scandir(self.root), key=lambda e: e.name):
            if entry.is_dir(follow_symlinks=False) and CLASS_NAME.fullmatch(entry.name):
                out.append((entry.name, Path(entry.path)))
        return out

    def files(self) -> list[tuple[str, Path]]:
        """(runner class, path) of every month file, whatever it is (the reader checks each one)."""
        return [(cls, Path(e.path)) for cls, folder in self.class_dirs()
                for e in sorted(os.scandir(folder), key=lambda e: e.name) if MONTH_FILE.fullmatch(e.name)]

    def read(self, *, runner_class: str | None = None,
             warn: Callable[[str], None] | None = warn_stderr) -> History:
        """All records (of one runner class when given), sorted by time; each skipped line or file is
        passed to `warn` (stderr by default) and listed in History.skipped. Missing directory: InputError."""
        if not self.root.is_dir():
            raise InputError("no such history directory; expected <history>/<runner-class>/<YYYY-MM>.jsonl "
                             "(create one with `gate history import`)", path=self.root)
        records: list[Record] = []
        skipped: list[Skipped] = []
        for cls, path in self.files():
            if runner_class is not None and cls != runner_class:
                continue
            try:
                month = self._read_file(path, cls)
            except inputs.Unreadable as exc:
                skipped.append(Skipped(str(path), 0, exc.reason))
                continue
            records.extend(month.records)
            skipped.extend(month.bad)
        points = []
        for cls, folder in self.class_dirs():
            if runner_class is None or cls == runner_class:
                found, bad = self._read_change_points(folder / CHANGE_POINTS)
                points.extend(found)
                skipped.extend(bad)
        kept, _ = merge(records)  # union merges and hand copies may repeat a line across files
        for item in skipped:
            if warn is not None:
                warn(str(item))
        from gate.history.changes import merge_change_points as merge_points

        return History(root=str(self.root), records=tuple(kept), skipped=tuple(skipped),
                       change_points=tuple(merge_points(points)))

    def _read_change_points(self, path: Path) -> tuple[list, list[Skipped]]:
        from gate.history import changes

        if not os.path.lexists(path):
            return [], []
        try:
            found, bad = changes.read_change_points(path, root=self.root)
        except inputs.Unreadable as exc:
            return [], [Skipped(str(path), 0, exc.reason)]
        lines = _raw_lines(path, self.root) if bad else []
        return found, [Skipped(str(path), n, reason, lines[n - 1]) for n, reason in bad]

    def record_change_points(self, runner_class: str, points: Sequence) -> list:
        """Store change points found tonight beside those found before (a step re-placed by a later window
        is not added twice; an issue number is kept); returns every change point of the class."""
        from gate.history import changes

        path = self.root / runner_class / CHANGE_POINTS
        with self.locked():
            present = os.path.lexists(path)
            stored, bad = self._read_change_points(path) if present else ([], [])
            if bad and bad[0].line == 0:
                raise InputError(f"{bad[0].reason}; the change points must be a regular file to be written",
                                 path=path)
            kept = changes.combine(stored, points)
            text = "".join(changes.to_line(cp) + "\n" for cp in kept) + "".join(f"{s.text}\n" for s in bad)
            old = "\n".join(_raw_lines(path, self.root)) if present else ""
            if text != old:
                _write(path, text, "change points")
        return kept

    def _read_file(self, path: Path, runner_class: str) -> _MonthFile:
        good, bad_lines = inputs.load_jsonl_lines(path, inputs.HISTORY, max_line_bytes=inputs.HISTORY_LINE_BYTES,
                                                  root=self.root)
        lines: list[str] | None = None
        bad = []
        if bad_lines:
            lines = _raw_lines(path, self.root)
            bad = [Skipped(str(path), n, reason, lines[n - 1]) for n, reason in bad_lines]
        kinds = self.metric_kinds
        records = []
        for number, data in good:
            try:
                record = record_from_json(data, runner_class, kinds)
                if MONTH_FILE.fullmatch(path.name) and path.name[:-len(".jsonl")] not in _months_near(record.time):
                    raise BadRecord(f"a night of {record.month} in the {path.name} month file; expected the "
                                    "month file of its own night")
                records.append(record)
            except BadRecord as exc:
                if lines is None:
                    lines = _raw_lines(path, self.root)
                bad.append(Skipped(str(path), number, str(exc), lines[number - 1]))
        bad.sort(key=lambda s: s.line)
        return _MonthFile(records, bad)

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Exclusive lock on the store directory: one writer at a time (imports, repair, change points)."""
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        except OSError as exc:
            raise InputError(f"cannot open the history directory ({exc.strerror})", path=self.root) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock

    def append(self, records: Iterable[Record], *, warn: Callable[[str], None] | None = warn_stderr) -> int:
        """Store `records` (a rerun of a night replaces it, a repeat is a no-op); returns how many records
        are new or replaced. Each month file is rewritten whole (atomic) under the store lock."""
        kinds = self.metric_kinds
        valid: list[Record] = []
        for record in records:
            if not CLASS_NAME.fullmatch(record.runner_class):
                raise InputError(f"runner class {record.runner_class!r}: expected letters, digits, '.', '_' or '-'")
            time = utc_time(record.time)
            if time is None:
                raise InputError(f"{record.workload}: time {record.time!r} is not ISO-8601 with a UTC offset")
            if time != record.time:
                record = _replace_time(record, time)
            try:
                checked(record, kinds)
            except BadRecord as exc:
                raise InputError(f"{record.workload}: {exc}; nothing was stored") from None
            valid.append(record)
        written = 0
        with self.locked():
            # Read whole (it names every line or file the store cannot use, kept as they are): a night already
            # stored is skipped whatever month another --time would file it under, never stored twice.
            # A night stored in its own month file goes through the rewrite as before (a repeat is a no-op, and the
            # rewrite mends a torn file); one stored under another month is skipped.
            stored = {r.digest: (r.runner_class, r.month) for r in self.read(warn=warn).records}
            by_file: dict[Path, list[Record]] = {}
            for record in valid:
                if stored.get(record.digest, (record.runner_class, record.month)) == (record.runner_class, record.month):
                    by_file.setdefault(self.root / record.runner_class / f"{record.month}.jsonl", []).append(record)
            attributes = self.root / ".gitattributes"
            if not os.path.lexists(attributes):
                atomic.write_text(attributes, GITATTRIBUTES, what="history attributes")
            for path, new in sorted(by_file.items()):
                written += self._merge_into(path, new)
        return written

    def _merge_into(self, path: Path, new: list[Record]) -> int:
        present = os.path.lexists(path)
        try:
            month = self._read_file(path, path.parent.name) if present else _MonthFile([], [])
            old_text = "\n".join(_raw_lines(path, self.root)) if present else ""
        except inputs.Unreadable as exc:
            raise InputError(f"{exc.reason}; the history month file must be a regular file to be written "
                             "(nothing was stored)", path=path) from None
        before = {r.digest for r in month.records}
        kept, _ = merge(month.records + new)
        text = "".join(r.line() + "\n" for r in kept) + "".join((s.text or "") + "\n" for s in month.bad)
        if text != old_text:  # also rewrites a file left without its final newline, or with an old time spelling
            _write(path, text, "history month file")  # OutputError: the old file is unchanged
        return sum(1 for r in kept if r.digest not in before)

    def repair(self, *, runner_class: str | None = None) -> tuple[list[Skipped], list[Skipped]]:
        """Move every unreadable line of every month and change-point file to `<file>.rejected` (appended
        there) and rewrite the file without it. Returns (lines moved, whole files that cannot be read: left
        alone, named)."""
        from gate.history import changes

        moved: list[Skipped] = []
        unreadable: list[Skipped] = []
        with self.locked():
            targets = [(cls, p) for cls, p in self.files()]
            targets += [(cls, folder / CHANGE_POINTS) for cls, folder in self.class_dirs()
                        if os.path.lexists(folder / CHANGE_POINTS)]
            for cls, path in targets:
                if runner_class is not None and cls != runner_class:
                    continue
                if path.name == CHANGE_POINTS:
                    points, bad = self._read_change_points(path)
                    if bad and bad[0].line == 0:
                        unreadable.append(bad[0])
                        continue
                    good = "".join(changes.to_line(cp) + "\n" for cp in points)
                else:
                    try:
                        month = self._read_file(path, cls)
                    except inputs.Unreadable as exc:
                        unreadable.append(Skipped(str(path), 0, exc.reason))
                        continue
                    bad = month.bad
                    good = "".join(r.line() + "\n" for r in merge(month.records)[0])
                if not bad:
                    continue
                rejected = path.with_name(path.name + ".rejected")
                old = "\n".join(_raw_lines(rejected, self.root)) if os.path.lexists(rejected) else ""
                if old and not old.endswith("\n"):
                    old += "\n"
                _write(rejected, old + "".join(f"{s.text}\n" for s in bad), "rejected lines")
                _write(path, good, "history file")
                moved.extend(bad)
        return moved, unreadable


def _raw_lines(path: Path, root: Path) -> list[str]:
    """The file's lines as they are (bytes that are not UTF-8 kept as surrogates, written back unchanged)."""
    return inputs.read_bytes(path, inputs.HISTORY, root=root).decode("utf-8", "surrogateescape").split("\n")


def _write(path: Path, text: str, what: str) -> None:
    atomic.write_bytes(path, text.encode("utf-8", "surrogateescape"), what=what)


def _replace_time(record: Record, time: str) -> Record:
    import dataclasses

    return dataclasses.replace(record, time=time)


def mean_of_runs(values: Iterable[float | None], *, log: bool) -> float | None:
    """The night's value: geometric mean of the runs for speed (log=True), arithmetic for accuracy."""
    import math

    present = [v for v in values if v is not None and (v > 0 or not log)]
    if not present:
        return None
    if log:
        return math.exp(sum(math.log(v) for v in present) / len(present))
    return sum(present) / len(present)


def _months_near(utc: str) -> set[str]:
    """The month files a night may be in: its UTC month, or the month of its local time within the widest UTC
    offset (14 h). Stores before 2026-12-03 filed a night by the month of the offset it was written with, and
    keep it there when its line is rewritten in UTC (tests/fixtures/formats/history)."""
    moment = _dt.datetime.fromisoformat(utc)
    return {(moment + _dt.timedelta(hours=h)).strftime("%Y-%m") for h in (-14, 0, 14)}
