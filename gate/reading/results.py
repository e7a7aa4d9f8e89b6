"""Read a result tree into typed runs: per workload, per scored run, its metrics, coverage and provenance.

The runbook layout (docs/design.md §Flow):

    <tree>/run<R>/commit.txt, freeze.txt            written by runbook Step 4 (env.json by `gate run`)
    <tree>/run<R>/<model>/asr_{en,zh}.json          SeedTTS client --output (schema_version 2)
    <tree>/run<R>/<model>/raw_{en,zh}/*.jsonl       SeedTTS --save-raw-dir (per-sample; see samples.py)
    <tree>/run<R>/moss_td/<dataset>/transcribe_diarize_{results,speed_results}.json

Runs are what was planned: the scored runs are the suite's (run1..run3), or exactly those the
tree's `gate-run.json` lists, as its one owner gate.formats.runlog reads it (`gate run` may plan more, e.g.
second-look runs). A planned run without a directory makes every workload incomplete (MISSING_RUN);
any other run* directory (run1.bak, a copy) and any result file of a workload the suite does not have
is reported in `ResultTree.ignored` and never read. Coverage follows the runbook's "Coverage" section exactly
and keeps *why* a workload run is incomplete.

Every file is read by gate.formats.inputs (regular files inside the tree, size caps, strict JSON) and every
value the gate uses is typed and ranged (gate.reading.result_files: counts non-negative integers, metrics
within the plausible range the suite gives them). A violation makes that workload's run INCOMPLETE
(UNREADABLE, BAD_SCHEMA, MISSING_METRIC) with one line naming the file and the field; nothing is
coerced. A metric that is null in one run but measured in another is that run's NULL_METRIC: a mean
is never computed quietly from the other runs. An env.json that cannot be read is kept
as `RunInfo.env_problem` (comparability then treats GPU and driver as unknown-but-different).

The CI artifact layout (docs/upstream.md §2.3, §2.5) is read too, detected automatically when no run
directory holds a runbook file: `asr_seedtts_{en,zh}_results.json` (summary + speed, no per-sample
data, one SeedTTS model per CI run, matched by `model_path`) and
`moss_transcribe_diarize_{,stream_,aishell4_long_,googletime_}results.json` (the EvaluationPayload
with per_sample and speed in one file; `aishell4_long90` is not a suite workload). Files may lie at
any depth, e.g. /tmp/pytest-of-<user>/pytest-<N>/<test>0/. Runs: each run<R> directory holding CI
files is a run; otherwise the whole tree is one run, named run1. Retries leave several copies
(pytest-<N> = one attempt): the latest attempt is used (highest N, then newest mtime), as the
gate must not average a failed attempt with its retry, and the failed ones before it are kept in
`WorkloadRun.attempts`, for the report to name. The CI files carry no max_new_tokens, so
that coverage rule cannot be checked there.
"""
from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from gate.formats import inputs, runlog
from gate.formats.commit_record import FILE as COMMIT_FILE
from gate.formats.commit_record import read_commit
from gate.formats.config import Suite, Workload
from gate.formats.errors import InputError
from gate.formats.inputs import Unreadable
from gate.formats.result_types import (
    MISSING_FILE,
    MISSING_RUN,
    MOSS_RESULTS_FILE,
    NULL_METRIC,
    RUN_RECORD,
    Coverage,
    Problem,
    Provenance,
    ResultTree,
    RunInfo,
    WorkloadRun,
)
from gate.formats.schema import SchemaError
from gate.reading.result_files import ci_files, read_workload_run

_RUN_DIR = re.compile(r"^run(.+)$")


