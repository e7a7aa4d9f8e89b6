"""Render a Report as the PR comment, the check-run summary, the job summary or terminal text.

Renderers read the typed Report (gate.formats.report), never prose: counts, icons and conclusions come from
each row's Verdict and Basis. Every string that came from outside (ids, transcripts, package names,
commits) passes through one filter, `md`, which neutralises markdown, HTML, @mentions, references,
backticks and table pipes; numbers are formatted from numbers. The environment uses StrictUndefined, so
a misspelt variable fails loudly instead of rendering as nothing.

Layout (comment and summaries): the verdict and one sentence naming the workloads concerned; the sides
and counts; coverage first when it is incomplete (it is the explanation); "What changed" — the rows that
are not a pass, most severe first, each with why; one line per model; coverage and environment (one line
each when clean); then, folded in <details>, every row, the paired tests, per-run values, changed
utterances and the statistics used.

Each output has its own budget in its platform's unit (gate.formats.github_limits). When a rendering is too long,
the least important parts are left out first (excerpts of passing workloads before those of failing
ones; never the rows that are not a pass), and the output says what was left out.
"""
from __future__ import annotations

import importlib.resources
import re
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import jinja2

from gate.formats import github_limits
from gate.formats.github_limits import Limit, fit
from gate.formats.report import Basis, CalibrationCheck, CoverageEntry, EnvDifference, ModelLooks, Report, Row, Utterance
from gate.formats.verdict import Verdict
from gate.render import escape
from gate.render.cells import (
    all_of,
    env_item,
    env_kind,
    fmt_above_half,
    fmt_blind,
    fmt_ci,
    fmt_coverage_side,
    fmt_delta,
    fmt_detects,
    fmt_errors,
    fmt_looks,
    fmt_means,
    fmt_model_detects,
    fmt_p,
    fmt_pcol,
    fmt_share,
    fmt_spread,
    fmt_value,
    metric_name,
    reason_words,
    short_commit,
    summary_text,
)
from gate.render.escape import md, md_excerpt, plain
from gate.render.excerpt import changed_words, excerpt_start
from gate.render.reasons import accept_line, cause_line, row_step, statistics_line

COMMENT_MARKER = "<!-- asr-regression-gate: {suite} -->"  # gate.publish.github finds the sticky comment by it
EXCERPT_CHARS = 160


# Parts of a rendering, least important first: each level leaves out one more (see _fit).
FOLD_LEVELS: tuple[tuple[str, ...], ...] = (
    (),
    ("per_run",),
    ("per_run", "packages"),
    ("per_run", "packages", "passing_rows"),
    ("per_run", "packages", "passing_rows", "utterances"),
    ("per_run", "packages", "passing_rows", "utterances", "coverage_ok", "statistics"),
)
FOLD_WORDS = {"utterances": "changed-utterance excerpts", "per_run": "per-run values",
              "packages": "the full package diff", "passing_rows": "the tables of all checks and of the paired tests",
              "coverage_ok": "complete-coverage lines", "statistics": "the statistics section"}

def marker(suite: str) -> str:
    return COMMENT_MARKER.format(suite=re.sub(r"[^A-Za-z0-9_.-]", "", str(suite))[:60])


# --- the templates' view -------------------------------------------------------------------------------

@dataclass(frozen=True)
class WorkloadMetrics:
    workload: str
    metrics: list[str]
    all: bool  # every check of the workload


@dataclass(frozen=True)
class Lead:
    verdict: Verdict
    workloads: list[WorkloadMetrics]
    every: bool  # every check of every workload (a GPU mismatch): one phrase instead of the list


@dataclass(frozen=True)
class WhyLine:
    workload: str
    why: str  # plain words (cells.fmt_reason)
    metrics: list[str]
    stats: str = ""  # the statistics behind it (cells.fmt_why), shown folded below


@dataclass(frozen=True)
class NoteLine:
    row: Row
    workload: str
    verdict: Verdict
    note: str
    method: str
    metrics: list[str]


