"""Read a result tree into typed runs: per workload, per scored run, its metrics, coverage and provenance.

The runbook layout (ARCHITECTURE.md "Decisions already taken"):

    <tree>/run<R>/commit.txt, freeze.txt            written by runbook Step 4 (env.json by `gate run`)
    <tree>/run<R>/<model>/asr_{en,zh}.json          SeedTTS client --output (schema_version 2)
    <tree>/run<R>/<model>/raw_{en,zh}/*.jsonl       SeedTTS --save-raw-dir (per-sample; see samples.py)
    <tree>/run<R>/moss_td/<dataset>/transcribe_diarize_{results,speed_results}.json

Runs are what was planned: the scored runs are the suite's (run1..run3), or exactly those the
tree's `gate-run.json` lists (`gate run` may plan more, e.g. second-look runs). A planned run
without a directory makes every workload incomplete (MISSING_RUN); any other run* directory
(run1.bak, a copy) and any result file of a workload the suite does not have is reported in
`ResultTree.ignored` and never read. Coverage follows the runbook's "Coverage" section exactly
and keeps *why* a workload run is incomplete.

Every file is read by gate.inputs (regular files inside the tree, size caps, strict JSON) and every
value the gate uses is typed and ranged by gate.schema: counts are non-negative integers, speed
metrics positive numbers, accuracy and other metrics non-negative numbers, provenance strings
strings. A violation makes that workload's run INCOMPLETE (UNREADABLE or BAD_SCHEMA) with one
line naming the file and the field; nothing is coerced. An env.json that cannot be read is kept
as `RunInfo.env_problem` (comparability then treats GPU and driver as unknown-but-different).

The CI artifact layout (reference §2.3, §2.5) is read too, detected automatically when no run
directory holds a runbook file: `asr_seedtts_{en,zh}_results.json` (summary + speed, no per-sample
data, one SeedTTS model per CI run, matched by `model_path`) and
`moss_transcribe_diarize_{,stream_,aishell4_long_,googletime_}results.json` (the EvaluationPayload
with per_sample and speed in one file; `aishell4_long90` is not a suite workload). Files may lie at
any depth, e.g. /tmp/pytest-of-<user>/pytest-<N>/<test>0/. Runs: each run<R> directory holding CI
files is a run; otherwise the whole tree is one run, named run1. Retries leave several copies
(pytest-<N> = one attempt): the latest attempt is used (highest N, then newest mtime), as the
gate must not average a failed attempt with its retry. The CI files carry no max_new_tokens, so
that coverage rule cannot be checked there.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping

from gate import inputs, schema
from gate.config import MetricSpec, Suite, Workload
from gate.errors import InputError
from gate.inputs import Unreadable
from gate.schema import COUNT, NON_EMPTY_STRING, OBJECT, POSITIVE, POSITIVE_INT, STRING, SchemaError, optional

SEEDTTS_SCHEMA_VERSION = 2
MOSS_RESULTS_FILE = "transcribe_diarize_results.json"
MOSS_SPEED_FILE = "transcribe_diarize_speed_results.json"

# Why a workload run is not complete. Each code is a distinct runbook coverage rule.
MISSING_FILE = "missing_file"  # a result file the workload needs is absent
UNREADABLE = "unreadable"  # not JSON (truncated, empty), NaN/Infinity, not UTF-8
BAD_SCHEMA = "bad_schema"  # JSON, but not the schema the client writes (keys, types, schema_version)
EVALUATED_NE_TOTAL = "evaluated_ne_total"  # some samples were not evaluated
SKIPPED = "skipped"  # SeedTTS counted skipped samples
WRONG_TOTAL = "wrong_total"  # total is not the expected sample count (e.g. --max-samples)
FAILED_REQUESTS = "failed_requests"  # MOSS speed.failed_requests > 0
NO_SPEED = "no_speed"  # MOSS speed lacks throughput/latency/RTF: every request failed
MAX_NEW_TOKENS_SET = "max_new_tokens_set"  # movies800times* sent a token budget (runbook Step 6)
MISSING_RUN = "missing_run"  # a planned scored run (suite or gate-run.json) has no run directory
RUN_RECORD = "run_record"  # the run's commit.txt or freeze.txt exists but cannot be read
# Problems meaning a file is broken (not merely showing an incomplete measurement).
INPUT_CODES = (UNREADABLE, BAD_SCHEMA, RUN_RECORD)
RUN_LOG_FILE = "gate-run.json"  # written by `gate run` at the tree's root; lists the runs it planned

_RUN_DIR = re.compile(r"^run(.+)$")


@dataclass(frozen=True)
class Problem:
    code: str
    message: str
    path: str | None = None

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


@dataclass(frozen=True)
class Coverage:
    expected: int
    evaluated: int | None = None
    total: int | None = None
    skipped: int | None = None
    failed_requests: int | None = None
    problems: tuple[Problem, ...] = ()

    @property
    def complete(self) -> bool:
        return not self.problems

    @property
    def codes(self) -> tuple[str, ...]:
        return tuple(p.code for p in self.problems)


@dataclass(frozen=True)
class Provenance:
    """What a workload run measured with: the facts comparability is judged on."""

    dataset_id: str | None = None
    dataset_revision: str | None = None
    model_id: str | None = None
    model_revision: str | None = None
    evaluation_input_sha256: str | None = None
    dependency_freeze_sha256: str | None = None
    packages: Mapping[str, str | None] = field(default_factory=dict)
    max_new_tokens: int | None = None
    request_timeout_s: float | None = None
    concurrency: int | None = None
    stream: bool | None = None


@dataclass(frozen=True)
class WorkloadRun:
    workload_id: str
    run: str  # run directory name, e.g. "run1"
    metrics: Mapping[str, float | None]  # metric name -> value; None when absent in the file
    coverage: Coverage
    provenance: Provenance
    files: tuple[str, ...]  # the files read, for messages
    samples_path: str | None = None  # per-sample source: SeedTTS raw JSONL directory, MOSS results file (gate.samples)

    @property
    def complete(self) -> bool:
        return self.coverage.complete


@dataclass(frozen=True)
class RunInfo:
    name: str  # "run1"
    path: str
    commit: str | None
    freeze: tuple[str, ...] | None  # pip freeze lines
    env: Mapping[str, Any] | None  # env.json written by `gate run`, if present and readable
    present: bool = True  # False: a planned run with no directory
    env_problem: str | None = None  # env.json exists but cannot be read or fails its schema (one line)
    problems: tuple[Problem, ...] = ()  # commit.txt / freeze.txt present but unreadable: the run is invalid


@dataclass(frozen=True)
class ResultTree:
    root: str
    layout: str  # "runbook" or "ci"
    runs: tuple[RunInfo, ...]  # planned scored runs, in numeric order (absent ones have present=False)
    workloads: Mapping[str, tuple[WorkloadRun, ...]]  # workload id -> one entry per scored run, suite order
    missing_workloads: tuple[str, ...]  # suite workloads with no file in any scored run
    problems: tuple[Problem, ...] = ()  # tree-level problems (none today: kept for readers of old code)
    ignored: tuple[str, ...] = ()  # run* directories and result files that are not planned: reported, never read
    # workload id -> its planned scored runs, where that is fewer than `runs` (a second look extends
    # only undecided models: a model that stopped after the first look has no run4..run6)
    planned: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def runs_of(self, workload_id: str) -> tuple[RunInfo, ...]:
        names = self.planned.get(workload_id)
        return self.runs if names is None else tuple(r for r in self.runs if r.name in names)

    @property
    def run_names(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.runs)

    def complete(self, workload_id: str) -> bool:
        runs = self.workloads.get(workload_id, ())
        return bool(runs) and len(runs) == len(self.runs) and all(r.complete for r in runs)


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
                         f"files; expected the runbook layout <tree>/run<R>/<model>/... or CI artifacts", path=root)
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
        found = [_planned_workload_run(info, Path(info.path), workload, model_id, root) for info in infos]
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


def _has_any_file(run: WorkloadRun) -> bool:
    return any(inputs.is_present(f) for f in run.files)


def planned_runs(root: Path, suite: Suite, models: tuple[str, ...] | None = None) -> tuple[str, ...]:
    """The scored run names of a tree: those gate-run.json plans (without the warm run), else the suite's
    (also when gate-run.json has no `runs`). An unreadable gate-run.json, or `runs` of the wrong shape,
    is an InputError: what was planned cannot be known.

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
    log = Path(root) / RUN_LOG_FILE
    if models is None or not inputs.is_present(log):
        return None
    try:
        doc = inputs.load_json(log, inputs.RUN_LOG, root=root)
    except Unreadable:
        return None  # _logged_runs has already refused an unreadable log
    made = doc.get("scored_runs") if isinstance(doc, dict) else None
    side = made.get(Path(root).name) if isinstance(made, dict) else None
    if not isinstance(side, dict) or not all(isinstance(side.get(m, []), list) for m in models):
        return None
    return {str(run) for m in models for run in side.get(m, [])}