def read_tree(root: str | Path, suite: Suite, *, models: tuple[str, ...] | None = None) -> ResultTree:
    """Read every planned scored run of a tree. Raises InputError when `root` cannot be opened as a tree at all."""
    root = Path(root)
    if not root.exists():
        raise InputError("no such directory; expected a result tree <tree>/run<R>/...", path=root)
    if not root.is_dir():
        raise InputError("not a directory; expected a result tree <tree>/run<R>/...", path=root)
    workloads = suite.workloads_for(models)
    planned = planned_runs(root, suite, models)
    present = {d.name: d for d in _run_dirs(root, suite)}
    run_dirs = [root / name for name in planned]
    ignored = [f"{name}: not a planned run ({', '.join(planned)}); ignored" for name in sorted(present)
               if name not in planned]
    layout = "runbook"
    existing = [d for d in run_dirs if d.name in present]
    if not any(inputs.is_present(d / w.path) for d in existing for w in suite.workloads):
        if existing and all(ci_files(d) for d in existing):
            layout = "ci"
        elif not existing and ci_files(root):
            layout, run_dirs, ignored = "ci", [root], []
    if layout == "runbook" and not existing:
        raise InputError(f"no scored run directories ({', '.join(planned)}) and no CI result "
                         f"files; expected the runbook layout <tree>/run<R>/<model>/... or CI artifacts"
                         f"{_layout_fix(root, suite)}", path=root)
    single = run_dirs == [root]
    runs = tuple(replace(_run_info(d, root), name="run1") if single else _run_info(d, root) for d in run_dirs)
    if not single:
        ignored += _unknown_results(existing, suite)
    read: dict[str, tuple[WorkloadRun, ...]] = {}
    missing = []
    per_workload: dict[str, tuple[str, ...]] = {}
    for workload in workloads:
        model_id = suite.models[workload.model].model_id
        own = set(planned_runs(root, suite, (workload.model,))) if not single else None
        infos = [info for info in runs if own is None or info.name in own]
        if len(infos) < len(runs):
            per_workload[workload.id] = tuple(info.name for info in infos)
        found = _inconsistent_nulls([_planned_workload_run(info, Path(info.path), workload, model_id, root)
                                     for info in infos], workload)
        if all(r.coverage.codes and set(r.coverage.codes) <= {MISSING_FILE, MISSING_RUN} and not _has_any_file(r)
               for r in found):
            missing.append(workload.id)
            continue
        read[workload.id] = tuple(replace(r, run="run1") if single else r for r in found)
    return ResultTree(root=str(root), layout=layout, runs=runs, workloads=read, missing_workloads=tuple(missing),
                      ignored=tuple(ignored), planned=per_workload)


def _planned_workload_run(info: RunInfo, run_dir: Path, workload: Workload, model_id: str, root: Path) -> WorkloadRun:
    if not info.present:
        problem = Problem(MISSING_RUN, "missing; a planned scored run (expected its run directory)", str(run_dir))
        return WorkloadRun(workload.id, info.name, {m.name: None for m in workload.metrics},
                           Coverage(expected=workload.expected_samples, problems=(problem,)), Provenance(), ())
    found = read_workload_run(run_dir, workload, model_id=model_id, root=root)
    if info.problems:
        found = replace(found, coverage=replace(found.coverage, problems=found.coverage.problems + info.problems))
    return found


def _inconsistent_nulls(found: list[WorkloadRun], workload: Workload) -> list[WorkloadRun]:
    """A metric null in an otherwise complete run while another run of the workload measured it: that
    run gets a NULL_METRIC problem (the client writes null only where nothing was measured, and then in
    every run alike), so the other runs' values are never averaged as if they were all."""
    out = []
    for run in found:
        problems = []
        for metric in workload.metrics if run.complete else ():
            if run.metrics.get(metric.name) is not None:
                continue
            measured = [r.run for r in found if r.metrics.get(metric.name) is not None]
            if measured:
                path = run.files[1] if metric.file == "speed" and len(run.files) > 1 else run.files[0]
                problems.append(Problem(NULL_METRIC, f"{metric.path} is null, but {', '.join(measured)} measured it; "
                                                     f"expected a value in every run or in none", path))
        out.append(replace(run, coverage=replace(run.coverage, problems=run.coverage.problems + tuple(problems)))
                   if problems else run)
    return out


def _has_any_file(run: WorkloadRun) -> bool:
    return any(inputs.is_present(f) for f in run.files)


