"""Frozen dataclasses <-> JSON, and the JSON schema of a dataclass, all from the type hints.

The report model (gate.report) is the one source of truth: its JSON form, the reader of that form and
the schema the trusted workflow validates uploads against are all derived from the same type hints,
so they cannot drift apart. Supported hints: str, int, float, bool, None unions, Enum subclasses,
tuple[X, ...], Mapping[str, X] and nested dataclasses. Bounds come from field metadata:
`max` (characters of a string, items of a tuple or mapping), `min` (smallest number).
"""
from __future__ import annotations

import dataclasses
import math
import types
import typing
from enum import Enum
from typing import Any, Mapping, TypeVar, get_args, get_origin

T = TypeVar("T")

DEFAULT_MAX_STRING = 2000
DEFAULT_MAX_ITEMS = 2000


class SchemaMismatch(ValueError):
    """JSON that does not fit the dataclass (the message names the key path)."""


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
    """Build `cls` from JSON produced by to_json; a mismatch raises SchemaMismatch naming the key."""
    return typing.cast(T, _read(cls, data, where))


def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _read(hint: Any, data: Any, where: str) -> Any:
    origin = get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = get_args(hint)
        if data is None and type(None) in options:
            return None
        errors = []
        for option in options:
            if option is type(None):
                continue
            try:
                return _read(option, data, where)
            except SchemaMismatch as exc:
                errors.append(str(exc))
        raise SchemaMismatch(errors[0] if len(errors) == 1 else f"{where}: unexpected value {data!r:.80}")
    if origin is tuple:
        if not isinstance(data, list):
            raise SchemaMismatch(f"{where}: expected a list")
        args = get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_read(args[0], v, f"{where}[{i}]") for i, v in enumerate(data))
        if len(data) != len(args):
            raise SchemaMismatch(f"{where}: expected {len(args)} items")
        return tuple(_read(a, v, f"{where}[{i}]") for i, (a, v) in enumerate(zip(args, data)))
    if origin in (Mapping, dict, typing.Mapping) or (origin is not None and origin.__name__ == "Mapping"):
        if not isinstance(data, dict):
            raise SchemaMismatch(f"{where}: expected an object")
        value_hint = get_args(hint)[1]
        return {str(k): _read(value_hint, v, f"{where}.{k}") for k, v in data.items()}
    if isinstance(hint, type) and issubclass(hint, Enum):
        try:
            return hint(data)
        except ValueError:
            raise SchemaMismatch(f"{where}: expected one of {', '.join(str(m.value) for m in hint)}") from None
    if dataclasses.is_dataclass(hint):
        if not isinstance(data, dict):
            raise SchemaMismatch(f"{where}: expected an object")
        hints = _hints(hint)  # type: ignore[arg-type]
        kwargs = {}
        for f in dataclasses.fields(hint):
            if f.name not in data:
                if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING:
                    continue
                raise SchemaMismatch(f"{where}: missing key {f.name!r}")
            kwargs[f.name] = _read(hints[f.name], data[f.name], f"{where}.{f.name}")
        return typing.cast(Any, hint)(**kwargs)
    if hint is Any:
        return data
    if hint is bool:
        if not isinstance(data, bool):
            raise SchemaMismatch(f"{where}: expected true or false")
        return data
    if hint is int:
        if isinstance(data, bool) or not isinstance(data, int):
            raise SchemaMismatch(f"{where}: expected an integer")
        return data
    if hint is float:
        if isinstance(data, bool) or not isinstance(data, (int, float)) or not math.isfinite(data):
            raise SchemaMismatch(f"{where}: expected a finite number")
        return float(data)
    if hint is str:
        if not isinstance(data, str):
            raise SchemaMismatch(f"{where}: expected a string")
        return data
    raise TypeError(f"unsupported type hint {hint!r} at {where}")


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
        return {"type": "object", "maxProperties": metadata.get("max_items", 100),
                "additionalProperties": _schema(get_args(hint)[1], metadata.get("items", {})),
                "propertyNames": {"maxLength": 200}}
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
        return {"type": "integer", **({"minimum": metadata["min"]} if "min" in metadata else {})}
    if hint is float:
        return {"type": "number", **({"minimum": metadata["min"]} if "min" in metadata else {})}
    if hint is str:
        return {"type": "string", "maxLength": metadata.get("max", DEFAULT_MAX_STRING)}
    if hint is Any:
        return {}
    raise TypeError(f"unsupported type hint {hint!r}")
