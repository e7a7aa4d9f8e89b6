"""One side of a comparison, and the baseline store that keeps it as one reviewed JSON file.

A `Side` is everything the verdict needs from a result tree: per workload the per-run metric values,
coverage, per-utterance error arrays, and the fingerprint. `side_from_tree` builds it from a tree;
`write_baseline` / `read_baseline` keep it in a file (schema below), together with the A/A
calibration that `calibrate_baseline` adds. Either side of `gate compare` may be either.

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
import hashlib
import json
import math
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np

from gate import atomic, inputs, schema
from gate import samples as samples_module
from gate.comparability import Fingerprint, fingerprint_of_tree
from gate.config import Suite
from gate.errors import InputError
from gate.results import ResultTree, metric_check, read_tree
from gate.schema import BOOL, COUNT, NON_EMPTY_STRING, OBJECT, POSITIVE_INT, STRING, SchemaError, list_of, optional
from gate.side import MeasureSamples, Side, WorkloadSide
from gate.stats.overdispersion import Dispersion, from_arms
from gate.stats.performance import Calibration, calibrate, with_nights

BASELINE_SCHEMA_VERSION = 1
BASELINE_KIND = "asr-gate-baseline"
TEXT_EXCERPT = 300  # characters of reference/hypothesis kept per utterance, for reports


# --- result tree -> Side ------------------------------------------------------------------------------

SampleReader = Callable[[Path, Any], Mapping[str, Any]]


def side_from_tree(tree: ResultTree | str | Path, suite: Suite, *, models: tuple[str, ...] | None = None,
                   sample_reader: SampleReader | None = None) -> Side:
    """Summarize a result tree. `sample_reader(run_dir, workload)` -> {measure: UtteranceErrors}."""
    if not isinstance(tree, ResultTree):
        tree = read_tree(tree, suite, models=models)
    reader = sample_reader or samples_module.read_run_samples
    workloads = {}
    present = {info.name for info in tree.runs if info.present}
    for workload_id, planned in tree.workloads.items():
        workload = suite.workload(workload_id)
        # A planned run without a directory is a problem (MISSING_RUN), not a run: `runs` lists the runs
        # present, `expected_runs` the runs planned (as WorkloadSide defines them).
        problems = tuple(f"{r.run}: {p.code}: {p}" for r in planned for p in r.coverage.problems)
        runs = tuple(r for r in planned if r.run in present)
        values = {m.name: tuple(r.metrics.get(m.name) for r in runs) for m in workload.metrics}
        expected = len(tree.runs_of(workload_id))
        if len(planned) < expected:
            problems += (f"only {len(planned)} of {expected} scored runs",)
        measures, notes, invalid = _samples_of(tree, workload, reader)
        problems += invalid  # a malformed per-sample file is a malformed result file: the run is invalid
        workloads[workload_id] = WorkloadSide(
            workload_id=workload_id, runs=tuple(r.run for r in runs), values=values,
            complete=not problems, problems=problems, samples=measures, sample_notes=notes,
            evaluated=tuple(r.coverage.evaluated for r in runs),
            run_complete=tuple(not r.coverage.problems and r.run not in _runs_named(invalid) for r in runs),
            expected_runs=len(tree.runs_of(workload_id)))
    commits = sorted({r.commit for r in tree.runs if r.commit})
    return Side(kind="tree", path=str(tree.root), suite=suite.name, commit=" | ".join(commits) or None,
                runs=tree.run_names, workloads=workloads, missing=tuple(tree.missing_workloads),
                fingerprint=fingerprint_of_tree(tree, suite))


def _runs_named(problems: Iterable[str]) -> set[str]:
    """The runs that "<run>: code: message" problems are about."""
    return {p.split(":", 1)[0] for p in problems}


def _samples_of(tree: ResultTree, workload, reader: SampleReader | None) -> tuple[dict, tuple[str, ...], tuple[str, ...]]:
    """(usable measures, notes on unusable ones, problems): a per-sample file that exists but is malformed
    or unreadable is a problem (the workload run is invalid), not merely a note."""
    wanted = [m.samples for m in workload.metrics if m.kind == "accuracy" and m.samples]
    if not wanted:
        return {}, (), ()
    if reader is None:
        return {}, ("per-sample loader unavailable",), ()
    runs = [run for run in tree.runs_of(workload.id) if run.present]
    per_run: list[Mapping[str, Any]] = []
    for run in runs:
        try:
            per_run.append(reader(Path(run.path), workload) or {})
        except Exception as exc:  # noqa: BLE001 - a loader failure must degrade to the fallback, named
            return {}, (f"{run.name}: per-sample data unreadable ({type(exc).__name__}: {exc})",), ()
    invalid = []
    for run, found in zip(runs, per_run):
        messages = {item.crosscheck.message for item in found.values() if item.crosscheck.invalid}
        invalid += [f"{run.name}: invalid_samples: {message}" for message in sorted(messages)]
    measures, notes = {}, []
    for measure in wanted:
        result = _measure_from_runs(measure, [run.name for run in runs], [r.get(measure) for r in per_run])
        if isinstance(result, str):
            notes.append(f"{measure}: {result}")
        else:
            measures[measure] = result
    return measures, tuple(notes), tuple(invalid)


def _measure_from_runs(measure: str, run_names: Sequence[str], per_run: Sequence[Any]) -> MeasureSamples | str:
    """Stack one measure's per-run UtteranceErrors by id; a string says why it cannot be used."""
    for name, item in zip(run_names, per_run):
        if item is None:
            return f"no per-sample data in {name}"
        if item.crosscheck.status == samples_module.UNAVAILABLE:
            return f"no usable per-sample data in {name} ({item.crosscheck.message})"
        if item.crosscheck.status == samples_module.MISMATCH:
            return f"{name}: per-sample data does not reproduce the file's figure ({item.crosscheck.message})"
    ids = per_run[0].ids
    if len(set(ids)) != len(ids):
        return f"{run_names[0]}: duplicate utterance ids"
    position = {i: k for k, i in enumerate(ids)}
    n = len(ids)
    ref_len = np.asarray(per_run[0].ref_len, dtype=np.int64)
    errors = np.zeros((len(per_run), n), dtype=np.int64)
    valid = np.zeros((len(per_run), n), dtype=bool)
    texts: dict[str, tuple[str, str]] = {}
    worst = np.full(n, -1)
    for r, (name, item) in enumerate(zip(run_names, per_run)):
        if set(item.ids) != set(ids) or len(item.ids) != n:
            return f"{name}: utterance ids differ from {run_names[0]}'s"
        order = np.fromiter((position[i] for i in item.ids), dtype=np.int64, count=n)
        if not np.array_equal(ref_len[order], np.asarray(item.ref_len, dtype=np.int64)):
            return f"{name}: reference lengths differ from {run_names[0]}'s (normalization changed?)"
        errors[r, order] = np.asarray(item.errors, dtype=np.int64)
        valid[r, order] = np.asarray(item.valid, dtype=bool)
        for k, utt in enumerate(item.ids):
            e = int(item.errors[k])
            if e > 0 and e > worst[order[k]] and k < len(item.hyp_text):
                worst[order[k]] = e
                ref = item.ref_text[k] if k < len(item.ref_text) else ""
                texts[utt] = (ref[:TEXT_EXCERPT], item.hyp_text[k][:TEXT_EXCERPT])
    return MeasureSamples(measure=measure, ids=tuple(ids), ref_len=ref_len, errors=errors, valid=valid, texts=texts)


