"""Read one workload of one run directory: the SeedTTS and MOSS-TD result files (runbook layout) or the
CI artifacts, into a typed `WorkloadRun` with its metrics, coverage and provenance.

Every value used is typed and ranged (gate.formats.schema): counts non-negative integers, speed figures
positive, and every metric within the plausible range the suite gives it (`plausible`; a denormal
error rate or a latency of 5e-324 s is a broken file, not a measurement). A metric key the client
always writes that is absent from one run's file is that run's problem (MISSING_METRIC), never a
quieter mean of the other runs. Each violation makes the workload run INCOMPLETE with one line
naming the file and the field; nothing is coerced.
"""
from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterable

from gate.formats import inputs, schema
from gate.formats.config import MetricSpec, Workload
from gate.formats.inputs import Unreadable
from gate.formats.result_types import (
    ALL_FAILED,
    BAD_SCHEMA,
    EVALUATED_NE_TOTAL,
    EXCLUDED_SAMPLES,
    FAILED_REQUESTS,
    INPUT_CODES,
    MAX_NEW_TOKENS_SET,
    MISSING_FILE,
    MISSING_METRIC,
    MOSS_RESULTS_FILE,
    MOSS_SPEED_FILE,
    NO_SPEED,
    NOT_STREAMED,
    SEEDTTS_SCHEMA_VERSION,
    SKIPPED,
    STREAM_FIELDS,
    UNEXPECTED_STREAM,
    UNREADABLE,
    WRONG_TOTAL,
    Attempts,
    Coverage,
    Problem,
    Provenance,
    WorkloadRun,
)
from gate.formats.schema import COUNT, OBJECT, POSITIVE, POSITIVE_INT, STRING, SchemaError, optional

# A non-zero metric below this is not a measurement (a denormal): no corpus has 10^9 reference units,
# and every speed figure has a larger plausible minimum.
MIN_NONZERO = 1e-9
_MOSS_SPEED_KEYS = ("throughput_qps", "latency_mean_s", "rtf_mean")  # absent exactly when every request failed


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
        ci_path, attempts = ci_attempts(run_dir).get(ci_name, (None, None)) if ci_name else (None, None)
        if ci_path is not None:
            if workload.format == "seedtts":
                found = _read_ci_seedtts(run_dir, ci_path, workload, model_id, root)
            else:
                found = _read_ci_moss(run_dir, ci_path, workload, root)
            return replace(found, attempts=attempts) if found.files else found  # no file of this model: none read
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
    return {name: path for name, (path, _) in ci_attempts(directory).items()}