@dataclass(frozen=True)
class ModelSummary:
    model: str
    n: int
    counts: list[tuple[Verdict, int]]  # non-zero counts, most severe first
    improved: int
    blind: int  # gated rows that pass but could not have seen a change at their floor (Row.blind)
    detects: str  # per gated metric, the change its least sensitive row detects with 80% power (cells.fmt_model_detects)


@dataclass(frozen=True)
class RetryLine:
    """Workload runs of one side that CI read from the same later attempt, after the same failed ones."""

    side: str  # "baseline" or "candidate"
    workloads: list[str]  # "qwen3/asr_en"; with its run ("qwen3/asr_en run2") where the side has several
    read: str  # "pytest-3"
    earlier: tuple[str, ...]  # the failed attempts before it


@dataclass(frozen=True)
class View:
    """What the templates see (their only variables; StrictUndefined fails on any other name)."""

    report: Report
    verdict: Verdict
    trends: Mapping[tuple[str, str], str]
    marker: str
    models: Mapping[str, list[Row]]
    model_summaries: list[ModelSummary]
    changed: list[Row]
    incomplete_workloads: list[WorkloadMetrics]
    leads: list[Lead]
    why_lines: list[WhyLine]
    accept: str  # how to accept the FAILs, and re-measure them (reasons.accept_line); empty without one
    notes: list[NoteLine]
    coverage: list[CoverageEntry]
    incomplete_coverage: list[CoverageEntry]
    complete_by_model: Mapping[str, list[str]]
    all_complete: bool
    differences: list[EnvDifference]
    packages: list[EnvDifference]
    blocking: list[EnvDifference]
    blocking_between: list[EnvDifference]  # the two sides' setups differ
    blocking_within: list[EnvDifference]  # a side's own records disagree: --allow-diff is not the fix
    allow_flags: str
    improved_rows: list[Row]
    blind_passes: list[Row]  # gated rows that pass while blind: the PASS is a caveat there (docs/statistics.md)
    decide_steps: list[str]  # the steps (Row.next_step, in words) that would decide the rows that could not decide
    folded: tuple[str, ...]
    folded_words: list[str]
    utterances: list[tuple[Utterance, int]]  # shown excerpts, with where each starts
    all_utterances: list[Utterance]
    flagged_utterances: list[Utterance]
    paired: list[Row]
    counts: Mapping[Verdict, int]
    verdicts: Sequence[Verdict]
    excerpt: int
    n_rows: int
    improved: int
    uncalibrated: int
    fallback: int
    looks: list[ModelLooks]
    stale_calibrations: list[CalibrationCheck]
    across_jobs: bool  # speed rows were judged across jobs: they WARN at most (Row.across_jobs)
    retries: list[RetryLine]  # CI attempts before the one read (SideInfo.retried): said in the header, never folded
    show_all: bool = False  # terminal only: every row, not only those that are not a pass
    table: str = ""  # terminal only: the rows shown, as aligned text

    def variables(self) -> dict[str, Any]:
        """The template variables: the fields, by name (templates read them as plain names)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


def _view(report: Report, folded: tuple[str, ...] = (), trends: Mapping[tuple[str, str], str] | None = None) -> View:
    rows = report.rows
    models: dict[str, list[Row]] = {}
    for row in rows:
        models.setdefault(row.model, []).append(row)
    # What changed: every row that is not a pass, most severe first; an incomplete workload is one line.
    not_passing = sorted((r for r in rows if not r.verdict.is_pass), key=lambda r: r.verdict.precedence)
    # Incomplete and not-comparable rows were not tested: Coverage and "Not comparable" explain them instead.
    changed = [r for r in not_passing if r.verdict in (Verdict.FAIL, Verdict.WARN)]
    incomplete_workloads = _incomplete_workloads(not_passing, models)
    notes = _notes([r for r in rows if r.notes and (not r.verdict.is_pass or r.basis is not Basis.IDENTICAL)])
    coverage = list(report.coverage)
    incomplete_coverage = [c for c in coverage if not c.complete]
    complete_by_model: dict[str, list[str]] = {}
    for c in coverage:
        if c.complete:
            model, _, name = c.workload.partition("/")
            complete_by_model.setdefault(model, []).append(name or model)
    differences = list(report.environment_diff)
    packages = [d for d in differences if d.kind == "freeze"]
    # Changed utterances are shown for the workloads that did not pass only.
    flagged = {r.workload for r in changed}
    utterances = sorted(report.utterances, key=lambda u: u.workload not in flagged)
    # Outputs show the changed utterances of those workloads only; the JSON report keeps them all.
    shown_utterances = [] if "utterances" in folded else [u for u in utterances if u.workload in flagged]
    return View(
        report=report,
        verdict=report.verdict,
        trends=dict(trends or {}),
        marker=marker(report.suite),
        models=models,
        model_summaries=[_model_summary(model, model_rows) for model, model_rows in models.items()],
        changed=changed,
        incomplete_workloads=incomplete_workloads,
        leads=_leads(not_passing, models),
        why_lines=_why_lines(changed, report),
        accept=accept_line(list(dict.fromkeys(r.model for r in changed if r.verdict is Verdict.FAIL))),
        notes=notes,
        coverage=coverage,
        incomplete_coverage=incomplete_coverage,
        complete_by_model=complete_by_model,
        all_complete=not incomplete_coverage,
        differences=[d for d in differences if d.kind != "freeze"],
        packages=packages,
        blocking=[d for d in differences if d.blocking],
        blocking_between=[d for d in differences if d.blocking and not d.within],
        blocking_within=[d for d in differences if d.blocking and d.within],
        # Placed in a code span: every kind (free text in an uploaded report) through escape.code.
        allow_flags=" ".join(f"--allow-diff {escape.code(kind, 40)}" for kind in
                             dict.fromkeys(d.kind for d in differences if d.blocking and not d.within)),
        improved_rows=[r for r in rows if r.improved],
        blind_passes=[r for r in rows if _blind_pass(r)],
        decide_steps=list(dict.fromkeys(step for r in rows if (step := row_step(r)) is not None)),
        folded=folded,
        folded_words=[FOLD_WORDS[f] for f in folded if _present(f, report, packages, incomplete_coverage, flagged)],
        utterances=[(u, excerpt_start(u, EXCERPT_CHARS)) for u in shown_utterances],
        all_utterances=utterances,
        flagged_utterances=[u for u in utterances if u.workload in flagged],
        paired=[r for r in rows if r.basis is Basis.PAIRED],
        counts=report.counts,
        verdicts=Verdict.by_severity(),
        excerpt=EXCERPT_CHARS,
        n_rows=len(rows),
        improved=sum(1 for r in rows if r.improved),
        uncalibrated=sum(1 for r in rows if r.basis is Basis.UNCALIBRATED),
        fallback=sum(1 for r in rows if r.basis is Basis.FALLBACK),
        looks=list(report.looks),
        stale_calibrations=[c for c in report.calibration_checks if c.status == "stale"],
        across_jobs=any(r.across_jobs for r in rows),
        retries=_retry_lines(report))


def _retry_lines(report: Report) -> list[RetryLine]:
    """SideInfo.retried, one line per (side, attempt read, failed attempts): a retried stage is one line."""
    lines: dict[tuple[str, str, tuple[str, ...]], RetryLine] = {}
    for name, side in (("baseline", report.baseline), ("candidate", report.candidate)):
        for retry in side.retried:
            where = retry.workload if side.runs <= 1 else f"{retry.workload} {retry.run}"
            lines.setdefault((name, retry.read, retry.earlier),
                             RetryLine(name, [], retry.read, retry.earlier)).workloads.append(where)
    return list(lines.values())


def _incomplete_workloads(rows: Sequence[Row], models: dict[str, list[Row]]) -> list[WorkloadMetrics]:
    """One entry per workload whose rows are incomplete: its checks were not tested (Coverage says why)."""
    per_workload: dict[str, list[str]] = {}
    for row in rows:
        if row.verdict is Verdict.INCOMPLETE:
            per_workload.setdefault(row.workload, []).append(row.metric)
    total = {w: sum(1 for r in model_rows if r.workload == w) for model_rows in models.values() for w in per_workload}
    return [WorkloadMetrics(w, m, len(m) == total.get(w, 0)) for w, m in per_workload.items()]


def _present(part: str, report: Report, packages: list, incomplete_coverage: list, flagged: set[str]) -> bool:
    """Whether a foldable part had anything in it (the note names only what was really left out)."""
    if part == "utterances":
        return any(u.workload in flagged for u in report.utterances)
    if part == "packages":
        return bool(packages)
    if part == "coverage_ok":
        return bool(incomplete_coverage) and len(incomplete_coverage) < len(report.coverage)
    return True


def _leads(rows: Sequence[Row], models: dict[str, list[Row]]) -> list[Lead]:
    """Per non-passing verdict (most severe first): its workloads, each with the metrics concerned."""
    per_workload: dict[str, int] = {}
    for model_rows in models.values():
        for row in model_rows:
            per_workload[row.workload] = per_workload.get(row.workload, 0) + 1
    leads: dict[Verdict, dict[str, list[str]]] = {}
    for row in rows:
        leads.setdefault(row.verdict, {}).setdefault(row.workload, []).append(row.metric)
    return [Lead(verdict, [WorkloadMetrics(w, m, len(m) == per_workload[w]) for w, m in workloads.items()],
                 every=len(workloads) > 2 and len(workloads) == len(per_workload)
                 and all(len(m) == per_workload[w] for w, m in workloads.items()))
            for verdict, workloads in leads.items()]


def _why_lines(rows: Sequence[Row], report: Report) -> list[WhyLine]:
    """One line per (workload, reason): six metrics of one incomplete workload say why once."""
    merged: dict[tuple[str, str, str], WhyLine] = {}
    for row in rows:
        why, stats = cause_line(row, report.statistics), statistics_line(row)
        merged.setdefault((row.workload, why, stats),
                          WhyLine(row.workload, why, [], "" if stats == why else stats)).metrics.append(row.metric)
    return list(merged.values())


def _model_summary(model: str, rows: list[Row]) -> ModelSummary:
    """One model's rows counted by verdict (most severe first), and how many improved."""
    counts = [(v, sum(1 for r in rows if r.verdict is v)) for v in Verdict.by_severity()]
    return ModelSummary(model, len(rows), [(v, n) for v, n in counts if n], sum(1 for r in rows if r.improved),
                        sum(1 for r in rows if _blind_pass(r)), fmt_model_detects(rows))