def _logged_runs(root: Path, suite: Suite) -> tuple[str, ...]:
    log = Path(root) / RUN_LOG_FILE
    if not inputs.is_present(log):
        return tuple(f"run{r}" for r in suite.scored_runs)
    try:
        doc = inputs.load_json(log, inputs.RUN_LOG, root=root)
        labels = schema.get_optional(doc, "runs", OBJECT)
        if labels is None:  # a run log that plans nothing (hand-made, or cut short before planning)
            return tuple(f"run{r}" for r in suite.scored_runs)
        for label in labels:
            NON_EMPTY_STRING(label, "runs")
    except Unreadable as exc:
        raise InputError(f"{exc.reason}; expected the run log `gate run` writes (it lists the planned runs)",
                         path=log) from None
    except SchemaError as exc:
        raise InputError(f"{exc}; expected the run log `gate run` writes (runs: {{\"<side>/run<R>\": status}})",
                         path=log) from None
    split = [label.rsplit("/", 1) if "/" in label else ["", label] for label in labels]
    own = [run for side, run in split if side == Path(root).name] or [run for _, run in split]
    names = [run for run in dict.fromkeys(own) if _RUN_DIR.match(run) and run != f"run{suite.warm_run}"]
    if not names:
        raise InputError("lists no scored run; expected the run log `gate run` writes", path=log)
    return tuple(sorted(names, key=_run_key))


