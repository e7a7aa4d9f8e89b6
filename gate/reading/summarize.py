"""Summaries of one result tree: the runbook's Step 7 output, a richer table, and a versioned JSON form.

- `runbook_summary(root)` reproduces the runbook's `summarize.py` byte for byte wherever that script
  runs (fixed run1..run3, its own globbing and coverage rule). Where the script would crash or
  silently print NaN (malformed JSON, NaN/Infinity, missing keys, non-numeric values) it raises
  InputError naming the file and what was expected. It also refuses a tree with no run1..run3
  directory at all (the script would print an all-missing summary of an empty or mistyped path).
- `summarize_tree(tree, suite)` builds a `TreeSummary` from `gate.reading.results` (suite workloads, every
  scored run discovered, coverage reasons) and `gate.reading.samples` (per-sample cross-check per run).
- `render_table(summary)` and `summary_json(summary)` render it.

Exit codes (also in `gate summarize --help`): 0 complete; 3 incomplete coverage, including a result
or per-sample file that is malformed or unreadable (its workload run is invalid, as in `compare`);
2 only when the tree cannot be opened as a tree at all (missing, not a directory, no scored run).
Coverage counts only readable, complete runs.
"""
from __future__ import annotations

import glob
import math
import os
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gate.formats import inputs, result_types, runlog
from gate.formats.config import Suite
from gate.formats.errors import IncompleteInput, InputError
from gate.formats.result_types import INVALID_SAMPLES, Problem, ResultTree
from gate.reading import result_files
from gate.reading.client_settings import refuse_mixed_client_settings
from gate.reading.copies import refuse_copies, tree_hashes
from gate.reading.samples import read_run_samples
from gate.reading.side import MATCH, MISMATCH

SUMMARY_SCHEMA_VERSION = 1
EXIT_COMPLETE = 0
EXIT_INCOMPLETE = 3
# Coverage problems that mean a file is broken (not merely an incomplete measurement); still exit 3.
_INPUT_CODES = result_types.INPUT_CODES


# --- the runbook's summarize.py, reproduced ---------------------------------------------------------

# These constants are the runbook's (Step 7), kept literally so the output matches it byte for byte.
_SEED = ("corpus_wer", "throughput_samples_per_s", "latency_mean_s", "latency_p95_s", "rtf_mean")
_MOSS = ("cer", "cp_cer", "cer_valid_samples", "cp_cer_valid_samples", "speaker_timestamp_der")
_SPEED = ("throughput_qps", "latency_mean_s", "latency_p95_s", "rtf_mean")
_EXPECTED = {"asr_en.json": 1088, "asr_zh.json": 2020, "movies800times": 800,
             "movies800times_stream": 800, "aishell4_long": 20, "googletime": 25}


@dataclass(frozen=True)
class RunbookSummary:
    text: str
    complete: bool  # the script's "coverage complete" line

    @property
    def exit_code(self) -> int:
        return EXIT_COMPLETE if self.complete else EXIT_INCOMPLETE


