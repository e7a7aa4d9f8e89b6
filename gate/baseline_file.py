"""The baseline file: one side of a comparison (gate.side.Side) kept as one reviewed JSON file.

`write_baseline` writes it, `read_baseline` reads it back (validated as a whole: any violation is
one InputError naming the file and the field). The A/A calibration in it is written by
gate.baseline_calibration through `load_document` / `write_document`, the same reader and writer.

Baseline file, schema_version 1 (baselines/README.md documents it for reviewers):

    {"schema_version": 1, "kind": "asr-gate-baseline", "suite": "asr", "created": ISO-8601,
     "source": {"path", "commit", "runs": ["run1", ...]},
     "fingerprint": {"gpu", "driver", "packages": {name: version}, "workloads": {id: {fact: value}}},
     "workloads": {id: {"runs": [...], "complete": bool, "problems": ["code: message", ...],
                        "metrics": {name: [value per run]},
                        "samples": {measure: {"ids": [...], "ref_len": [...], "errors": [[per run]],
                                              "invalid": [[indices per run]], "texts": {id: [ref, hyp]}}},
                        "sample_notes": [...], "evaluated": [count per run]}},
     "calibration": {id: {metric: {"sigma", "df", "groups", "delta_sd", "delta_df", cross-job sums,
                                   "nights", "night_df", "night_sum_sq", "night_set_aside"}}},
     "calibration_source": {"pairs": [[tree_a, tree_b], ...], "created": ISO-8601,
                            "nights": {"history", "tonight", "kept", "used", "repeated", "created"}} | null}

A speed entry's sigma/df pool the A/A pairs' within-arm spread with the nightly jobs' own runs (the
night_* fields are the nights' share; gate.history.noise computes it, `pool_nights` stores it).
"""
from __future__ import annotations

import datetime as _dt
import json
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Mapping

import numpy as np

from gate import atomic, inputs, schema
from gate import samples as samples_module
from gate.comparability import Fingerprint
from gate.config import Suite
from gate.errors import InputError
from gate.results import metric_check
from gate.schema import BOOL, COUNT, NON_EMPTY_STRING, OBJECT, POSITIVE_INT, STRING, SchemaError, list_of, optional
from gate.side import MeasureSamples, Side, WorkloadSide
from gate.stats.overdispersion import Dispersion
from gate.stats.performance import Calibration

BASELINE_SCHEMA_VERSION = 1
BASELINE_KIND = "asr-gate-baseline"

def side_to_dict(side: Side, *, source_calibration: Mapping[str, Any] | None = None) -> dict:
    workloads = {}
    for workload_id, w in side.workloads.items():
        workloads[workload_id] = {
            "runs": list(w.runs), "complete": w.complete, "problems": list(w.problems),
            "metrics": {name: list(values) for name, values in w.values.items()},
            "samples": {m: _samples_to_dict(s) for m, s in w.samples.items()},
            "sample_notes": list(w.sample_notes), "evaluated": list(w.evaluated),
            "run_complete": list(w.run_complete), "expected_runs": w.expected_runs,
        }
    return {
        "schema_version": BASELINE_SCHEMA_VERSION, "kind": BASELINE_KIND, "suite": side.suite,
        "created": _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat(),
        "source": {"path": side.path, "commit": side.commit, "runs": list(side.runs)},
        "missing": list(side.missing),
        "fingerprint": side.fingerprint.to_dict(),
        "workloads": workloads,
        "calibration": {w: {m: c.to_dict() for m, c in metrics.items()} for w, metrics in side.calibration.items()},
        "calibration_source": source_calibration,
    }


def _samples_to_dict(s: MeasureSamples) -> dict:
    return {"ids": list(s.ids), "ref_len": s.ref_len.tolist(), "errors": s.errors.tolist(),
            "invalid": [np.flatnonzero(~row).tolist() for row in s.valid],
            "texts": {i: list(t) for i, t in s.texts.items()}}


def write_baseline(side: Side, path: str | Path, *, calibration_source: Mapping[str, Any] | None = None) -> Path:
    """Write `side` as a baseline file, atomically (a kill or a full disk leaves the old file intact)."""
    return write_document(path, side_to_dict(side, source_calibration=calibration_source))


def write_document(path: str | Path, data: Mapping[str, Any]) -> Path:
    """The one writer of baseline files: compact JSON, atomically (a kill or a full disk leaves the
    previous file intact)."""
    return atomic.write_text(path, json.dumps(data, separators=(",", ":"), ensure_ascii=False) + "\n",
                             what="baseline")


