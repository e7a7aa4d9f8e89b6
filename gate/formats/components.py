"""The variance-components file (issue 37): per model, σ_start and σ_pass of ln(throughput) and the GPU seconds
a server start and a timed pass cost, as a nested A/A study measured them (benchmarks/noise/components.py
writes one; docs/benchmarks.md says how it was measured).

    {"schema": "gate-components/1", "source": "...",
     "models": {"whisper": {"sigma_start": 0.0246, "sigma_pass": 0.0256, "start_cost_s": 7.6, "pass_cost_s": 2.24,
                            "duet": {"session_sd": 0.0092, "session_cost_s": 35.8, "block_sd": 0.0285}}}}

`duet` (optional, issue 53): what a duet A/A measured on that runner (gate.stats.duet_design.DuetComponents):
σ of a session's difference, a session's GPU seconds, the block pairs' spread within a session.

Also the owner of the components a baseline's calibration stores (`gate baseline calibrate` on A/A runs with
P > 1 passes a start): `calibration_source.components` of the baseline file, per model

    {"sigma_start", "sigma_pass", "df_start", "df_pass", "passes", "pass_cost_s", "start_cost_s" (the median
     server cycle in the trees' gate-run.json less its passes; null without a log), "workload", "metric"}

A baseline written before issue 37, or calibrated on one-pass runs, has none (`stored` gives {}).

A calibration on duet A/A trees (`gate run --ab X X --design duet`, gate-duet.json in the trees; issue 53) stores
the model's duet components under the entry's "duet" key (an entry of a duet-only calibration has that key alone):

    {"session_sd", "session_cost_s", "block_sd" (null with one block pair a session), "sessions", "workload", "metric"}

`stored_duet` reads them; `stored` reads the interleave's and leaves a duet-only entry out.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from gate.formats.errors import InputError
from gate.formats.noise_model import Components, DuetComponents

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


def load_duet(path: Path) -> dict[str, DuetComponents]:
    """The duet A/A components per model (models.<m>.duet); a model without them is left out. Read after `load`,
    which has checked the file; a duet entry out of range is one InputError naming the file."""
    doc = json.loads(Path(path).read_text(encoding="utf-8"))
    out: dict[str, DuetComponents] = {}
    for model, entry in doc["models"].items():
        duet = entry.get("duet")
        if duet is None:
            continue
        try:
            if not isinstance(duet, dict):
                raise ValueError("expected an object")
            out[model] = DuetComponents(float(duet["session_sd"]), float(duet["session_cost_s"]),
                                        float(duet.get("block_sd", math.nan)))
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"models.{model}.duet: {exc}; expected session_sd and session_cost_s, finite numbers",
                             path=path) from None
    return out


STORED_KEY = "components"  # in a baseline's calibration_source


@dataclass(frozen=True)
class Stored:
    """A model's components as its baseline's A/A calibration measured them."""
    sigma_start: float
    sigma_pass: float
    df_start: int
    df_pass: int
    passes: int
    pass_cost_s: float  # GPU seconds of one timed pass, all the model's workloads (samples / throughput)
    start_cost_s: float | None  # None: not measured (no gate-run.json timed a server cycle)
    workload: str  # the workload and speed metric the σ's are of (the model's noisiest throughput)
    metric: str

    def components(self, start_cost_s: float | None = None) -> Components | None:
        """As the planner takes them; None without a start cost (stored or given)."""
        cost = start_cost_s if start_cost_s is not None else self.start_cost_s
        return None if cost is None else Components(self.sigma_start, self.sigma_pass, cost, self.pass_cost_s)


def record(stored: Stored) -> dict[str, Any]:
    return {"sigma_start": stored.sigma_start, "sigma_pass": stored.sigma_pass, "df_start": stored.df_start,
            "df_pass": stored.df_pass, "passes": stored.passes, "pass_cost_s": stored.pass_cost_s,
            "start_cost_s": stored.start_cost_s, "workload": stored.workload, "metric": stored.metric}


def stored(source: Mapping[str, Any] | None, path: Path) -> dict[str, Stored]:
    """The components in a baseline's calibration_source; {} when it has none (an older file: "none")."""
    out: dict[str, Stored] = {}
    for model, entry in _entries(source, path).items():
        expected = (f"calibration_source.{STORED_KEY}.{model}: expected {{{', '.join(record(_EXAMPLE))}}} as gate "
                    "baseline calibrate writes")
        entry = {k: v for k, v in entry.items() if k != DUET_KEY}
        if not entry:
            continue  # a duet-only calibration (stored_duet)
        if set(entry) != set(record(_EXAMPLE)):
            raise InputError(expected, path=path)
        try:
            values = Stored(**entry)
        except TypeError:
            raise InputError(expected, path=path) from None
        numbers = (values.sigma_start, values.sigma_pass, values.pass_cost_s)
        counts = (values.df_start, values.df_pass, values.passes)
        if (not all(_finite(v) and v >= 0 for v in numbers) or values.pass_cost_s <= 0
                or not all(isinstance(c, int) and not isinstance(c, bool) and c >= 1 for c in counts)
                or values.passes < 2 or not isinstance(values.workload, str) or not isinstance(values.metric, str)
                or (values.start_cost_s is not None and not (_finite(values.start_cost_s) and values.start_cost_s > 0))):
            raise InputError(f"{expected} (σ's ≥ 0, costs > 0, df ≥ 1, passes ≥ 2)", path=path)
        out[model] = values
    return out


