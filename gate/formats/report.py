"""The report: one typed model of a comparison, from `gate.judging.compare` to every renderer and consumer.

A row carries facts, not prose: its verdict (gate.formats.verdict.Verdict), the basis it was judged on
(Basis), whether it improved, and its notes as a list for people to read. Nothing downstream parses a
note or a method string to learn a fact. `Report.to_json()` / `Report.from_json()` are the JSON form
(report.json); its schema is generated from these dataclasses (gate.formats.typedjson) and shipped as
gate/schemas/report.schema.json, which a test keeps equal to the generated one.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from enum import Enum, StrEnum
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from gate.formats import typedjson
from gate.formats.reasons import CannotFail, WarnCause
from gate.formats.verdict import Verdict

if TYPE_CHECKING:
    from gate.formats.result_types import Problem

REPORT_SCHEMA_VERSION = 4  # 3: looks and calibration_checks; 4: coverage reasons are typed problems
MAX_ID = 200  # characters of a workload, metric or utterance id kept in a report
MAX_PATH = 1000  # characters of a file path kept in a coverage problem
MAX_TEXT = 600  # characters of a note, reason or transcript excerpt kept in a report
MAX_RETRIED = 200  # retried workload runs kept per side
_PROBABILITY = {"min": 0, "max": 1}  # p-values, q-values, α levels: a report with p = 2 is not one the gate wrote
_AT_LEAST_0 = {"min": 0}  # σ, floors, tolerances, counts
CUT_MARK = "…[cut]"  # ends any string that was cut to fit the report schema
DERIVED_KEYS = ("exit_code", "counts")  # written by to_json for other tools; from_json checks them, never reads them


class Basis(str, Enum):
    """What a row's verdict rests on."""

    PAIRED = "paired"  # paired per-utterance test (accuracy)
    IDENTICAL = "identical"  # paired, and every utterance has the same errors on both sides
    CALIBRATED = "calibrated"  # log-scale test against A/A-calibrated noise (speed)
    UNCALIBRATED = "uncalibrated"  # no usable noise estimate: the maintainers' ratio policy (speed)
    FALLBACK = "fallback"  # no per-utterance data on both sides: the maintainers' tolerance (accuracy)
    NOT_TESTED = "not_tested"  # incomplete coverage or missing values: no test was run

    def __str__(self) -> str:
        return self.value


class RowKind(StrEnum):
    ACCURACY = "accuracy"
    SPEED = "speed"


class Direction(StrEnum):
    """Which way the metric is better."""

    LOWER = "lower"
    HIGHER = "higher"


class Family(StrEnum):
    """The multiplicity family a gated row is adjusted in."""

    QUALITY = "quality"
    SPEED = "speed"


class CiKind(StrEnum):
    DELTA_ABS = "delta_abs"  # accuracy: candidate − baseline, in the metric's units
    RATIO = "ratio"  # speed: candidate / baseline


class SideKind(StrEnum):
    TREE = "tree"
    BASELINE = "baseline"


class Why(StrEnum):
    """Why an utterance is shown."""

    NEW_CATASTROPHIC = "new_catastrophic"
    WORSE = "worse"
    BETTER = "better"


class LookName(StrEnum):
    FIRST = "first"  # runs 1..3 a side
    POOLED = "pooled"  # all runs, after the extension