# --- baseline file ---------------------------------------------------------------------------------------

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
    data = side_to_dict(side, source_calibration=calibration_source)
    return atomic.write_text(path, json.dumps(data, separators=(",", ":"), ensure_ascii=False) + "\n",
                             what="baseline")


def read_baseline(path: str | Path, suite: Suite, *, models: tuple[str, ...] | None = None) -> Side:
    """Read and validate a baseline file. Any violation (unreadable file, wrong kind, schema version or
    suite, a value of the wrong type or range, per-utterance errors that do not reproduce the stored
    metric) is one InputError line naming the file and the field: the baseline as a whole cannot be
    opened (exit 2); nothing in it is coerced or partly used."""
    path = Path(path)
    data = _load(path)
    return _side_from_dict(data, path, suite, models)


MIN_SIGMA = 1e-4  # ln-scale run-to-run SD below 0.01 %: no real GPU measurement is that quiet
MAX_SIGMA = 1.0  # above ~100 %: not a noise estimate
_EXPECTED = f"expected schema_version {BASELINE_SCHEMA_VERSION} as documented in baselines/README.md"


def _load(path: Path) -> dict:
    try:
        data = inputs.load_json(path, inputs.BASELINE)
    except inputs.Unreadable as exc:
        raise InputError(f"{exc.reason}; expected a baseline file", path=path) from None
    if not isinstance(data, dict) or data.get("kind") != BASELINE_KIND:
        raise InputError(f"not a baseline file (expected \"kind\": \"{BASELINE_KIND}\")", path=path)
    if data.get("schema_version") != BASELINE_SCHEMA_VERSION or isinstance(data.get("schema_version"), bool):
        raise InputError(f"baseline schema_version is {data.get('schema_version')!r}, this gate reads "
                         f"{BASELINE_SCHEMA_VERSION}; recreate it with `gate baseline create`", path=path)
    return data


def _side_from_dict(data: dict, path: Path, suite: Suite, models: tuple[str, ...] | None) -> Side:
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
    for workload_id, metrics in schema.get_optional(data, "calibration", OBJECT, {}).items():
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


