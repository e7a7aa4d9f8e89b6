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
     "calibration": {id: {metric: {"sigma", "df", "groups", "delta_sd", "delta_df"}}},
     "calibration_source": {"pairs": [[tree_a, tree_b], ...], "created": ISO-8601} | null}
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from gate import samples as samples_module
from gate.comparability import Fingerprint, fingerprint_of_tree
from gate.config import Suite
from gate.errors import InputError
from gate.results import ResultTree, read_tree
from gate.side import MeasureSamples, Side, WorkloadSide
from gate.stats.overdispersion import Dispersion, from_arms
from gate.stats.performance import Calibration, calibrate

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
    reader = sample_reader or default_sample_reader()
    workloads = {}
    for workload_id, runs in tree.workloads.items():
        workload = suite.workload(workload_id)
        values = {m.name: tuple(r.metrics.get(m.name) for r in runs) for m in workload.metrics}
        problems = tuple(f"{r.run}: {p.code}: {p}" for r in runs for p in r.coverage.problems)
        if len(runs) < len(tree.runs):
            problems += (f"only {len(runs)} of {len(tree.runs)} scored runs",)
        measures, notes = _samples_of(tree, workload, reader)
        workloads[workload_id] = WorkloadSide(
            workload_id=workload_id, runs=tuple(r.run for r in runs), values=values,
            complete=not problems, problems=problems, samples=measures, sample_notes=notes,
            evaluated=tuple(r.coverage.evaluated for r in runs),
            run_complete=tuple(not r.coverage.problems for r in runs), expected_runs=len(tree.runs))
    commits = sorted({r.commit for r in tree.runs if r.commit})
    return Side(kind="tree", path=str(tree.root), suite=suite.name, commit=" | ".join(commits) or None,
                runs=tree.run_names, workloads=workloads, missing=tuple(tree.missing_workloads),
                fingerprint=fingerprint_of_tree(tree, suite))


def default_sample_reader() -> SampleReader | None:
    """The per-sample loader of gate.samples (None while it does not exist: accuracy then falls back)."""
    return getattr(samples_module, "read_run_samples", None)


def _samples_of(tree: ResultTree, workload, reader: SampleReader | None) -> tuple[dict, tuple[str, ...]]:
    wanted = [m.samples for m in workload.metrics if m.kind == "accuracy" and m.samples]
    if not wanted:
        return {}, ()
    if reader is None:
        return {}, ("per-sample loader unavailable",)
    per_run: list[Mapping[str, Any]] = []
    for run in tree.runs:
        try:
            per_run.append(reader(Path(run.path), workload) or {})
        except Exception as exc:  # noqa: BLE001 - a loader failure must degrade to the fallback, named
            return {}, (f"{run.name}: per-sample data unreadable ({type(exc).__name__}: {exc})",)
    measures, notes = {}, []
    for measure in wanted:
        result = _measure_from_runs(measure, [run.name for run in tree.runs], [r.get(measure) for r in per_run])
        if isinstance(result, str):
            notes.append(f"{measure}: {result}")
        else:
            measures[measure] = result
    return measures, tuple(notes)


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
    path = Path(path)
    data = side_to_dict(side, source_calibration=calibration_source)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, separators=(",", ":"), ensure_ascii=False) + "\n", encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write the baseline ({exc.strerror})", path=path) from None
    return path


def read_baseline(path: str | Path, suite: Suite, *, models: tuple[str, ...] | None = None) -> Side:
    """Read a baseline file; a wrong schema version, kind or suite is one clear InputError."""
    path = Path(path)
    data = _load(path)
    return _side_from_dict(data, path, suite, models)


def _load(path: Path) -> dict:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the baseline ({getattr(exc, 'strerror', None) or exc})", path=path) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON ({exc.msg} at line {exc.lineno}); expected a baseline file", path=path) from None
    if not isinstance(data, dict) or data.get("kind") != BASELINE_KIND:
        raise InputError(f"not a baseline file (expected \"kind\": \"{BASELINE_KIND}\")", path=path)
    if data.get("schema_version") != BASELINE_SCHEMA_VERSION:
        raise InputError(f"baseline schema_version is {data.get('schema_version')!r}, this gate reads "
                         f"{BASELINE_SCHEMA_VERSION}; recreate it with `gate baseline create`", path=path)
    return data


