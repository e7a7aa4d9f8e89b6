"""Frozen dataclasses <-> JSON, and the JSON schema of a dataclass, all from the type hints.

The report model (gate.formats.report) is the one source of truth: its JSON form, the strict reader of that
form and the schema shipped for consumers are all derived from the same type hints, so they cannot
drift apart. The reader is the validator: it refuses everything the schema refuses (unknown keys, a
missing key, a wrong type, an unknown enum value, a non-finite number, a string or list over its
bound, a number under its minimum), so the gate needs no JSON-schema library at run time.

Supported hints: str, int, float, bool, None unions, Enum subclasses, tuple[X, ...], fixed tuples,
Mapping[str, X] and nested dataclasses. Bounds come from field metadata: `max` (characters of a
string; the largest value of a number), `max_items` (items of a tuple or mapping), `min` (smallest
number), `pattern` (a regular expression the whole string must match), and `items` (the same keys for
each item of a tuple or each value of a mapping).
"""
from __future__ import annotations

import dataclasses
import functools
import json
import math
import re
import types
import typing
from enum import Enum
from typing import Any, Mapping, TypeVar, get_args, get_origin

T = TypeVar("T")

DEFAULT_MAX_STRING = 2000
DEFAULT_MAX_ITEMS = 2000
DEFAULT_MAX_PROPERTIES = 100  # entries of a mapping
MAX_KEY = 200  # characters of a mapping's key
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,39}")


class SchemaMismatch(ValueError):
    """JSON that does not fit the dataclass: `where` is the JSON path ($.rows[3].verdict), `expected`
    says what would have fitted. Both are one line: keys from the data are quoted and cut."""

    def __init__(self, where: str, expected: str, *, wrong_type: bool = False) -> None:
        self.where = where
        self.expected = expected
        self.wrong_type = wrong_type  # the value is of another JSON type (not merely out of bounds)
        super().__init__(f"{where}: {expected}")