DUET_KEY = "duet"


@dataclass(frozen=True)
class StoredDuet:
    """A model's duet components as a duet A/A calibration measured them (issue 53)."""
    session_sd: float  # σ of a session's mean paired log-difference of throughput
    session_cost_s: float  # GPU seconds of a session (median), the model's share
    block_sd: float | None  # the block pairs' spread within a session; None with one pair a session
    sessions: int
    workload: str  # the workload and throughput metric measured (the model's noisiest)
    metric: str

    def components(self) -> DuetComponents:
        return DuetComponents(self.session_sd, self.session_cost_s, math.nan if self.block_sd is None else self.block_sd)


def duet_record(duet: StoredDuet) -> dict[str, Any]:
    return {"session_sd": duet.session_sd, "session_cost_s": duet.session_cost_s, "block_sd": duet.block_sd,
            "sessions": duet.sessions, "workload": duet.workload, "metric": duet.metric}


def stored_duet(source: Mapping[str, Any] | None, path: Path) -> dict[str, StoredDuet]:
    """The duet components in a baseline's calibration_source, per model that has them; {} when none."""
    out: dict[str, StoredDuet] = {}
    for model, entry in _entries(source, path).items():
        duet = entry.get(DUET_KEY)
        if duet is None:
            continue
        expected = (f"calibration_source.{STORED_KEY}.{model}.{DUET_KEY}: expected {{{', '.join(duet_record(_DUET))}}} "
                    "as gate baseline calibrate writes (σ ≥ 0, a session's cost > 0, sessions ≥ 3)")
        if not isinstance(duet, dict) or set(duet) != set(duet_record(_DUET)):
            raise InputError(expected, path=path)
        value = StoredDuet(**duet)
        if (not (_finite(value.session_sd) and value.session_sd >= 0)
                or not (_finite(value.session_cost_s) and value.session_cost_s > 0)
                or not (value.block_sd is None or (_finite(value.block_sd) and value.block_sd >= 0))
                or not (isinstance(value.sessions, int) and not isinstance(value.sessions, bool) and value.sessions >= 3)
                or not isinstance(value.workload, str) or not isinstance(value.metric, str)):
            raise InputError(expected, path=path)
        out[model] = value
    return out


def _entries(source: Mapping[str, Any] | None, path: Path) -> dict[str, dict]:
    entries = (source or {}).get(STORED_KEY)
    if entries is None:
        return {}
    where = f"calibration_source.{STORED_KEY}"
    if not isinstance(entries, dict):
        raise InputError(f"{where}: expected an object of models", path=path)
    for model, entry in entries.items():
        if not isinstance(entry, dict):
            raise InputError(f"{where}.{model}: expected an object as gate baseline calibrate writes", path=path)
    return entries


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


_EXAMPLE = Stored(0.0, 0.0, 1, 1, 2, 1.0, None, "", "")
_DUET = StoredDuet(0.0, 1.0, None, 3, "", "")
