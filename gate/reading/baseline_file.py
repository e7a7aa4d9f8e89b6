"""The baseline file: one side of a comparison (gate.reading.side.Side) kept as one reviewed JSON file.

Its shape is `gate.formats.baseline_record.BaselineDocument`: `write_document` is the one writer
(typedjson.to_json, atomically) and `load_document` the one reader (gate.formats.inputs, then
typedjson.from_json: a missing or unknown key, a wrong type or a negative count is refused).
`side_from_document` then checks what a type cannot say and builds the Side. `write_baseline` /
`read_baseline` are the two ends for a Side; gate.judging.calibration rewrites the calibration
through the same reader and writer. Any violation is one InputError naming the file and the field:
the baseline as a whole cannot be opened (exit 2); nothing in it is coerced or partly used.

Baseline file, schema_version 1 (baselines/README.md documents it for reviewers):

    {"schema_version": 1, "kind": "asr-gate-baseline", "suite": "asr", "created": ISO-8601,
     "source": {"path", "commit", "runs": ["run1", ...]},
     "fingerprint": {"gpu", "driver", "packages": {name: version}, "workloads": {id: {fact: value}}},
     "workloads": {id: {"runs": [...], "complete": bool, "problems": ["run1: code: path: message", ...],
                        "metrics": {name: [value per run]},
                        "samples": {measure: {"ids": [...], "ref_len": [...], "errors": [[per run]],
                                              "invalid": [[indices per run]], "texts": {id: [ref, hyp]}}},
                        "sample_notes": [...], "evaluated": [count per run]}},
     "calibration": {id: {metric: {"sigma", "df", "groups", "delta_sd", "delta_df", cross-job sums,
                                   "nights", "night_df", "night_sum_sq", "night_set_aside"}}},
     "calibration_source": {"pairs": [[tree_a, tree_b], ...], "created": ISO-8601,
                            "nights": {"history", "tonight", "kept", "used", "repeated", "created"},
                            "components": {model: {...}} (A/A runs with passes; gate.formats.components)} | null}

A speed entry's sigma/df pool the A/A pairs' within-arm spread with the nightly jobs' own runs (the
night_* fields are the nights' share; gate.history.noise computes it, `pool_nights` stores it).
"""
from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from gate.formats import atomic, inputs, schema, typedjson
from gate.formats import components as components_format
from gate.formats.baseline_record import (
    AccuracyNoiseRecord,
    BaselineDocument,
    FingerprintRecord,
    SamplesRecord,
    SourceRecord,
    SpeedNoiseRecord,
    WorkloadRecord,
    noise_record,
    upgrade,
)
from gate.formats.config import Suite, Workload
from gate.formats.errors import InputError
from gate.formats.noise_model import SIGMA_FLOOR, Calibration, Dispersion
from gate.formats.result_types import RECORDED, Problem
from gate.formats.schema import SchemaError
from gate.reading import samples as samples_module
from gate.reading.comparability import Fingerprint
from gate.reading.result_files import metric_check
from gate.reading.side import MeasureSamples, Side, WorkloadSide

BASELINE_SCHEMA_VERSION = 1
BASELINE_KIND = "asr-gate-baseline"
MIN_SIGMA = SIGMA_FLOOR  # 1e-4, ln-scale run-to-run SD below 0.01 %: no real GPU measurement is that quiet
MAX_SIGMA = 1.0  # above ~100 %: not a noise estimate
_EXPECTED = f"expected schema_version {BASELINE_SCHEMA_VERSION} as documented in baselines/README.md"


# --- writing --------------------------------------------------------------------------------------------

def document_from_side(side: Side, *, calibration_source: Mapping[str, Any] | None = None) -> BaselineDocument:
    workloads = {
        workload_id: WorkloadRecord(
            runs=tuple(w.runs), complete=w.complete, problems=tuple(p.line for p in w.problems),
            metrics={name: tuple(values) for name, values in w.values.items()},
            samples={m: _samples_record(s) for m, s in w.samples.items()},
            sample_notes=tuple(w.sample_notes), evaluated=tuple(w.evaluated), run_complete=tuple(w.run_complete),
            expected_runs=w.expected_runs)
        for workload_id, w in side.workloads.items()}
    fingerprint = side.fingerprint.to_dict()
    return BaselineDocument(
        schema_version=BASELINE_SCHEMA_VERSION, kind=BASELINE_KIND, suite=side.suite,
        created=_dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat(),
        source=SourceRecord(path=side.path, commit=side.commit, runs=tuple(side.runs)),
        missing=tuple(side.missing),
        fingerprint=FingerprintRecord(gpu=fingerprint["gpu"], driver=fingerprint["driver"],
                                      packages=fingerprint["packages"], workloads=fingerprint["workloads"]),
        workloads=workloads,
        calibration={w: {m: noise_record(c) for m, c in metrics.items()} for w, metrics in side.calibration.items()},
        calibration_source=calibration_source)