def _run_key(name: str) -> tuple:
    tail = name[3:]
    return (0, int(tail), "") if tail.isdigit() else (1, 0, name)


def _run_dirs(root: Path, suite: Suite) -> list[Path]:
    """run<R> directories other than the warm run, numeric R first in numeric order, then others by name."""
    found = []
    for child in root.iterdir():
        match = _RUN_DIR.match(child.name)
        if match and match.group(1) != suite.warm_run and child.is_dir() and not child.is_symlink():
            found.append(child)
    return sorted(found, key=lambda p: _run_key(p.name))


def scored_run_dirs(root: Path, suite: Suite) -> list[Path]:
    """The planned scored run directories that exist, in run order."""
    root = Path(root)
    return [root / name for name in planned_runs(root, suite) if (root / name).is_dir()]


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


def read_workload_run(run_dir: Path, workload: Workload, *, model_id: str | None = None,
                      root: Path | None = None) -> WorkloadRun:
    """One workload in one run directory, runbook layout or (when its runbook file is absent) CI artifacts.

    `model_id` (the suite model's id) picks the CI SeedTTS file of the right model; without it any
    model's file is accepted. Files must lie inside `root` (default: the run directory's parent,
    the tree) after resolving links.
    """
    run_dir = Path(run_dir)
    root = Path(root) if root is not None else run_dir.parent
    if not inputs.is_present(run_dir / workload.path):
        ci_name = _ci_name(workload)
        ci_path = ci_files(run_dir).get(ci_name) if ci_name else None
        if ci_path is not None:
            if workload.format == "seedtts":
                return _read_ci_seedtts(run_dir, ci_path, workload, model_id, root)
            return _read_ci_moss(run_dir, ci_path, workload, root)
    if workload.format == "seedtts":
        return _read_seedtts(run_dir, workload, root)
    return _read_moss(run_dir, workload, root)


