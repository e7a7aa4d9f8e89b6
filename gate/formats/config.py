"""Suite YAML -> frozen dataclasses. Nothing else in the gate parses YAML.

A suite is the runbook as data: models, server and client commands, datasets, the ten workloads
with their expected sample counts and metrics. Every key is checked; an unknown or malformed key
is one line naming the file and the key path.
"""
from __future__ import annotations

import difflib
import importlib.resources
import math
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, Mapping

from gate.formats import inputs
from gate.formats.errors import SuiteError
from gate.formats.report import Direction

SUITE_SCHEMA_VERSION = 1


class MetricKind(StrEnum):
    """What a suite metric is, and so how it is judged."""

    ACCURACY = "accuracy"  # paired per-utterance tests
    SPEED = "speed"  # noise-floor tests on the run as the unit
    COUNT = "count"  # shown (a count of samples)
    INFO = "info"  # shown


class WorkloadFormat(StrEnum):
    """Which client's result files a workload reads."""

    SEEDTTS = "seedtts"
    MOSS = "moss"


METRIC_KINDS = tuple(MetricKind)
DIRECTIONS = tuple(Direction)  # the report's vocabulary (gate.formats.report.Direction): which way is better
FORMATS = tuple(WorkloadFormat)
# A metric's plausible range when the suite gives none: error rates up to 10 (an ASR error rate above
# 1000 % is a broken file), counts up to the dataset size, speed and info figures of either sign's range.
DEFAULT_PLAUSIBLE: dict[str, tuple[tuple[float, float | None], bool]] = {
    "accuracy": ((0.0, 10.0), False), "count": ((0.0, None), True), "speed": ((0.0, None), False),
    "info": ((0.0, None), False)}


@dataclass(frozen=True)
class MetricSpec:
    name: str
    path: str  # JSON path in the workload's file, e.g. "results[0].corpus_wer.mean"
    unit: str
    direction: Direction  # which way is better
    kind: MetricKind
    file: str = "results"  # MOSS: "results" (transcribe_diarize_results.json) or "speed"
    floor_rel: float | None = None  # speed: smallest relative change worth failing
    samples: str | None = None  # accuracy: per-utterance measure (wer, cer, cp_cer)
    gate: bool = True  # False: tested and shown, never decides a verdict (mean latency, RTF)
    # What a measurement can be (suite key `plausible: [min, max]`); max None: no upper bound, and
    # `plausible_max_samples`: the upper bound is the workload's expected sample count (a count of samples).
    plausible: tuple[float, float | None] = (0.0, None)
    plausible_max_samples: bool = False
    # Only a streamed run writes it (the client's --stream: text_ttft_*, inter_chunk_*): part of a workload the suite
    # marks `stream: true` and of no other (suite key `stream`).
    stream: bool = False

    def bounds(self, expected_samples: int) -> tuple[float, float | None]:
        """The plausible range of this metric in a workload of `expected_samples` samples."""
        low, high = self.plausible
        return low, (float(expected_samples) if self.plausible_max_samples else high)

    @property
    def higher_is_better(self) -> bool:
        return self.direction == "higher"

    @property
    def gated(self) -> bool:
        return self.kind in ("accuracy", "speed") and self.gate

    @property
    def tested(self) -> bool:
        """Gets a row in the report (gated, or a speed metric shown beside the gated ones)."""
        return self.kind in ("accuracy", "speed")


@dataclass(frozen=True)
class ClientSpec:
    command: tuple[str, ...]
    timeout_s: float


@dataclass(frozen=True)
class Workload:
    id: str  # "<model>/<name>", e.g. "qwen3/asr_en", "moss_td/googletime"
    model: str
    format: WorkloadFormat
    path: str  # relative to a run directory: a file (seedtts) or a directory (moss)
    expected_samples: int
    dataset: str
    metrics: tuple[MetricSpec, ...]
    client: ClientSpec
    lang: str | None = None
    raw_dir: str | None = None  # seedtts: where --save-raw-dir writes per-sample JSONL
    client_extra_args: tuple[str, ...] = ()
    require_null_max_new_tokens: bool = False
    # The stream run (suite key `stream`): its client runs with --stream, and its files must carry the streaming
    # fields (gate.reading.result_files: a run without them is INCOMPLETE, as is a non-streamed workload's run with them).
    stream: bool = False

    @property
    def name(self) -> str:
        return self.id.split("/", 1)[1]

    def metric(self, name: str) -> MetricSpec:
        for metric in self.metrics:
            if metric.name == name:
                return metric
        raise KeyError(f"{self.id} has no metric {name!r}")