def read_baseline(path: str | Path, suite: Suite, *, models: tuple[str, ...] | None = None) -> Side:
    """Read and validate a baseline file. Any violation (unreadable file, wrong kind, schema version or
    suite, a value of the wrong type or range, per-utterance errors that do not reproduce the stored
    metric) is one InputError line naming the file and the field: the baseline as a whole cannot be
    opened (exit 2); nothing in it is coerced or partly used."""
    path = Path(path)
    data = load_document(path)
    return side_from_document(data, path, suite, models)


MIN_SIGMA = 1e-4  # ln-scale run-to-run SD below 0.01 %: no real GPU measurement is that quiet
MAX_SIGMA = 1.0  # above ~100 %: not a noise estimate
_EXPECTED = f"expected schema_version {BASELINE_SCHEMA_VERSION} as documented in baselines/README.md"


def load_document(path: str | Path) -> dict:
    """The one reader of baseline files: a regular file (no FIFO, device or link to one) by the strict
    rules of gate.inputs, of this kind and an integer schema_version this gate reads; else InputError."""
    path = Path(path)
    try:
        data = inputs.load_json(path, inputs.BASELINE)
    except inputs.Unreadable as exc:
        raise InputError(f"{exc.reason}; expected a baseline file", path=path) from None
    if not isinstance(data, dict) or data.get("kind") != BASELINE_KIND:
        raise InputError(f"not a baseline file (expected \"kind\": \"{BASELINE_KIND}\")", path=path)
    version = data.get("schema_version")
    if type(version) is not int or version != BASELINE_SCHEMA_VERSION:  # 1.0 and true are not 1
        raise InputError(f"baseline schema_version is {version!r}, this gate reads the integer "
                         f"{BASELINE_SCHEMA_VERSION}; recreate it with `gate baseline create`", path=path)
    return data


def side_from_document(data: dict, path: Path, suite: Suite, models: tuple[str, ...] | None) -> Side:
    if data.get("suite") != suite.name:
        raise InputError(f"baseline is for suite {data.get('suite')!r}, expected {suite.name!r}", path=path)
    try:
        return _validated_side(data, path, suite, models)
    except SchemaError as exc:
        raise InputError(f"malformed baseline: {exc}; {_EXPECTED}", path=path) from None


def _validated_side(data: dict, path: Path, suite: Suite, models: tuple[str, ...] | None) -> Side:
    known = {w.id: w for w in suite.workloads}
    selected = {w.id for w in suite.workloads_for(models)}
    source = schema.get(data, "source", OBJECT)
    schema.get_optional(source, "path", STRING)
    commit = schema.get_optional(data, "source.commit", STRING)
    source_runs = schema.get_optional(data, "source.runs", list_of(NON_EMPTY_STRING), [])
    missing = schema.get_optional(data, "missing", list_of(STRING), [])
    for k, workload_id in enumerate(missing):
        if workload_id not in known:
            raise schema.Invalid(f"missing[{k}]", f"is {workload_id!r}, expected a workload of suite {suite.name!r}")
    workloads = {}
    for workload_id, w in schema.get(data, "workloads", OBJECT).items():
        key = f"workloads.{workload_id}"
        if workload_id not in known:
            raise schema.Invalid(key, f"is not a workload of suite {suite.name!r}")
        with _within(key):
            side = _workload_side(w, key, known[workload_id])
        if workload_id in selected:
            workloads[workload_id] = side
    with _within("fingerprint"):
        fingerprint = _fingerprint(schema.get_optional(data, "fingerprint", OBJECT, {}), known)
    calibration = {}
    for workload_id, metrics in schema.get(data, "calibration", OBJECT).items():  # the writer writes {} for none
        key = f"calibration.{workload_id}"
        if workload_id not in known:
            raise schema.Invalid(key, f"is not a workload of suite {suite.name!r}")
        OBJECT(metrics, key)
        kinds = {m.name: m.kind for m in known[workload_id].metrics if m.kind == "speed" or m.samples}
        parsed: dict[str, Calibration | Dispersion] = {}
        for metric, entry in metrics.items():
            if metric not in kinds:
                raise schema.Invalid(f"{key}.{metric}", f"is not a speed or per-utterance metric of {workload_id}")
            with _within(f"{key}.{metric}"):
                parsed[metric] = (_calibration(entry, f"{key}.{metric}") if kinds[metric] == "speed"
                                  else _dispersion(entry, f"{key}.{metric}"))
        if workload_id in selected:
            calibration[workload_id] = parsed
    schema.get_optional(data, "calibration_source", OBJECT)
    return Side(kind="baseline", path=str(path), suite=data["suite"], commit=commit,
                runs=tuple(source_runs), workloads=workloads,
                missing=tuple(m for m in missing if m in selected),
                fingerprint=fingerprint, calibration=calibration)