def moss_results_path(run_dir: Path, workload: Workload) -> Path:
    """Where a MOSS workload's EvaluationPayload (with per_sample) is: the runbook file, else the CI artifact."""
    runbook = Path(run_dir) / workload.path / MOSS_RESULTS_FILE
    if inputs.is_present(runbook.parent):
        return runbook
    ci_name = _ci_name(workload)
    return ci_files(Path(run_dir)).get(ci_name, runbook) if ci_name else runbook


# --- CI artifacts ---------------------------------------------------------------------------------

CI_FILES = {
    "asr_seedtts_en_results.json": "asr_en",
    "asr_seedtts_zh_results.json": "asr_zh",
    "moss_transcribe_diarize_results.json": "movies800times",
    "moss_transcribe_diarize_stream_results.json": "movies800times_stream",
    "moss_transcribe_diarize_aishell4_long_results.json": "aishell4_long",
    "moss_transcribe_diarize_googletime_results.json": "googletime",
}
_ATTEMPT_DIR = re.compile(r"^pytest-(\d+)$")


def ci_files(directory: Path) -> dict[str, Path]:
    """CI result files anywhere under `directory`, one per name: the latest attempt's."""
    chosen: dict[str, tuple[tuple[int, float, str], Path]] = {}
    for name in CI_FILES:
        for path in Path(directory).rglob(name):
            try:
                info = path.lstat()
            except OSError:
                continue
            attempt = max((int(m.group(1)) for part in path.parts if (m := _ATTEMPT_DIR.match(part))), default=-1)
            key = (attempt, info.st_mtime, str(path))
            if name not in chosen or key > chosen[name][0]:
                chosen[name] = (key, path)  # a non-regular file is chosen too: the reader then names it
    return {name: path for name, (_, path) in chosen.items()}


def _ci_name(workload: Workload) -> str | None:
    for name, workload_name in CI_FILES.items():
        if workload_name == workload.name and (name.startswith("asr_") == (workload.format == "seedtts")):
            return name
    return None


def _broken(run_dir: Path, workload: Workload, problem: Problem, files: tuple[str, ...],
            samples_path: str | None = None) -> WorkloadRun:
    return WorkloadRun(workload.id, run_dir.name, {m.name: None for m in workload.metrics},
                       Coverage(expected=workload.expected_samples, problems=(problem,)), Provenance(), files,
                       samples_path=samples_path)