def side_to_dict(side: Side, *, source_calibration: Mapping[str, Any] | None = None) -> dict:
    """The JSON form of `side` as a baseline file."""
    return typedjson.to_json(document_from_side(side, calibration_source=source_calibration))


def _samples_record(s: MeasureSamples) -> SamplesRecord:
    return SamplesRecord(ids=tuple(s.ids), ref_len=tuple(s.ref_len.tolist()),
                         errors=tuple(tuple(row) for row in s.errors.tolist()),
                         invalid=tuple(tuple(np.flatnonzero(~row).tolist()) for row in s.valid),
                         texts={i: (t[0], t[1]) for i, t in s.texts.items()})


def write_baseline(side: Side, path: str | Path, *, calibration_source: Mapping[str, Any] | None = None) -> Path:
    """Write `side` as a baseline file, atomically (a kill or a full disk leaves the old file intact)."""
    return write_document(path, document_from_side(side, calibration_source=calibration_source))


def write_document(path: str | Path, document: BaselineDocument) -> Path:
    """The one writer of baseline files: compact JSON, atomically (a kill or a full disk leaves the
    previous file intact)."""
    text = json.dumps(typedjson.to_json(document), separators=(",", ":"), ensure_ascii=False) + "\n"
    return atomic.write_text(path, text, what="baseline")


# --- reading --------------------------------------------------------------------------------------------

def read_baseline(path: str | Path, suite: Suite, *, models: tuple[str, ...] | None = None) -> Side:
    """Read and validate a baseline file (see the module doc); only `models`' workloads are kept."""
    path = Path(path)
    return side_from_document(load_document(path), path, suite, models)


def load_document(path: str | Path) -> BaselineDocument:
    """The one reader of baseline files: a regular file (no FIFO, socket, device or link to one) by the
    strict rules of gate.formats.inputs, of this kind and the integer schema_version this gate reads, every key
    of its type (gate.formats.baseline_record); else InputError naming the file and the field."""
    path = Path(path)
    try:
        data = inputs.load_json(path, inputs.BASELINE)
    except inputs.Unreadable as exc:
        raise InputError(f"{exc.reason}; expected a baseline file", path=path) from None
    if not isinstance(data, dict) or data.get("kind") != BASELINE_KIND:
        kind = data.get("kind") if isinstance(data, dict) else None
        said = f"; it says \"kind\": {json.dumps(kind)[:60]}" if isinstance(kind, str) else ""
        if isinstance(data, dict) and kind is None and "verdict" in data and "rows" in data:
            said = "; it is a report, as `gate compare --json` writes"
        raise InputError(f"not a baseline file (expected \"kind\": \"{BASELINE_KIND}\"{said}): give the file "
                         f"`gate baseline create TREE --out FILE` wrote, or a result tree", path=path)
    version = data.get("schema_version")
    if type(version) is not int or version != BASELINE_SCHEMA_VERSION:  # 1.0 and true are not 1
        raise InputError(f"baseline schema_version is {version!r}, this gate reads the integer "
                         f"{BASELINE_SCHEMA_VERSION}; recreate it with `gate baseline create`", path=path)
    data = upgrade(data)
    try:
        return typedjson.from_json(BaselineDocument, data)
    except typedjson.SchemaMismatch as exc:
        exc = _precise(exc, data)
        raise InputError(f"malformed baseline: {exc.where}: {exc.expected}; {_EXPECTED}", path=path) from None


def _precise(exc: typedjson.SchemaMismatch, data: dict) -> typedjson.SchemaMismatch:
    """A calibration entry fits neither record: say what is wrong with it as the record its keys name."""
    for workload_id, metrics in (data.get("calibration") or {}).items():
        for metric, entry in (metrics if isinstance(metrics, dict) else {}).items():
            where = typedjson.key_path(typedjson.key_path("$.calibration", workload_id), metric)
            if exc.where != where or not isinstance(entry, dict):
                continue
            record = SpeedNoiseRecord if "sigma" in entry else AccuracyNoiseRecord
            try:
                typedjson.from_json(record, entry, where)
            except typedjson.SchemaMismatch as inner:
                return inner
    return exc


def side_from_document(document: BaselineDocument, path: Path, suite: Suite,
                       models: tuple[str, ...] | None) -> Side:
    """The Side a decoded baseline holds, after the checks a type cannot make; InputError otherwise."""
    if document.suite != suite.name:
        raise InputError(f"baseline is for suite {document.suite!r}, expected {suite.name!r}", path=path)
    try:
        return _checked_side(document, path, suite, models)
    except SchemaError as exc:
        raise InputError(f"malformed baseline: {exc}; {_EXPECTED}", path=path) from None


