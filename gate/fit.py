"""Cut outside strings that are longer than the report schema allows, with a visible marker, before writing.

A 100,000-character utterance id, commit.txt or freeze line must not make `gate compare` write a
report that fails its own schema (then merge and post would refuse it and the PR would get no
result). `fit_to_schema` walks the data alongside the JSON Schema (properties,
additionalProperties, items, oneOf/anyOf) and cuts every string over its `maxLength`, ending it
with CUT_MARK so a reader sees it was cut. Nothing else is changed.
"""
from __future__ import annotations

from typing import Any

CUT_MARK = "…[cut]"

_JSON_TYPES = {str: "string", bool: "boolean", int: "integer", float: "number", list: "array", dict: "object",
               type(None): "null"}


def fit_to_schema(data: Any, schema: dict) -> Any:
    """A copy of `data` with over-long strings cut to their schema's maxLength (marker included)."""
    if not isinstance(schema, dict):
        return data
    for key in ("oneOf", "anyOf"):
        for branch in schema.get(key) or ():
            if _accepts_type(branch, data):
                data = fit_to_schema(data, branch)
                break
    if isinstance(data, str):
        limit = schema.get("maxLength")
        return cut(data, limit) if isinstance(limit, int) else data
    if isinstance(data, list):
        items = schema.get("items")
        return [fit_to_schema(v, items) for v in data] if isinstance(items, dict) else data
    if isinstance(data, dict):
        props = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        out = {}
        for key, value in data.items():
            sub = props.get(key, extra if isinstance(extra, dict) else None)
            out[key] = fit_to_schema(value, sub) if sub is not None else value
        return out
    return data


def cut(text: str, limit: int) -> str:
    """`text` in at most `limit` characters, ending with CUT_MARK when it was longer."""
    if len(text) <= limit:
        return text
    if limit <= len(CUT_MARK):
        return text[:limit]
    return text[: limit - len(CUT_MARK)] + CUT_MARK


def _accepts_type(schema: Any, value: Any) -> bool:
    if not isinstance(schema, dict):
        return False
    declared = schema.get("type")
    if declared is None:
        return True
    kinds = declared if isinstance(declared, list) else [declared]
    kind = _JSON_TYPES.get(type(value))
    return kind in kinds or (kind == "integer" and "number" in kinds)
