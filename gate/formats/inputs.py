"""The one strict reader for every file the gate reads: result trees, baselines, reports, suite, env records.

Every read goes through `read_bytes`, which refuses what could hang, exhaust memory or escape the tree:

- regular files only: the file is opened with O_NONBLOCK (a FIFO can never block the open) and
  checked with fstat on the open descriptor (no check-then-open race); FIFOs, devices, sockets
  and directories are refused;
- symbolic links: with `root`, the resolved path must stay inside `root` (a link to /dev/zero
  or ~/.ssh is refused); with `follow_links=False` any link is refused (untrusted artifacts);
- a size cap per file kind (`Kind.max_bytes`), checked before reading and again while reading.

`load_json` / `parse_json` / `load_jsonl` then parse *strict* JSON: UTF-8 only, NaN/Infinity and
out-of-range floats refused, integers of more than 18 digits refused (no int-digit-limit crash, no
overflow later), duplicate object keys refused (the last one would silently win), nesting bounded
(`MAX_DEPTH`). `load_yaml` applies the same rules to YAML (safe loader, duplicate keys refused).

Every refusal is an `Unreadable` (an `InputError`, so uncaught it is one line and exit 2) with
`path` and a short `reason`; readers of result trees turn it into an INCOMPLETE problem instead.

Typical use:

    from gate.formats import inputs
    data = inputs.load_json(path, inputs.RESULT, root=tree_root)
"""
from __future__ import annotations

import copy
import json
import math
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gate.formats.errors import InputError

MAX_DEPTH = 64  # the deepest file the gate reads (a report) nests about 8 levels
MAX_INT_DIGITS = 18  # |n| < 10**18: every count, id and size the gate uses fits; float conversion stays exact enough
_READ_CHUNK = 1 << 20

MiB = 1024 * 1024


@dataclass(frozen=True)
class Kind:
    """A kind of input file and its size cap (bytes)."""

    what: str  # for messages: "result file", "baseline", ...
    max_bytes: int


# Caps are ~10x the largest real file of each kind (docs/upstream.md §2; measured on full-size examples).
RESULT = Kind("result file", 64 * MiB)  # SeedTTS --output (~0.3 MB), MOSS payload with per_sample (~5 MB)
SAMPLES = Kind("per-sample file", 64 * MiB)  # SeedTTS raw JSONL (~1 MB for 2020 rows)
BASELINE = Kind("baseline", 64 * MiB)  # all ten workloads with per-utterance arrays (~3 MB)
REPORT = Kind("report", 8 * MiB)
ENV = Kind("env record", 1 * MiB)
RUN_LOG = Kind("run log", 8 * MiB)  # gate-run.json
DUET_LOG = Kind("duet record", 1 * MiB)  # gate-duet.json: at most 40 sessions of a few blocks a model (~10 kB)
COMMIT = Kind("commit record", 4096)  # commit.txt: one SHA
FREEZE = Kind("pip freeze", 4 * MiB)
SUITE = Kind("suite file", 1 * MiB)
META = Kind("run metadata", 16 * 1024)
STAMP = Kind("calibration stamp", 16 * 1024)  # <model>.calibration-stamp.json: three short strings
HISTORY = Kind("history month file", 64 * MiB)  # <history>/<class>/<YYYY-MM>.jsonl: ~1 kB a line, ~300 lines a month
HISTORY_LINE_BYTES = 1 * MiB  # one history line (a record of 100 runs × 50 metrics is ~60 kB)


class Unreadable(InputError):
    """A file the strict reader refuses. `reason` is the short why; str() is '<path>: <reason>'."""

    def __init__(self, reason: str, *, path: object) -> None:
        self.reason = reason
        super().__init__(reason, path=path)


class _Refused(ValueError):
    """Raised from inside the JSON parser's hooks; turned into Unreadable with the file's path."""


