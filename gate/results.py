"""Read a result tree into typed runs: per workload, per scored run, its metrics, coverage and provenance.

The runbook layout (ARCHITECTURE.md "Decisions already taken"):

    <tree>/run<R>/commit.txt, freeze.txt            written by runbook Step 4 (env.json by `gate run`)
    <tree>/run<R>/<model>/asr_{en,zh}.json          SeedTTS client --output (schema_version 2)
    <tree>/run<R>/<model>/raw_{en,zh}/*.jsonl       SeedTTS --save-raw-dir (per-sample; see samples.py)
    <tree>/run<R>/moss_td/<dataset>/transcribe_diarize_{results,speed_results}.json

Scored runs are every run<R> directory except the suite's warm run. Coverage follows the runbook's
"Coverage" section exactly and keeps *why* a workload run is incomplete.

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

import json
import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping

from gate.config import Suite, Workload
from gate.errors import InputError

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
COVERAGE_CODES = (MISSING_FILE, UNREADABLE, BAD_SCHEMA, EVALUATED_NE_TOTAL, SKIPPED, WRONG_TOTAL,
                  FAILED_REQUESTS, NO_SPEED, MAX_NEW_TOKENS_SET)

_RUN_DIR = re.compile(r"^run(.+)$")
_PATH_TOKEN = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


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
    env: Mapping[str, Any] | None  # env.json written by `gate run`, if present


@dataclass(frozen=True)
class ResultTree:
    root: str
    layout: str  # "runbook" or "ci"
    runs: tuple[RunInfo, ...]  # scored runs, in numeric order
    workloads: Mapping[str, tuple[WorkloadRun, ...]]  # workload id -> one entry per scored run, suite order
    missing_workloads: tuple[str, ...]  # suite workloads with no file in any scored run
    problems: tuple[Problem, ...] = ()  # tree-level problems (unreadable commit.txt, ...)

    @property
    def run_names(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.runs)

    def complete(self, workload_id: str) -> bool:
        runs = self.workloads.get(workload_id, ())
        return bool(runs) and len(runs) == len(self.runs) and all(r.complete for r in runs)


def read_tree(root: str | Path, suite: Suite, *, models: tuple[str, ...] | None = None) -> ResultTree:
    """Read every scored run of a runbook-layout tree. Raises InputError when `root` is not a tree at all."""
    root = Path(root)
    if not root.exists():
        raise InputError("no such directory; expected a result tree <tree>/run<R>/...", path=root)
    if not root.is_dir():
        raise InputError("not a directory; expected a result tree <tree>/run<R>/...", path=root)
    workloads = suite.workloads_for(models)
    run_dirs = scored_run_dirs(root, suite)
    layout = "runbook"
    if not any((d / w.path).exists() for d in run_dirs for w in suite.workloads):
        if run_dirs and all(ci_files(d) for d in run_dirs):
            layout = "ci"
        elif not run_dirs and ci_files(root):
            layout, run_dirs = "ci", [root]
    if not run_dirs:
        raise InputError(f"no scored run directories (run{', run'.join(suite.scored_runs)}, ...) and no CI result "
                         f"files; expected the runbook layout <tree>/run<R>/<model>/... or CI artifacts", path=root)
    single = run_dirs == [root]
    runs = tuple(replace(_run_info(d), name="run1") if single else _run_info(d) for d in run_dirs)
    read: dict[str, tuple[WorkloadRun, ...]] = {}
    missing = []
    for workload in workloads:
        model_id = suite.models[workload.model].model_id
        found = [read_workload_run(d, workload, model_id=model_id) for d in run_dirs]
        if all(MISSING_FILE in r.coverage.codes and not _has_any_file(r) for r in found):
            missing.append(workload.id)
            continue
        read[workload.id] = tuple(replace(r, run="run1") if single else r for r in found)
    return ResultTree(root=str(root), layout=layout, runs=runs, workloads=read, missing_workloads=tuple(missing))


def _has_any_file(run: WorkloadRun) -> bool:
    return any(Path(f).exists() for f in run.files)


def scored_run_dirs(root: Path, suite: Suite) -> list[Path]:
    """run<R> directories other than the warm run, numeric R first in numeric order, then others by name."""
    found = []
    for child in root.iterdir():
        match = _RUN_DIR.match(child.name)
        if child.is_dir() and match and match.group(1) != suite.warm_run:
            found.append(child)
    return sorted(found, key=lambda p: (0, int(p.name[3:]), "") if p.name[3:].isdigit() else (1, 0, p.name))


def read_workload_run(run_dir: Path, workload: Workload, *, model_id: str | None = None) -> WorkloadRun:
    """One workload in one run directory, runbook layout or (when its runbook file is absent) CI artifacts.

    `model_id` (the suite model's id) picks the CI SeedTTS file of the right model; without it any
    model's file is accepted.
    """
    run_dir = Path(run_dir)
    if not (run_dir / workload.path).exists():
        ci_name = _ci_name(workload)
        ci_path = ci_files(run_dir).get(ci_name) if ci_name else None
        if ci_path is not None:
            if workload.format == "seedtts":
                return _read_ci_seedtts(run_dir, ci_path, workload, model_id)
            return _read_ci_moss(run_dir, ci_path, workload)
    if workload.format == "seedtts":
        return _read_seedtts(run_dir, workload)
    return _read_moss(run_dir, workload)


def moss_results_path(run_dir: Path, workload: Workload) -> Path:
    """Where a MOSS workload's EvaluationPayload (with per_sample) is: the runbook file, else the CI artifact."""
    runbook = Path(run_dir) / workload.path / MOSS_RESULTS_FILE
    if runbook.parent.exists():
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
            if not path.is_file():
                continue
            attempt = max((int(m.group(1)) for part in path.parts if (m := _ATTEMPT_DIR.match(part))), default=-1)
            key = (attempt, path.stat().st_mtime, str(path))
            if name not in chosen or key > chosen[name][0]:
                chosen[name] = (key, path)
    return {name: path for name, (_, path) in chosen.items()}


def _ci_name(workload: Workload) -> str | None:
    for name, workload_name in CI_FILES.items():
        if workload_name == workload.name and (name.startswith("asr_") == (workload.format == "seedtts")):
            return name
    return None


def _read_ci_seedtts(run_dir: Path, path: Path, workload: Workload, model_id: str | None) -> WorkloadRun:
    def broken(problem: Problem, files: tuple[str, ...] = (str(path),)) -> WorkloadRun:
        return WorkloadRun(workload.id, run_dir.name, {m.name: None for m in workload.metrics},
                           Coverage(expected=workload.expected_samples, problems=(problem,)), Provenance(), files)

    try:
        data = load_json(path)
    except Unreadable as exc:
        return broken(Problem(UNREADABLE, str(exc), str(path)))
    if not isinstance(data, dict) or not isinstance(data.get("summary"), dict) or not isinstance(data.get("speed"), dict):
        return broken(Problem(BAD_SCHEMA, "expected the CI SeedTTS result {model_path, summary, speed}", str(path)))
    if model_id is not None and data.get("model_path") != model_id:
        # This CI run measured another model: for this workload the file is simply not there.
        return broken(Problem(MISSING_FILE, f"no CI result for {model_id} (this file is for {data.get('model_path')!r})",
                              str(path)), files=())
    try:
        evaluated = _count(data, "summary.evaluated")
        total = _count(data, "summary.total_samples")
        skipped = _count(data, "summary.skipped")
    except KeyError as exc:
        return broken(Problem(BAD_SCHEMA, f"{exc.args[0]} is missing; expected the CI SeedTTS summary", str(path)))
    except TypeError as exc:
        return broken(Problem(BAD_SCHEMA, str(exc.args[0]), str(path)))
    # The suite's paths are the runbook file's (results[0].<name>.mean); the CI file keeps WER in
    # summary and the speed figures in speed.
    metrics: dict[str, float | None] = {}
    problems: list[Problem] = []
    for metric in workload.metrics:
        match = re.fullmatch(r"results\[0\]\.(\w+)\.mean", metric.path)
        name = match.group(1) if match else metric.name
        ci_path = f"summary.{name}" if name == "corpus_wer" else f"speed.{name}"
        try:
            metrics[metric.name] = _number(lookup(data, ci_path))
        except KeyError:
            metrics[metric.name] = None
        except TypeError as exc:
            metrics[metric.name] = None
            problems.append(Problem(BAD_SCHEMA, f"{ci_path} is {exc.args[0]!r}, expected a number or null", str(path)))
    if evaluated != total:
        problems.append(Problem(EVALUATED_NE_TOTAL, f"evaluated {evaluated} of {total} samples", str(path)))
    if skipped > 0:
        problems.append(Problem(SKIPPED, f"skipped {skipped} samples", str(path)))
    if total != workload.expected_samples:
        problems.append(Problem(WRONG_TOTAL, f"total_samples is {total}, expected {workload.expected_samples}", str(path)))
    provenance = Provenance(model_id=_str_or_none(data.get("model_path")),
                            concurrency=_int_or_none(_safe_lookup(data, "speed.asr_concurrency")))
    coverage = Coverage(expected=workload.expected_samples, evaluated=evaluated, total=total, skipped=skipped,
                        problems=tuple(problems))
    return WorkloadRun(workload.id, run_dir.name, metrics, coverage, provenance, (str(path),), samples_path=None)


def _read_ci_moss(run_dir: Path, path: Path, workload: Workload) -> WorkloadRun:
    problems: list[Problem] = []
    data: Any = None
    try:
        data = load_json(path)
    except Unreadable as exc:
        problems.append(Problem(UNREADABLE, str(exc), str(path)))
    if data is not None and not isinstance(data, dict):
        problems.append(Problem(BAD_SCHEMA, "top level is not an object", str(path)))
        data = None
    evaluated = total = failed = None
    if data is not None:
        try:
            evaluated = _count(data, "summary.evaluated")
            total = _count(data, "summary.total_samples")
            failed = _count(data, "speed.failed_requests")
            if not isinstance(lookup(data, "diarization_metrics"), dict):
                raise TypeError("diarization_metrics is not an object")
        except (KeyError, TypeError) as exc:
            reason = f"{exc.args[0]} is missing" if isinstance(exc, KeyError) else str(exc.args[0])
            problems.append(Problem(BAD_SCHEMA, f"{reason}; expected the CI MOSS-TD EvaluationPayload", str(path)))
            data, evaluated, total, failed = None, None, None, None
    files = {"results": data, "speed": data} if data is not None else {}
    metrics, metric_problems = _metrics(workload, files, {"results": path, "speed": path})
    problems.extend(metric_problems)
    if data is not None:
        if evaluated != total:
            problems.append(Problem(EVALUATED_NE_TOTAL, f"evaluated {evaluated} of {total} samples", str(path)))
        if total != workload.expected_samples:
            problems.append(Problem(WRONG_TOTAL, f"total_samples is {total}, expected {workload.expected_samples}", str(path)))
        if failed:
            problems.append(Problem(FAILED_REQUESTS, f"{failed} failed requests", str(path)))
        absent = [k for k in ("throughput_qps", "latency_mean_s", "rtf_mean") if k not in data["speed"]]
        if absent:
            problems.append(Problem(NO_SPEED, f"speed has no {', '.join(absent)} (every request failed?)", str(path)))
    config = data.get("config") if isinstance(data, dict) and isinstance(data.get("config"), dict) else {}
    provenance = Provenance(dataset_id=_str_or_none(config.get("repo_id")), model_id=_str_or_none(config.get("model_path")),
                            concurrency=_int_or_none(config.get("concurrency")))
    coverage = Coverage(expected=workload.expected_samples, evaluated=evaluated, total=total, failed_requests=failed,
                        problems=tuple(problems))
    return WorkloadRun(workload.id, run_dir.name, metrics, coverage, provenance, (str(path),), samples_path=str(path))


# --- JSON helpers -------------------------------------------------------------------------------

class Unreadable(Exception):
    """A file that is not strict JSON (truncated, empty, NaN/Infinity, not UTF-8); the message says which."""


_Unreadable = Unreadable


def _reject_constant(name: str) -> None:
    raise _Unreadable(f"contains {name}, which is not valid JSON")


def load_json(path: Path) -> Any:
    """Parse strict JSON (NaN/Infinity rejected). Raises _Unreadable with a short reason."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise _Unreadable("not UTF-8 text") from None
    except OSError as exc:
        raise _Unreadable(f"cannot read ({exc.strerror})") from None
    if not text.strip():
        raise _Unreadable("empty file")
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise _Unreadable(f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}; truncated?)") from None


def lookup(data: Any, dotted: str) -> Any:
    """Follow a path like 'results[0].corpus_wer.mean'. Raises KeyError naming the first missing step."""
    node = data
    walked = ""
    for name, index in _PATH_TOKEN.findall(dotted):
        if name:
            walked = f"{walked}.{name}" if walked else name
            if not isinstance(node, dict) or name not in node:
                raise KeyError(walked)
            node = node[name]
        else:
            walked = f"{walked}[{index}]"
            if not isinstance(node, list) or int(index) >= len(node):
                raise KeyError(walked)
            node = node[int(index)]
    return node


def _number(value: Any) -> float | None:
    """A metric value: a finite number, or None when the file holds null."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise TypeError(value)
    return float(value)


def _count(data: Any, dotted: str) -> int:
    value = lookup(data, dotted)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TypeError(f"{dotted} is {value!r}, expected a non-negative integer")
    return value


def _metrics(workload: Workload, files: Mapping[str, Any], path_of: Mapping[str, Path]) -> tuple[dict, list[Problem]]:
    values: dict[str, float | None] = {}
    problems = []
    for metric in workload.metrics:
        data = files.get(metric.file)
        if data is None:
            values[metric.name] = None
            continue
        try:
            values[metric.name] = _number(lookup(data, metric.path))
        except KeyError:
            values[metric.name] = None  # absence is judged by coverage rules (e.g. NO_SPEED), not here
        except TypeError as exc:
            values[metric.name] = None
            problems.append(Problem(BAD_SCHEMA, f"{metric.path} is {exc.args[0]!r}, expected a number or null",
                                    str(path_of[metric.file])))
    return values, problems


# --- SeedTTS ------------------------------------------------------------------------------------

def _read_seedtts(run_dir: Path, workload: Workload) -> WorkloadRun:
    path = run_dir / workload.path
    run = run_dir.name
    raw = str(run_dir / workload.raw_dir) if workload.raw_dir else None

    def incomplete(problem: Problem) -> WorkloadRun:
        return WorkloadRun(workload.id, run, {m.name: None for m in workload.metrics},
                           Coverage(expected=workload.expected_samples, problems=(problem,)), Provenance(), (str(path),),
                           samples_path=raw)

    if not path.is_file():
        return incomplete(Problem(MISSING_FILE, "missing; expected the SeedTTS client's --output file", str(path)))
    try:
        data = load_json(path)
    except _Unreadable as exc:
        return incomplete(Problem(UNREADABLE, str(exc), str(path)))
    try:
        if not isinstance(data, dict):
            raise TypeError("top level is not an object")
        version = data.get("schema_version")
        if version != SEEDTTS_SCHEMA_VERSION:
            raise TypeError(f"schema_version is {version!r}, expected {SEEDTTS_SCHEMA_VERSION}")
        evaluated = _count(data, "results[0].evaluated")
        total = _count(data, "results[0].total")
        skipped = _count(data, "results[0].skipped")
    except KeyError as exc:
        return incomplete(Problem(BAD_SCHEMA, f"{exc.args[0]} is missing; expected a SeedTTS result (schema_version 2)", str(path)))
    except TypeError as exc:
        return incomplete(Problem(BAD_SCHEMA, str(exc.args[0]), str(path)))

    metrics, problems = _metrics(workload, {"results": data}, {"results": path})
    expected = workload.expected_samples
    repeats = _int_or_none(_safe_lookup(data, "results[0].repeats")) or 1
    if evaluated != total:
        problems.append(Problem(EVALUATED_NE_TOTAL, f"evaluated {evaluated} of {total} samples", str(path)))
    if skipped > 0:
        problems.append(Problem(SKIPPED, f"skipped {skipped} samples", str(path)))
    if total != expected * repeats:
        problems.append(Problem(WRONG_TOTAL, f"total is {total}, expected {expected * repeats} "
                                             f"({expected} per repeat × {repeats})", str(path)))
    artifacts = _safe_lookup(data, "provenance.artifacts")
    artifacts = artifacts if isinstance(artifacts, dict) else {}
    provenance = Provenance(
        dataset_id=_str_or_none(artifacts.get("dataset_id")),
        dataset_revision=_str_or_none(artifacts.get("dataset_revision")),
        model_id=_str_or_none(artifacts.get("requested_model_id")) or _str_or_none(_safe_lookup(data, "config.model_path")),
        model_revision=_str_or_none(artifacts.get("declared_model_revision")),
        evaluation_input_sha256=_str_or_none(artifacts.get("evaluation_input_sha256")),
        dependency_freeze_sha256=_str_or_none(_safe_lookup(data, "provenance.dependency_freeze_sha256")),
        packages=_packages(_safe_lookup(data, "provenance.packages")),
        concurrency=_int_or_none(_safe_lookup(data, "results[0].concurrency")),
        stream=_safe_lookup(data, "config.stream") if isinstance(_safe_lookup(data, "config.stream"), bool) else None,
    )
    coverage = Coverage(expected=expected, evaluated=evaluated, total=total, skipped=skipped, problems=tuple(problems))
    return WorkloadRun(workload.id, run, metrics, coverage, provenance, (str(path),), samples_path=raw)


# --- MOSS-Transcribe-Diarize ----------------------------------------------------------------------

def _read_moss(run_dir: Path, workload: Workload) -> WorkloadRun:
    directory = run_dir / workload.path
    paths = {"results": directory / MOSS_RESULTS_FILE, "speed": directory / MOSS_SPEED_FILE}
    files: dict[str, Any] = {}
    problems: list[Problem] = []
    for key, path in paths.items():
        if not path.is_file():
            problems.append(Problem(MISSING_FILE, "missing; expected the MOSS-TD client's output", str(path)))
            continue
        try:
            data = load_json(path)
        except _Unreadable as exc:
            problems.append(Problem(UNREADABLE, str(exc), str(path)))
            continue
        if not isinstance(data, dict):
            problems.append(Problem(BAD_SCHEMA, "top level is not an object", str(path)))
            continue
        files[key] = data
    expected = workload.expected_samples
    evaluated = total = failed = None
    results, speed_file = files.get("results"), files.get("speed")
    if results is not None:
        try:
            evaluated = _count(results, "summary.evaluated")
            total = _count(results, "summary.total_samples")
            if not isinstance(lookup(results, "diarization_metrics"), dict):
                raise TypeError("diarization_metrics is not an object")
        except (KeyError, TypeError) as exc:
            reason = f"{exc.args[0]} is missing" if isinstance(exc, KeyError) else str(exc.args[0])
            problems.append(Problem(BAD_SCHEMA, f"{reason}; expected transcribe_diarize_results.json", str(paths["results"])))
            files.pop("results")
            evaluated = total = None
    if speed_file is not None:
        try:
            if speed_file.get("schema_version") != 1:
                raise TypeError(f"schema_version is {speed_file.get('schema_version')!r}, expected 1")
            failed = _count(speed_file, "speed.failed_requests")
        except (KeyError, TypeError) as exc:
            reason = f"{exc.args[0]} is missing" if isinstance(exc, KeyError) else str(exc.args[0])
            problems.append(Problem(BAD_SCHEMA, f"{reason}; expected transcribe_diarize_speed_results.json", str(paths["speed"])))
            files.pop("speed")
            speed_file = None

    metrics, metric_problems = _metrics(workload, files, paths)
    problems.extend(metric_problems)
    if evaluated is not None and total is not None:
        if evaluated != total:
            problems.append(Problem(EVALUATED_NE_TOTAL, f"evaluated {evaluated} of {total} samples", str(paths["results"])))
        if total != expected:
            problems.append(Problem(WRONG_TOTAL, f"total_samples is {total}, expected {expected}", str(paths["results"])))
    config: dict = {}
    if speed_file is not None:
        config = speed_file.get("config") if isinstance(speed_file.get("config"), dict) else {}
        if failed:
            problems.append(Problem(FAILED_REQUESTS, f"{failed} failed requests", str(paths["speed"])))
        speed = speed_file["speed"]
        absent = [k for k in ("throughput_qps", "latency_mean_s", "rtf_mean") if k not in speed]
        if absent:
            problems.append(Problem(NO_SPEED, f"speed has no {', '.join(absent)} (every request failed?)", str(paths["speed"])))
        if workload.require_null_max_new_tokens and config.get("max_new_tokens") is not None:
            problems.append(Problem(MAX_NEW_TOKENS_SET, f"config.max_new_tokens is {config.get('max_new_tokens')!r}; "
                                                        f"runbook Step 6 requires null for movies800times", str(paths["speed"])))
    results_config = results.get("config") if isinstance(results, dict) and isinstance(results.get("config"), dict) else {}
    provenance = Provenance(
        dataset_id=_str_or_none(config.get("repo_id")) or _str_or_none(results_config.get("repo_id")),
        model_id=_str_or_none(config.get("model_path")) or _str_or_none(results_config.get("model_path")),
        max_new_tokens=_int_or_none(config.get("max_new_tokens")),
        request_timeout_s=_number_or_none(config.get("request_timeout_s")),
        concurrency=_int_or_none(config.get("concurrency")) or _int_or_none(results_config.get("concurrency")),
    )
    coverage = Coverage(expected=expected, evaluated=evaluated, total=total, failed_requests=failed, problems=tuple(problems))
    return WorkloadRun(workload.id, run_dir.name, metrics, coverage, provenance, tuple(str(p) for p in paths.values()),
                       samples_path=str(paths["results"]))


# --- run directory files --------------------------------------------------------------------------

def _run_info(run_dir: Path) -> RunInfo:
    commit = _read_text(run_dir / "commit.txt")
    freeze = _read_text(run_dir / "freeze.txt")
    env = None
    env_path = run_dir / "env.json"
    if env_path.is_file():
        try:
            loaded = load_json(env_path)
            env = loaded if isinstance(loaded, dict) else None
        except _Unreadable:
            env = None
    return RunInfo(
        name=run_dir.name,
        path=str(run_dir),
        commit=commit.strip() or None if commit is not None else None,
        freeze=tuple(line for line in freeze.splitlines() if line.strip()) if freeze is not None else None,
        env=env,
    )


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _safe_lookup(data: Any, dotted: str) -> Any:
    try:
        return lookup(data, dotted)
    except KeyError:
        return None


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _number_or_none(value: Any) -> float | None:
    try:
        return _number(value)
    except TypeError:
        return None


def _packages(value: Any) -> dict[str, str | None]:
    if not isinstance(value, dict):
        return {}
    return {str(k): (v if isinstance(v, str) else None) for k, v in value.items()}
