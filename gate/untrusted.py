"""Read what crossed a trust boundary (artifacts uploaded by a PR's benchmark job) as data only.

The trusted report job reads raw RESULT TREES, never a verdict: it checks the files (`check_tree_files`:
regular files and directories only, no symlinks, size, count and depth caps) and that the runs match
what the plan asks for (`check_plan`: gate-run.json and the run directories); the one judge
(gate.judge) then reads and judges them.

Reports (`load_untrusted_report`) are still read here for the fan-in and the nightly, which read
reports written by their own workflow: a regular file (not a symlink to a credential file), under a
size cap, strict UTF-8 JSON (no NaN, no duplicate keys, bounded nesting), then decoded by the strict
typed reader (gate.typedjson), which refuses whatever gate/schemas/report.schema.json refuses: the
schema and the reader are generated from the same dataclasses. Markdown is never taken from an artifact.
"""
from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, field, fields
from functools import partial
from pathlib import Path
from typing import Any, Callable, Mapping, TypeVar

from gate import typedjson
from gate.config import Suite
from gate.errors import InputError
from gate.report import Report
from gate.typedjson import SchemaMismatch

T = TypeVar("T")

MAX_REPORT_BYTES = 8 * 1024 * 1024  # a 10-workload report is ~100 kB; 8 MiB leaves room for per-row notes
MAX_META_BYTES = 16 * 1024
MAX_DEPTH = 32

# Caps on an uploaded result tree (ten workloads x four runs with raw per-sample JSONL is ~100 MB).
MAX_TREE_BYTES = 2 * 1024**3
MAX_TREE_FILES = 20_000
MAX_TREE_DEPTH = 8
MAX_RUN_LOG_BYTES = 4 * 1024 * 1024

META_SCHEMA_VERSION = 1


@dataclass(frozen=True)
class RunMeta:
    """The small record the benchmark job writes beside its trees (meta.json): which PR and labels it ran
    for. Every field is re-checked against GitHub by `gate post` before it is acted on."""

    schema_version: int
    pr: int | None = field(metadata={"min": 1})
    sha: str = field(metadata={"pattern": "[0-9a-f]{40}"})
    labels: tuple[str, ...] = field(metadata={"max_items": 20, "items": {"pattern": "[A-Za-z0-9._/-]{1,50}"}})
    models: tuple[str, ...] = field(metadata={"max_items": 20, "items": {"pattern": "[A-Za-z0-9_]{1,40}"}})


@dataclass(frozen=True)
class RunLogPlan:
    """What the trusted job reads of a side's gate-run.json (its other keys are not read): each run's status."""

    runs: Mapping[str, str] = field(metadata={"max_items": 200, "items": {"max": 40}})
    status: str = field(metadata={"max": 40})


_RUN_LOG_KEYS = frozenset(f.name for f in fields(RunLogPlan))


class UntrustedInputError(InputError):
    """An uploaded file is not what the gate accepts; nothing from it was used."""


@dataclass(frozen=True)
class Rendered:
    comment: str  # markdown for the sticky PR comment, marker included
    summary: str  # markdown for the job summary / check-run summary
    marker: str  # hidden HTML comment that identifies this suite's sticky comment


def load_untrusted_report(path: str | Path, *, max_bytes: int = MAX_REPORT_BYTES) -> Report:
    """The report at `path`, validated; any deviation is one UntrustedInputError line naming the file."""
    data = _load_json(Path(path), max_bytes=max_bytes, what="report")
    return _decode(Report.from_json, data, Path(path), what="report")


def load_untrusted_meta(path: str | Path) -> RunMeta:
    data = _load_json(Path(path), max_bytes=MAX_META_BYTES, what="run metadata")
    meta = _decode(partial(typedjson.from_json, RunMeta), data, Path(path), what="run metadata")
    if meta.schema_version != META_SCHEMA_VERSION:
        raise UntrustedInputError(f"run metadata does not match the schema at $.schema_version: expected "
                                  f"{META_SCHEMA_VERSION}", path=path)
    return meta