def _blind_pass(row: Row) -> bool:
    """A gated row that passes although it could not have caught a change at its floor (80% power)."""
    return row.blind and row.verdict.is_pass and row.family is not None


def _notes(rows: list[Row]) -> list[NoteLine]:
    """One line per (workload, notes, verdict): an incomplete workload says why once, not once per metric."""
    merged: dict[tuple, NoteLine] = {}
    for row in rows:
        key = (row.workload, row.notes, row.verdict)
        if key in merged:
            merged[key].metrics.append(row.metric)
        else:
            merged[key] = NoteLine(row, row.workload, row.verdict, "; ".join(row.notes), row.method, [row.metric])
    return list(merged.values())


_ENV: jinja2.Environment | None = None


def environment() -> jinja2.Environment:
    """The one Jinja environment: templates from gate.templates, strict undefined, filters registered once."""
    global _ENV
    if _ENV is None:
        try:
            root = importlib.resources.files("gate.templates")
        except ModuleNotFoundError:  # a source checkout on PYTHONPATH: templates/ sits beside gate/ (issue 23)
            root = Path(__file__).resolve().parents[2] / "templates"  # type: ignore[assignment]
        env = jinja2.Environment(
            loader=jinja2.FunctionLoader(lambda name: (root / name).read_text(encoding="utf-8")),
            undefined=jinja2.StrictUndefined, autoescape=False, trim_blocks=True, lstrip_blocks=True,
            keep_trailing_newline=True)
        env.filters.update(md=md, plain=plain, value=fmt_value, spread=fmt_spread, delta=fmt_delta, ci=fmt_ci,
                           p=fmt_p, share=fmt_share, pcol=fmt_pcol, why=cause_line, stats=statistics_line, errors=fmt_errors,
                           commit=short_commit, all_of=all_of, excerpt=md_excerpt, means=fmt_means,
                           coverage_side=fmt_coverage_side, changed_words=changed_words, num=_num_filter, pct=_pct_filter,
                           looks_line=fmt_looks, metric=metric_name, env_kind=env_kind, reason=reason_words,
                           env_item=env_item, html=summary_text, blind_below=fmt_blind, detects=fmt_detects,
                           above_half=fmt_above_half)
        _ENV = env
    return _ENV