@dataclass(frozen=True)
class ModelSpec:
    key: str
    model_id: str
    revision: str
    snapshot: str  # template with {hf_hub}
    server_args: tuple[str, ...]
    # Timed passes per server start (the SeedTTS client's --repeats, filled into {passes}); 1 is the runbook's.
    # A run's value is the mean of its passes, one observation (gate.stats.nested).
    passes: int = 1
    # How `gate run --ab` measures the model (gate.runner.duet): "interleave", a fresh server per run, sides
    # alternating (the runbook's); or "duet", both builds' servers resident on one GPU, judged on paired blocks.
    design: str = "interleave"


DESIGNS = ("interleave", "duet")


@dataclass(frozen=True)
class ServerSpec:
    port: int
    startup_timeout_s: float
    stop_grace_s: float
    gpu_free_below_mib: int
    gpu_free_timeout_s: float
    command: tuple[str, ...]


@dataclass(frozen=True)
class DatasetSpec:
    key: str
    id: str
    revision: str | None


@dataclass(frozen=True)
class Policy:
    """The maintainers' own tolerances, used when per-utterance data is missing."""

    accuracy_tolerance_abs: Mapping[str, float]


@dataclass(frozen=True)
class Suite:
    name: str
    source: str
    warm_run: str
    scored_runs: tuple[str, ...]
    environment: Mapping[str, str]
    server: ServerSpec
    datasets: Mapping[str, DatasetSpec]
    labels: Mapping[str, tuple[str, ...]]
    policy: Policy
    models: Mapping[str, ModelSpec]
    workloads: tuple[Workload, ...]

    def workload(self, workload_id: str) -> Workload:
        for workload in self.workloads:
            if workload.id == workload_id:
                return workload
        raise KeyError(workload_id)

    def workloads_for(self, models: tuple[str, ...] | list[str] | None = None) -> tuple[Workload, ...]:
        """The workloads of the given models (all when None), in suite order."""
        if models is None:
            return self.workloads
        unknown = sorted(set(models) - set(self.models))
        if unknown:
            raise SuiteError(f"unknown model(s) {', '.join(unknown)}; the suite has {', '.join(self.models)}")
        return tuple(w for w in self.workloads if w.model in models)

    def models_for_labels(self, labels: list[str] | tuple[str, ...]) -> tuple[str, ...]:
        """The models selected by a PR's labels, in suite order; labels the suite does not know are ignored."""
        chosen = {model for label in labels for model in self.labels.get(label, ())}
        return tuple(m for m in self.models if m in chosen)


def check_models(models: tuple[str, ...] | None, suite: Suite) -> None:
    """`--models` against the suite's models, before a command imports the statistics (a typo costs no import)."""
    unknown = sorted(set(models or ()) - set(suite.models))
    if unknown:
        close = difflib.get_close_matches(unknown[0], suite.models, n=1, cutoff=0.5)
        fix = f"; did you mean --models {close[0]}?" if close else "; give them comma-separated, e.g. --models qwen3,whisper"
        raise SuiteError(f"--models {unknown[0]}: expected one of the suite's models: {', '.join(suite.models)}{fix}")


def default_suite_path() -> Path:
    return Path(str(importlib.resources.files("gate.suites") / "asr.yaml"))


def load_suite(path: str | Path | None = None) -> Suite:
    """Read a suite YAML by the strict rules of gate.formats.inputs (regular file, size cap, UTF-8, duplicate keys
    refused, bounded nesting), then check every key."""
    source = Path(path) if path is not None else default_suite_path()
    try:
        data = inputs.load_yaml(source, inputs.SUITE)
    except inputs.Unreadable as exc:
        raise SuiteError(f"{exc.reason}; expected a suite YAML: fix it (the shipped suite is gate/suites/asr.yaml) "
                         f"or leave out --suite", path=source) from None
    return _SuiteParser(source).suite(data)