def _read_ci_seedtts(run_dir: Path, path: Path, workload: Workload, model_id: str | None, root: Path) -> WorkloadRun:
    expected = "expected the CI SeedTTS result {model_path, summary, speed}"
    try:
        data = inputs.load_json(path, inputs.RESULT, root=root)
        OBJECT(data, "top level")
        schema.get(data, "summary", OBJECT)
        schema.get(data, "speed", OBJECT)
        model_path = schema.get_optional(data, "model_path", STRING)
    except Unreadable as exc:
        return _broken(run_dir, workload, Problem(UNREADABLE, exc.reason, str(path)), (str(path),))
    except SchemaError as exc:
        return _broken(run_dir, workload, Problem(BAD_SCHEMA, f"{exc}; {expected}", str(path)), (str(path),))
    if model_id is not None and model_path != model_id:
        # This CI run measured another model: for this workload the file is simply not there.
        return _broken(run_dir, workload, Problem(MISSING_FILE, f"no CI result for {model_id} (this file is for "
                                                                f"{model_path!r})", str(path)), ())
    try:
        evaluated = schema.get(data, "summary.evaluated", COUNT)
        total = schema.get(data, "summary.total_samples", COUNT)
        skipped = schema.get(data, "summary.skipped", COUNT)
        # The suite's paths are the runbook file's (results[0].<name>.mean); the CI file keeps WER in
        # summary and the speed figures in speed.
        metrics: dict[str, float | None] = {}
        for metric in workload.metrics:
            match = re.fullmatch(r"results\[0\]\.(\w+)\.mean", metric.path)
            name = match.group(1) if match else metric.name
            metrics[metric.name] = metric_value(data, f"summary.{name}" if name == "corpus_wer" else f"speed.{name}",
                                                metric)
        concurrency = schema.get_optional(data, "speed.asr_concurrency", POSITIVE_INT)
    except SchemaError as exc:
        return _broken(run_dir, workload, Problem(BAD_SCHEMA, f"{exc}; {expected}", str(path)), (str(path),))
    problems: list[Problem] = []
    if evaluated != total:
        problems.append(Problem(EVALUATED_NE_TOTAL, f"evaluated {evaluated} of {total} samples", str(path)))
    if skipped > 0:
        problems.append(Problem(SKIPPED, f"skipped {skipped} samples", str(path)))
    if total != workload.expected_samples:
        problems.append(Problem(WRONG_TOTAL, f"total_samples is {total}, expected {workload.expected_samples}", str(path)))
    provenance = Provenance(model_id=model_path or None, concurrency=concurrency)
    coverage = Coverage(expected=workload.expected_samples, evaluated=evaluated, total=total, skipped=skipped,
                        problems=tuple(problems))
    return WorkloadRun(workload.id, run_dir.name, metrics, coverage, provenance, (str(path),), samples_path=None)


def _read_ci_moss(run_dir: Path, path: Path, workload: Workload, root: Path) -> WorkloadRun:
    expected = "expected the CI MOSS-TD EvaluationPayload"
    try:
        data = inputs.load_json(path, inputs.RESULT, root=root)
        OBJECT(data, "top level")
        evaluated, total = _moss_counts(data)
        failed = schema.get(data, "speed.failed_requests", COUNT)
        schema.get(data, "speed", OBJECT)
        metrics = {m.name: metric_value(data, m.path, m) for m in workload.metrics}
        config = schema.get_optional(data, "config", OBJECT, {})
        provenance = Provenance(dataset_id=schema.get_optional(config, "repo_id", STRING),
                                model_id=schema.get_optional(config, "model_path", STRING),
                                concurrency=schema.get_optional(config, "concurrency", POSITIVE_INT))
    except Unreadable as exc:
        return _broken(run_dir, workload, Problem(UNREADABLE, exc.reason, str(path)), (str(path),), str(path))
    except SchemaError as exc:
        return _broken(run_dir, workload, Problem(BAD_SCHEMA, f"{exc}; {expected}", str(path)), (str(path),), str(path))
    problems: list[Problem] = []
    if evaluated != total:
        problems.append(Problem(EVALUATED_NE_TOTAL, f"evaluated {evaluated} of {total} samples", str(path)))
    if total != workload.expected_samples:
        problems.append(Problem(WRONG_TOTAL, f"total_samples is {total}, expected {workload.expected_samples}", str(path)))
    if failed:
        problems.append(Problem(FAILED_REQUESTS, f"{failed} failed requests", str(path)))
    absent = [k for k in ("throughput_qps", "latency_mean_s", "rtf_mean") if k not in data["speed"]]
    if absent:
        problems.append(Problem(NO_SPEED, f"speed has no {', '.join(absent)} (every request failed?)", str(path)))
    coverage = Coverage(expected=workload.expected_samples, evaluated=evaluated, total=total, failed_requests=failed,
                        problems=tuple(problems))
    return WorkloadRun(workload.id, run_dir.name, metrics, coverage, provenance, (str(path),), samples_path=str(path))