def ci_attempts(directory: Path) -> dict[str, tuple[Path, Attempts | None]]:
    """Per CI result file name, the latest attempt's file (highest pytest-<N>, then newest mtime) and the
    attempts it says: the pytest-<N> it lies in and the lower ones that left a copy of the same file (each
    failed, or the wrapper would not have retried); None for a file in no pytest-<N> directory."""
    found: dict[str, list[tuple[tuple[int, float, str], Path]]] = {}
    for name in CI_FILES:
        for path in Path(directory).rglob(name):
            try:
                info = path.lstat()
            except OSError:
                continue
            # Only folders below `directory` are attempts: a tree kept under some pytest-<N> itself is not one.
            attempt = max((int(m.group(1)) for part in path.relative_to(directory).parts
                           if (m := _ATTEMPT_DIR.match(part))), default=-1)
            found.setdefault(name, []).append(((attempt, info.st_mtime, str(path)), path))
    chosen: dict[str, tuple[Path, Attempts | None]] = {}
    for name, copies in found.items():
        (attempt, _, _), path = max(copies)  # a non-regular file is chosen too: the reader then names it
        earlier = sorted({n for (n, _, _), _ in copies if 0 <= n < attempt})
        chosen[name] = (path, Attempts(f"pytest-{attempt}", tuple(f"pytest-{n}" for n in earlier))
                        if attempt >= 0 else None)
    return chosen


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
        located = []
        for metric in workload.metrics:
            match = re.fullmatch(r"results\[0\]\.(\w+)\.mean", metric.path)
            name = match.group(1) if match else metric.name
            located.append((metric, f"summary.{name}" if name == "corpus_wer" else f"speed.{name}"))
        metrics, missing = read_metrics(data, [(m, p) for m, p in located if not m.stream], workload.expected_samples,
                                        path)
        shown = streamed(data["speed"])
        found, stream_problems = read_streaming(data, [(m, p) for m, p in located if m.stream], shown, workload,
                                                workload.expected_samples, path)
        metrics.update(found)
        missing += stream_problems
        concurrency = schema.get_optional(data, "speed.asr_concurrency", POSITIVE_INT)
    except SchemaError as exc:
        return _broken(run_dir, workload, Problem(BAD_SCHEMA, f"{exc}; {expected}", str(path)), (str(path),))
    problems: list[Problem] = list(missing)
    if evaluated != total:
        problems.append(Problem(EVALUATED_NE_TOTAL, f"evaluated {evaluated} of {total} samples", str(path)))
    if skipped > 0:
        problems.append(Problem(SKIPPED, f"skipped {skipped} samples", str(path)))
    if total != workload.expected_samples:
        problems.append(Problem(WRONG_TOTAL, f"total_samples is {total}, expected {workload.expected_samples}", str(path)))
    provenance = Provenance(model_id=model_path or None, concurrency=concurrency, stream=shown)
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
        metrics, missing = read_metrics(data, ((m, m.path) for m in workload.metrics if m.file == "results"),
                                        workload.expected_samples, path)
        speed_metrics, speed_missing = read_metrics(
            data, ((m, m.path) for m in workload.metrics if m.file == "speed" and not m.stream),
            workload.expected_samples, path)
        metrics.update(speed_metrics)
        shown = _moss_streamed(data["speed"])
        stream_metrics, stream_problems = read_streaming(
            data, ((m, m.path) for m in workload.metrics if m.stream), bool(shown), workload,
            workload.expected_samples, path) if shown is not None else ({}, [])
        metrics.update(stream_metrics)
        config = schema.get_optional(data, "config", OBJECT, {})
        provenance = Provenance(dataset_id=schema.get_optional(config, "repo_id", STRING),
                                model_id=schema.get_optional(config, "model_path", STRING),
                                concurrency=schema.get_optional(config, "concurrency", POSITIVE_INT),
                                stream=shown, **_moss_client_facts(config))
    except Unreadable as exc:
        return _broken(run_dir, workload, Problem(UNREADABLE, exc.reason, str(path)), (str(path),), str(path))
    except SchemaError as exc:
        return _broken(run_dir, workload, Problem(BAD_SCHEMA, f"{exc}; {expected}", str(path)), (str(path),), str(path))
    problems: list[Problem] = []
    if evaluated != total:
        problems.append(Problem(EVALUATED_NE_TOTAL, f"evaluated {evaluated} of {total} samples", str(path)))
    problems += _total_problems(total, workload.expected_samples, config, path)
    if failed:
        problems.append(Problem(FAILED_REQUESTS, f"{failed} failed requests", str(path)))
    problems = _all_failed_first(problems + missing + _speed_coverage(data["speed"], failed, speed_missing, path)
                                 + stream_problems)
    coverage = Coverage(expected=workload.expected_samples, evaluated=evaluated, total=total, failed_requests=failed,
                        problems=tuple(problems))
    return WorkloadRun(workload.id, run_dir.name, metrics, coverage, provenance, (str(path),), samples_path=str(path),
                       samples_document=data)


def _all_failed_first(problems: list[Problem]) -> list[Problem]:
    """"Every request failed" leads a run's problems: the counts it implies (evaluated 0, N failed) follow it, and
    a reader that shows one problem (the compare row, the comment) shows the cause."""
    return sorted(problems, key=lambda problem: problem.code != ALL_FAILED)


def _moss_streamed(speed: Any) -> bool | None:
    """Whether a MOSS run streamed, from what its speed object shows; None when it cannot show it (every request
    failed, or its figures are absent: the coverage problems say why)."""
    if not isinstance(speed, dict) or any(k not in speed for k in _MOSS_SPEED_KEYS):
        return None
    return streamed(speed)


def _moss_client_facts(config: Any) -> dict[str, Any]:
    """The MOSS client's settings a comparison depends on beyond the runbook's fixed ones: the request rate
    (`config.request_rate`, "inf" when unpaced) and the samples left out (`config.exclude_sample_ids`, newer clients).
    Raises SchemaError for a value of another type."""
    rate = schema.get_optional(config, "request_rate", schema.Check(
        '"inf" or a positive number', lambda v: v == "inf" or POSITIVE.test(v)))
    return {"request_rate": rate, "exclude_sample_ids": ",".join(excluded_ids(config)) or None}


