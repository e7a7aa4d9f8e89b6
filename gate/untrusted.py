"""Read a report that crossed a trust boundary (an artifact uploaded by a PR's benchmark job) as data only.

The job that ran PR code could have written anything into its artifact. Before the privileged
workflow uses it, the report must be: a regular file (not a symlink to a credential file), under a
size cap, strict UTF-8 JSON (no NaN, no duplicate keys, bounded nesting), and valid against
gate/schemas/report.schema.json (generated from gate.report's model), then read into a typed Report.
Markdown is never taken from the artifact: `render_report` re-renders comment and summary from the
Report with gate.render, whose templates escape every string.
"""
from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import jsonschema

from gate.errors import InputError
from gate.report import Report
from gate.typedjson import SchemaMismatch

MAX_REPORT_BYTES = 8 * 1024 * 1024  # a 10-workload report is ~100 kB; 8 MiB leaves room for per-row notes
MAX_META_BYTES = 16 * 1024
MAX_DEPTH = 32

# The small record the benchmark job writes beside its report: which PR and labels it ran for.
# Every field is re-checked against GitHub by `gate post` before it is acted on.
META_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["schema_version", "pr", "sha", "labels", "models"],
    "properties": {
        "schema_version": {"const": 1},
        "pr": {"type": ["integer", "null"], "minimum": 1},
        "sha": {"type": "string", "pattern": "^[0-9a-f]{40}$"},
        "labels": {"type": "array", "maxItems": 20, "items": {"type": "string", "pattern": "^[A-Za-z0-9._/-]{1,50}$"}},
        "models": {"type": "array", "maxItems": 20, "items": {"type": "string", "pattern": "^[A-Za-z0-9_]{1,40}$"}},
    },
}


class UntrustedInputError(InputError):
    """An uploaded file is not what the gate accepts; nothing from it was used."""


@dataclass(frozen=True)
class Rendered:
    comment: str  # markdown for the sticky PR comment, marker included
    summary: str  # markdown for the job summary / check-run summary
    marker: str  # hidden HTML comment that identifies this suite's sticky comment


def load_untrusted_report(path: str | Path, *, max_bytes: int = MAX_REPORT_BYTES, schema: dict | None = None) -> Report:
    """The report at `path`, validated; any deviation is one UntrustedInputError line naming the file."""
    data = _load_json(Path(path), max_bytes=max_bytes, what="report")
    _validate(data, schema if schema is not None else report_schema(), Path(path), what="report")
    try:
        return Report.from_json(data)
    except SchemaMismatch as exc:
        raise UntrustedInputError(f"not a report of this gate ({exc})", path=path) from None


def load_untrusted_meta(path: str | Path) -> dict:
    data = _load_json(Path(path), max_bytes=MAX_META_BYTES, what="run metadata")
    _validate(data, META_SCHEMA, Path(path), what="run metadata")
    return data


@lru_cache(maxsize=1)
def report_schema() -> dict:
    # Beside this module (package data "gate": schemas/*.json), in a wheel as in a checkout.
    resource = Path(__file__).parent / "schemas" / "report.schema.json"
    try:
        schema = json.loads(resource.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"the gate's own report schema is missing or broken ({exc}); reinstall the gate",
                         path="gate/schemas/report.schema.json") from None
    jsonschema.validators.validator_for(schema).check_schema(schema)
    return schema


def render_report(report: Report) -> Rendered:
    """Comment and summary markdown re-rendered from a validated report (never from uploaded markdown)."""
    from gate import render  # imported here: Jinja is needed only when something is rendered

    marker = render.marker(report.suite)
    return Rendered(comment=render.render_comment(report), summary=render.render_check_summary(report), marker=marker)


def merge_reports(reports: list[Report], *, missing: dict[str, tuple[str, ...]] | None = None) -> Report:
    """Fan-in of per-model reports (one per GPU runner) into one, validated against the schema again.

    `missing` maps a model whose job produced no report to its workload ids: they are recorded as
    incomplete coverage on both sides, so the verdict becomes INCOMPLETE instead of silently
    covering fewer models.
    """
    try:
        merged = Report.merge(reports, expected_models=tuple(missing or ()), missing_workloads=missing or {})
    except ValueError as exc:
        raise UntrustedInputError(f"reports cannot be merged ({exc})", path="<merged report>") from None
    _validate(merged.to_json(), report_schema(), Path("<merged report>"), what="merged report")
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


def _validate(data: Any, schema: dict, path: Path, *, what: str) -> None:
    validator = jsonschema.validators.validator_for(schema)(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if error is not None:
        # Both parts can echo attacker-chosen keys and values: one line, bounded length.
        where = " ".join(error.json_path.split())[:120]
        message = " ".join(error.message.split())
        if len(message) > 200:
            message = message[:200] + "..."
        raise UntrustedInputError(f"{what} does not match the schema at {where}: {message}", path=path)


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