# --- values -------------------------------------------------------------------------------------

def metric_check(metric: MetricSpec) -> schema.Check:
    """The range of a metric value: speed figures are positive (a zero or negative speed is not a
    measurement), everything else (WER/CER, counts, DER) non-negative; null is allowed (absent)."""
    return optional(POSITIVE if metric.kind == "speed" else schema.NON_NEGATIVE)


def metric_value(data: Any, dotted: str, metric: MetricSpec) -> float | None:
    """The metric at `dotted` as a float; None when absent or null (coverage rules judge absence).
    A present value of the wrong type or range raises schema.Invalid."""
    value = schema.get_optional(data, dotted, metric_check(metric))
    return None if value is None else float(value)


def lookup(data: Any, dotted: str) -> Any:
    """Follow a path like 'results[0].corpus_wer.mean'. Raises KeyError naming the first missing step."""
    try:
        return schema.lookup(data, dotted)
    except schema.Missing as exc:
        raise KeyError(exc.field) from None


def load_json(path: Path) -> Any:
    """A result file by the strict rules of gate.inputs (kind RESULT). Raises Unreadable."""
    return inputs.load_json(path, inputs.RESULT)


def _moss_counts(data: Any) -> tuple[int, int]:
    evaluated = schema.get(data, "summary.evaluated", COUNT)
    total = schema.get(data, "summary.total_samples", COUNT)
    schema.get(data, "diarization_metrics", OBJECT)
    return evaluated, total


# --- SeedTTS ------------------------------------------------------------------------------------

def _read_seedtts(run_dir: Path, workload: Workload, root: Path) -> WorkloadRun:
    path = run_dir / workload.path
    raw = str(run_dir / workload.raw_dir) if workload.raw_dir else None
    if not inputs.is_present(path):
        return _broken(run_dir, workload, Problem(MISSING_FILE, "missing; expected the SeedTTS client's --output file",
                                                  str(path)), (str(path),), raw)
    try:
        data = inputs.load_json(path, inputs.RESULT, root=root)
        OBJECT(data, "top level")
        schema.get(data, "schema_version", schema.one_of(SEEDTTS_SCHEMA_VERSION))
        evaluated = schema.get(data, "results[0].evaluated", COUNT)
        total = schema.get(data, "results[0].total", COUNT)
        skipped = schema.get(data, "results[0].skipped", COUNT)
        repeats = schema.get_optional(data, "results[0].repeats", POSITIVE_INT, 1)
        metrics = {m.name: metric_value(data, m.path, m) for m in workload.metrics}
        artifacts = schema.get_optional(data, "provenance.artifacts", OBJECT, {})
        text = optional(STRING)
        provenance = Provenance(
            dataset_id=schema.get_optional(artifacts, "dataset_id", text) or None,
            dataset_revision=schema.get_optional(artifacts, "dataset_revision", text) or None,
            model_id=(schema.get_optional(artifacts, "requested_model_id", text)
                      or schema.get_optional(data, "config.model_path", text) or None),
            model_revision=schema.get_optional(artifacts, "declared_model_revision", text) or None,
            evaluation_input_sha256=schema.get_optional(artifacts, "evaluation_input_sha256", text) or None,
            dependency_freeze_sha256=schema.get_optional(data, "provenance.dependency_freeze_sha256", text) or None,
            packages=_packages(schema.get_optional(data, "provenance.packages", OBJECT, {})),
            concurrency=schema.get_optional(data, "results[0].concurrency", POSITIVE_INT),
            stream=schema.get_optional(data, "config.stream", schema.BOOL),
        )
    except Unreadable as exc:
        return _broken(run_dir, workload, Problem(UNREADABLE, exc.reason, str(path)), (str(path),), raw)
    except SchemaError as exc:
        return _broken(run_dir, workload, Problem(BAD_SCHEMA, f"{exc}; expected a SeedTTS result (schema_version 2)",
                                                  str(path)), (str(path),), raw)
    problems: list[Problem] = []
    expected = workload.expected_samples
    if evaluated != total:
        problems.append(Problem(EVALUATED_NE_TOTAL, f"evaluated {evaluated} of {total} samples", str(path)))
    if skipped > 0:
        problems.append(Problem(SKIPPED, f"skipped {skipped} samples", str(path)))
    if total != expected * repeats:
        problems.append(Problem(WRONG_TOTAL, f"total is {total}, expected {expected * repeats} "
                                             f"({expected} per repeat × {repeats})", str(path)))
    coverage = Coverage(expected=expected, evaluated=evaluated, total=total, skipped=skipped, problems=tuple(problems))
    return WorkloadRun(workload.id, run_dir.name, metrics, coverage, provenance, (str(path),), samples_path=raw)