def runbook_summary(root: str | Path) -> RunbookSummary:
    """The runbook Step 7 summarize.py output for `root`, or InputError where the script would crash."""
    root_text = str(root)
    if not Path(root_text).exists():
        raise InputError("no such directory; expected a result tree <tree>/run<R>/...", path=root_text)
    if not Path(root_text).is_dir():
        raise InputError("not a directory; expected a result tree <tree>/run<R>/...", path=root_text)
    runs = [f"{root_text}/run{i}" for i in (1, 2, 3)]
    if not any(Path(r).is_dir() for r in runs):
        raise InputError("no run1, run2 or run3 directory; expected the runbook layout <tree>/run<R>/...", path=root_text)
    expected_keys = {f"{model}/{name}" for model in ("qwen3", "whisper", "fun") for name in ("asr_en.json", "asr_zh.json")}
    expected_keys |= {f"moss_td/{name}" for name in _EXPECTED if not name.endswith(".json")}
    rows: dict[str, list[tuple[bool, dict[str, Any]]]] = {}
    sources: dict[str, list[str]] = {}
    for run in runs:
        for path in glob.glob(f"{run}/*/asr_*.json"):
            r = _runbook_seedtts(path)
            try:
                ok = r["evaluated"] == r["total"] == _EXPECTED[os.path.basename(path)] and r["skipped"] == 0
            except KeyError:
                raise IncompleteInput("unexpected file name; expected asr_en.json or asr_zh.json", path=path) from None
            key = os.path.relpath(path, run)
            rows.setdefault(key, []).append((ok, {k: r[k]["mean"] for k in _SEED}))
            sources.setdefault(key, []).append(path)
        for path in glob.glob(f"{run}/moss_td/*/transcribe_diarize_results.json"):
            p, s = _runbook_moss(path)
            name = os.path.basename(os.path.dirname(path))
            try:
                summary = p["summary"]
                ok = summary["evaluated"] == summary["total_samples"] == _EXPECTED[name] and s.get("failed_requests") == 0
            except KeyError:
                raise IncompleteInput(f"unexpected dataset directory {name!r}; expected one of movies800times, "
                                 f"movies800times_stream, aishell4_long, googletime", path=path) from None
            d = p["diarization_metrics"]
            rows.setdefault("moss_td/" + name, []).append((ok, {k: d.get(k) for k in _MOSS} | {k: s.get(k) for k in _SPEED}))
            sources.setdefault("moss_td/" + name, []).append(path)
    complete = rows.keys() == expected_keys and all(len(rs) == 3 and all(ok for ok, _ in rs) for rs in rows.values())
    lines = [
        f"scored runs: {[os.path.basename(r) for r in runs]}",
        f"missing workloads: {sorted(expected_keys - rows.keys())}",
        f"coverage complete: {complete}",
    ]
    for key, rs in sorted(rows.items()):
        lines.append(f"{key}  runs={len(rs)} complete={len(rs) == len(runs) and all(ok for ok, _ in rs)}")
        for k in rs[0][1]:
            v = [m.get(k) for _, m in rs]
            if None in v:
                lines.append(f"  {k:26} missing in a run: {v}")
                continue
            if any(isinstance(x, bool) or not isinstance(x, (int, float)) for x in v):
                raise IncompleteInput(f"{key}: {k} values {v!r} are not all numbers; expected a number or null in every run",
                                      path=", ".join(sources[key]))
            if any(math.copysign(1.0, x) < 0 for x in v if x is not None):  # negative, or -0.0
                raise IncompleteInput(f"{key}: {k} values {v!r} include a negative number; expected values >= 0",
                                      path=", ".join(sources[key]))
            numbers = [x for x in v if x is not None]
            lines.append(f"  {k:26} mean {statistics.mean(numbers):.6f}  min {min(numbers):.6f}  max {max(numbers):.6f}")
    return RunbookSummary(text="".join(line + "\n" for line in lines), complete=complete)


def _runbook_seedtts(path: str) -> dict[str, Any]:
    data = _strict_json(path)
    try:
        r = data["results"][0]
        for k in ("evaluated", "total", "skipped"):
            r[k]  # noqa: B018 - presence check, as the script indexes it
        for k in _SEED:
            r[k]["mean"]  # noqa: B018
    except (KeyError, IndexError, TypeError):
        raise IncompleteInput("not a SeedTTS result; expected results[0] with evaluated, total, skipped and "
                         f"{', '.join(k + '.mean' for k in _SEED)}", path=path) from None
    if not isinstance(r, dict):
        raise IncompleteInput("results[0] is not an object; expected a SeedTTS result", path=path)
    return r


def _runbook_moss(path: str) -> tuple[dict[str, Any], dict[str, Any]]:
    p = _strict_json(path)
    speed_path = path.replace("_results.json", "_speed_results.json")
    if not os.path.isfile(speed_path):
        raise IncompleteInput("missing; expected it beside transcribe_diarize_results.json", path=speed_path)
    speed_doc = _strict_json(speed_path)
    try:
        p["summary"]["evaluated"], p["summary"]["total_samples"]  # noqa: B018
        if not isinstance(p["diarization_metrics"], dict):
            raise TypeError
    except (KeyError, TypeError):
        raise IncompleteInput("expected summary.evaluated, summary.total_samples and a diarization_metrics object",
                         path=path) from None
    s = speed_doc.get("speed") if isinstance(speed_doc, dict) else None
    if not isinstance(s, dict):
        raise IncompleteInput("expected a speed object", path=speed_path)
    return p, s