def _num_filter(value: Any, fmt: str = "g") -> str:
    """A number from a typed field, formatted; anything else cannot reach the markdown."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"expected a number, got {type(value).__name__}")
    return format(value, fmt)


def _pct_filter(value: Any, digits: int = 0) -> str:
    return _num_filter(value * 100, f".{digits}f")


def _fit(render: Callable[[tuple[str, ...]], str], budget: Limit, suite: str, keep_marker: bool) -> str:
    """The first rendering within the budget, folding one more part each time; cut as a last resort
    (github_limits.fit, the one cut step, keeping a comment's marker)."""
    text = ""
    for folded in FOLD_LEVELS:
        text = render(folded)
        if budget.fits(text):
            return text
    return fit(text, budget, head=marker(suite) + "\n" if keep_marker else "")


Trends = Mapping[tuple[str, str], str]  # (workload, metric) -> sparkline of the last nights, then the candidate


def render_comment(report: Report, *, budget: Limit = github_limits.COMMENT, trends: Trends | None = None) -> str:
    """The sticky PR comment, starting with the hidden marker; within GitHub's comment limit."""
    template = environment().get_template("comment.md.j2")
    return _fit(lambda folded: template.render(_view(report, folded, trends).variables()), budget, report.suite,
                keep_marker=True)


def render_check_summary(report: Report, *, budget: Limit = github_limits.CHECK_SUMMARY, trends: Trends | None = None) -> str:
    """The check run's output.summary: the comment's content without the marker."""
    template = environment().get_template("summary.md.j2")
    return _fit(lambda folded: template.render(_view(report, folded, trends).variables()), budget, report.suite,
                keep_marker=False)


def render_summary(report: Report, *, budget: Limit = github_limits.JOB_SUMMARY, trends: Trends | None = None) -> str:
    """The job summary (GITHUB_STEP_SUMMARY): everything, folded only past 1 MiB."""
    template = environment().get_template("summary.md.j2")
    return _fit(lambda folded: template.render(_view(report, folded, trends).variables()), budget, report.suite,
                keep_marker=False)


def render_terminal(report: Report, *, show_all: bool = False) -> str:
    """Terminal text: the rows that are not a pass (every row with show_all), coverage, verdict."""
    # Untested rows (incomplete, not comparable) are explained by the coverage and difference lines instead.
    shown = list(report.rows) if show_all else sorted((r for r in report.rows if r.verdict in (Verdict.FAIL, Verdict.WARN)),
                                                      key=lambda r: r.verdict.precedence)
    view = replace(_view(report), show_all=show_all, table=_terminal_table(shown) if shown else "")
    return environment().get_template("terminal.txt.j2").render(view.variables())


def _terminal_table(rows: list[Row]) -> str:
    header = ("workload", "metric", "baseline", "candidate", "change", "95% CI", "p", "verdict", "detects")
    lines = [header]
    for r in rows:
        lines.append((plain(r.workload), plain(r.metric), plain(fmt_spread(r.baseline, r.unit, r.kind)),
                      plain(fmt_spread(r.candidate, r.unit, r.kind)), fmt_delta(r), fmt_ci(r), fmt_pcol(r),
                      r.verdict.word, fmt_detects(r)))
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(line)).rstrip() for line in lines)