def check_tree_files(root: str | Path) -> None:
    """Regular files and directories only (no symlinks, devices, FIFOs), within the size/count/depth caps."""
    root = Path(root)
    try:
        info = os.lstat(root)
    except OSError as exc:
        raise UntrustedInputError(f"cannot read the result tree ({exc.strerror})", path=root) from None
    if not stat.S_ISDIR(info.st_mode):
        raise UntrustedInputError("expected the result tree as a directory (symbolic links are not followed)", path=root)
    files = total = 0
    stack = [(root, 0)]
    while stack:
        directory, depth = stack.pop()
        if depth > MAX_TREE_DEPTH:
            raise UntrustedInputError(f"result tree is nested deeper than {MAX_TREE_DEPTH} levels", path=directory)
        try:
            entries = list(os.scandir(directory))
        except OSError as exc:
            raise UntrustedInputError(f"cannot list the result tree ({exc.strerror})", path=directory) from None
        for entry in entries:
            mode = entry.stat(follow_symlinks=False).st_mode
            if stat.S_ISDIR(mode):
                stack.append((Path(entry.path), depth + 1))
            elif stat.S_ISREG(mode):
                files += 1
                total += entry.stat(follow_symlinks=False).st_size
            else:
                kind = "a symbolic link" if stat.S_ISLNK(mode) else "not a regular file"
                raise UntrustedInputError(f"result tree entry is {kind}; only regular files are read", path=entry.path)
            if files > MAX_TREE_FILES:
                raise UntrustedInputError(f"result tree holds more than {MAX_TREE_FILES} files", path=root)
            if total > MAX_TREE_BYTES:
                raise UntrustedInputError(f"result tree is larger than {MAX_TREE_BYTES} bytes", path=root)


def planned_runs(suite: Suite, scored: tuple[str, ...] | None = None) -> tuple[str, ...]:
    """The run directories the plan asks for on one side: the warm run and every scored run (the
    suite's, or those the two-look plan asks for, as recomputed by gate.judge.first_look)."""
    return (f"run{suite.warm_run}", *(scored or tuple(f"run{r}" for r in suite.scored_runs)))


def check_plan(side_dir: str | Path, suite: Suite, scored: tuple[str, ...] | None = None) -> None:
    """The tree holds exactly the runs the plan asks for, each recorded as completed in gate-run.json.

    A tree with extra runs (best-of-N cherry-picking) or fewer runs is refused, whatever the files say.
    """
    side_dir = Path(side_dir)
    log_path = side_dir / "gate-run.json"
    data = _load_json(log_path, max_bytes=MAX_RUN_LOG_BYTES, what="run log gate-run.json")
    log = _decode(_read_run_log, data, log_path, what="run log gate-run.json")
    side = side_dir.name
    recorded = {label.split("/", 1)[1]: status for label, status in log.runs.items()
                if label.split("/", 1)[0] == side and "/" in label}
    planned = planned_runs(suite, scored)
    if sorted(recorded) != sorted(planned):
        raise UntrustedInputError(f"run log lists runs {_names(recorded)} for side {side!r}; the plan asks for "
                                  f"{_names(planned)}", path=log_path)
    unfinished = sorted(name for name, status in recorded.items() if status != "completed")
    if unfinished:
        raise UntrustedInputError(f"run log says {_names(unfinished)} did not complete", path=log_path)
    on_disk = sorted(p.name for p in side_dir.iterdir() if p.is_dir() and p.name.startswith("run"))
    if sorted(on_disk) != sorted(planned):
        raise UntrustedInputError(f"tree holds run directories {_names(on_disk)}; the plan asks for "
                                  f"{_names(planned)}", path=side_dir)


def _names(names) -> str:
    shown = ", ".join(str(n)[:40] for n in list(names)[:12])
    return f"[{shown}{', ...' if len(list(names)) > 12 else ''}]"


def render_report(report: Report, *, section_budget=None) -> Rendered:
    """Comment and summary markdown re-rendered from a validated report (never from uploaded markdown).
    `section_budget` (a gate.render.Budget) bounds the summary, e.g. to fit one section of a comment."""
    from gate import render  # imported here: Jinja is needed only when something is rendered

    marker = render.marker(report.suite)
    summary = render.render_check_summary(report, **({"budget": section_budget} if section_budget else {}))
    comment = render.render_comment(report)
    return Rendered(comment=comment, summary=summary, marker=marker)