def _checked_side(document: BaselineDocument, path: Path, suite: Suite, models: tuple[str, ...] | None) -> Side:
    known = {w.id: w for w in suite.workloads}
    selected = {w.id for w in suite.workloads_for(models)}
    for k, workload_id in enumerate(document.missing):
        if workload_id not in known:
            raise schema.Invalid(f"missing[{k}]", f"is {workload_id!r}, expected a workload of suite {suite.name!r}")
    if any(not run for run in document.source.runs):
        raise schema.Invalid("source.runs", "has an empty run name, expected non-empty strings")
    workloads = {}
    for workload_id, record in document.workloads.items():
        key = f"workloads.{workload_id}"
        if workload_id not in known:
            raise schema.Invalid(key, f"is not a workload of suite {suite.name!r}")
        side = _workload_side(record, key, known[workload_id])
        if workload_id in selected:
            workloads[workload_id] = side
    calibration = {}
    for workload_id, entries in document.calibration.items():
        key = f"calibration.{workload_id}"
        if workload_id not in known:
            raise schema.Invalid(key, f"is not a workload of suite {suite.name!r}")
        kinds = {m.name: m.kind for m in known[workload_id].metrics if m.kind == "speed" or m.samples}
        parsed: dict[str, Calibration | Dispersion] = {}
        for metric, entry in entries.items():
            if metric not in kinds:
                raise schema.Invalid(f"{key}.{metric}", f"is not a speed or per-utterance metric of {workload_id}")
            wanted = SpeedNoiseRecord if kinds[metric] == "speed" else AccuracyNoiseRecord
            if not isinstance(entry, wanted):
                raise schema.Invalid(f"{key}.{metric}", f"is a {'speed' if wanted is AccuracyNoiseRecord else 'per-utterance'} "
                                                        f"calibration, expected one for a {kinds[metric]} metric")
            parsed[metric] = (_calibration(entry, f"{key}.{metric}") if isinstance(entry, SpeedNoiseRecord)
                              else entry.value())
        if workload_id in selected:
            calibration[workload_id] = parsed
    fp = document.fingerprint
    fingerprint = Fingerprint.from_dict({"gpu": fp.gpu, "driver": fp.driver, "packages": fp.packages,
                                         "workloads": fp.workloads})
    return Side(kind="baseline", path=str(path), suite=document.suite, commit=document.source.commit,
                runs=tuple(document.source.runs), workloads=workloads,
                missing=tuple(m for m in document.missing if m in selected),
                fingerprint=fingerprint, calibration=calibration)


def _workload_side(w: WorkloadRecord, key: str, workload: Workload) -> WorkloadSide:
    runs = w.runs
    if not runs or len(set(runs)) != len(runs) or not all(runs):
        raise schema.Invalid(f"{key}.runs", f"is {list(runs)!r}, expected at least one scored run, each once")
    if w.complete == bool(w.problems):
        raise schema.Invalid(f"{key}.complete", f"is {w.complete} with {len(w.problems)} problems; expected complete "
                                                f"exactly when there is no problem")
    specs = {m.name: m for m in workload.metrics}
    values = {}
    for name, vals in w.metrics.items():
        if name not in specs:
            raise schema.Invalid(f"{key}.metrics.{name}", f"is not a metric of {workload.id}")
        check = metric_check(specs[name], workload.expected_samples)
        for r, value in enumerate(vals):
            check(value, f"{key}.metrics.{name}[{r}]")
        if len(vals) != len(runs):
            raise schema.Invalid(f"{key}.metrics.{name}", f"has {len(vals)} values; expected {len(runs)} values (one per run)")
        values[name] = vals
    for name, column in (("evaluated", w.evaluated), ("run_complete", w.run_complete)):
        if column and len(column) != len(runs):
            raise schema.Invalid(f"{key}.{name}", f"has {len(column)} values; expected {len(runs)} values (one per run)")
    measures = {m.samples: m for m in workload.metrics if m.kind == "accuracy" and m.samples}
    samples = {}
    for measure, s in w.samples.items():
        if measure not in measures:
            raise schema.Invalid(f"{key}.samples.{measure}", f"is not a per-utterance measure of {workload.id}")
        samples[measure] = _samples(measure, s, len(runs), f"{key}.samples.{measure}",
                                    values.get(measures[measure].name), measures[measure].name)
    if w.complete and not all(w.run_complete):
        raise schema.Invalid(f"{key}.run_complete", "has an incomplete run in a complete workload")
    # 0: not recorded (a Side built in memory, e.g. by a simulation); the runs stored are then all there are.
    expected_runs = w.expected_runs or len(runs)
    if expected_runs < len(runs):
        raise schema.Invalid(f"{key}.expected_runs", f"is {expected_runs}, expected at least {len(runs)} (the runs stored)")
    return WorkloadSide(workload_id=workload.id, runs=tuple(runs), values=values, complete=w.complete,
                        problems=tuple(Problem(RECORDED, line) for line in w.problems), samples=samples, sample_notes=tuple(w.sample_notes),
                        evaluated=tuple(w.evaluated), run_complete=tuple(w.run_complete), expected_runs=expected_runs)