def _strict_json(path: str) -> Any:
    try:
        return result_files.load_result(Path(path))
    except inputs.Unreadable as exc:
        raise IncompleteInput(f"{exc.reason}; expected a complete JSON file", path=path) from None


# --- the richer summary ------------------------------------------------------------------------------

@dataclass(frozen=True)
class MetricSummary:
    name: str
    unit: str
    kind: str
    direction: str
    values: tuple[float | None, ...]  # one per run the workload has, in run order
    complete: tuple[bool, ...] = ()  # per run: complete coverage (statistics use only those runs)

    @property
    def present(self) -> tuple[float, ...]:
        """The values of complete runs (an incomplete or invalid run's value is shown, never averaged)."""
        flags = self.complete or (True,) * len(self.values)
        return tuple(v for v, ok in zip(self.values, flags, strict=True) if v is not None and ok)

    @property
    def mean(self) -> float | None:
        return statistics.fmean(self.present) if self.present else None

    @property
    def minimum(self) -> float | None:
        return min(self.present) if self.present else None

    @property
    def maximum(self) -> float | None:
        return max(self.present) if self.present else None


@dataclass(frozen=True)
class RunCoverage:
    run: str
    complete: bool
    evaluated: int | None
    total: int | None
    skipped: int | None
    failed_requests: int | None
    problems: tuple[Problem, ...]


@dataclass(frozen=True)
class SampleCheck:
    run: str
    measure: str
    status: str  # gate.reading.samples MATCH / MISMATCH / UNAVAILABLE
    recomputed: float | None
    reported: float | None
    message: str
    invalid: bool
    path: str | None


@dataclass(frozen=True)
class WorkloadSummary:
    workload_id: str
    expected_samples: int
    expected_runs: int
    coverage: tuple[RunCoverage, ...]
    metrics: tuple[MetricSummary, ...]
    samples: tuple[SampleCheck, ...]

    @property
    def complete(self) -> bool:
        return len(self.coverage) == self.expected_runs and all(c.complete for c in self.coverage)

    @property
    def runs_with_results(self) -> int:
        """Runs whose results are readable and complete (coverage counts nothing else)."""
        return sum(1 for c in self.coverage if c.complete)


@dataclass(frozen=True)
class TreeSummary:
    root: str
    layout: str
    runs: tuple[str, ...]
    commits: tuple[tuple[str, str | None], ...]  # (run, commit.txt)
    workloads: tuple[WorkloadSummary, ...]
    missing_workloads: tuple[str, ...]
    ignored: tuple[str, ...] = ()  # run* folders and result files that are not planned: reported, never read
    run_log: tuple[Problem, ...] = ()  # what gate-run.json says went wrong (a run it marks failed is not complete)

    @property
    def complete(self) -> bool:
        return not self.missing_workloads and not self.run_log and all(w.complete for w in self.workloads)

    @property
    def input_problems(self) -> tuple[Problem, ...]:
        """Problems that mean the input is unreadable (exit 2), not merely incomplete."""
        found: list[Problem] = []
        for w in self.workloads:
            for c in w.coverage:
                found += [p for p in c.problems if p.code in _INPUT_CODES]
        reported = {p.path for p in found}
        for w in self.workloads:
            for s in w.samples:
                if s.invalid and s.path not in reported:  # one line per broken file, not one per measure
                    found.append(Problem(INVALID_SAMPLES, s.message, s.path))
                    reported.add(s.path)
        return tuple(found)

    @property
    def exit_code(self) -> int:
        """0 complete, else 3: a malformed or unreadable file makes its workload incomplete, as in `compare`."""
        return EXIT_COMPLETE if self.complete and not self.input_problems else EXIT_INCOMPLETE