class _SuiteParser:
    """Walks the YAML with a key path, so every error names the file and the exact key."""

    def __init__(self, source: Path) -> None:
        self.source = source

    def fail(self, key: str, expected: str, got: Any = None) -> SuiteError:
        shown = "" if got is None else f", got {got!r}"
        return SuiteError(f"{key}: expected {expected}{shown}", path=self.source)

    def mapping(self, value: Any, key: str, required: tuple[str, ...], optional: tuple[str, ...] = ()) -> dict:
        if not isinstance(value, dict):
            raise self.fail(key or "top level", "a mapping", type(value).__name__)
        for name in required:
            if name not in value:
                typo = difflib.get_close_matches(name, [str(k) for k in value], n=1, cutoff=0.6)
                fix = f"; found {_join(key, typo[0])}: fix the spelling" if typo else ""
                raise SuiteError(f"{_join(key, name)}: required key is missing{fix}", path=self.source)
        unknown = sorted(set(value) - set(required) - set(optional))
        if unknown:
            known = ", ".join((*required, *optional))
            raise SuiteError(f"{_join(key, unknown[0])}: unknown key; expected one of {known}: fix the spelling",
                             path=self.source)
        return value

    def string(self, value: Any, key: str) -> str:
        if not isinstance(value, str) or not value:
            raise self.fail(key, "a non-empty string", value)
        return value

    def choice(self, value: Any, key: str, choices: tuple[str, ...]) -> str:
        if value not in choices:
            raise self.fail(key, "one of " + ", ".join(choices), value)
        return value

    def positive(self, value: Any, key: str, integer: bool = False) -> Any:
        kinds = (int,) if integer else (int, float)
        if isinstance(value, bool) or not isinstance(value, kinds) or value <= 0:
            raise self.fail(key, "a positive integer" if integer else "a positive number", value)
        return value

    def strings(self, value: Any, key: str) -> tuple[str, ...]:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.fail(key, "a list of strings", value)
        return tuple(value)

    def suite(self, data: Any) -> Suite:
        top = self.mapping(
            data, "",
            ("schema_version", "name", "runs", "environment", "server", "datasets", "labels", "policy", "models", "workloads"),
            ("metric_sets", "clients"),  # anchors only; their content is checked where it is used
        )
        if top["schema_version"] != SUITE_SCHEMA_VERSION:
            raise self.fail("schema_version", f"{SUITE_SCHEMA_VERSION}", top["schema_version"])
        runs = self.mapping(top["runs"], "runs", ("warm", "scored"))
        scored = tuple(str(r) for r in (runs["scored"] or []))
        if not scored:
            raise self.fail("runs.scored", "at least one scored run")
        env = self.mapping(top["environment"], "environment", tuple(top["environment"] or ()))
        environment = {k: str(v) for k, v in env.items()}
        datasets = {
            key: self._dataset(key, value) for key, value in self.mapping(top["datasets"], "datasets", tuple(top["datasets"] or ())).items()
        }
        models = {key: self._model(key, value) for key, value in self.mapping(top["models"], "models", tuple(top["models"] or ())).items()}
        labels = {}
        for label, chosen in self.mapping(top["labels"], "labels", tuple(top["labels"] or ())).items():
            key = f"labels.{label}"
            labels[label] = self.strings(chosen, key)
            for model in labels[label]:
                if model not in models:
                    raise self.fail(key, "model keys defined under models", model)
        if not isinstance(top["workloads"], list) or not top["workloads"]:
            raise self.fail("workloads", "a non-empty list")
        workloads = tuple(self._workload(i, w, models, datasets) for i, w in enumerate(top["workloads"]))
        ids = [w.id for w in workloads]
        duplicate = next((i for i in ids if ids.count(i) > 1), None)
        if duplicate:
            raise self.fail("workloads", "unique ids", duplicate)
        self._check_passes(models, workloads)
        return Suite(
            name=self.string(top["name"], "name"),
            source=str(self.source),
            warm_run=str(runs["warm"]),
            scored_runs=scored,
            environment=environment,
            server=self._server(top["server"]),
            datasets=datasets,
            labels=labels,
            policy=self._policy(top["policy"]),
            models=models,
            workloads=workloads,
        )

    def _dataset(self, key: str, value: Any) -> DatasetSpec:
        d = self.mapping(value, f"datasets.{key}", ("id",), ("revision",))
        revision = d.get("revision")
        return DatasetSpec(key=key, id=self.string(d["id"], f"datasets.{key}.id"),
                           revision=None if revision is None else self.string(revision, f"datasets.{key}.revision"))

    def _model(self, key: str, value: Any) -> ModelSpec:
        k = f"models.{key}"
        m = self.mapping(value, k, ("model_id", "revision", "snapshot", "server_args"), ("passes", "design"))
        return ModelSpec(
            key=key,
            model_id=self.string(m["model_id"], f"{k}.model_id"),
            revision=self.string(m["revision"], f"{k}.revision"),
            snapshot=self.string(m["snapshot"], f"{k}.snapshot"),
            server_args=self.strings(m["server_args"], f"{k}.server_args"),
            passes=self.positive(m.get("passes", 1), f"{k}.passes", integer=True),
            design=self.choice(m.get("design", "interleave"), f"{k}.design", DESIGNS),
        )

    def _check_passes(self, models: Mapping[str, ModelSpec], workloads: tuple[Workload, ...]) -> None:
        """`passes` > 1 needs a client that takes it: only the SeedTTS client has --repeats (MOSS-TD has no flag
        for timed passes), and its command must carry {passes}, or the setting would be silently ignored."""
        for index, w in enumerate(workloads):
            passes = models[w.model].passes
            if passes == 1:
                continue
            if w.format != "seedtts":
                raise SuiteError(f"models.{w.model}.passes: {passes} timed passes need the SeedTTS client's --repeats; "
                                 f"workload {w.id} is {w.format} (expected passes 1)", path=self.source)
            if not any("{passes}" in a for a in w.client.command):
                raise SuiteError(f"workloads[{index}].client.command: expected --repeats {{passes}} (models.{w.model}"
                                 f".passes is {passes})", path=self.source)

    def _server(self, value: Any) -> ServerSpec:
        s = self.mapping(value, "server", ("port", "startup_timeout_s", "stop_grace_s", "gpu_free_below_mib", "gpu_free_timeout_s", "command"))
        return ServerSpec(
            port=self.positive(s["port"], "server.port", integer=True),
            startup_timeout_s=self.positive(s["startup_timeout_s"], "server.startup_timeout_s"),
            stop_grace_s=self.positive(s["stop_grace_s"], "server.stop_grace_s"),
            gpu_free_below_mib=self.positive(s["gpu_free_below_mib"], "server.gpu_free_below_mib", integer=True),
            gpu_free_timeout_s=self.positive(s["gpu_free_timeout_s"], "server.gpu_free_timeout_s"),
            command=self.strings(s["command"], "server.command"),
        )

    def _policy(self, value: Any) -> Policy:
        if isinstance(value, dict) and "speed_ratio" in value:
            # Never read: speed is judged against measured noise and each metric's floor_rel.
            raise SuiteError("policy.speed_ratio: no longer read (speed changes are judged against the measured "
                             "noise and each speed metric's floor_rel); remove the key", path=self.source)
        p = self.mapping(value, "policy", ("accuracy_tolerance_abs",))
        tolerances = self.mapping(p["accuracy_tolerance_abs"], "policy.accuracy_tolerance_abs", tuple(p["accuracy_tolerance_abs"] or ()))
        for name, tol in tolerances.items():
            self.positive(tol, f"policy.accuracy_tolerance_abs.{name}")
        return Policy(accuracy_tolerance_abs=dict(tolerances))

    def _metric(self, value: Any, key: str) -> MetricSpec:
        m = self.mapping(value, key, ("name", "path", "unit", "direction", "kind"), ("file", "floor_rel", "samples", "gate", "plausible", "stream"))
        kind = MetricKind(self.choice(m["kind"], f"{key}.kind", METRIC_KINDS))
        floor = m.get("floor_rel")
        if floor is not None:
            self.positive(floor, f"{key}.floor_rel")
        if kind == "speed" and floor is None:
            raise SuiteError(f"{key}.floor_rel: required for a speed metric", path=self.source)
        plausible, per_samples = self._plausible(m.get("plausible"), f"{key}.plausible", kind)
        return MetricSpec(
            name=self.string(m["name"], f"{key}.name"),
            path=self.string(m["path"], f"{key}.path"),
            unit=self.string(m["unit"], f"{key}.unit"),
            direction=Direction(self.choice(m["direction"], f"{key}.direction", DIRECTIONS)),
            kind=kind,
            file=self.choice(m.get("file", "results"), f"{key}.file", ("results", "speed")),
            floor_rel=floor,
            samples=m.get("samples") and self.choice(m["samples"], f"{key}.samples", ("wer", "cer", "cp_cer")),
            gate=self._flag(m.get("gate", True), f"{key}.gate"),
            plausible=plausible,
            plausible_max_samples=per_samples,
            stream=self._flag(m.get("stream", False), f"{key}.stream"),
        )

    def _plausible(self, value: Any, key: str, kind: str) -> tuple[tuple[float, float | None], bool]:
        """`plausible: [min, max]` (max a number, `samples` or null), else the kind's default range."""
        if value is None:
            return DEFAULT_PLAUSIBLE[kind]
        if not isinstance(value, list) or len(value) != 2:
            raise self.fail(key, "[min, max]", value)
        low, high = value
        # only a shown (info) figure may be negative, e.g. delta_cer = cp_cer - cer_no_spk_cp_valid
        if isinstance(low, bool) or not isinstance(low, (int, float)) or not math.isfinite(low) or (
                low < 0 and kind != "info"):
            raise self.fail(key, "[min, max] with min a non-negative number (negative only for kind info)", value)
        if high == "samples":
            return (float(low), None), True
        if high is not None and (isinstance(high, bool) or not isinstance(high, (int, float))
                                 or not math.isfinite(high) or high <= low):
            raise self.fail(key, "[min, max] with max a number above min, `samples` or null", value)
        return (float(low), None if high is None else float(high)), False

    def _flag(self, value: Any, key: str) -> bool:
        if not isinstance(value, bool):
            raise self.fail(key, "true or false", value)
        return value

    def _workload(self, index: int, value: Any, models: Mapping[str, ModelSpec], datasets: Mapping[str, DatasetSpec]) -> Workload:
        key = f"workloads[{index}]"
        w = self.mapping(
            value, key,
            ("id", "model", "format", "path", "expected_samples", "dataset", "metrics", "client"),
            ("lang", "raw_dir", "client_extra_args", "require_null_max_new_tokens", "stream"),
        )
        model = self.string(w["model"], f"{key}.model")
        if model not in models:
            raise self.fail(f"{key}.model", "a model key defined under models", model)
        dataset = self.string(w["dataset"], f"{key}.dataset")
        if dataset not in datasets:
            raise self.fail(f"{key}.dataset", "a dataset key defined under datasets", dataset)
        workload_id = self.string(w["id"], f"{key}.id")
        if not workload_id.startswith(model + "/"):
            raise self.fail(f"{key}.id", f"'{model}/<name>'", workload_id)
        fmt = WorkloadFormat(self.choice(w["format"], f"{key}.format", FORMATS))
        if fmt == "seedtts" and w.get("lang") not in ("en", "zh"):
            raise self.fail(f"{key}.lang", "en or zh for a seedtts workload", w.get("lang"))
        if not isinstance(w["metrics"], list) or not w["metrics"]:
            raise self.fail(f"{key}.metrics", "a non-empty list")
        stream = self._flag(w.get("stream", False), f"{key}.stream")
        # A metric only a streamed run writes belongs to streamed workloads only: one metric set serves both.
        metrics = tuple(m for m in (self._metric(m, f"{key}.metrics[{i}]") for i, m in enumerate(w["metrics"]))
                        if stream or not m.stream)
        client = self.mapping(w["client"], f"{key}.client", ("command", "timeout_s"))
        extra = self.strings(w.get("client_extra_args", []), f"{key}.client_extra_args")
        if stream != ("--stream" in (*extra, *self.strings(client["command"], f"{key}.client.command"))):
            raise SuiteError(f"{key}.stream: {'true' if stream else 'false (or absent)'} needs the client's --stream "
                             f"flag {'in' if stream else 'left out of'} client_extra_args or client.command "
                             f"(workload {w.get('id')})", path=self.source)
        return Workload(
            id=workload_id,
            model=model,
            format=fmt,
            path=self.string(w["path"], f"{key}.path"),
            expected_samples=self.positive(w["expected_samples"], f"{key}.expected_samples", integer=True),
            dataset=dataset,
            metrics=metrics,
            client=ClientSpec(
                command=self.strings(client["command"], f"{key}.client.command"),
                timeout_s=self.positive(client["timeout_s"], f"{key}.client.timeout_s"),
            ),
            lang=w.get("lang"),
            raw_dir=w.get("raw_dir") and self.string(w["raw_dir"], f"{key}.raw_dir"),
            client_extra_args=extra,
            require_null_max_new_tokens=bool(w.get("require_null_max_new_tokens", False)),
            stream=stream,
        )


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else str(name)