def _samples(measure: str, s: SamplesRecord, n_runs: int, key: str, stored: tuple[float | None, ...] | None,
             metric: str) -> MeasureSamples:
    """Per-utterance arrays: shapes, invalid indices in range and unique, and in every run the corpus
    figure they give equal (to rounding) to the stored metric value."""
    ids = s.ids
    n = len(ids)
    if len(set(ids)) != n or not all(ids):
        raise schema.Invalid(f"{key}.ids", "has duplicate or empty ids, expected each utterance once")
    if len(s.ref_len) != n or len(s.errors) != n_runs or any(len(row) != n for row in s.errors):
        raise schema.Invalid(key, f"has errors of shape {len(s.errors)}x{len(s.errors[0]) if s.errors else 0} and "
                                  f"{len(s.ref_len)} ref_len; expected {n_runs}x{n} errors and one ref_len per id")
    if len(s.invalid) > n_runs:
        raise schema.Invalid(f"{key}.invalid", f"has {len(s.invalid)} rows, expected at most {n_runs} (one per run)")
    valid = np.ones((n_runs, n), dtype=bool)
    for r, row in enumerate(s.invalid):
        if any(i >= n for i in row) or len(set(row)) != len(row):
            raise schema.Invalid(f"{key}.invalid[{r}]", f"has an index out of range or twice; expected distinct "
                                                        f"indices below {n}")
        valid[r, list(row)] = False
    known = set(ids)
    unknown = next((uid for uid in s.texts if uid not in known), None)
    if unknown is not None:
        raise schema.Invalid(f"{key}.texts.{unknown[:40]}", "expected [reference, hypothesis] of a known id")
    ref = np.asarray(s.ref_len, dtype=np.int64)
    err = np.asarray(s.errors, dtype=np.int64).reshape(n_runs, n)
    for r in range(n_runs):
        reported = stored[r] if stored is not None else None
        words = int(ref[valid[r]].sum())
        if reported is None or words == 0:
            continue
        recomputed = float(err[r][valid[r]].sum()) / words
        if not samples_module.agrees(recomputed, reported):
            raise schema.Invalid(f"{key}.errors[{r}]", f"give {measure} {recomputed:.6f}, but the stored metric "
                                                       f"{metric} is {reported:.6f}; expected the same figure")
    return MeasureSamples(measure=measure, ids=tuple(ids), ref_len=ref, errors=err, valid=valid, texts=dict(s.texts))


def _calibration(entry: SpeedNoiseRecord, key: str) -> Calibration:
    """A speed metric's A/A noise: sigma and delta_sd in range, counts positive where they must be, and the
    nights' part a part of the whole."""
    sigma_check = schema.Check(f"a number between {MIN_SIGMA:g} and {MAX_SIGMA:g}",
                               lambda v: schema.NUMBER.test(v) and MIN_SIGMA <= v <= MAX_SIGMA)
    sigma_check(entry.sigma, f"{key}.sigma")
    if entry.delta_sd is not None:
        sigma_check(entry.delta_sd, f"{key}.delta_sd")
    for name in ("df", "groups"):
        schema.POSITIVE_INT(getattr(entry, name), f"{key}.{name}")
    if entry.delta_df is not None:
        schema.POSITIVE_INT(entry.delta_df, f"{key}.delta_df")
    calibration = entry.value()
    # The nights' part is a part: never more than the whole (else the A/A part would come out negative).
    squares = calibration.sigma ** 2 * calibration.df
    if (calibration.night_df > calibration.df or calibration.nights > calibration.groups
            or calibration.night_set_aside > calibration.set_aside or calibration.night_sum_sq > squares * (1 + 1e-9)):
        raise schema.Invalid(key, "has a nights' part larger than the whole; expected night_df <= df, nights <= groups, "
                                  "night_set_aside <= set_aside and night_sum_sq <= sigma² · df")
    return calibration


def stored_components(path: str | Path) -> dict[str, components_format.Stored]:
    """The variance components the baseline's A/A calibration stored (gate.formats.components); {} for a baseline
    calibrated on one-pass runs or written before they were stored."""
    document = load_document(Path(path))
    return components_format.stored(document.calibration_source, Path(path))


def stored_duet_components(path: str | Path) -> dict[str, components_format.StoredDuet]:
    """The duet components a duet A/A calibration stored (issue 53); {} for any other calibration."""
    document = load_document(Path(path))
    return components_format.stored_duet(document.calibration_source, Path(path))
