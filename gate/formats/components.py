"""The variance-components file (issue 37): per model, σ_start and σ_pass of ln(throughput) and the GPU seconds
a server start and a timed pass cost, as a nested A/A study measured them (benchmarks/noise/components.py
writes one; docs/benchmarks.md says how it was measured).

    {"schema": "gate-components/1", "source": "...",
     "models": {"whisper": {"sigma_start": 0.0246, "sigma_pass": 0.0256, "start_cost_s": 7.6, "pass_cost_s": 2.24}}}
"""
from __future__ import annotations

import json
import math
from pathlib import Path

from gate.formats.errors import InputError
from gate.stats.nested import Components

SCHEMA = "gate-components/1"
_FIELDS = ("sigma_start", "sigma_pass", "start_cost_s", "pass_cost_s")


def load(path: Path) -> dict[str, Components]:
    """Components per model; anything unreadable or out of range is one InputError naming the file."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"cannot read it as JSON ({type(exc).__name__}); expected a {SCHEMA} file", path=path) from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA or not isinstance(doc.get("models"), dict):
        raise InputError(f"expected a {SCHEMA} object with a 'models' object", path=path)
    out: dict[str, Components] = {}
    for model, entry in doc["models"].items():
        if not isinstance(entry, dict):
            raise InputError(f"models.{model}: expected an object with {', '.join(_FIELDS)}", path=path)
        values = [entry.get(f) for f in _FIELDS]
        numbers = [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if len(numbers) != len(_FIELDS) or not all(math.isfinite(v) for v in numbers):
            raise InputError(f"models.{model}: {', '.join(_FIELDS)} must all be finite numbers", path=path)
        try:
            out[model] = Components(*numbers)
        except ValueError as exc:
            raise InputError(f"models.{model}: {exc}", path=path) from None
    return out