def planned_runs(root: Path, suite: Suite, models: tuple[str, ...] | None = None) -> tuple[str, ...]:
    """The scored run names of a tree: those gate-run.json plans (without the warm run), else (no log) the
    suite's. A log gate.formats.runlog refuses is an InputError: what was planned cannot be known.

    gate-run.json lists runs as "<side>/run<R>"; a tree is one side's directory, so labels of the
    directory's own side are used (all labels when none match, e.g. after a rename). A second look
    extends only undecided models: when the log says which scored runs were made per model
    (`scored_runs`), reading some models plans the suite's runs plus the extension runs of those models
    only, so a model that stopped after the first look is not missing run4..run6.
    """
    planned = _logged_runs(root, suite)
    per_model = _per_model_runs(root, models)
    if per_model is None:
        return planned
    first = {f"run{r}" for r in suite.scored_runs}
    return tuple(run for run in planned if run in first or run in per_model)


def _per_model_runs(root: Path, models: tuple[str, ...] | None) -> set[str] | None:
    """The runs gate-run.json says were made for `models` on this side; None when it does not say."""
    if models is None:
        return None
    log = runlog.read(root)
    side = log.scored_runs.get(Path(root).name) if log is not None else None
    if side is None:
        return None
    return {run for m in models for run in side.get(m, ())}


def _logged_runs(root: Path, suite: Suite) -> tuple[str, ...]:
    log = runlog.read(root)
    if log is None:  # a tree made by hand with the runbook: the suite's runs and any further run dirs
        suite_runs = [f"run{r}" for r in suite.scored_runs]
        present = [d.name for d in _run_dirs(Path(root), suite) if _RUN_DIR.match(d.name)]
        return tuple(sorted(dict.fromkeys(suite_runs + present), key=_run_key))
    split = [label.rsplit("/", 1) if "/" in label else ["", label] for label in log.runs]
    own = [run for side, run in split if side == Path(root).name] or [run for _, run in split]
    names = [run for run in dict.fromkeys(own) if _RUN_DIR.match(run) and run != f"run{suite.warm_run}"]
    if not names:
        raise InputError("lists no scored run; expected the run log `gate run` writes", path=Path(root) / runlog.FILE)
    # A scored run folder holding results that the log does not list contradicts it (a log edited to drop a
    # run, or runs of another attempt): named, never judged on the runs the log happens to keep.
    listed = set(own)  # this side's runs: another side's run3 lists nothing here
    unlisted = [d.name for d in _run_dirs(Path(root), suite) if re.fullmatch(r"run\d+", d.name)
                and d.name not in listed and any(p.is_file() for p in d.rglob("*.json"))]
    if unlisted:
        raise InputError(f"lists {', '.join(sorted(names, key=_run_key))} but not {', '.join(sorted(unlisted, key=_run_key))}, "
                         "which holds results; expected the log of the gate run that made every run of this tree "
                         "(or move the other runs away)", path=Path(root) / runlog.FILE)
    return tuple(sorted(names, key=_run_key))


def _run_key(name: str) -> tuple:
    tail = name[3:]
    return (0, int(tail), "") if tail.isdigit() else (1, 0, name)


def _layout_fix(root: Path, suite: Suite) -> str:
    """The fix for a tree path one level off: a run folder (give its parent) or a folder of trees (give one)."""
    try:
        children = sorted(c for c in root.iterdir() if c.is_dir() and not c.is_symlink())
    except OSError:
        return ""
    models = {w.path.split("/")[0] for w in suite.workloads}
    if _RUN_DIR.match(root.name) or any(c.name in models for c in children):
        return f"; this is one run of a tree: give the tree, {root.parent}"
    trees = [c.name for c in children if _run_dirs(c, suite)]
    if trees:
        return f"; this folder holds the trees {', '.join(trees[:4])}: give one of them, {root / trees[0]}"
    return "; give the folder that holds run1/, run2/, run3/ (the runbook's $OUT/$NAME)"