def _workload_side(w: Any, key: str, workload: Any) -> WorkloadSide:
    OBJECT(w, key)
    runs = schema.get(w, "runs", list_of(NON_EMPTY_STRING))
    if not runs or len(set(runs)) != len(runs):
        raise schema.Invalid(f"{key}.runs", f"is {runs!r}, expected at least one scored run, each once")
    problems = schema.get(w, "problems", list_of(STRING))
    complete = schema.get(w, "complete", BOOL)
    if complete == bool(problems):
        raise schema.Invalid(f"{key}.complete", f"is {complete} with {len(problems)} problems; expected complete "
                                                f"exactly when there is no problem")
    specs = {m.name: m for m in workload.metrics}
    values = {}
    for name, vals in schema.get(w, "metrics", OBJECT).items():
        if name not in specs:
            raise schema.Invalid(f"{key}.metrics.{name}", f"is not a metric of {workload.id}")
        check = list_of(metric_check(specs[name], workload.expected_samples))
        check(vals, f"{key}.metrics.{name}")
        if len(vals) != len(runs):
            raise schema.Invalid(f"{key}.metrics.{name}", f"has {len(vals)} values; expected {len(runs)} values (one per run)")
        values[name] = tuple(None if v is None else float(v) for v in vals)
    evaluated = schema.get_optional(w, "evaluated", list_of(optional(COUNT)), [])
    if evaluated and len(evaluated) != len(runs):
        raise schema.Invalid(f"{key}.evaluated", f"has {len(evaluated)} values; expected {len(runs)} values (one per run)")
    measures = {m.samples: m for m in workload.metrics if m.kind == "accuracy" and m.samples}
    samples = {}
    for measure, s in schema.get_optional(w, "samples", OBJECT, {}).items():
        if measure not in measures:
            raise schema.Invalid(f"{key}.samples.{measure}", f"is not a per-utterance measure of {workload.id}")
        with _within(f"samples.{measure}"):
            samples[measure] = _samples_from_dict(measure, s, len(runs), f"{key}.samples.{measure}",
                                              values.get(measures[measure].name), measures[measure].name)
    run_complete = schema.get_optional(w, "run_complete", list_of(BOOL), [])
    if run_complete and len(run_complete) != len(runs):
        raise schema.Invalid(f"{key}.run_complete", f"has {len(run_complete)} values; expected {len(runs)} values "
                                                    f"(one per run)")
    if complete and not all(run_complete):
        raise schema.Invalid(f"{key}.run_complete", "has an incomplete run in a complete workload")
    # 0: not recorded (a Side built in memory, e.g. by a simulation); the runs stored are then all there are.
    expected_runs = schema.get_optional(w, "expected_runs", COUNT, 0) or len(runs)
    if expected_runs < len(runs):
        raise schema.Invalid(f"{key}.expected_runs", f"is {expected_runs}, expected at least {len(runs)} (the runs stored)")
    return WorkloadSide(workload_id=workload.id, runs=tuple(runs), values=values, complete=complete,
                        problems=tuple(problems), samples=samples,
                        sample_notes=tuple(schema.get_optional(w, "sample_notes", list_of(STRING), [])),
                        evaluated=tuple(evaluated), run_complete=tuple(run_complete), expected_runs=expected_runs)


def _samples_from_dict(measure: str, s: Any, n_runs: int, key: str, stored: tuple[float | None, ...] | None,
                       metric: str) -> MeasureSamples:
    """Per-utterance arrays, validated: shapes, counts >= 0, invalid indices in range and unique, and in
    every run the corpus figure they give equal (to rounding) to the stored metric value."""
    OBJECT(s, key)
    ids = schema.get(s, "ids", list_of(NON_EMPTY_STRING))
    n = len(ids)
    if len(set(ids)) != n:
        raise schema.Invalid(f"{key}.ids", "has duplicate ids, expected each utterance once")
    ref_len = schema.get(s, "ref_len", list_of(COUNT))
    errors = schema.get(s, "errors", list_of(list_of(COUNT)))
    if len(ref_len) != n or len(errors) != n_runs or any(len(row) != n for row in errors):
        raise schema.Invalid(key, f"has errors of shape {len(errors)}x{len(errors[0]) if errors else 0} and "
                                  f"{len(ref_len)} ref_len; expected {n_runs}x{n} errors and one ref_len per id")
    invalid = schema.get_optional(s, "invalid", list_of(list_of(COUNT)), [])
    if len(invalid) > n_runs:
        raise schema.Invalid(f"{key}.invalid", f"has {len(invalid)} rows, expected at most {n_runs} (one per run)")
    valid = np.ones((n_runs, n), dtype=bool)
    for r, row in enumerate(invalid):
        if any(i >= n for i in row) or len(set(row)) != len(row):
            raise schema.Invalid(f"{key}.invalid[{r}]", f"has an index out of range or twice; expected distinct "
                                                        f"indices below {n}")
        valid[r, row] = False
    texts = schema.get_optional(s, "texts", OBJECT, {})
    known = set(ids)
    for uid, pair in texts.items():
        if uid not in known or not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(t, str) for t in pair)):
            raise schema.Invalid(f"{key}.texts.{uid[:40]}", "expected [reference, hypothesis] of a known id")
    ref = np.asarray(ref_len, dtype=np.int64)
    err = np.asarray(errors, dtype=np.int64).reshape(n_runs, n)
    for r in range(n_runs):
        reported = stored[r] if stored is not None else None
        words = int(ref[valid[r]].sum())
        if reported is None or words == 0:
            continue
        recomputed = float(err[r][valid[r]].sum()) / words
        if not samples_module.agrees(recomputed, reported):
            raise schema.Invalid(f"{key}.errors[{r}]", f"give {measure} {recomputed:.6f}, but the stored metric "
                                                       f"{metric} is {reported:.6f}; expected the same figure")
    return MeasureSamples(measure=measure, ids=tuple(ids), ref_len=ref, errors=err, valid=valid,
                          texts={uid: (pair[0], pair[1]) for uid, pair in texts.items()})