def to_json(value: Any) -> Any:
    """A dataclass tree as plain JSON values (enums by value, tuples as lists, non-finite floats as None)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, (tuple, list)):
        return [to_json(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def from_json(cls: type[T], data: Any, where: str = "$") -> T:
    """Build `cls` from JSON produced by to_json, as strictly as schema_of(cls) describes it: every key
    present, no other key, every value of its type and within its bounds; else SchemaMismatch."""
    return typing.cast(T, _read(cls, data, where, {}))


def key_path(where: str, key: str) -> str:
    """`where` extended by an object key, as a JSON path that stays one short line whatever the key is."""
    if _PLAIN_KEY.fullmatch(key):
        return f"{where}.{key}"
    shown = key if len(key) <= 40 else key[:40] + "..."
    return f"{where}[{json.dumps(shown)}]"  # json.dumps escapes newlines and control characters


@functools.lru_cache(maxsize=None)
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)  # cached: resolving the hints costs more than reading a small object


def _read(hint: Any, data: Any, where: str, metadata: Mapping[str, Any]) -> Any:
    origin = get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return _read_union(hint, data, where, metadata)
    if origin is tuple:
        return _read_tuple(hint, data, where, metadata)
    if origin is not None and getattr(origin, "__name__", "") in ("Mapping", "dict"):
        return _read_mapping(hint, data, where, metadata)
    if isinstance(hint, type) and issubclass(hint, Enum):
        return _read_enum(hint, data, where)
    if dataclasses.is_dataclass(hint):
        return _read_dataclass(hint, data, where)
    if hint is Any:
        return data
    if hint is bool:
        if not isinstance(data, bool):
            raise SchemaMismatch(where, "expected true or false", wrong_type=True)
        return data
    if hint is int:
        # 2.0 is refused too (the schema's "integer" would take it): the gate writes integers as integers.
        if isinstance(data, bool) or not isinstance(data, int):
            raise SchemaMismatch(where, "expected an integer", wrong_type=True)
        _check_minimum(data, where, metadata)
        return data
    if hint is float:
        # Python's JSON parser turns 1e999 into inf: refused like NaN, which never gets this far.
        if isinstance(data, bool) or not isinstance(data, (int, float)) or not math.isfinite(data):
            raise SchemaMismatch(where, "expected a finite number", wrong_type=True)
        _check_minimum(data, where, metadata)
        return float(data)
    if hint is str:
        return _read_string(data, where, metadata)
    raise TypeError(f"unsupported type hint {hint!r} at {where}")


def _read_union(hint: Any, data: Any, where: str, metadata: Mapping[str, Any]) -> Any:
    options = [o for o in get_args(hint) if o is not type(None)]
    nullable = len(options) != len(get_args(hint))
    if data is None and nullable:
        return None
    errors = []
    for option in options:
        try:
            return _read(option, data, where, metadata)
        except SchemaMismatch as exc:
            errors.append(exc)
    if len(errors) == 1:
        only = errors[0]
        if only.where == where and only.wrong_type and nullable:  # the value itself, not something inside it
            raise SchemaMismatch(where, f"{only.expected} or null")
        raise only
    raise SchemaMismatch(where, f"unexpected value {quoted(data)}")


def _read_tuple(hint: Any, data: Any, where: str, metadata: Mapping[str, Any]) -> tuple:
    if not isinstance(data, list):
        raise SchemaMismatch(where, "expected a list", wrong_type=True)
    args = get_args(hint)
    if len(args) == 2 and args[1] is Ellipsis:
        limit = metadata.get("max_items", DEFAULT_MAX_ITEMS)
        if len(data) > limit:
            raise SchemaMismatch(where, f"expected a list of at most {limit} items, got {len(data)}")
        items = metadata.get("items", {})
        return tuple(_read(args[0], v, f"{where}[{i}]", items) for i, v in enumerate(data))
    if len(data) != len(args):
        raise SchemaMismatch(where, f"expected a list of {len(args)} items, got {len(data)}")
    return tuple(_read(a, v, f"{where}[{i}]", metadata) for i, (a, v) in enumerate(zip(args, data, strict=True)))


def _read_mapping(hint: Any, data: Any, where: str, metadata: Mapping[str, Any]) -> dict:
    if not isinstance(data, dict):
        raise SchemaMismatch(where, "expected an object", wrong_type=True)
    limit = metadata.get("max_items", DEFAULT_MAX_PROPERTIES)
    if len(data) > limit:
        raise SchemaMismatch(where, f"expected an object of at most {limit} keys, got {len(data)}")
    value_hint, items = get_args(hint)[1], metadata.get("items", {})
    out = {}
    for key, value in data.items():
        if len(key) > MAX_KEY:
            raise SchemaMismatch(key_path(where, key), f"expected a key of at most {MAX_KEY} characters")
        out[key] = _read(value_hint, value, key_path(where, key), items)
    return out


def _read_enum(hint: type[Enum], data: Any, where: str) -> Enum:
    # By value and JSON type: 1 is not "1", and true is not 1.
    for member in hint:
        if type(member.value) is type(data) and member.value == data:
            return member
    raise SchemaMismatch(where, f"expected one of {', '.join(str(m.value) for m in hint)}", wrong_type=True)


def _read_dataclass(hint: Any, data: Any, where: str) -> Any:
    if not isinstance(data, dict):
        raise SchemaMismatch(where, "expected an object", wrong_type=True)
    hints = _hints(hint)
    fields = dataclasses.fields(hint)
    names = {f.name for f in fields}
    unknown = [key for key in data if key not in names]
    if unknown:
        raise SchemaMismatch(where, f"unexpected key {quoted(unknown[0])}")
    kwargs = {}
    for f in fields:
        if f.name not in data:  # the schema requires every key, defaults included: to_json writes them all
            raise SchemaMismatch(where, f"missing key {f.name!r}")
        kwargs[f.name] = _read(hints[f.name], data[f.name], key_path(where, f.name), f.metadata)
    return hint(**kwargs)


def _read_string(data: Any, where: str, metadata: Mapping[str, Any]) -> str:
    if not isinstance(data, str):
        raise SchemaMismatch(where, "expected a string", wrong_type=True)
    limit = metadata.get("max", DEFAULT_MAX_STRING)
    if len(data) > limit:
        raise SchemaMismatch(where, f"expected a string of at most {limit} characters, got {len(data)}")
    pattern = metadata.get("pattern")
    if pattern is not None and not re.fullmatch(pattern, data):
        raise SchemaMismatch(where, f"expected a string matching {pattern}, got {quoted(data)}")
    return data


def _check_minimum(value: float, where: str, metadata: Mapping[str, Any]) -> None:
    """The number's bounds (`min`, and `max`, which for a number is its largest value)."""
    if "min" in metadata and value < metadata["min"]:
        raise SchemaMismatch(where, f"expected at least {metadata['min']}, got {value}")
    if "max" in metadata and value > metadata["max"]:
        raise SchemaMismatch(where, f"expected at most {metadata['max']}, got {value}")