# --- MOSS-Transcribe-Diarize ----------------------------------------------------------------------

def _read_moss(run_dir: Path, workload: Workload, root: Path) -> WorkloadRun:
    directory = run_dir / workload.path
    paths = {"results": directory / MOSS_RESULTS_FILE, "speed": directory / MOSS_SPEED_FILE}
    files: dict[str, Any] = {}
    problems: list[Problem] = []
    for key, path in paths.items():
        if not inputs.is_present(path):
            problems.append(Problem(MISSING_FILE, "missing; expected the MOSS-TD client's output", str(path)))
            continue
        try:
            data = inputs.load_json(path, inputs.RESULT, root=root)
            OBJECT(data, "top level")
        except Unreadable as exc:
            problems.append(Problem(UNREADABLE, exc.reason, str(path)))
            continue
        except SchemaError as exc:
            problems.append(Problem(BAD_SCHEMA, str(exc), str(path)))
            continue
        files[key] = data
    expected = workload.expected_samples
    evaluated = total = failed = None
    results, speed_file = files.get("results"), files.get("speed")
    text = optional(STRING)
    metrics: dict[str, float | None] = {m.name: None for m in workload.metrics}
    results_config: dict = {}
    config: dict = {}
    if results is not None:
        try:
            evaluated, total = _moss_counts(results)
            for m in workload.metrics:
                if m.file == "results":
                    metrics[m.name] = metric_value(results, m.path, m)
            results_config = schema.get_optional(results, "config", OBJECT, {})
            for name in ("repo_id", "model_path"):
                schema.get_optional(results_config, name, text)
            schema.get_optional(results_config, "concurrency", POSITIVE_INT)
        except SchemaError as exc:
            problems.append(Problem(BAD_SCHEMA, f"{exc}; expected transcribe_diarize_results.json", str(paths["results"])))
            evaluated = total = None
            metrics = {m.name: None for m in workload.metrics}
            results_config = {}
    if speed_file is not None:
        try:
            schema.get(speed_file, "schema_version", schema.one_of(1))
            schema.get(speed_file, "speed", OBJECT)
            failed = schema.get(speed_file, "speed.failed_requests", COUNT)
            for m in workload.metrics:
                if m.file == "speed":
                    metrics[m.name] = metric_value(speed_file, m.path, m)
            config = schema.get_optional(speed_file, "config", OBJECT, {})
            for name in ("repo_id", "model_path"):
                schema.get_optional(config, name, text)
            schema.get_optional(config, "concurrency", POSITIVE_INT)
            schema.get_optional(config, "max_new_tokens", POSITIVE_INT)
            schema.get_optional(config, "request_timeout_s", POSITIVE)
        except SchemaError as exc:
            problems.append(Problem(BAD_SCHEMA, f"{exc}; expected transcribe_diarize_speed_results.json",
                                    str(paths["speed"])))
            speed_file, failed, config = None, None, {}
            metrics = {m.name: None for m in workload.metrics}
    if evaluated is not None and total is not None:
        if evaluated != total:
            problems.append(Problem(EVALUATED_NE_TOTAL, f"evaluated {evaluated} of {total} samples", str(paths["results"])))
        if total != expected:
            problems.append(Problem(WRONG_TOTAL, f"total_samples is {total}, expected {expected}", str(paths["results"])))
    if speed_file is not None:
        if failed:
            problems.append(Problem(FAILED_REQUESTS, f"{failed} failed requests", str(paths["speed"])))
        speed = speed_file["speed"]
        absent = [k for k in ("throughput_qps", "latency_mean_s", "rtf_mean") if k not in speed]
        if absent:
            problems.append(Problem(NO_SPEED, f"speed has no {', '.join(absent)} (every request failed?)", str(paths["speed"])))
        if workload.require_null_max_new_tokens and config.get("max_new_tokens") is not None:
            problems.append(Problem(MAX_NEW_TOKENS_SET, f"config.max_new_tokens is {config.get('max_new_tokens')!r}; "
                                                        f"runbook Step 6 requires null for movies800times", str(paths["speed"])))
    if problems and any(p.code in INPUT_CODES for p in problems):
        metrics = {m.name: None for m in workload.metrics}  # a broken file: no value of this run is used
    provenance = Provenance(
        dataset_id=config.get("repo_id") or results_config.get("repo_id") or None,
        model_id=config.get("model_path") or results_config.get("model_path") or None,
        max_new_tokens=config.get("max_new_tokens"),
        request_timeout_s=None if config.get("request_timeout_s") is None else float(config["request_timeout_s"]),
        concurrency=config.get("concurrency") or results_config.get("concurrency"),
    )
    coverage = Coverage(expected=expected, evaluated=evaluated, total=total, failed_requests=failed, problems=tuple(problems))
    return WorkloadRun(workload.id, run_dir.name, metrics, coverage, provenance, tuple(str(p) for p in paths.values()),
                       samples_path=str(paths["results"]))