def _calibration(entry: Any, key: str) -> Calibration:
    """A speed metric's A/A noise: sigma and delta_sd in range, counts non-negative integers."""
    OBJECT(entry, key)
    sigma_check = schema.Check(f"a number between {MIN_SIGMA:g} and {MAX_SIGMA:g}",
                               lambda v: schema.NUMBER.test(v) and MIN_SIGMA <= v <= MAX_SIGMA)
    schema.get(entry, "sigma", sigma_check)
    schema.get(entry, "df", POSITIVE_INT)
    schema.get(entry, "groups", POSITIVE_INT)
    schema.get_optional(entry, "delta_sd", sigma_check)
    schema.get_optional(entry, "delta_df", POSITIVE_INT)
    for name in ("within_pairs", "cross_pairs", "cross_diffs", "set_aside", "nights", "night_df", "night_set_aside"):
        schema.get_optional(entry, name, COUNT)
    for name in ("cross_sum_sq", "cross_sum_h", "night_sum_sq"):
        schema.get_optional(entry, name, schema.NON_NEGATIVE)
    calibration = Calibration.from_dict(entry)
    # The nights' part is a part: never more than the whole (else the A/A part would come out negative).
    squares = calibration.sigma ** 2 * calibration.df
    if (calibration.night_df > calibration.df or calibration.nights > calibration.groups
            or calibration.night_set_aside > calibration.set_aside or calibration.night_sum_sq > squares * (1 + 1e-9)):
        raise schema.Invalid(key, "has a nights' part larger than the whole; expected night_df <= df, nights <= groups, "
                                  "night_set_aside <= set_aside and night_sum_sq <= sigma² · df")
    return calibration


def _dispersion(entry: Any, key: str) -> Dispersion:
    """A per-utterance measure's A/A over-dispersion: sums of squares non-negative, counts integers."""
    OBJECT(entry, key)
    for name in ("ss_total", "ss_units"):
        schema.get(entry, name, schema.NON_NEGATIVE)
    schema.get(entry, "df", COUNT)
    schema.get(entry, "arms", POSITIVE_INT)
    return Dispersion.from_dict(entry)


def _fingerprint(data: dict, known: Mapping[str, Any]) -> Fingerprint:
    text = optional(STRING)
    schema.get_optional(data, "gpu", text)
    schema.get_optional(data, "driver", text)
    packages = schema.get_optional(data, "packages", OBJECT)
    if packages is not None:
        for name, version in packages.items():
            STRING(version, f"fingerprint.packages.{name}")
    for workload_id, facts in schema.get_optional(data, "workloads", OBJECT, {}).items():
        OBJECT(facts, f"fingerprint.workloads.{workload_id}")
        for fact, value in facts.items():
            if value is not None and (isinstance(value, bool) or not isinstance(value, (str, int))):
                raise schema.Invalid(f"fingerprint.workloads.{workload_id}.{fact}",
                                     f"is {value!r}, expected a string, an integer or null")
    return Fingerprint.from_dict(data)


@contextmanager
def _within(key: str) -> Iterator[None]:
    """Name a nested field by its full path (workloads.<id>.runs, not runs) in the error."""
    try:
        yield
    except SchemaError as exc:
        if exc.field == key or exc.field.startswith(key + ".") or exc.field.startswith(key + "["):
            raise
        field = f"{key}.{exc.field}" if exc.field else key
        raise type(exc)(field, exc.message) from None