def _number_bounds(metadata: Mapping[str, Any]) -> dict:
    return {**({"minimum": metadata["min"]} if "min" in metadata else {}),
            **({"maximum": metadata["max"]} if "max" in metadata else {})}


def quoted(value: Any) -> str:
    """A value from the data, quoted on one short line (it may be hostile)."""
    text = json.dumps(value, ensure_ascii=True, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def schema_of(cls: type) -> dict:
    """The JSON schema (draft 2020-12 subset) of a dataclass: every key required, no extra keys."""
    return _schema(cls, {})


def _schema(hint: Any, metadata: Mapping[str, Any]) -> dict:
    origin = get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = [o for o in get_args(hint) if o is not type(None)]
        nullable = len(options) != len(get_args(hint))
        if len(options) == 1:
            inner = _schema(options[0], metadata)
            if nullable and "type" in inner and isinstance(inner["type"], str):
                return {**inner, "type": [inner["type"], "null"]}
            return {"anyOf": [inner, {"type": "null"}]} if nullable else inner
        branches = [_schema(o, metadata) for o in options] + ([{"type": "null"}] if nullable else [])
        return {"anyOf": branches}
    if origin is tuple:
        args = get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "maxItems": metadata.get("max_items", DEFAULT_MAX_ITEMS),
                    "items": _schema(args[0], metadata.get("items", {}))}
        return {"type": "array", "minItems": len(args), "maxItems": len(args),
                "prefixItems": [_schema(a, metadata) for a in args], "items": False}
    if origin is not None and getattr(origin, "__name__", "") in ("Mapping", "dict"):
        return {"type": "object", "maxProperties": metadata.get("max_items", DEFAULT_MAX_PROPERTIES),
                "additionalProperties": _schema(get_args(hint)[1], metadata.get("items", {})),
                "propertyNames": {"maxLength": MAX_KEY}}
    if isinstance(hint, type) and issubclass(hint, Enum):
        return {"enum": [m.value for m in hint]}
    if dataclasses.is_dataclass(hint):
        hints = _hints(hint)  # type: ignore[arg-type]
        fields = dataclasses.fields(hint)
        return {"type": "object", "additionalProperties": False,
                "required": [f.name for f in fields],
                "properties": {f.name: _schema(hints[f.name], f.metadata) for f in fields}}
    if hint is bool:
        return {"type": "boolean"}
    if hint is int:
        return {"type": "integer", **_number_bounds(metadata)}
    if hint is float:
        return {"type": "number", **_number_bounds(metadata)}
    if hint is str:
        return {"type": "string", "maxLength": metadata.get("max", DEFAULT_MAX_STRING),
                # ECMA-262's `$` ends the string (Python's would also allow a trailing newline): whole-string match
                **({"pattern": f"^(?:{metadata['pattern']})$"} if "pattern" in metadata else {})}
    if hint is Any:
        return {}
    raise TypeError(f"unsupported type hint {hint!r}")