def _side_from_dict(data: dict, path: Path, suite: Suite, models: tuple[str, ...] | None) -> Side:
    if data.get("suite") != suite.name:
        raise InputError(f"baseline is for suite {data.get('suite')!r}, expected {suite.name!r}", path=path)
    try:
        selected = {w.id for w in suite.workloads_for(models)}
        workloads = {}
        for workload_id, w in data["workloads"].items():
            if workload_id not in {x.id for x in suite.workloads}:
                raise InputError(f"workloads.{workload_id}: not a workload of suite {suite.name!r}", path=path)
            if workload_id not in selected:
                continue
            runs = tuple(str(r) for r in w["runs"])
            if not runs:
                raise InputError(f"workloads.{workload_id}.runs: no scored runs; expected at least one", path=path)
            values = {name: tuple(None if v is None else float(v) for v in vals) for name, vals in w["metrics"].items()}
            for name, vals in values.items():
                if len(vals) != len(runs):
                    raise InputError(f"workloads.{workload_id}.metrics.{name}: expected {len(runs)} values (one per run)", path=path)
            workloads[workload_id] = WorkloadSide(
                workload_id=workload_id, runs=runs, values=values, complete=bool(w["complete"]),
                problems=tuple(str(p) for p in w["problems"]),
                samples={m: _samples_from_dict(m, s, len(runs), f"workloads.{workload_id}.samples.{m}", path)
                         for m, s in w.get("samples", {}).items()},
                sample_notes=tuple(str(n) for n in w.get("sample_notes", ())),
                evaluated=tuple(None if e is None else int(e) for e in w.get("evaluated", ())),
                run_complete=tuple(bool(c) for c in w.get("run_complete", ())),
                expected_runs=int(w.get("expected_runs", len(runs))))
        calibration = {wid: {m: _calibration_entry(c) for m, c in metrics.items()}
                       for wid, metrics in (data.get("calibration") or {}).items() if wid in selected}
        source = data["source"]
        return Side(kind="baseline", path=str(path), suite=data["suite"], commit=source.get("commit"),
                    runs=tuple(source.get("runs") or ()), workloads=workloads,
                    missing=tuple(m for m in data.get("missing", ()) if m in selected),
                    fingerprint=Fingerprint.from_dict(data.get("fingerprint") or {}), calibration=calibration)
    except InputError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise InputError(f"malformed baseline ({type(exc).__name__}: {exc}); expected schema_version "
                         f"{BASELINE_SCHEMA_VERSION} as documented in baselines/README.md", path=path) from None


def _calibration_entry(data: dict) -> Calibration | Dispersion:
    """A speed metric's run-to-run noise, or an accuracy measure's over-dispersion (they differ by their keys)."""
    return Dispersion.from_dict(data) if "ss_total" in data else Calibration.from_dict(data)


def _samples_from_dict(measure: str, s: dict, n_runs: int, key: str, path: Path) -> MeasureSamples:
    ids = tuple(str(i) for i in s["ids"])
    ref_len = np.asarray(s["ref_len"], dtype=np.int64)
    errors = np.asarray(s["errors"], dtype=np.int64)
    if errors.shape != (n_runs, len(ids)) or ref_len.shape != (len(ids),):
        raise InputError(f"{key}: expected errors of shape {n_runs}×{len(ids)} and one ref_len per id", path=path)
    valid = np.ones_like(errors, dtype=bool)
    for r, invalid in enumerate(s.get("invalid", [])):
        valid[r, np.asarray(invalid, dtype=np.int64)] = False
    texts = {str(i): (str(t[0]), str(t[1])) for i, t in (s.get("texts") or {}).items()}
    return MeasureSamples(measure=measure, ids=ids, ref_len=ref_len, errors=errors, valid=valid, texts=texts)


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
    data["calibration"] = {w: {m: c.to_dict() for m, c in metrics.items()} for w, metrics in calibration.items()}
    data["calibration_source"] = {
        "pairs": [[a.path, b.path] for a, b in pairs],
        "independent_pairs": len(pairs),
        "within_job_pairs": sum(1 for c in cross_job if not c),
        "cross_job_pairs": sum(1 for c in cross_job if c),
        "commits": sorted({s.commit for pair in pairs for s in pair if s.commit}),
        "created": _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat(),
    }
    try:
        path.write_text(json.dumps(data, separators=(",", ":"), ensure_ascii=False) + "\n", encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write the baseline ({exc.strerror})", path=path) from None
    return data["calibration"]


def with_calibration(side: Side, calibration: Mapping[str, Mapping[str, Calibration | Dispersion]]) -> Side:
    return replace(side, calibration=calibration)


def carry_calibration(side: Side, earlier: str | Path, suite: Suite, *,
                      models: tuple[str, ...] | None = None) -> tuple[Side, dict]:
    """`side` with the calibration of an earlier baseline file (a nightly refresh must not lose the noise
    floor), and the calibration_source to record: the earlier one's, plus where it was carried from."""
    old = read_baseline(earlier, suite, models=models)
    raw = json.loads(Path(earlier).read_text(encoding="utf-8"))  # read_baseline has validated it
    source = dict(raw.get("calibration_source") or {}, carried_from=str(earlier))
    return with_calibration(side, old.calibration), source


def selected(side: Side, workload_ids: Iterable[str]) -> Side:
    keep = set(workload_ids)
    return replace(side, workloads={k: v for k, v in side.workloads.items() if k in keep},
                   missing=tuple(m for m in side.missing if m in keep))