def summarize_tree(tree: ResultTree, suite: Suite, *, samples: bool = True) -> TreeSummary:
    """Per workload: metric values per run, coverage reasons per run, per-sample cross-check per run. A run
    copied inside the tree is refused (gate.reading.copies, the rule compare and baseline apply)."""
    refuse_copies([("", tree_hashes(tree))], path=tree.root)
    refuse_mixed_client_settings(tree)
    summaries = []
    for workload_id, runs in tree.workloads.items():
        workload = suite.workload(workload_id)
        coverage = tuple(RunCoverage(r.run, r.complete, r.coverage.evaluated, r.coverage.total, r.coverage.skipped,
                                     r.coverage.failed_requests, r.coverage.problems) for r in runs)
        metrics = tuple(MetricSummary(m.name, m.unit, m.kind, m.direction, tuple(r.metrics.get(m.name) for r in runs),
                                      tuple(r.complete for r in runs))
                        for m in workload.metrics)
        checks: list[SampleCheck] = []
        if samples:
            for run_info in tree.runs_of(workload_id):
                if not run_info.present:
                    continue
                for measure, errors in read_run_samples(run_info.path, workload).items():
                    c = errors.crosscheck
                    checks.append(SampleCheck(run_info.name, measure, c.status, c.recomputed, c.reported, c.message,
                                              c.invalid, c.path))
        summaries.append(WorkloadSummary(workload_id, workload.expected_samples, len(tree.runs_of(workload_id)), coverage, metrics,
                                         tuple(checks)))
    return TreeSummary(root=tree.root, layout=tree.layout, runs=tree.run_names,
                       commits=tuple((r.name, r.commit) for r in tree.runs), workloads=tuple(summaries),
                       missing_workloads=tree.missing_workloads, ignored=tree.ignored,
                       run_log=run_log_problems(tree))


RUN_LOG = "run_log"  # the problem code of what gate-run.json says went wrong
_ENDED_WELL = ("completed",)
_RUN_FAILED = ("failed", "interrupted")


def run_log_problems(tree: ResultTree) -> tuple[Problem, ...]:
    """What the tree's gate-run.json says went wrong: the run as a whole not completed (failed,
    interrupted, or still `running`: killed), or one of this side's scored runs marked failed or
    interrupted. A tree without a run log (made by hand with the runbook) has nothing to say."""
    log = runlog.read(tree.root)
    if log is None:
        return ()
    path = str(Path(tree.root) / runlog.FILE)
    found = []
    if log.status not in _ENDED_WELL:
        why = f": {log.message}" if log.message else ""
        found.append(Problem(RUN_LOG, f"`gate run` ended {log.status.value!r}{why}; expected 'completed'", path))
    side = Path(tree.root).name
    for label, state in log.runs.items():
        owner, _, run = label.rpartition("/")
        if state in _RUN_FAILED and run in tree.run_names and owner in ("", side):
            found.append(Problem(RUN_LOG, f"{label} is marked {state.value!r}; its files are not a finished measurement",
                                 path))
    return tuple(found)


# --- renderings ----------------------------------------------------------------------------------------