def excluded_ids(config: Any) -> tuple[str, ...]:
    """`config.exclude_sample_ids` as ids: a list of strings, or the CLI's comma list as given. Raises SchemaError."""
    value = schema.get_optional(config, "exclude_sample_ids", schema.Check(
        "a list of sample ids or a comma-separated string",
        lambda v: isinstance(v, str) or (isinstance(v, list) and all(isinstance(i, str) for i in v))))
    if value is None:
        return ()
    items = value.split(",") if isinstance(value, str) else value
    return tuple(i.strip() for i in items if i.strip())


def _total_problems(total: int, expected: int, config: Any, path: Path) -> list[Problem]:
    """total_samples against the suite's count; a total lowered by --exclude-sample-ids names the samples left out."""
    if total == expected:
        return []
    excluded = excluded_ids(config) if isinstance(config, dict) else ()
    if excluded and total + len(excluded) == expected:
        shown = ", ".join(excluded[:10]) + (f" and {len(excluded) - 10} more" if len(excluded) > 10 else "")
        return [Problem(EXCLUDED_SAMPLES, f"total_samples is {total}, expected {expected}: the client left out "
                                          f"{len(excluded)} sample{'s' if len(excluded) > 1 else ''} by "
                                          f"--exclude-sample-ids ({shown}); measure without it", str(path))]
    return [Problem(WRONG_TOTAL, f"total_samples is {total}, expected {expected}", str(path))]


def _speed_coverage(speed: dict, failed: int | None, missing: list[Problem], path: Path) -> list[Problem]:
    """A MOSS speed object's figures: when requests failed and the figures are absent, the client wrote only
    the request counts (ALL_FAILED when none completed, as a SeedTTS file says it; else NO_SPEED, an
    incomplete measurement); with no failed request an absent figure is a broken or edited file (the
    MISSING_METRIC problems)."""
    absent = [k for k in _MOSS_SPEED_KEYS if k not in speed]
    if absent and failed and speed.get("completed_requests") == 0:
        return [Problem(ALL_FAILED, f"every request failed ({failed} of {speed.get('total_requests', failed)}); "
                                    f"see the client log and server.log", str(path))]
    if absent and failed:
        return [Problem(NO_SPEED, f"speed has no {', '.join(absent)} ({failed} requests failed)", str(path))]
    return missing



# --- values -------------------------------------------------------------------------------------

def metric_check(metric: MetricSpec, expected_samples: int) -> schema.Check:
    """The range of a metric value: its plausible range in a workload of `expected_samples` samples
    (speed figures positive, everything else non-negative, and never a non-zero value below
    MIN_NONZERO); null is allowed (the client writes null where nothing was measured)."""
    low, high = metric.bounds(expected_samples)
    sign = POSITIVE if metric.kind == "speed" else schema.NUMBER if low < 0 else schema.NON_NEGATIVE
    span = f"from {low:g} to {high:g}" if high is not None else f"of at least {low:g}"
    unit = "" if metric.unit in ("fraction", "ratio") else f" {metric.unit}"

    def plausible(v: Any) -> bool:
        return sign.test(v) and v >= low and (high is None or v <= high) and (v == 0 or abs(v) >= MIN_NONZERO)

    return optional(schema.Check(f"{sign.expected} {span}{unit} (the plausible range of {metric.name})", plausible))


def metric_value(data: Any, dotted: str, metric: MetricSpec, expected_samples: int) -> float | None:
    """The metric at `dotted` as a float; None when null. Raises schema.Missing when the key is absent
    and schema.Invalid when the value is of the wrong type or outside the metric's plausible range."""
    value = schema.get(data, dotted, metric_check(metric, expected_samples))
    return None if value is None else float(value)