# --- run directory files --------------------------------------------------------------------------

def _run_info(run_dir: Path, root: Path) -> RunInfo:
    if not run_dir.is_dir():
        return RunInfo(name=run_dir.name, path=str(run_dir), commit=None, freeze=None, env=None, present=False)
    problems: list[Problem] = []
    commit = _run_text(run_dir / "commit.txt", inputs.COMMIT, root, problems)
    freeze = _run_text(run_dir / "freeze.txt", inputs.FREEZE, root, problems)
    env, env_problem = read_env(run_dir / "env.json", root)
    return RunInfo(
        name=run_dir.name,
        path=str(run_dir),
        commit=commit.strip() or None if commit is not None else None,
        freeze=tuple(line for line in freeze.splitlines() if line.strip()) if freeze is not None else None,
        env=env,
        env_problem=env_problem,
        problems=tuple(problems),
    )


def read_env(path: Path, root: Path | None = None) -> tuple[dict | None, str | None]:
    """(env.json document, None), (None, None) when there is none, or (None, one-line problem) when it
    exists but cannot be read or fails its schema (gate.env.check_env)."""
    from gate.env import check_env  # gate.env writes the record; importing it here keeps one schema

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


def _run_text(path: Path, kind: inputs.Kind, root: Path, problems: list[Problem]) -> str | None:
    if not inputs.is_present(path):
        return None
    try:
        return inputs.read_text(path, kind, root=root)
    except Unreadable as exc:
        problems.append(Problem(RUN_RECORD, exc.reason, str(path)))
        return None


def _packages(value: Any) -> dict[str, str | None]:
    return {str(k): (v if isinstance(v, str) else None) for k, v in value.items()}
