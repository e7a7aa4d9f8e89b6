"""The typed result of reading a result tree (gate.reading.results): runs, workload runs, coverage and its codes.

A workload run is INCOMPLETE when its coverage holds any `Problem`; each code below is one runbook
coverage rule or one way a file can be broken, so a reader of a `ResultTree` can say exactly why.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

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
NO_SPEED = "no_speed"  # MOSS speed lacks throughput/latency/RTF though some requests completed (an edited file)
ALL_FAILED = "all_requests_failed"  # SeedTTS evaluated 0 of N: every request failed (the client still exits 0)
MAX_NEW_TOKENS_SET = "max_new_tokens_set"  # movies800times* sent a token budget (runbook Step 6)
MISSING_RUN = "missing_run"  # a planned scored run (suite or gate-run.json) has no run directory
RUN_RECORD = "run_record"  # the run's commit.txt or freeze.txt exists but cannot be read
MISSING_METRIC = "missing_metric"  # a metric key the client always writes is absent (a broken or edited file)
NULL_METRIC = "null_metric"  # a metric is null in this run but measured in another run of the same workload
INVALID_SAMPLES = "invalid_samples"  # a per-sample file exists but is malformed (gate.reading.samples' crosscheck)
NOT_STREAMED = "not_streamed"  # the suite's stream workload, measured without --stream (no text_ttft_*/inter_chunk_*)
UNEXPECTED_STREAM = "unexpected_stream"  # a workload the suite does not stream, measured with --stream
EXCLUDED_SAMPLES = "excluded_samples"  # MOSS --exclude-sample-ids left samples out (total_samples lowered by them)
RECORDED = "recorded"  # a problem kept as one line in a baseline file: its message is that whole line
# What a client writes only with --stream (docs/upstream.md §2.1, §2.4): MOSS into `speed`, SeedTTS as stat dicts
# into results[0] (and scalars into each per_repeat record), the CI SeedTTS file into `speed`.
STREAM_FIELDS = ("text_ttft_mean_s", "text_ttft_median_s", "text_ttft_p95_s", "text_ttft_p99_s",
                 "inter_chunk_mean_s", "inter_chunk_p95_s", "inter_chunk_p99_s")
# Problems meaning a file is broken (not merely showing an incomplete measurement).
INPUT_CODES = (UNREADABLE, BAD_SCHEMA, RUN_RECORD, MISSING_METRIC)


@dataclass(frozen=True)
class Problem:
    """Why a workload run is incomplete. It stays this object from the reader to the report
    (gate.formats.report.CoverageProblem) and the renderers, which format it from its fields."""

    code: str
    message: str
    path: str | None = None
    run: str | None = None  # the run directory it is about ("run1"); None: the workload side as a whole

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message

    @property
    def line(self) -> str:
        """The problem as one line for people: "run1: evaluated_ne_total: <path>: <message>"."""
        return f"{self.run}: {self.code}: {self}" if self.run else str(self)


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
    gpu_csv: str | None = None  # provenance.gpu.nvidia_smi_csv: index,name,uuid,memory.total,driver_version,...
    torch_cuda_build: str | None = None  # provenance.gpu.torch_cuda_build, e.g. "13.0"
    max_new_tokens: int | None = None
    request_timeout_s: float | None = None
    concurrency: int | None = None
    stream: bool | None = None
    warmup: bool | int | None = None  # SeedTTS --warmup (true/false); MOSS config.warmup (a count, 0 in CI)
    repeats: int | None = None  # SeedTTS --repeats
    request_rate: float | str | None = None  # MOSS --request-rate: "inf" (every request at once, the runbook's) or req/s
    # MOSS --exclude-sample-ids (newer clients): the samples left out, comma-joined in the file's order; None: none
    exclude_sample_ids: str | None = None


@dataclass(frozen=True)
class Attempts:
    """Which CI attempt (its pytest-<N> directory) a CI result file was read from, and the attempts before it.

    Upstream's wrapper (run_flaky_pytest.sh) retries only after a non-zero exit, so every earlier attempt
    failed: the numbers come from the last one, and the earlier ones are said, never averaged in."""

    read: str  # "pytest-3"
    earlier: tuple[str, ...] = ()  # ("pytest-1", "pytest-2"), in order; () when the read attempt was the first


@dataclass(frozen=True)
class WorkloadRun:
    workload_id: str
    run: str  # run directory name, e.g. "run1"
    metrics: Mapping[str, float | None]  # metric name -> value; None when absent in the file
    coverage: Coverage
    provenance: Provenance
    files: tuple[str, ...]  # the files read, for messages
    samples_path: str | None = None  # per-sample source: SeedTTS raw JSONL directory, MOSS results file (gate.reading.samples)
    # MOSS: the results payload as parsed (it holds the per_sample rows), so gate.reading.samples never reads it again
    samples_document: Any = field(default=None, repr=False, compare=False)
    # SeedTTS run with P > 1 timed passes in one server start (--repeats P): metric -> the P passes' values
    # (results[0].per_repeat). `metrics` holds their mean, the run's one observation; empty when P = 1.
    passes: Mapping[str, tuple[float, ...]] = field(default_factory=dict)
    attempts: Attempts | None = None  # CI layout: the pytest-<N> attempt read; None: not read from an attempt

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