def _float_or_none(value: Any) -> float | None:
    return None if value is None else float(value)


# --- A/A calibration -----------------------------------------------------------------------------------

def calibration_from_pairs(pairs: Sequence[tuple[Side, Side]], suite: Suite,
                           cross_job: Sequence[bool] | None = None) -> dict[str, dict[str, Calibration | Dispersion]]:
    """Per workload: speed metric -> Calibration, accuracy metric -> Dispersion, from same-commit pairs of sides
    (complete workloads only). `cross_job[k]`: pair k's two arms ran in different jobs."""
    cross_job = list(cross_job) if cross_job is not None else [False] * len(pairs)
    out: dict[str, dict[str, Calibration | Dispersion]] = {}
    for workload in suite.workloads:
        for metric in workload.metrics:
            usable = [(a.workloads[workload.id], b.workloads[workload.id], across)
                      for (a, b), across in zip(pairs, cross_job)
                      if workload.id in a.workloads and workload.id in b.workloads
                      and a.workloads[workload.id].complete and b.workloads[workload.id].complete]
            entry: Calibration | Dispersion | None = None
            if metric.kind == "speed" and usable:
                entry = calibrate([([v for v in wa.values.get(metric.name, ()) if v is not None],
                                    [v for v in wb.values.get(metric.name, ()) if v is not None]) for wa, wb, _ in usable],
                                  cross_job=[across for _, _, across in usable])
            elif metric.kind == "accuracy" and metric.samples and usable:
                arms = [_valid_errors(w.samples[metric.samples]) for pair in usable for w in pair[:2]
                        if metric.samples in w.samples]
                entry = from_arms(arms) if arms else None
            if entry is not None:
                out.setdefault(workload.id, {})[metric.name] = entry
    return out


def _valid_errors(s: MeasureSamples) -> np.ndarray:
    return s.errors[:, s.valid.all(axis=0)]


def run_hashes(side: Side) -> dict[str, str]:
    """A content hash per scored run: every workload's metric values and per-utterance errors of that run.
    Two runs with the same hash are the same measurement (a copied run directory), not two measurements."""
    hashes = {}
    for index, run in enumerate(side.runs):
        digest = hashlib.sha256()
        for workload_id in sorted(side.workloads):
            w = side.workloads[workload_id]
            if run not in w.runs:
                continue
            r = w.runs.index(run)
            digest.update(workload_id.encode())
            for name in sorted(w.values):
                value = w.values[name][r] if r < len(w.values[name]) else None
                digest.update(f"{name}={value!r};".encode())
            for measure in sorted(w.samples):
                digest.update(measure.encode() + np.ascontiguousarray(w.samples[measure].errors[r]).tobytes())
        hashes[run] = digest.hexdigest()
    return hashes


def check_independent(pairs: Sequence[tuple[Side, Side]]) -> None:
    """Refuse A/A evidence that is not new evidence: a tree given twice, or a run byte-identical to another
    (one clear InputError naming both)."""
    seen: dict[str, str] = {}
    trees: dict[tuple[str, ...], str] = {}
    for a, b in pairs:
        for side in (a, b):
            hashes = run_hashes(side)
            key = tuple(sorted(hashes.values()))
            if key in trees:
                raise InputError(f"calibration: this tree repeats {trees[key]} (same content hash "
                                 f"{hashlib.sha256(''.join(key).encode()).hexdigest()[:12]}); each A/A pair must be "
                                 "new, independent runs", path=side.path)
            trees[key] = side.path
            for run, digest in hashes.items():
                where = f"{side.path} {run}"
                if digest in seen:
                    raise InputError(f"calibration: {where} is byte-identical to {seen[digest]} (content hash "
                                     f"{digest[:12]}); copied runs are not independent measurements", path=side.path)
                seen[digest] = where