def read_metrics(data: Any, located: Iterable[tuple[MetricSpec, str]], expected_samples: int,
                 path: Path) -> tuple[dict[str, float | None], list[Problem]]:
    """The metrics at their paths in one parsed file, and a MISSING_METRIC problem per absent key
    (the client always writes them: an absent key is a broken or edited file, not a missing value)."""
    values: dict[str, float | None] = {}
    problems = []
    for metric, dotted in located:
        try:
            values[metric.name] = metric_value(data, dotted, metric, expected_samples)
        except schema.Missing as exc:
            values[metric.name] = None
            where = "" if exc.field == dotted else f" ({exc.field} is missing)"
            problems.append(Problem(MISSING_METRIC, f"{dotted} is missing{where}; expected the {metric.name} the "
                                                    f"client always writes", str(path)))
    return values, problems


def streamed(container: Any) -> bool:
    """Whether a client wrote its streaming fields here (`speed` of a MOSS or CI SeedTTS file, results[0] of a SeedTTS
    --output file): what a run shows, whatever its config says (MOSS's config has no `stream` key)."""
    return isinstance(container, dict) and any(key in container for key in STREAM_FIELDS)


def read_streaming(data: Any, located: Iterable[tuple[MetricSpec, str]], shown: bool, workload: Workload,
                   expected_samples: int, path: Path) -> tuple[dict[str, float | None], list[Problem]]:
    """The workload's streaming metrics (suite `stream: true` metrics, at their paths) and the stream rule: the
    suite's stream workload must carry the streaming fields and no other workload may (`shown`: the file has
    them). Either mismatch is one INCOMPLETE line naming the file and the client's --stream flag."""
    located = list(located)
    if workload.stream and not shown:
        return {m.name: None for m, _ in located}, [Problem(
            NOT_STREAMED, f"has no streaming fields (text_ttft_*, inter_chunk_*): {workload.id} is the "
                          f"suite's stream run; measure it again with the client's --stream flag", str(path))]
    if shown and not workload.stream:
        return {}, [Problem(
            UNEXPECTED_STREAM, f"has streaming fields (text_ttft_*, inter_chunk_*): the client ran with --stream, but "
                               f"{workload.id} is not a stream run; measure it again without the client's --stream "
                               f"flag", str(path))]
    return read_metrics(data, located, expected_samples, path)


def lookup_key(data: Any, dotted: str) -> Any:
    """Follow a path like 'results[0].corpus_wer.mean'. Raises KeyError naming the first missing step."""
    try:
        return schema.lookup(data, dotted)
    except schema.Missing as exc:
        raise KeyError(exc.field) from None


def load_result(path: Path) -> Any:
    """A result file by the strict rules of gate.formats.inputs (kind RESULT). Raises Unreadable."""
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
        if evaluated == 0 and total > 0:  # throughput 0.0 and WER null: no measurement, not a broken file
            return _all_failed(run_dir, workload, path, data, total, skipped, raw)
        metrics, missing = read_metrics(data, ((m, m.path) for m in workload.metrics if not m.stream),
                                        workload.expected_samples, path)
        shown = streamed(schema.get(data, "results[0]", OBJECT))
        found, stream_problems = read_streaming(data, ((m, m.path) for m in workload.metrics if m.stream), shown,
                                                workload, workload.expected_samples, path)
        metrics.update(found)
        missing += stream_problems
        provenance = _seedtts_provenance(data, shown)
    except Unreadable as exc:
        return _broken(run_dir, workload, Problem(UNREADABLE, exc.reason, str(path)), (str(path),), raw)
    except SchemaError as exc:
        return _broken(run_dir, workload, Problem(BAD_SCHEMA, f"{exc}; expected a SeedTTS result (schema_version 2)",
                                                  str(path)), (str(path),), raw)
    problems: list[Problem] = list(missing)
    expected = workload.expected_samples
    if evaluated != total:
        problems.append(Problem(EVALUATED_NE_TOTAL, f"evaluated {evaluated} of {total} samples", str(path)))
    if skipped > 0:
        problems.append(Problem(SKIPPED, f"skipped {skipped} samples", str(path)))
    if total != expected * repeats:
        problems.append(Problem(WRONG_TOTAL, f"total is {total}, expected {expected * repeats} "
                                             f"({expected} per repeat × {repeats})", str(path)))
    passes: dict[str, tuple[float, ...]] = {}
    if repeats > 1:
        try:
            passes = _passes(data, workload, metrics, repeats, path)
        except SchemaError as exc:
            problems.append(Problem(BAD_SCHEMA, f"{exc}; expected results[0].per_repeat, one record per timed pass "
                                                f"(--repeats {repeats})", str(path)))
    coverage = Coverage(expected=expected, evaluated=evaluated, total=total, skipped=skipped, problems=tuple(problems))
    return WorkloadRun(workload.id, run_dir.name, metrics, coverage, provenance, (str(path),), samples_path=raw,
                       passes=passes)


