"""A result tree as one side of a comparison: per workload the per-run metric values, coverage, the
per-utterance error arrays stacked by utterance id, and the fingerprint (`side_from_tree`).

Problems stay typed (gate.formats.result_types.Problem) and attached to the run they are about (`Problem.run`),
so a workload with a broken or incomplete run is incomplete as a whole and the reason names the run and
the file.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

import numpy as np

from gate.formats import runlog
from gate.formats.config import Suite, Workload
from gate.formats.result_types import INVALID_SAMPLES, MISSING_RUN, Problem, ResultTree, WorkloadRun
from gate.reading import samples as samples_module
from gate.reading.copies import refuse_copies, side_hashes
from gate.reading.results import read_tree
from gate.reading.side import MISMATCH, UNAVAILABLE, JobOrder, MeasureSamples, Side, WorkloadSide
from gate.reading.tree_fingerprint import fingerprint_of_tree

TEXT_EXCERPT = 300  # characters of reference/hypothesis kept per utterance, for reports

# (run directory, the typed run gate.reading.results read, workload) -> {measure: MeasureSamples of that one run}
SampleReader = Callable[[Path, WorkloadRun, Workload], Mapping[str, MeasureSamples]]


def side_from_tree(tree: ResultTree | str | Path, suite: Suite, *, models: tuple[str, ...] | None = None,
                   sample_reader: SampleReader | None = None) -> Side:
    """Summarize a result tree. `sample_reader(run_dir, run, workload)` -> {measure: one run's MeasureSamples}."""
    if not isinstance(tree, ResultTree):
        tree = read_tree(tree, suite, models=models)
    reader = sample_reader or _samples_of_run
    workloads = {}
    present = {info.name for info in tree.runs if info.present}
    for workload_id, planned in tree.workloads.items():
        workload = suite.workload(workload_id)
        # A planned run without a directory is a problem (MISSING_RUN), not a run: `runs` lists the runs
        # present, `expected_runs` the runs planned (as WorkloadSide defines them).
        problems = tuple(replace(p, run=r.run) for r in planned for p in r.coverage.problems)
        runs = tuple(r for r in planned if r.run in present)
        values = {m.name: tuple(r.metrics.get(m.name) for r in runs) for m in workload.metrics}
        expected = len(tree.runs_of(workload_id))
        if len(planned) < expected:
            problems += (Problem(MISSING_RUN, f"only {len(planned)} of {expected} scored runs"),)
        measures, notes, invalid = _samples_of(tree, workload, reader)
        problems += invalid  # a malformed per-sample file is a malformed result file: the run is invalid
        workloads[workload_id] = WorkloadSide(
            workload_id=workload_id, runs=tuple(r.run for r in runs), values=values,
            complete=not problems, problems=problems, samples=measures, sample_notes=notes,
            evaluated=tuple(r.coverage.evaluated for r in runs),
            run_complete=tuple(not r.coverage.problems and r.run not in _runs_named(invalid) for r in runs),
            expected_runs=len(tree.runs_of(workload_id)),
            passes={m.name: tuple(r.passes.get(m.name, ()) for r in runs) for m in workload.metrics
                    if m.kind == "speed" and any(r.passes.get(m.name) for r in runs)},
            attempts={r.run: r.attempts for r in runs if r.attempts is not None})
    commits = sorted({r.commit for r in tree.runs if r.commit})
    side = Side(kind="tree", path=str(tree.root), suite=suite.name, commit=" | ".join(commits) or None,
                runs=tree.run_names, workloads=workloads, missing=tuple(tree.missing_workloads),
                fingerprint=fingerprint_of_tree(tree, suite), order=job_order(Path(tree.root), workloads))
    refuse_copies([("", side_hashes(side))], path=tree.root)  # a run copied inside the tree (gate.reading.copies)
    return side


def job_order(root: Path, workloads: Iterable[str]) -> JobOrder | None:
    """Where the tree's runs sat in its A/B job, per model, from the run log (gate.formats.runlog.server_starts); None
    for a tree without one (made by hand), of one side, or whose directory is not a side the log names."""
    log = runlog.read(root)
    if log is None or log.plan is None or len(log.sides) != 2 or root.name not in log.sides:
        return None
    at = {}
    for model in dict.fromkeys(w.split("/", 1)[0] for w in workloads):
        found = runlog.server_starts(log, model)
        if found is not None:
            at[model] = {run: place for (side, run), place in found.items() if side == root.name}
    return JobOrder(job=log.started, arm=list(log.sides).index(root.name), at=at)


def _runs_named(problems: Iterable[Problem]) -> set[str]:
    """The runs that `problems` are about."""
    return {p.run for p in problems if p.run is not None}


def _samples_of(tree: ResultTree, workload, reader: SampleReader | None) -> tuple[dict, tuple[str, ...], tuple[Problem, ...]]:
    """(usable measures, notes on unusable ones, problems): a per-sample file that exists but is malformed
    or unreadable is a problem (the workload run is invalid), not merely a note."""
    wanted = [m.samples for m in workload.metrics if m.kind == "accuracy" and m.samples]
    if not wanted:
        return {}, (), ()
    if reader is None:
        return {}, ("per-sample loader unavailable",), ()
    runs = [run for run in tree.runs_of(workload.id) if run.present]
    read = {r.run: r for r in tree.workloads[workload.id]}
    per_run: list[Mapping[str, MeasureSamples]] = []
    for run in runs:
        # The reader reports bad data in each measure's crosscheck and never raises for it: an exception
        # here is a bug (exit 70), never a quiet fall back to the weaker test on the means.
        per_run.append(reader(Path(run.path), read[run.name], workload) or {})
    invalid = []
    for run, found in zip(runs, per_run, strict=True):
        messages = {item.crosscheck.message for item in found.values() if item.crosscheck.invalid}
        invalid += [Problem(INVALID_SAMPLES, message, run=run.name) for message in sorted(messages)]
    measures, notes = {}, []
    for measure in wanted:
        result = _measure_from_runs(measure, [run.name for run in runs], [r.get(measure) for r in per_run])
        if isinstance(result, str):
            notes.append(f"{measure}: {result}")
        else:
            measures[measure] = result
    return measures, tuple(notes), tuple(invalid)


def _samples_of_run(run_dir: Path, run: WorkloadRun, workload: Workload) -> Mapping[str, MeasureSamples]:
    return samples_module.samples_of_run(run, workload)


def _measure_from_runs(measure: str, run_names: Sequence[str],
                       per_run: Sequence[MeasureSamples | None]) -> MeasureSamples | str:
    """Stack one measure's one-run MeasureSamples by id; a string says why it cannot be used."""
    for name, item in zip(run_names, per_run, strict=True):
        if item is None:
            return f"no per-sample data in {name}"
        if item.crosscheck.status == UNAVAILABLE:
            return f"no usable per-sample data in {name} ({item.crosscheck.message})"
        if item.crosscheck.status == MISMATCH:
            return f"{name}: per-sample data does not reproduce the file's figure ({item.crosscheck.message})"
    present = [item for item in per_run if item is not None]
    ids = present[0].ids
    if len(set(ids)) != len(ids):
        return f"{run_names[0]}: duplicate utterance ids"
    position = {i: k for k, i in enumerate(ids)}
    n = len(ids)
    ref_len = np.asarray(present[0].ref_len, dtype=np.int64)
    errors = np.zeros((len(present), n), dtype=np.int64)
    valid = np.zeros((len(present), n), dtype=bool)
    texts: dict[str, tuple[str, str]] = {}
    worst = np.full(n, -1)
    for r, (name, item) in enumerate(zip(run_names, present, strict=True)):
        if set(item.ids) != set(ids) or len(item.ids) != n:
            return f"{name}: utterance ids differ from {run_names[0]}'s"
        order = np.fromiter((position[i] for i in item.ids), dtype=np.int64, count=n)
        if not np.array_equal(ref_len[order], np.asarray(item.ref_len, dtype=np.int64)):
            return f"{name}: reference lengths differ from {run_names[0]}'s (normalization changed?)"
        errors[r, order] = item.errors[0]
        valid[r, order] = item.valid[0]
        for utt, (ref, hyp) in item.texts.items():  # the run with the most errors gives an utterance's texts
            e = int(errors[r, position[utt]])
            if e > worst[position[utt]]:
                worst[position[utt]] = e
                texts[utt] = (ref[:TEXT_EXCERPT], hyp[:TEXT_EXCERPT])
    return MeasureSamples(measure=measure, ids=tuple(ids), ref_len=ref_len, errors=errors, valid=valid, texts=texts,
                          checks=tuple(item.crosscheck for item in present))