def calibrate_baseline(baseline_path: str | Path, pairs: Sequence[tuple[Side, Side]], suite: Suite,
                       cross_job: Sequence[bool] | None = None) -> dict:
    """Write the calibration estimated from `pairs` into the baseline file; returns what was written."""
    path = Path(baseline_path)
    cross_job = list(cross_job) if cross_job is not None else [False] * len(pairs)
    for a, b in pairs:
        if a.commit and b.commit and a.commit != b.commit:
            raise InputError(f"an A/A pair must be one commit twice; {a.path} is {a.commit}, {b.path} is {b.commit}",
                             path=b.path)
    check_independent(pairs)
    data = _load(path)
    _side_from_dict(data, path, suite, None)  # the file must be a valid baseline before it is rewritten
    calibration = calibration_from_pairs(pairs, suite, cross_job)
    if not any(isinstance(c, Calibration) for metrics in calibration.values() for c in metrics.values()):
        raise InputError("no complete speed values in the A/A pairs; nothing to calibrate", path=pairs[0][0].path)
    calibration = _keep_nights(calibration, data.get("calibration") or {})
    nights = (data.get("calibration_source") or {}).get("nights")
    data["calibration"] = {w: {m: c.to_dict() for m, c in metrics.items()} for w, metrics in calibration.items()}
    data["calibration_source"] = {
        "pairs": [[a.path, b.path] for a, b in pairs],
        "independent_pairs": len(pairs),
        "within_job_pairs": sum(1 for c in cross_job if not c),
        "cross_job_pairs": sum(1 for c in cross_job if c),
        "commits": sorted({s.commit for pair in pairs for s in pair if s.commit}),
        "created": _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat(),
    }
    if nights is not None:
        data["calibration_source"]["nights"] = nights
    # Never in place: a kill or a full disk during the write leaves the previous baseline valid.
    atomic.write_text(path, json.dumps(data, separators=(",", ":"), ensure_ascii=False) + "\n", what="baseline")
    return data["calibration"]


def _keep_nights(calibration: dict[str, dict[str, Calibration | Dispersion]],
                 stored: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Calibration | Dispersion]]:
    """New A/A pairs replace the pairs' part of each speed entry; the nights' part already pooled in stays."""
    out = {w: dict(metrics) for w, metrics in calibration.items()}
    for workload_id, metrics in stored.items():
        for metric, entry in metrics.items():
            if not isinstance(entry, dict) or "sigma" not in entry:
                continue
            old = Calibration.from_dict(entry)
            if not old.night_df:
                continue
            new = out.get(workload_id, {}).get(metric)
            nights = _nights_part(old)
            merged = with_nights(new if isinstance(new, Calibration) else None, nights)
            if merged is not None:
                out.setdefault(workload_id, {})[metric] = merged
    return out


def _nights_part(calibration: Calibration) -> Calibration:
    """The nights' part of a stored entry, in the form `calibrate` gives it (one arm per night)."""
    return Calibration(sigma=math.sqrt(calibration.night_sum_sq / calibration.night_df), df=calibration.night_df,
                       groups=max(calibration.nights, 1), set_aside=calibration.night_set_aside)


def pool_nights(baseline_path: str | Path, nights: Mapping[str, Mapping[str, Calibration]], suite: Suite, *,
                source: Mapping[str, Any]) -> dict[str, dict[str, Calibration]]:
    """Set the nights' part of the baseline's speed calibration to `nights` (workload -> metric -> what
    `calibrate` gives for the nights' runs), keeping the A/A pairs' part, the cross-job part and every
    accuracy entry as they are. A workload × metric absent from `nights` loses any earlier nights' part:
    the part is recomputed from the current window each time, never accumulated. Written atomically;
    `source` is kept as calibration_source.nights. Returns the speed entries now stored."""
    path = Path(baseline_path)
    data = _load(path)
    side = _side_from_dict(data, path, suite, None)  # the file must be a valid baseline before it is rewritten
    stored = dict(data.get("calibration") or {})
    written: dict[str, dict[str, Calibration]] = {}
    for workload_id in side.workloads:
        metrics = dict(stored.get(workload_id) or {})
        for metric in suite.workload(workload_id).metrics:
            if metric.kind != "speed":
                continue
            old = side.calibration.get(workload_id, {}).get(metric.name)
            merged = with_nights(old if isinstance(old, Calibration) else None,
                                 nights.get(workload_id, {}).get(metric.name))
            if merged is None:
                metrics.pop(metric.name, None)
                continue
            metrics[metric.name] = merged.to_dict()
            written.setdefault(workload_id, {})[metric.name] = merged
        if metrics:
            stored[workload_id] = metrics
        else:
            stored.pop(workload_id, None)
    data["calibration"] = stored
    data["calibration_source"] = dict(data.get("calibration_source") or {}, nights=dict(source))
    atomic.write_text(path, json.dumps(data, separators=(",", ":"), ensure_ascii=False) + "\n", what="baseline")
    return written


def with_calibration(side: Side, calibration: Mapping[str, Mapping[str, Calibration | Dispersion]]) -> Side:
    return replace(side, calibration=calibration)


def carry_calibration(side: Side, earlier: str | Path, suite: Suite, *,
                      models: tuple[str, ...] | None = None) -> tuple[Side, dict]:
    """`side` with the calibration of an earlier baseline file (a nightly refresh must not lose the noise
    floor), and the calibration_source to record: the earlier one's, plus where it was carried from."""
    raw = _load(Path(earlier))
    old = _side_from_dict(raw, Path(earlier), suite, models)  # validated once; the same bytes give the source
    source = dict(raw.get("calibration_source") or {}, carried_from=str(earlier))
    return with_calibration(side, old.calibration), source