_MEAN_PATH = re.compile(r"results\[0\]\.(\w+)\.mean")
# The client's mean over repeats is statistics' mean of the per-repeat values it writes; a disagreement beyond
# float and rounding noise (rtfx and rtf_p95 are rounded per repeat) is an edited file.
_MEAN_REL_TOL = 1e-4


def _passes(data: Any, workload: Workload, metrics: dict[str, float | None], repeats: int,
            path: Path) -> dict[str, tuple[float, ...]]:
    """Each metric's values in the P timed passes of one server start (results[0].per_repeat; docs/upstream.md
    §2.1). The run's value stays the client's mean over them (`metrics`): passes in one server are one
    observation, never independent runs (gate.stats.nested). A metric null in any pass has no pass values."""
    records = schema.get(data, "results[0].per_repeat", schema.Check("a list", lambda v: isinstance(v, list)))
    if len(records) != repeats:
        raise schema.Invalid("results[0].per_repeat", f"has {len(records)} records, expected {repeats} (results[0].repeats)")
    out: dict[str, tuple[float, ...]] = {}
    for metric in workload.metrics:
        match = _MEAN_PATH.fullmatch(metric.path)
        if match is None or (metric.stream and metrics.get(metric.name) is None):
            continue  # a streaming figure of a run that did not stream is said once, by read_streaming
        values = [metric_value(data, f"results[0].per_repeat[{j}].{match.group(1)}", metric, workload.expected_samples)
                  for j in range(repeats)]
        kept = [v for v in values if v is not None]
        if len(kept) != repeats:
            continue
        mean = metrics.get(metric.name)
        if mean is not None and abs(sum(kept) / repeats - mean) > _MEAN_REL_TOL * abs(mean) + 1e-12:
            raise schema.Invalid(metric.path, f"is {mean!r}, expected the mean of the per_repeat values "
                                              f"({sum(kept) / repeats!r})")
        out[metric.name] = tuple(kept)
    return out


def _all_failed(run_dir: Path, workload: Workload, path: Path, data: Any, total: int, skipped: int,
                raw: str | None) -> WorkloadRun:
    """A SeedTTS run whose every request failed: one problem saying so (INCOMPLETE), no metric."""
    try:
        provenance = _seedtts_provenance(data)
    except SchemaError:
        provenance = Provenance()
    problem = Problem(ALL_FAILED, f"every request failed (evaluated 0 of {total}); see the client log and server.log",
                      str(path))
    coverage = Coverage(expected=workload.expected_samples, evaluated=0, total=total, skipped=skipped,
                        problems=(problem,))
    metrics: dict[str, float | None] = {m.name: None for m in workload.metrics}
    return WorkloadRun(workload.id, run_dir.name, metrics, coverage, provenance, (str(path),), samples_path=raw)


def _seedtts_provenance(data: Any, shown: bool | None = None) -> Provenance:
    """`shown`: whether results[0] carries the streaming fields (the stream fact where config.stream is absent)."""
    artifacts = schema.get_optional(data, "provenance.artifacts", OBJECT, {})
    text = optional(STRING)
    return Provenance(
        dataset_id=schema.get_optional(artifacts, "dataset_id", text) or None,
        dataset_revision=schema.get_optional(artifacts, "dataset_revision", text) or None,
        model_id=(schema.get_optional(artifacts, "requested_model_id", text)
                  or schema.get_optional(data, "config.model_path", text) or None),
        model_revision=schema.get_optional(artifacts, "declared_model_revision", text) or None,
        evaluation_input_sha256=schema.get_optional(artifacts, "evaluation_input_sha256", text) or None,
        dependency_freeze_sha256=schema.get_optional(data, "provenance.dependency_freeze_sha256", text) or None,
        packages=_packages(schema.get_optional(data, "provenance.packages", OBJECT, {})),
        gpu_csv=schema.get_optional(data, "provenance.gpu.nvidia_smi_csv", text) or None,
        torch_cuda_build=schema.get_optional(data, "provenance.gpu.torch_cuda_build", text) or None,
        concurrency=schema.get_optional(data, "results[0].concurrency", POSITIVE_INT),
        stream=_first(schema.get_optional(data, "config.stream", schema.BOOL), shown),
        warmup=schema.get_optional(data, "config.warmup", schema.BOOL),
        repeats=schema.get_optional(data, "results[0].repeats", POSITIVE_INT),
    )