def read_bytes(path: str | Path, kind: Kind, *, root: str | Path | None = None, follow_links: bool = True) -> bytes:
    """The bytes of a regular file of at most `kind.max_bytes`; anything else raises Unreadable.

    `root`: the file (after resolving links) must lie inside this directory. `follow_links=False`:
    a symbolic link is refused outright.
    """
    path = Path(path)
    if root is not None:
        resolved, top = os.path.realpath(path), os.path.realpath(root)
        if os.path.commonpath([resolved, top]) != top:
            raise Unreadable(f"a link that leaves the tree (to {resolved}); expected a regular file inside {root}",
                             path=path)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if not follow_links:
        flags |= os.O_NOFOLLOW
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise Unreadable(f"missing; expected a {kind.what}", path=path) from None
    except OSError as exc:
        if not follow_links and os.path.islink(path):
            raise Unreadable(f"a symbolic link (not followed); expected the {kind.what} as a regular file",
                             path=path) from None
        raise Unreadable(f"cannot open ({exc.strerror})", path=path) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Unreadable(f"not a regular file ({_file_type(info.st_mode)}); expected a {kind.what}", path=path)
        if info.st_size > kind.max_bytes:
            raise Unreadable(f"{info.st_size} bytes; expected a {kind.what} of at most {kind.max_bytes} bytes",
                             path=path)
        os.set_blocking(fd, True)
        chunks, size = [], 0
        while True:
            chunk = os.read(fd, min(_READ_CHUNK, kind.max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > kind.max_bytes:  # grew while being read
                raise Unreadable(f"larger than {kind.max_bytes} bytes; expected a {kind.what} of at most that",
                                 path=path)
    except OSError as exc:
        raise Unreadable(f"cannot read ({exc.strerror})", path=path) from None
    finally:
        os.close(fd)
    return b"".join(chunks)


def read_text(path: str | Path, kind: Kind, *, root: str | Path | None = None, follow_links: bool = True) -> str:
    """`read_bytes`, decoded as strict UTF-8."""
    return decode(read_bytes(path, kind, root=root, follow_links=follow_links), kind, source=path)


def decode(raw: bytes, kind: Kind, *, source: object) -> str:
    """Bytes `read_bytes` returned, as strict UTF-8 text; `source` names the file in errors."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Unreadable(f"not UTF-8 text (byte {exc.start}); expected a {kind.what}", path=source) from None


def load_json(path: str | Path, kind: Kind, *, root: str | Path | None = None, follow_links: bool = True) -> Any:
    """A strict JSON document (see the module doc) from a regular file; Unreadable otherwise."""
    text = read_text(path, kind, root=root, follow_links=follow_links)
    return parse_json(text, source=path, what=kind.what)


def parse_json(text: str, *, source: object, what: str = "JSON file") -> Any:
    """Parse strict JSON already read (e.g. one JSONL line); `source` names the file in errors."""
    if not text.strip():
        raise Unreadable(f"empty file; expected a {what}", path=source)
    try:
        data = json.loads(text, parse_constant=_reject_constant, parse_int=_bounded_int, parse_float=_finite_float,
                          object_pairs_hook=_unique_keys)
    except _Refused as exc:
        raise Unreadable(f"{exc}; expected strict JSON", path=source) from None
    except json.JSONDecodeError as exc:
        raise Unreadable(f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}; truncated?)",
                         path=source) from None
    except RecursionError:
        raise Unreadable(f"nested deeper than {MAX_DEPTH} levels; expected a {what}", path=source) from None
    except ValueError as exc:  # e.g. Python's own int-digit limit, should a hook ever be bypassed
        raise Unreadable(f"{exc}; expected strict JSON", path=source) from None
    if depth(data) > MAX_DEPTH:
        raise Unreadable(f"nested deeper than {MAX_DEPTH} levels; expected a {what}", path=source)
    return data


def load_jsonl(path: str | Path, kind: Kind, *, root: str | Path | None = None) -> list[tuple[int, Any]]:
    """(line number, value) of every non-blank line of a JSON Lines file, each line strict JSON."""
    return parse_jsonl(read_text(path, kind, root=root), source=path, what=kind.what)


def parse_jsonl(text: str, *, source: object, what: str) -> list[tuple[int, Any]]:
    """`load_jsonl` of text already read; `source` names the file in errors."""
    numbered = [(number, line) for number, line in enumerate(text.splitlines(), start=1) if line.strip()]
    try:  # one parse over the whole file when it is well formed (much faster than one call per line)
        values = parse_json("[" + ",".join(line for _, line in numbered) + "]", source=source, what=what)
        if isinstance(values, list) and len(values) == len(numbered):  # parse_json checked the depth
            return [(number, value) for (number, _), value in zip(numbered, values, strict=True)]
    except Unreadable:
        pass
    rows = []
    for number, line in numbered:
        try:
            rows.append((number, parse_json(line, source=source, what=what)))
        except Unreadable as exc:
            raise Unreadable(f"line {number}: {exc.reason}", path=source) from None
    return rows


def load_jsonl_lines(path: str | Path, kind: Kind, *, max_line_bytes: int, root: str | Path | None = None
                     ) -> tuple[list[tuple[int, Any]], list[tuple[int, str]]]:
    """A JSON Lines file read line by line with the same rules, for stores that must survive a bad line:
    (line number, value) of every readable line, and (line number, reason) of every refused one (a torn
    last line, a line that is not UTF-8 or over `max_line_bytes`, a duplicate key...). The file itself must
    pass `read_bytes` (regular, within the cap)."""
    raw = read_bytes(path, kind, root=root)
    good: list[tuple[int, Any]] = []
    bad: list[tuple[int, str]] = []
    numbered = [(n, chunk) for n, chunk in enumerate(raw.split(b"\n"), start=1) if chunk.strip()]
    for number, chunk in numbered:
        if len(chunk) > max_line_bytes:
            bad.append((number, f"a line of {len(chunk)} bytes (at most {max_line_bytes} accepted)"))
            continue
        try:
            line = chunk.decode("utf-8")
        except UnicodeDecodeError as exc:
            bad.append((number, f"not UTF-8 text (byte {exc.start} of the line)"))
            continue
        try:
            good.append((number, parse_json(line, source=path, what=kind.what)))
        except Unreadable as exc:
            bad.append((number, exc.reason))
    return good, bad


class _StrictYamlLoader(yaml.SafeLoader):
    """yaml.SafeLoader that refuses duplicate mapping keys (PyYAML keeps the last one silently)."""


def _construct_mapping(loader: _StrictYamlLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:  # explicit keys only: a `<<` merge may be overridden on purpose
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=deep)
        if not isinstance(key, (str, int, float, bool)) or key is None:
            raise yaml.constructor.ConstructorError(None, None, "a mapping key that is not a scalar",
                                                    key_node.start_mark)
        if key in seen:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
        seen.add(key)
    loader.flatten_mapping(node)
    return loader.construct_mapping(node, deep=deep)


_StrictYamlLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


# Text -> its parsed YAML document, handed out as deep copies: a process that runs several commands (the action,
# the test suite's in-process CLI) reads the same suite again and again, and PyYAML's pure-Python parse of the
# shipped suite costs some 25 ms of CPU where a copy costs 0.25 ms. Documents only: refusals are parsed again.
_YAML_PARSED: dict[str, Any] = {}
_YAML_KEPT = 8


def load_yaml(path: str | Path, kind: Kind) -> Any:
    """A YAML document read by the same rules (regular file, size cap, UTF-8, no duplicate keys, bounded nesting)."""
    text = read_text(path, kind)
    if text in _YAML_PARSED:
        return copy.deepcopy(_YAML_PARSED[text])
    try:
        data = yaml.load(text, Loader=_StrictYamlLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        problem = getattr(exc, "problem", None)
        detail = f" ({problem})" if problem else ""
        raise Unreadable(f"not valid YAML{where}{detail}", path=path) from None
    except RecursionError:
        raise Unreadable(f"nested deeper than {MAX_DEPTH} levels; expected a {kind.what}", path=path) from None
    if depth(data) > MAX_DEPTH:
        raise Unreadable(f"nested deeper than {MAX_DEPTH} levels; expected a {kind.what}", path=path)
    if len(_YAML_PARSED) >= _YAML_KEPT:
        _YAML_PARSED.clear()
    _YAML_PARSED[text] = data
    return copy.deepcopy(data)


def is_present(path: str | Path) -> bool:
    """Whether anything exists at `path` (a dangling link or a FIFO too): absent files are 'missing',
    present ones go through the reader, which says what is wrong with them."""
    return os.path.lexists(path)


def depth(value: Any) -> int:
    """Nesting depth, one level at a time (a hostile file must not exhaust the stack); stops past MAX_DEPTH.
    Level by level in list comprehensions: a per-sample file holds ~10^5 values, and a per-value stack
    of tuples cost a quarter of reading a tree."""
    level, containers = 0, [value] if isinstance(value, (dict, list)) else []
    while containers and level <= MAX_DEPTH:
        level += 1
        containers = [child for node in containers for child in (node.values() if isinstance(node, dict) else node)
                      if isinstance(child, (dict, list))]
    return level


def _reject_constant(name: str) -> Any:
    raise _Refused(f"contains {name}, which is not valid JSON")


def _bounded_int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        raise _Refused(f"an integer of {digits} digits (at most {MAX_INT_DIGITS} accepted)")
    return int(text)


def _finite_float(text: str) -> float:
    if len(text) > 64:
        raise _Refused(f"a number written with {len(text)} characters (at most 64 accepted)")
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(f"the number {text[:30]} is out of range")
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Refused(f"duplicate key {key[:50]!r}")
        out[key] = value
    return out


def _file_type(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory")):
        if test(mode):
            return name
    return "not a plain file"