def merge_reports(reports: list[Report], *, missing: dict[str, tuple[str, ...]] | None = None) -> Report:
    """Fan-in of per-model reports (one per GPU runner) into one, validated again (bounds may be exceeded).

    `missing` maps a model whose job produced no report to its workload ids: they are recorded as
    incomplete coverage on both sides, so the verdict becomes INCOMPLETE instead of silently
    covering fewer models.
    """
    try:
        merged = Report.merge(reports, expected_models=tuple(missing or ()), missing_workloads=missing or {})
    except ValueError as exc:
        raise UntrustedInputError(f"reports cannot be merged ({exc})", path="<merged report>") from None
    _decode(Report.from_json, merged.to_json(), Path("<merged report>"), what="merged report")
    return merged


def _load_json(path: Path, *, max_bytes: int, what: str) -> Any:
    try:
        info = os.lstat(path)
    except OSError as exc:
        raise UntrustedInputError(f"cannot read the {what} ({exc.strerror})", path=path) from None
    if stat.S_ISLNK(info.st_mode):
        raise UntrustedInputError(f"expected the {what} as a regular file, got a symbolic link (not followed)", path=path)
    if not stat.S_ISREG(info.st_mode):
        raise UntrustedInputError(f"expected the {what} as a regular file", path=path)
    if info.st_size > max_bytes:
        raise UntrustedInputError(f"{what} is {info.st_size} bytes; expected at most {max_bytes}", path=path)
    try:
        with open(path, "rb") as handle:
            raw = handle.read(max_bytes + 1)  # the file may have grown since lstat
    except OSError as exc:
        raise UntrustedInputError(f"cannot read the {what} ({exc.strerror})", path=path) from None
    if len(raw) > max_bytes:
        raise UntrustedInputError(f"{what} is larger than {max_bytes} bytes", path=path)
    try:
        data = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant, object_pairs_hook=_unique_keys)
    except UnicodeDecodeError:
        raise UntrustedInputError(f"expected the {what} as UTF-8 JSON", path=path) from None
    except json.JSONDecodeError as exc:
        raise UntrustedInputError(f"expected the {what} as JSON ({exc.msg} at line {exc.lineno})", path=path) from None
    except ValueError as exc:
        raise UntrustedInputError(f"expected the {what} as strict JSON ({exc})", path=path) from None
    except RecursionError:
        raise UntrustedInputError(f"{what} is nested too deeply", path=path) from None
    if _depth(data) > MAX_DEPTH:
        raise UntrustedInputError(f"{what} is nested deeper than {MAX_DEPTH} levels", path=path)
    return data


def _read_run_log(data: Any) -> RunLogPlan:
    """Only the keys RunLogPlan names; the rest of gate-run.json (argv, versions, timings) is not read."""
    if isinstance(data, dict):
        data = {key: value for key, value in data.items() if key in _RUN_LOG_KEYS}
    return typedjson.from_json(RunLogPlan, data)


def _decode(read: Callable[[Any], T], data: Any, path: Path, *, what: str) -> T:
    """`read(data)` (a strict typed decoder), its SchemaMismatch as one UntrustedInputError line."""
    try:
        return read(data)
    except SchemaMismatch as exc:
        # Both parts can echo keys and values from the file: one line, bounded length.
        where = " ".join(exc.where.split())[:160]
        message = " ".join(exc.expected.split())
        if len(message) > 200:
            message = message[:200] + "..."
        raise UntrustedInputError(f"{what} does not match the schema at {where}: {message}", path=path) from None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict:
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key[:50]!r}")
        out[key] = value
    return out


def _depth(value: Any) -> int:
    """Nesting depth, iteratively (a hostile file must not exhaust the stack)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth > MAX_DEPTH:
            break
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
        stack.extend((child, depth + 1) for child in children)
    return deepest