# --- MOSS-Transcribe-Diarize ----------------------------------------------------------------------

# Complexity over 15: one check per field of the moss result files, in file order.
def _read_moss(run_dir: Path, workload: Workload, root: Path) -> WorkloadRun:  # noqa: C901 (reason above)
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
    shown: bool | None = None
    client_facts: dict[str, Any] = {}
    missing: list[Problem] = []
    speed_missing: list[Problem] = []
    if results is not None:
        try:
            evaluated, total = _moss_counts(results)
            found, missing = read_metrics(results, ((m, m.path) for m in workload.metrics if m.file == "results"),
                                          expected, paths["results"])
            metrics.update(found)
            results_config = schema.get_optional(results, "config", OBJECT, {})
            for name in ("repo_id", "model_path"):
                schema.get_optional(results_config, name, text)
            schema.get_optional(results_config, "concurrency", POSITIVE_INT)
        except SchemaError as exc:
            problems.append(Problem(BAD_SCHEMA, f"{exc}; expected transcribe_diarize_results.json", str(paths["results"])))
            evaluated = total = None
            missing = []
            metrics = {m.name: None for m in workload.metrics}
            results_config = {}
    if speed_file is not None:
        try:
            schema.get(speed_file, "schema_version", schema.one_of(1))
            schema.get(speed_file, "speed", OBJECT)
            failed = schema.get(speed_file, "speed.failed_requests", COUNT)
            found, speed_missing = read_metrics(
                speed_file, ((m, m.path) for m in workload.metrics if m.file == "speed" and not m.stream),
                expected, paths["speed"])
            metrics.update(found)
            shown = _moss_streamed(speed_file["speed"])
            if shown is not None:
                found, stream_problems = read_streaming(speed_file, ((m, m.path) for m in workload.metrics if m.stream),
                                                        shown, workload, expected, paths["speed"])
                metrics.update(found)
                speed_missing += stream_problems
            config = schema.get_optional(speed_file, "config", OBJECT, {})
            for name in ("repo_id", "model_path"):
                schema.get_optional(config, name, text)
            schema.get_optional(config, "concurrency", POSITIVE_INT)
            schema.get_optional(config, "max_new_tokens", POSITIVE_INT)
            schema.get_optional(config, "request_timeout_s", POSITIVE)
            schema.get_optional(config, "warmup", COUNT)
            client_facts = _moss_client_facts(config)
        except SchemaError as exc:
            problems.append(Problem(BAD_SCHEMA, f"{exc}; expected transcribe_diarize_speed_results.json",
                                    str(paths["speed"])))
            speed_file, failed, config, shown, client_facts = None, None, {}, None, {}
            metrics = {m.name: None for m in workload.metrics}
    problems += missing
    if evaluated is not None and total is not None:
        if evaluated != total:
            problems.append(Problem(EVALUATED_NE_TOTAL, f"evaluated {evaluated} of {total} samples", str(paths["results"])))
        problems += _total_problems(total, expected, config, paths["results"])
    if speed_file is not None:
        if failed:
            problems.append(Problem(FAILED_REQUESTS, f"{failed} failed requests", str(paths["speed"])))
        problems += _speed_coverage(speed_file["speed"], failed, speed_missing, paths["speed"])
        problems = _all_failed_first(problems)
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
        warmup=config.get("warmup"),
        stream=shown,
        **client_facts,
    )
    coverage = Coverage(expected=expected, evaluated=evaluated, total=total, failed_requests=failed, problems=tuple(problems))
    return WorkloadRun(workload.id, run_dir.name, metrics, coverage, provenance, tuple(str(p) for p in paths.values()),
                       samples_path=str(paths["results"]), samples_document=files.get("results"))


def _first(*values: Any) -> Any:
    return next((v for v in values if v is not None), None)


def _packages(value: Any) -> dict[str, str | None]:
    return {str(k): (v if isinstance(v, str) else None) for k, v in value.items()}