# Complexity over 15: one branch per optional table section.
def render_table(summary: TreeSummary) -> str:  # noqa: C901 (reason above)
    """A readable terminal table: per workload its runs, coverage reasons and metric mean/min/max."""
    out: list[str] = []
    commits = sorted({c for _, c in summary.commits if c})
    out.append(f"tree:    {summary.root} ({summary.layout} layout)")
    out.append(f"runs:    {', '.join(summary.runs)}" + (f"   commit {', '.join(c[:12] for c in commits)}" if commits else ""))
    incomplete = [w.workload_id for w in summary.workloads if not w.complete]
    if summary.complete:
        out.append(f"coverage: complete ({len(summary.workloads)} workloads x {len(summary.runs)} runs)")
    else:
        parts = []
        if incomplete:
            parts.append(f"{len(incomplete)} incomplete ({', '.join(incomplete)})")
        if summary.missing_workloads:
            parts.append(f"{len(summary.missing_workloads)} missing ({', '.join(summary.missing_workloads)})")
        if summary.run_log:
            parts.append("gate-run.json marks the run unfinished")
        out.append("coverage: INCOMPLETE: " + "; ".join(parts))
    for problem in summary.run_log:
        out.append(f"run log: {problem}")
    for note in summary.ignored:
        out.append(f"ignored: {note}")
    for w in summary.workloads:
        out.append("")
        state = "complete" if w.complete else "INCOMPLETE (partial means)"
        evaluated = [c.evaluated for c in w.coverage if c.evaluated is not None]
        n_text = f"n={min(evaluated)}/{w.expected_samples}" if evaluated else f"n=?/{w.expected_samples}"
        out.append(f"{w.workload_id}  runs={w.runs_with_results}/{w.expected_runs}  {n_text}  {state}")
        rows = [("metric", "unit", "mean", "min", "max", "runs")]
        for m in w.metrics:
            rows.append((m.name, m.unit, _fmt(m.mean), _fmt(m.minimum), _fmt(m.maximum),
                         f"{len(m.present)}/{len(m.values)}"))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        for r in rows:
            out.append("  " + "  ".join(cell.ljust(widths[i]) if i < 2 else cell.rjust(widths[i])
                                        for i, cell in enumerate(r)).rstrip())
        for c in w.coverage:
            for problem in c.problems:
                out.append(f"  {c.run}: {problem.code}: {problem}")
        by_measure: dict[str, list[SampleCheck]] = {}
        for s in w.samples:
            by_measure.setdefault(s.measure, []).append(s)
        for measure, checks in by_measure.items():
            statuses = [s.status for s in checks]
            if all(s == MATCH for s in statuses):
                out.append(f"  per-sample {measure}: matches the file in every run ({len(statuses)})")
                continue
            for s in checks:
                if s.status != MATCH:
                    label = "INVALID" if s.invalid else ("MISMATCH" if s.status == MISMATCH else "unavailable")
                    out.append(f"  per-sample {measure} {s.run}: {label}: {s.message}")
    return "\n".join(out) + "\n"


def summary_json(summary: TreeSummary) -> dict[str, Any]:
    """The machine-readable form (schema_version 1). Keys are documented in README "gate summarize"."""
    return {
        "schema_version": SUMMARY_SCHEMA_VERSION,
        "kind": "gate.summary",
        "root": summary.root,
        "layout": summary.layout,
        "runs": list(summary.runs),
        "commits": {run: commit for run, commit in summary.commits},
        "complete": summary.complete,
        "exit_code": summary.exit_code,
        "missing_workloads": list(summary.missing_workloads),
        "problems": [_problem(p) for p in summary.input_problems],
        "run_log": [_problem(p) for p in summary.run_log],
        "ignored": list(summary.ignored),
        "workloads": [
            {
                "id": w.workload_id,
                "complete": w.complete,
                "runs": w.runs_with_results,
                "expected_runs": w.expected_runs,
                "expected_samples": w.expected_samples,
                "metrics": {m.name: {"unit": m.unit, "kind": m.kind, "direction": m.direction,
                                     "values": list(m.values), "mean": m.mean, "min": m.minimum, "max": m.maximum,
                                     "n": len(m.present)} for m in w.metrics},
                "coverage": [{"run": c.run, "complete": c.complete, "evaluated": c.evaluated, "total": c.total,
                              "skipped": c.skipped, "failed_requests": c.failed_requests,
                              "problems": [_problem(p) for p in c.problems]} for c in w.coverage],
                "samples": [{"run": s.run, "measure": s.measure, "status": s.status, "recomputed": s.recomputed,
                             "reported": s.reported, "invalid": s.invalid, "message": s.message, "path": s.path}
                            for s in w.samples],
            }
            for w in summary.workloads
        ],
    }


def _problem(p: Problem) -> dict[str, Any]:
    return {"code": p.code, "message": p.message, "path": p.path}


def _fmt(value: float | None) -> str:
    if value is None:
        return "-"
    if not math.isfinite(value):
        return str(value)
    if value.is_integer() and abs(value) < 1e9:
        return str(int(value))  # counts (valid samples, failed requests) and exact zeros
    magnitude = abs(value)
    if magnitude >= 100:
        return f"{value:.2f}"
    if magnitude >= 1:
        return f"{value:.4f}"
    return f"{value:.6f}"