class LookAction(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    EXTEND = "extend"  # first look only


class LooksFinal(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    UNDECIDED = "undecided"
    ONE_LOOK = "one look"


class Within(StrEnum):
    BASELINE = "baseline"
    CANDIDATE = "candidate"
    BOTH = "both"


class NextStep(StrEnum):
    MORE_RUNS = "more_runs"  # more runs on both sides, numbered after theirs (runbook runs 4-6 after 3)
    CALIBRATE = "calibrate"  # `gate baseline calibrate A B`
    AB_RUN = "ab_run"  # `gate run --ab`
    MORE_SESSIONS = "more_sessions"  # a duet's speed row: more duet sessions (`gate run --ab … --design duet`)


class Subset(StrEnum):
    """A row over part of a workload's utterances (issue 36); None: the row is over the whole set (or, for an
    accuracy row that set a co-moving group aside, over the rest; its Δ is the whole set's)."""

    COMOVING = "comoving"  # the utterances that churned together in the A/A runs, tested against their own spread


COMOVING_SUFFIX = ":comoving"  # a co-moving group's row's metric: the measure's name and this (its key stays unique)


class Freshness(StrEnum):
    FRESH = "fresh"
    STALE = "stale"
    UNKNOWN = "unknown"  # no stamp, or nothing to compare with


def clip(text: object, limit: int) -> str:
    """`text` as a string of at most `limit` characters; a cut one ends with a visible mark."""
    text = "" if text is None else str(text)
    return text if len(text) <= limit else text[: max(limit - len(CUT_MARK), 0)] + CUT_MARK


@dataclass(frozen=True)
class SideStats:
    """One side of one row: a value per run present, and which of them are complete enough to average."""

    values: tuple[float | None, ...] = field(metadata={"max_items": 100})
    used: tuple[bool, ...] = field(metadata={"max_items": 100})  # complete runs: only these enter the mean
    expected_runs: int = field(metadata={"min": 0})  # scored runs the side should have
    n_samples: int | None = field(default=None, metadata={"min": 0})  # samples per run, over the used runs
    mean: float | None = None
    min: float | None = None
    max: float | None = None

    @classmethod
    def of(cls, values: Sequence[float | None], used: Sequence[bool], expected_runs: int,
           n_samples: int | None) -> SideStats:
        kept = [v for v, u in zip(values, used, strict=True) if u and v is not None and math.isfinite(v)]
        return cls(values=tuple(values), used=tuple(bool(u) for u in used), expected_runs=expected_runs,
                   n_samples=n_samples, mean=sum(kept) / len(kept) if kept else None,
                   min=min(kept) if kept else None, max=max(kept) if kept else None)

    @property
    def n_used(self) -> int:
        return sum(1 for v, u in zip(self.values, self.used, strict=False) if u and v is not None)

    @property
    def partial(self) -> bool:
        """The mean is not over every expected run (a run missing, incomplete or without a value)."""
        return self.n_used < max(self.expected_runs, len(self.values))

    @property
    def present(self) -> list[float]:
        return [v for v, u in zip(self.values, self.used, strict=False) if u and v is not None]


@dataclass(frozen=True)
class Row:
    """One workload × gated metric and its verdict."""

    workload: str = field(metadata={"max": MAX_ID})
    model: str = field(metadata={"max": MAX_ID})
    metric: str = field(metadata={"max": MAX_ID})
    kind: RowKind
    unit: str = field(metadata={"max": 20})
    direction: Direction
    baseline: SideStats
    candidate: SideStats
    verdict: Verdict
    basis: Basis
    improved: bool = False  # CI excludes no change in the better direction, and by at least half the floor
    method: str = field(default="", metadata={"max": 300})  # how it was tested, for people
    notes: tuple[str, ...] = field(default=(), metadata={"max_items": 20, "items": {"max": MAX_TEXT}})
    family: Family | None = None
    delta_abs: float | None = None
    delta_rel: float | None = None  # candidate mean / baseline mean - 1
    worse_rel: float | None = None  # speed: relative worsening (positive = worse)
    p_value: float | None = field(default=None, metadata=_PROBABILITY)
    p_adjusted: float | None = field(default=None, metadata=_PROBABILITY)  # Holm
    q_value: float | None = field(default=None, metadata=_PROBABILITY)  # Benjamini-Hochberg
    ci: tuple[float, float] | None = None
    ci_kind: CiKind | None = None
    floor_abs: float | None = field(default=None, metadata=_AT_LEAST_0)  # accuracy: Δ must reach this (fraction) ...
    floor_rel: float | None = field(default=None, metadata=_AT_LEAST_0)  # ... and this share of the baseline rate; speed: relative floor
    tolerance: float | None = field(default=None, metadata=_AT_LEAST_0)  # uncalibrated / fallback: the maintainers' tolerance
    p_degradation: float | None = field(default=None, metadata=_PROBABILITY)  # accuracy: bootstrap share of resamples with Δ > 0
    n_worse: int | None = field(default=None, metadata=_AT_LEAST_0)
    n_better: int | None = field(default=None, metadata=_AT_LEAST_0)
    new_catastrophic: int = field(default=0, metadata=_AT_LEAST_0)
    # Units over 50% errors, mean per run (upstream's n_above_50_pct_*), baseline and candidate; None: not said
    # (a report before issue 52, or a row without per-unit data)
    above_half: tuple[float, float] | None = None
    few_sessions: bool = False  # FAILed by the few-session rule (gate.judging.few_sessions)
    sigma: float | None = field(default=None, metadata=_AT_LEAST_0)  # speed: the run-to-run σ of ln(value) the test used
    df: int | None = field(default=None, metadata=_AT_LEAST_0)  # its degrees of freedom
    # Sensitivity (issue 21): the smallest worsening this row could catch with 80% power at its level (speed:
    # relative, like worse_rel; accuracy: absolute, like delta_abs); blind when that is above three times the floor (SENSITIVITY_FACTOR).
    mde: float | None = None
    # The same, said the way the metric moves (issue 36): speed relative (a throughput drop negative, a latency
    # rise positive), accuracy an absolute error-rate rise; on every gated row with a test.
    detects: float | None = None
    blind: bool = False
    unstable: bool = False  # speed: a worse candidate run set aside, or the candidate's runs split: WARN at least
    across_jobs: bool = False  # gated speed row judged across jobs: it WARNs at most (gate.judging.speed_rows.speed_blockers)
    # The step that would make a row that can WARN at most, or is blind, decisive (gate.judging.next_steps);
    # None when the row could decide.
    next_step: NextStep | None = None
    # Which utterances the row is over (issue 36): Subset.COMOVING for the co-moving group's own row, whose metric is
    # the measure's name + COMOVING_SUFFIX; None for a row over the workload's set.
    subset: Subset | None = None
    # Why the row cannot FAIL, and what made it WARN (issue 49), as codes set where the rule decides; words for them
    # are gate.render.reasons'. Older reports read them as not said.
    cannot_fail: tuple[CannotFail, ...] = field(default=(), metadata={"max_items": 20})
    warn_cause: WarnCause | None = None
    # NOT COMPARABLE: the kinds of fact that differ (gate.reading.comparability.KINDS) and were not allowed
    differs: tuple[str, ...] = field(default=(), metadata={"max_items": 20, "items": {"max": 40}})

    @property
    def short_workload(self) -> str:
        return self.workload.split("/", 1)[-1]


NO_RESULTS = "no_results"  # the side has no result for the workload at all
NO_REPORT = "no_report"  # gate merge: a model's benchmark job ended without a report


@dataclass(frozen=True)
class CoverageProblem:
    """Why one side of a workload is incomplete: gate.formats.result_types.Problem field for field, bounded for the
    report. Renderers format it from its fields (gate.render.cells.reason_words); nothing parses it."""

    code: str = field(metadata={"max": 40})  # a gate.formats.result_types code, NO_RESULTS or NO_REPORT
    message: str = field(metadata={"max": MAX_TEXT})
    path: str | None = field(default=None, metadata={"max": MAX_PATH})  # the file it is about, as read
    run: str | None = field(default=None, metadata={"max": MAX_ID})  # "run1"; None: the side as a whole

    @classmethod
    def of(cls, problem: Problem) -> CoverageProblem:
        return cls(code=clip(problem.code, 40), message=clip(problem.message, MAX_TEXT),
                   path=None if problem.path is None else clip(problem.path, MAX_PATH),
                   run=None if problem.run is None else clip(problem.run, MAX_ID))


@dataclass(frozen=True)
class CoverageSide:
    complete: bool
    runs_present: int = field(metadata={"min": 0})
    runs_complete: int = field(metadata={"min": 0})
    expected_runs: int = field(metadata={"min": 0})
    reasons: tuple[CoverageProblem, ...] = field(default=(), metadata={"max_items": 50})

    @property
    def runs_incomplete(self) -> int:
        return self.runs_present - self.runs_complete

    @property
    def runs_missing(self) -> int:
        return max(self.expected_runs - self.runs_present, 0)


@dataclass(frozen=True)
class CoverageEntry:
    workload: str = field(metadata={"max": MAX_ID})
    baseline: CoverageSide
    candidate: CoverageSide

    @property
    def complete(self) -> bool:
        return self.baseline.complete and self.candidate.complete


@dataclass(frozen=True)
class EnvDifference:
    kind: str = field(metadata={"max": 40})
    workload: str | None = field(metadata={"max": MAX_ID})  # None: the whole environment
    item: str = field(metadata={"max": MAX_ID})
    baseline: str | None = field(metadata={"max": MAX_TEXT})
    candidate: str | None = field(metadata={"max": MAX_TEXT})
    known: bool  # False: only one side recorded the fact (shown, never blocking)
    blocking: bool
    # That side's own records disagree (env.json against its result files' provenance, or one unreadable), so
    # the sides' setups are not what differs; None: the sides differ
    within: Within | None = None


@dataclass(frozen=True)
class CiRetry:
    """One workload run of a side read from a CI artifact whose pytest wrapper retried it: the attempt read and the
    earlier, failed, attempts (gate.formats.result_types.Attempts, bounded for the report). Said, never judged."""

    workload: str = field(metadata={"max": MAX_ID})
    run: str = field(metadata={"max": MAX_ID})  # "run1"
    read: str = field(metadata={"max": 40})  # "pytest-3"
    earlier: tuple[str, ...] = field(metadata={"max_items": 20, "items": {"max": 40}})


@dataclass(frozen=True)
class SideInfo:
    # A SideKind; a merge of reports judged against different kinds of side joins them ("tree | baseline").
    kind: str = field(metadata={"max": 20})
    name: str | None = field(metadata={"max": MAX_ID})  # the tree folder's or baseline file's name, never a local path
    commit: str | None = field(metadata={"max": MAX_ID})
    runs: int = field(metadata={"min": 0})
    calibrated: bool
    # CI artifacts only: the workload runs a retry read from a later attempt (issue 51); () for one attempt, a
    # baseline file, or a report written before it
    retried: tuple[CiRetry, ...] = field(default=(), metadata={"max_items": MAX_RETRIED})


@dataclass(frozen=True)
class Utterance:
    workload: str = field(metadata={"max": MAX_ID})
    measure: str = field(metadata={"max": 40})
    id: str = field(metadata={"max": MAX_ID})
    why: Why
    ref_len: int = field(metadata={"min": 0})
    baseline_errors: float = field(metadata={"min": 0})
    candidate_errors: float = field(metadata={"min": 0})
    reference: str = field(metadata={"max": MAX_TEXT})
    baseline_hypothesis: str = field(metadata={"max": MAX_TEXT})
    candidate_hypothesis: str = field(metadata={"max": MAX_TEXT})


@dataclass(frozen=True)
class Statistics:
    """The decision levels a report was judged with: numbers only (the templates say what they mean)."""

    quality_alpha: float = field(metadata=_PROBABILITY)
    quality_warn_alpha: float = field(metadata=_PROBABILITY)
    quality_floor_abs: float = field(metadata=_AT_LEAST_0)
    quality_floor_rel: float = field(metadata=_AT_LEAST_0)
    small_set_size: int = field(metadata=_AT_LEAST_0)
    small_set_floor_abs: float = field(metadata=_AT_LEAST_0)
    quality_family_size: int = field(metadata=_AT_LEAST_0)
    speed_alpha: float = field(metadata=_PROBABILITY)
    warn_q: float = field(metadata=_PROBABILITY)  # WARN (accuracy): BH q at most this, with at least half the floor
    speed_family_size: int = field(metadata=_AT_LEAST_0)
    min_calibration_df: int = field(metadata=_AT_LEAST_0)
    n_boot: int = field(metadata=_AT_LEAST_0)
    seed: int = field(metadata=_AT_LEAST_0)
    merged_from: int = field(default=1, metadata={"min": 1})  # per-model reports merged into this one (multiplicity stays per model)
    # WARN (speed): BH q at most this; None in a version-4 report written before it, whose speed rows used warn_q
    speed_warn_q: float | None = field(default=None, metadata=_PROBABILITY)


@dataclass(frozen=True)
class LookOutcome:
    """One look of `gate run --ab` at one model: what it decided, why, and on how many runs."""

    name: LookName
    action: LookAction
    reasons: tuple[str, ...] = field(metadata={"max_items": 20, "items": {"max": MAX_TEXT}})
    base_runs: int = field(metadata={"min": 0})  # scored runs per side the look saw
    candidate_runs: int = field(metadata={"min": 0})


@dataclass(frozen=True)
class ModelLooks:
    """How the A/B job decided one model: its looks in order (none: it had one look only)."""

    model: str = field(metadata={"max": 60})
    source: str = field(metadata={"max": 40})  # "gate-run.json" (the candidate tree's log) or "recomputed"
    looks: tuple[LookOutcome, ...] = field(metadata={"max_items": 2})
    final: LooksFinal
    note: str | None = field(default=None, metadata={"max": MAX_TEXT})  # why one look, or why not extended
    design: str | None = field(default=None, metadata={"max": 20})  # "duet" where that design measured the PR


@dataclass(frozen=True)
class CalibrationCheck:
    """Was the A/A calibration measured where the candidate was (GPU, driver, package set)?

    A stale calibration is reported; speed rows compared across jobs say that their σ is stale (`blocks_fail`:
    stale, across jobs, where the rows still use it; in one job a stale calibration is not used at all)."""

    source: str = field(metadata={"max": MAX_ID})  # the calibration file's name, never a local path
    models: tuple[str, ...] = field(metadata={"max_items": 20, "items": {"max": 60}})
    status: Freshness
    reasons: tuple[str, ...] = field(default=(), metadata={"max_items": 10, "items": {"max": MAX_TEXT}})
    blocks_fail: bool = False  # stale, and the speed rows were compared across jobs


@dataclass(frozen=True)
class Report:
    schema_version: int
    suite: str = field(metadata={"max": 60})
    verdict: Verdict
    models: tuple[str, ...] = field(metadata={"max_items": 20, "items": {"max": 60}})
    baseline: SideInfo
    candidate: SideInfo
    rows: tuple[Row, ...] = field(metadata={"max_items": 1000})
    coverage: tuple[CoverageEntry, ...] = field(metadata={"max_items": 200})
    environment_diff: tuple[EnvDifference, ...] = field(metadata={"max_items": 500})
    allowed_diff: tuple[str, ...] = field(metadata={"max_items": 20, "items": {"max": 40}})
    utterances: tuple[Utterance, ...] = field(metadata={"max_items": 500})
    statistics: Statistics
    looks: tuple[ModelLooks, ...] = field(default=(), metadata={"max_items": 20})  # A/B in one job: both looks
    calibration_checks: tuple[CalibrationCheck, ...] = field(default=(), metadata={"max_items": 20})

    @property
    def exit_code(self) -> int:
        return self.verdict.exit_code

    @property
    def counts(self) -> dict[Verdict, int]:
        return {v: sum(1 for r in self.rows if r.verdict is v) for v in Verdict.by_severity()}

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = typedjson.to_json(self)
        # For tools reading report.json (DERIVED_KEYS): from_json checks them against the verdict and rows.
        data["exit_code"] = self.exit_code
        data["counts"] = {v.value: n for v, n in self.counts.items()}
        return data

    @classmethod
    def from_json(cls, data: Any) -> Report:
        """The report in `data` (a parsed report.json), read as strictly as report.schema.json describes it
        (and stricter: the derived exit_code and counts must be the ones its verdict and rows give);
        raises typedjson.SchemaMismatch naming the JSON path."""
        if not isinstance(data, dict):
            raise typedjson.SchemaMismatch("$", "expected an object", wrong_type=True)
        version = data.get("schema_version")
        if type(version) is not int or version != REPORT_SCHEMA_VERSION:
            raise typedjson.SchemaMismatch("$.schema_version", f"expected {REPORT_SCHEMA_VERSION}")
        for key in DERIVED_KEYS:
            if key not in data:
                raise typedjson.SchemaMismatch("$", f"missing key {key!r}")
        report = typedjson.from_json(cls, _upgraded({k: v for k, v in data.items() if k not in DERIVED_KEYS}))
        _check_derived(data, report)
        _check_models(report)
        return report

    @classmethod
    def merge(cls, reports: Sequence[Report], expected_models: Iterable[str] = (),
              missing_workloads: Mapping[str, Sequence[str]] | None = None) -> Report:
        """One report from per-model reports (multiplicity stays per model). A model that was expected
        but has no report makes its workloads incomplete on both sides, so the verdict is INCOMPLETE."""
        if not reports:
            raise ValueError("no reports to merge")
        if len({r.suite for r in reports}) != 1:
            raise ValueError("reports of different suites cannot be merged")
        present = [m for r in reports for m in r.models]
        missing = [m for m in expected_models if m not in present]
        coverage = [c for r in reports for c in r.coverage]
        for model in missing:
            reason = CoverageProblem(NO_REPORT, f"no report for {model}: its benchmark job ended without one")
            lost = CoverageSide(complete=False, runs_present=0, runs_complete=0, expected_runs=0, reasons=(reason,))
            for workload in (missing_workloads or {}).get(model, (model,)):
                coverage.append(CoverageEntry(workload=workload, baseline=lost, candidate=lost))
        differences = list(dict.fromkeys(d for r in reports for d in r.environment_diff))
        rows = tuple(row for r in reports for row in r.rows)
        verdict = Verdict.worst([r.verdict for r in reports] + ([Verdict.INCOMPLETE] if missing else []))
        first = reports[0]
        stats = replace(first.statistics, merged_from=len(reports),
                        quality_family_size=sum(r.statistics.quality_family_size for r in reports),
                        speed_family_size=sum(r.statistics.speed_family_size for r in reports))
        return cls(schema_version=REPORT_SCHEMA_VERSION, suite=first.suite, verdict=verdict,
                   models=tuple(dict.fromkeys(present + missing)),
                   baseline=_merge_side([r.baseline for r in reports]),
                   candidate=_merge_side([r.candidate for r in reports]),
                   rows=rows, coverage=tuple(coverage), environment_diff=tuple(differences),
                   allowed_diff=tuple(sorted({k for r in reports for k in r.allowed_diff})),
                   utterances=tuple(u for r in reports for u in r.utterances), statistics=stats,
                   looks=tuple(m for r in reports for m in r.looks),
                   calibration_checks=tuple(c for r in reports for c in r.calibration_checks))


_ADDED_IN_4: dict[str, dict[str, Any]] = {"rows": {"across_jobs": False, "next_step": None, "detects": None,
                                                   "subset": None, "cannot_fail": [], "warn_cause": None,
                                                   "differs": [], "above_half": None, "few_sessions": False},
                                          "looks": {"design": None},
                                          "environment_diff": {"within": None},
                                          "statistics": {"speed_warn_q": None},
                                          "baseline": {"retried": []}, "candidate": {"retried": []}}


def _upgraded(data: dict[str, Any]) -> dict[str, Any]:
    """A version-4 report written before a row carried `across_jobs`, `next_step`, `detects`, `subset`, `above_half`
    and `few_sessions` (issue 52) (or `cannot_fail`, `warn_cause` and `differs`: read as not said, no reason or cause
    named), an
    environment difference `within`, its statistics `speed_warn_q` and a side's `retried` (tests/fixtures/formats/report),
    reads them as not said: no "compared across jobs" header line, no next step, no detectable change, a row over
    the whole set, the sides differ, speed WARNed at `warn_q`, no CI retry named."""
    for key, added in _ADDED_IN_4.items():
        items = data.get(key)
        if isinstance(items, list):
            data = {**data, key: [{**added, **item} if isinstance(item, dict) else item for item in items]}
        elif isinstance(items, dict):
            data = {**data, key: {**added, **items}}
    return data


def _check_models(report: Report) -> None:
    """`models` is what `gate merge --expect-models` trusts: it must name exactly the models its rows and
    coverage are of (workload ids are <model>/<workload>), or a report could claim a model it never judged."""
    judged = {row.model for row in report.rows} | {entry.workload.split("/", 1)[0] for entry in report.coverage}
    if set(report.models) != judged:
        claimed = ", ".join(sorted(set(report.models) - judged)) or "none"
        left_out = ", ".join(sorted(judged - set(report.models))) or "none"
        raise typedjson.SchemaMismatch("$.models", f"expected the models its rows and coverage are of "
                                                   f"({', '.join(sorted(judged))}); listed without a row: {claimed}; "
                                                   f"judged but not listed: {left_out}")


def _check_derived(data: Mapping[str, Any], report: Report) -> None:
    """exit_code and counts are written for other tools and never read back, but a report whose
    numbers disagree with its own verdict and rows is not one this gate wrote."""
    exit_code = data["exit_code"]
    if type(exit_code) is not int or exit_code != report.exit_code:
        raise typedjson.SchemaMismatch("$.exit_code", f"expected {report.exit_code}, the exit code of verdict "
                                                      f"{report.verdict.value!r}")
    counts = data["counts"]
    expected = {v.value: n for v, n in report.counts.items()}
    if not isinstance(counts, dict):
        raise typedjson.SchemaMismatch("$.counts", "expected an object", wrong_type=True)
    for key in counts:
        if key not in expected:
            raise typedjson.SchemaMismatch("$.counts", f"unexpected key {typedjson.quoted(key)}")
    for key, n in expected.items():
        if key not in counts:
            raise typedjson.SchemaMismatch("$.counts", f"missing key {key!r}")
        if type(counts[key]) is not int or counts[key] != n:
            raise typedjson.SchemaMismatch(f"$.counts.{key}", f"expected {n}, the rows with verdict {key!r}")


def _merge_side(sides: Sequence[SideInfo]) -> SideInfo:
    def join(values: Iterable[str | None]) -> str | None:
        kept = list(dict.fromkeys(v for v in values if v))
        return " | ".join(kept) if kept else None

    return SideInfo(kind=join(s.kind for s in sides) or SideKind.TREE, name=join(s.name for s in sides),
                    commit=join(s.commit for s in sides), runs=max(s.runs for s in sides),
                    calibrated=all(s.calibrated for s in sides),
                    retried=tuple(dict.fromkeys(r for s in sides for r in s.retried))[:MAX_RETRIED])


def report_schema() -> dict[str, Any]:
    """The JSON schema of report.json, generated from the model (shipped as gate/schemas/report.schema.json)."""
    schema = typedjson.schema_of(Report)
    schema["properties"]["schema_version"] = {"const": REPORT_SCHEMA_VERSION}
    schema["properties"]["exit_code"] = {"enum": sorted({v.exit_code for v in Verdict})}
    schema["properties"]["counts"] = {"type": "object", "additionalProperties": False,
                                      "required": [v.value for v in Verdict.by_severity()],
                                      "properties": {v.value: {"type": "integer", "minimum": 0} for v in Verdict.by_severity()}}
    schema["required"] += ["exit_code", "counts"]
    # Keys a version-4 report written before them may lack (read as not said: _upgraded).
    for key, added in _ADDED_IN_4.items():
        items = schema["properties"][key].get("items", schema["properties"][key])
        items["required"] = [name for name in items["required"] if name not in added]
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": "asr-regression-gate/report.schema.json",
            "title": f"ASR regression gate report (gate compare --json), schema_version {REPORT_SCHEMA_VERSION}",
            "description": "Generated from gate.formats.report (python -m gate.formats.report > gate/schemas/report.schema.json). "
                           "Strings and arrays are bounded.", **schema}


if __name__ == "__main__":
    import json
    import sys

    json.dump(report_schema(), sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")