def _run_dirs(root: Path, suite: Suite) -> list[Path]:
    """run<R> directories other than the warm run, numeric R first in numeric order, then others by name."""
    found = []
    for child in root.iterdir():
        match = _RUN_DIR.match(child.name)
        if match and match.group(1) != suite.warm_run and child.is_dir() and not child.is_symlink():
            found.append(child)
    return sorted(found, key=lambda p: _run_key(p.name))


def _unknown_results(run_dirs: list[Path], suite: Suite) -> list[str]:
    """Result files of workloads the suite does not have (reported, never read)."""
    known = {w.path for w in suite.workloads}
    moss_models = {w.model for w in suite.workloads if w.format == "moss"}
    found = []
    for run_dir in run_dirs:
        for path in sorted(run_dir.glob("*/asr_*.json")):
            rel = path.relative_to(run_dir).as_posix()
            if rel not in known:
                found.append(f"{run_dir.name}/{rel}: not a suite workload; ignored")
        for model in sorted(moss_models):
            for path in sorted((run_dir / model).glob(f"*/{MOSS_RESULTS_FILE}")):
                rel = path.parent.relative_to(run_dir).as_posix()
                if rel not in known:
                    found.append(f"{run_dir.name}/{rel}: not a suite workload; ignored")
    return found


# --- run directory files --------------------------------------------------------------------------

def _run_info(run_dir: Path, root: Path) -> RunInfo:
    if not run_dir.is_dir():
        return RunInfo(name=run_dir.name, path=str(run_dir), commit=None, freeze=None, env=None, present=False)
    problems: list[Problem] = []
    commit = _commit(run_dir, problems)
    freeze = _run_text(run_dir / "freeze.txt", inputs.FREEZE, root, problems)
    env, env_problem = read_env(run_dir / "env.json", root)
    return RunInfo(
        name=run_dir.name,
        path=str(run_dir),
        commit=commit,
        freeze=tuple(line for line in freeze.splitlines() if line.strip()) if freeze is not None else None,
        env=env,
        env_problem=env_problem,
        problems=tuple(problems),
    )


def read_env(path: Path, root: Path | None = None) -> tuple[dict | None, str | None]:
    """(env.json document, None), (None, None) when there is none, or (None, one-line problem) when it
    exists but cannot be read or fails its schema (gate.formats.env.check_env)."""
    from gate.formats.env import check_env  # gate.formats.env writes the record; importing it here keeps one schema

    if not inputs.is_present(path):
        return None, None
    try:
        doc = inputs.load_json(path, inputs.ENV, root=root)
        check_env(doc)
    except Unreadable as exc:
        return None, str(exc)
    except SchemaError as exc:
        return None, f"{path}: {exc}; expected the env record `gate run` writes"
    return doc, None


def _commit(run_dir: Path, problems: list[Problem]) -> str | None:
    """The run's commit (gate.formats.commit_record); a commit.txt it refuses makes the run invalid (RUN_RECORD)."""
    try:
        return read_commit(run_dir)
    except Unreadable as exc:
        problems.append(Problem(RUN_RECORD, exc.reason, str(run_dir / COMMIT_FILE)))
        return None


def _run_text(path: Path, kind: inputs.Kind, root: Path, problems: list[Problem]) -> str | None:
    if not inputs.is_present(path):
        return None
    try:
        return inputs.read_text(path, kind, root=root)
    except Unreadable as exc:
        problems.append(Problem(RUN_RECORD, exc.reason, str(path)))
        return None


def runs_with_model(tree: Path, suite: Suite, model: str) -> tuple[str, ...]:
    """Scored run folders (run<R>, not the warm run) of a tree that hold the model's folder, in order."""
    found = [p.name for p in Path(tree).iterdir()
             if p.is_dir() and p.name.startswith("run") and p.name != f"run{suite.warm_run}" and (p / model).is_dir()]
    return tuple(sorted(found, key=lambda n: (0, int(n[3:]), "") if n[3:].isdigit() else (1, 0, n)))
