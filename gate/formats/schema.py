"""Typed, ranged access to parsed input documents: every value the gate uses is checked, never coerced.

`get(data, "results[0].evaluated", COUNT)` follows a dotted path and checks the value; a missing
step raises `Missing`, a wrong type or range `Invalid`, both naming the field and what was expected.
Checks never convert: `true` is not 1, "0.5" is not 0.5, -0.0 is not a non-negative number.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Callable

_PATH_TOKEN = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


class SchemaError(Exception):
    """A field that is absent or not what the gate expects. `field` is the dotted path."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.message = message
        super().__init__(f"{field} {message}" if field else message)


class Missing(SchemaError):
    pass


class Invalid(SchemaError):
    pass


@dataclass(frozen=True)
class Check:
    expected: str  # "a non-negative integer", ...
    test: Callable[[Any], bool]

    def __call__(self, value: Any, field: str) -> Any:
        if not self.test(value):
            raise Invalid(field, f"is {_show(value)}, expected {self.expected}")
        return value


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _non_negative(v: Any) -> bool:
    return _is_number(v) and v >= 0 and math.copysign(1.0, v) > 0  # -0.0 is a negative sign, refused


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


NUMBER = Check("a finite number", _is_number)
NON_NEGATIVE = Check("a non-negative number", _non_negative)
POSITIVE = Check("a positive number", lambda v: _is_number(v) and v > 0)
COUNT = Check("a non-negative integer", lambda v: _is_int(v) and v >= 0)
POSITIVE_INT = Check("a positive integer", lambda v: _is_int(v) and v >= 1)
BOOL = Check("true or false", lambda v: isinstance(v, bool))
STRING = Check("a string", lambda v: isinstance(v, str))
NON_EMPTY_STRING = Check("a non-empty string", lambda v: isinstance(v, str) and bool(v))
OBJECT = Check("an object", lambda v: isinstance(v, dict))
LIST = Check("a list", lambda v: isinstance(v, list))


def optional(check: Check) -> Check:
    """The same check, or null."""
    return Check(f"{check.expected} or null", lambda v: v is None or check.test(v))


def at_least(minimum: float, check: Check = NUMBER) -> Check:
    return Check(f"{check.expected} of at least {minimum:g}", lambda v: check.test(v) and v >= minimum)


def one_of(*choices: Any) -> Check:
    return Check((repr(choices[0]) if len(choices) == 1 else "one of " + ", ".join(repr(c) for c in choices)),
                 lambda v: any(v == c and type(v) is type(c) for c in choices))


def list_of(check: Check) -> Check:
    return Check(f"a list of {_plural(check.expected)}", lambda v: isinstance(v, list) and all(check.test(x) for x in v))


def lookup(data: Any, dotted: str) -> Any:
    """Follow a path like 'results[0].corpus_wer.mean'. Raises Missing naming the first missing step."""
    node = data
    walked = ""
    for name, index in _PATH_TOKEN.findall(dotted):
        if name:
            walked = f"{walked}.{name}" if walked else name
            if not isinstance(node, dict) or name not in node:
                raise Missing(walked, "is missing")
            node = node[name]
        else:
            walked = f"{walked}[{index}]"
            if not isinstance(node, list) or int(index) >= len(node):
                raise Missing(walked, "is missing")
            node = node[int(index)]
    return node


def get(data: Any, dotted: str, check: Check) -> Any:
    """The checked value at `dotted`; Missing when absent, Invalid when present but wrong."""
    return check(lookup(data, dotted), dotted)


def get_optional(data: Any, dotted: str, check: Check, default: Any = None) -> Any:
    """Like `get`, but an absent field (or null) gives `default`; a present, wrong value is still Invalid."""
    try:
        value = lookup(data, dotted)
    except Missing:
        return default
    return default if value is None else check(value, dotted)


def _show(value: Any) -> str:
    text = repr(value)
    if isinstance(value, (dict, list)):
        text = f"{'an object' if isinstance(value, dict) else 'a list'}"
    return text if len(text) <= 60 else text[:57] + "..."


def _plural(expected: str) -> str:
    return expected.removeprefix("a ").removeprefix("an ") + "s"
