"""Render a Report as the PR comment, the check-run summary, the job summary or terminal text.

Renderers read the typed Report (gate.report), never prose: counts, icons and conclusions come from
each row's Verdict and Basis. Every string that came from outside (ids, transcripts, package names,
commits) passes through one filter, `md`, which neutralises markdown, HTML, @mentions, references,
backticks and table pipes; numbers are formatted from numbers. The environment uses StrictUndefined, so
a misspelt variable fails loudly instead of rendering as nothing.

Layout (comment and summaries): the verdict and one sentence naming the workloads concerned; the sides
and counts; coverage first when it is incomplete (it is the explanation); "What changed" — the rows that
are not a pass, most severe first, each with why; one line per model; coverage and environment (one line
each when clean); then, folded in <details>, every row, the paired tests, per-run values, changed
utterances and the statistics used.

Each output has its own budget in its platform's unit (OUTPUT_BUDGETS). When a rendering is too long,
the least important parts are left out first (excerpts of passing workloads before those of failing
ones; never the rows that are not a pass), and the output says what was left out.
"""
from __future__ import annotations

import difflib
import importlib.resources
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import jinja2

from gate.escape import md, md_excerpt, plain
from gate.report import Basis, CoverageSide, Look, ModelLooks, Report, Row, SideStats, Utterance
from gate.verdict import Verdict

COMMENT_MARKER = "<!-- asr-regression-gate: {suite} -->"  # gate.github finds the sticky comment by it
EXCERPT_CHARS = 160


@dataclass(frozen=True)
class Budget:
    limit: int
    unit: str  # "characters" or "bytes" (UTF-8)

    def size(self, text: str) -> int:
        return len(text) if self.unit == "characters" else len(text.encode("utf-8"))

    def cut(self, text: str, limit: int) -> str:
        """The longest prefix of whole lines within `limit` units."""
        if self.unit == "characters":
            head = text[: max(limit, 0)]
        else:
            head = text.encode("utf-8")[: max(limit, 0)].decode("utf-8", errors="ignore")
        return head.rsplit("\n", 1)[0] if "\n" in head else head


# GitHub's limits: an issue comment body is 65,536 characters; a check run's output.summary 65,535 bytes;
# a job summary (GITHUB_STEP_SUMMARY) 1 MiB.
COMMENT_BUDGET = Budget(65_536, "characters")
CHECK_SUMMARY_BUDGET = Budget(65_535, "bytes")
JOB_SUMMARY_BUDGET = Budget(1_048_576, "bytes")

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
CUT_NOTE = "\n\n_Cut to fit the size limit; the full report is in the workflow run's artifact._\n"

def marker(suite: str) -> str:
    return COMMENT_MARKER.format(suite=re.sub(r"[^A-Za-z0-9_.-]", "", str(suite))[:60])


# A token for marking changed words: one CJK character, or a run of anything else but whitespace.
_TOKEN = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]|[^\s\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]+")


def changed_words(utterance: Utterance, start: int, limit: int) -> tuple[str, str]:
    """The baseline and candidate hypotheses as escaped markdown excerpts (the same window as the
    reference's), with the words that differ marked: ~~struck~~ on the baseline (deleted or substituted),
    **bold** on the candidate (inserted or substituted)."""
    base, cand = _one_line(utterance.baseline_hypothesis), _one_line(utterance.candidate_hypothesis)
    base_tokens, cand_tokens = list(_TOKEN.finditer(base)), list(_TOKEN.finditer(cand))
    matcher = difflib.SequenceMatcher(None, [t.group() for t in base_tokens], [t.group() for t in cand_tokens],
                                      autojunk=False)
    base_changed: set[int] = set()
    cand_changed: set[int] = set()
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            base_changed.update(range(i1, i2))
            cand_changed.update(range(j1, j2))
    return (_marked(base, base_tokens, base_changed, "~~", start, limit),
            _marked(cand, cand_tokens, cand_changed, "**", start, limit))


def _marked(text: str, tokens: list[re.Match[str]], changed: set[int], wrap: str, start: int, limit: int) -> str:
    """md() of text[start:start+limit] token by token, each run of changed tokens wrapped in `wrap`."""
    if not text:
        return md(None)
    end = start + limit
    parts: list[str] = []
    run: list[str] = []
    previous_end = None
    for k, token in enumerate(tokens):
        if token.start() < start or token.end() > end:
            continue
        gap = "" if previous_end is None or token.start() == previous_end else " "
        previous_end = token.end()
        escaped = md(token.group())
        if k in changed:
            if not run:
                parts.append(gap)  # the space before a marked run stays outside the markers
                gap = ""
            run.append(gap + escaped)
            continue
        if run:
            parts.append(wrap + "".join(run) + wrap)
            run = []
        parts.append(gap + escaped)
    if run:
        parts.append(wrap + "".join(run) + wrap)
    body = "".join(parts).strip()
    return ("…" if start > 0 else "") + body + ("…" if end < len(text) else "")


def excerpt_start(utterance: Utterance, limit: int) -> int:
    """Where the excerpts of a changed utterance start: a little before the hypotheses first differ
    (or, when they do not, where the candidate first departs from the reference), so a long MOSS
    session shows the change instead of its unchanged first `limit` characters."""
    ref, base, cand = (_one_line(t) for t in (utterance.reference, utterance.baseline_hypothesis,
                                               utterance.candidate_hypothesis))
    if max(len(ref), len(base), len(cand)) <= limit:
        return 0
    first = _first_difference(base, cand)
    if first is None:
        first = _first_difference(ref, cand) or 0
    return max(0, first - limit // 4)


def _first_difference(a: str, b: str) -> int | None:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def _one_line(value: Any) -> str:
    return plain(value) if value is not None else ""


# --- words for readers (the report keeps the metric ids and reason codes) -----------------------------------

METRIC_NAMES = {
    "corpus_wer": "WER", "cer": "CER", "cp_cer": "cpCER",
    "throughput_samples_per_s": "throughput (samples/s)", "throughput_qps": "throughput (req/s)",
    "latency_mean_s": "mean latency", "latency_p95_s": "p95 latency", "rtf_mean": "RTF (mean)",
    "cer_valid_samples": "CER-valid samples", "cp_cer_valid_samples": "cpCER-valid samples",
    "speaker_timestamp_der": "speaker DER", "speaker_timestamp_der_skipped_parse_error": "DER parse errors skipped",
    "failed_requests": "failed requests",
}
ENV_KINDS = {"gpu": "GPU", "driver": "driver", "freeze": "packages", "dataset": "dataset",
             "evaluation_input": "evaluation input", "model": "model", "max_new_tokens": "token budget"}
# "run1: evaluated_ne_total: /abs/tree/run1/qwen3/asr_zh.json: evaluated 2015 of 2020 samples": the code goes
# (the message says it in words) and the path keeps only its part inside the run folder.
_CODE = re.compile(r"^[a-z]+(?:_[a-z]+)*$")


def metric_name(metric: str) -> str:
    """The name a reader knows a metric by: "throughput (samples/s)" for throughput_samples_per_s."""
    return METRIC_NAMES.get(metric, metric.replace("_", " "))


def env_kind(kind: str) -> str:
    return ENV_KINDS.get(kind, kind.replace("_", " "))


def html_text(value: Any) -> str:
    """An outside string inside raw HTML (<summary>), where GitHub renders no markdown: md()'s entities and
    zero-width spaces, without its backslash escapes (they would show)."""
    return re.sub(r"\\(.)", r"\1", md(value))


def env_item(kind: str, item: str) -> str:
    """What differs, in words: "GPU name" for kind gpu, item "gpu name"."""
    if item == kind:
        return env_kind(kind)
    if item.startswith(kind + " "):
        return env_kind(kind) + item[len(kind):]
    return f"{env_kind(kind)}: {item}"


def reason_words(reason: str) -> str:
    """A coverage reason without its internal code, its path from inside the run folder on."""
    parts = reason.split(": ", 2)
    if len(parts) < 3 or not parts[0].startswith("run") or not _CODE.match(parts[1]):
        return reason
    run, _, rest = parts
    path, sep, message = rest.partition(": ")
    if sep and "/" in path:
        inside = path.split(f"/{run}/", 1)
        shown = inside[1] + ": " if len(inside) == 2 else ("" if path.endswith(f"/{run}") else path + ": ")
        return f"{run}: {shown}{message}"
    return f"{run}: {rest}"


# --- number formatting (all tolerate None) ----------------------------------------------------------------

def fmt_value(value: float | None, unit: str, kind: str, *, scale_like: float | None = None) -> str:
    """One value with its unit; seconds below 1 (judged on `scale_like` when given) show as ms."""
    if value is None:
        return "—"
    if kind == "accuracy" and unit == "fraction":
        return f"{value * 100:.2f}%"
    if unit in ("samples/s", "req/s"):
        return f"{value:.3g} {unit}"
    if unit == "s":
        return f"{value * 1000:.0f} ms" if (scale_like if scale_like is not None else value) < 1 else f"{value:.3g} s"
    return f"{value:.3g}"


def fmt_spread(side: SideStats, unit: str, kind: str) -> str:
    """mean [min–max] (runs × samples) over the complete runs; "k of N runs" when that is not all of them."""
    if side.mean is None:
        return "—"
    text = fmt_value(side.mean, unit, kind)
    if side.n_used > 1:
        lo = fmt_value(side.min, unit, kind, scale_like=side.mean)
        hi = fmt_value(side.max, unit, kind, scale_like=side.mean)
        text += f" [{_strip_unit(lo)}–{_strip_unit(hi)}]"
    expected = max(side.expected_runs, len(side.values))
    runs = f"{side.n_used} of {expected} runs" if side.partial else f"{side.n_used} runs"
    if side.n_samples:
        runs = f"{side.n_used} of {expected} runs × {side.n_samples}" if side.partial else f"{side.n_used}×{side.n_samples}"
    return f"{text} ({runs})"


def fmt_means(row: Row) -> str:
    """"312 → 293 samples/s": the two means over complete runs, labelled when a side is partial."""
    b, c = row.baseline, row.candidate
    if b.mean is None or c.mean is None:
        return "—"
    scale = min(b.mean, c.mean)
    text = (f"{_strip_unit(fmt_value(b.mean, row.unit, row.kind, scale_like=scale))} → "
            f"{fmt_value(c.mean, row.unit, row.kind, scale_like=scale)}")
    partial = [f"{name} {s.n_used} of {max(s.expected_runs, len(s.values))} runs"
               for name, s in (("baseline", b), ("candidate", c)) if s.partial]
    return text + (f" ({', '.join(partial)})" if partial else "")


def _strip_unit(text: str) -> str:
    for suffix in (" samples/s", " req/s", " ms", " s", "%"):
        if text.endswith(suffix):
            return text[: -len(suffix)]
    return text


def fmt_delta(row: Row) -> str:
    if row.kind == "accuracy" and row.unit == "fraction":
        if row.delta_abs is None:
            return "—"
        text = f"{row.delta_abs * 100:+.3f} pp"
        if row.delta_rel is not None:
            text += f" ({row.delta_rel:+.1%})"
        return text
    if row.delta_rel is None:
        return "—"
    return f"{row.delta_rel:+.1%}"


def fmt_ci(row: Row) -> str:
    if row.ci is None:
        return "—"
    if row.ci_kind == "ratio":
        return f"[{row.ci[0] - 1:+.1%}, {row.ci[1] - 1:+.1%}]"
    return f"[{row.ci[0] * 100:+.3f}, {row.ci[1] * 100:+.3f}] pp"


def fmt_p(value: float | None) -> str:
    if value is None:
        return "—"
    if value < 0.0001:
        return "<0.0001"
    return f"{value:.4f}" if value < 0.01 else f"{value:.3f}"


def fmt_share(value: float | None) -> str:
    """A probability that is not a p-value (P(worse)): a percentage, so it does not read like one."""
    return "—" if value is None else f"{value:.0%}"


def fmt_pcol(row: Row) -> str:
    if row.p_value is None:
        return f"n/a ({row.basis.value})" if row.basis in (Basis.UNCALIBRATED, Basis.FALLBACK) else "—"
    text = fmt_p(row.p_value)
    if row.p_adjusted is not None:
        text += f" (adj {fmt_p(row.p_adjusted)})"
    return text


def fmt_why(row: Row) -> str:
    """Why a row got its verdict, in plain words: the notes, then the method and what it rests on."""
    if row.verdict is Verdict.INCOMPLETE:
        return "not tested: incomplete coverage (see Coverage)"
    if row.verdict is Verdict.NOT_COMPARABLE:  # its test result would not mean anything
        note = row.notes[0] if row.notes else "the setups differ"
        return f"{note.removeprefix('not comparable: ')} (see Environment)"
    parts = list(row.notes)
    method = row.method
    if row.p_adjusted is not None:
        method += ", Holm"
    parts.append(method)
    if row.n_worse is not None and (row.n_worse or row.n_better):
        parts.append(f"{row.n_worse} worse, {row.n_better} better")
    if row.basis is Basis.PAIRED and row.floor_abs is not None and row.floor_rel is not None:
        parts.append(f"floors {row.floor_abs * 100:.2f} pp and {row.floor_rel:.0%}")
    elif row.basis is Basis.CALIBRATED and row.floor_rel is not None:
        parts.append(f"floor {row.floor_rel:.0%}")
    elif row.tolerance is not None and row.basis is not Basis.UNCALIBRATED:  # its method names the floor already
        parts.append(f"tolerance {row.tolerance * 100:.2f} pp" if row.kind == "accuracy" else f"tolerance {row.tolerance:.0%}")
    return "; ".join(parts)


LOOK_REASONS_SHOWN = 2  # reasons per look on a Looks line (the report keeps them all)


def fmt_looks(m: ModelLooks) -> str:
    """One model's looks on one line (plain text; the template escapes it):
    "qwen3: first look 3+3 → extend (…) → pooled 6+6: FAIL (…)", or "whisper: one look (--one-look)"."""
    parts = [f"{m.model}:"]
    if not m.looks:
        parts.append("one look" if m.final == "one look" else m.final)
        return " ".join(parts) + (f" ({m.note})" if m.note else "")
    first, *rest = m.looks
    parts.append(f"first look {first.base_runs}+{first.candidate_runs} → {_look_outcome(first)}")
    for look in rest:
        parts.append(f"→ {look.name} {look.base_runs}+{look.candidate_runs}: {_look_outcome(look)}")
    if not rest and m.final == "undecided":
        parts.append(f"→ not extended{f' ({m.note})' if m.note else ''}: undecided")
    if m.source == "recomputed":
        parts.append("· recomputed from the trees")
    return " ".join(parts)


def _look_outcome(look: Look) -> str:
    action = look.action if look.action == "extend" else look.action.upper()
    shown = list(look.reasons[:LOOK_REASONS_SHOWN])
    if len(look.reasons) > LOOK_REASONS_SHOWN:
        shown.append(f"+{len(look.reasons) - LOOK_REASONS_SHOWN} more")
    return f"{action} ({'; '.join(shown)})" if shown else action


def fmt_errors(value: float) -> str:
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.2f}"


def fmt_coverage_side(side: CoverageSide) -> str:
    """"3 runs complete", "3 runs, 1 incomplete", "2 of 3 runs (1 missing)"."""
    if side.complete:
        return f"{side.runs_complete} runs complete"
    if side.runs_present == 0:
        return "no runs"
    parts = [f"{side.runs_present} runs" if not side.runs_missing else f"{side.runs_present} of {side.expected_runs} runs"]
    if side.runs_incomplete:
        parts.append(f"{side.runs_incomplete} incomplete")
    if side.runs_missing:
        parts.append(f"{side.runs_missing} missing")
    return ", ".join(parts)


def all_of(n: int, noun: str) -> str:
    """'the workload', 'both workloads', 'all 10 workloads'."""
    return f"the {noun}" if n == 1 else f"both {noun}s" if n == 2 else f"all {n} {noun}s"


def short_commit(value: Any) -> str:
    if not value:
        return "unknown"
    return " | ".join(part.strip()[:10] for part in str(value).split("|"))


# --- context -------------------------------------------------------------------------------------------

def _context(report: Report, folded: tuple[str, ...] = (), trends: Mapping[tuple[str, str], str] | None = None) -> dict:
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
    return {
        "report": report,
        "verdict": report.verdict,
        "trends": dict(trends or {}),
        "marker": marker(report.suite),
        "models": models,
        "model_summaries": [_model_summary(model, model_rows) for model, model_rows in models.items()],
        "changed": changed,
        "incomplete_workloads": incomplete_workloads,
        "leads": _leads(not_passing, models),
        "why_lines": _why_lines(changed),
        "notes": notes,
        "coverage": coverage,
        "incomplete_coverage": incomplete_coverage,
        "complete_by_model": complete_by_model,
        "all_complete": not incomplete_coverage,
        "differences": [d for d in differences if d.kind != "freeze"],
        "packages": packages,
        "blocking": [d for d in differences if d.blocking],
        "allow_flags": " ".join(f"--allow-diff {kind}" for kind in dict.fromkeys(d.kind for d in differences if d.blocking)),
        "improved_rows": [r for r in rows if r.improved],
        "folded": folded,
        "folded_words": [FOLD_WORDS[f] for f in folded if _present(f, report, packages, incomplete_coverage, flagged)],
        "utterances": [(u, excerpt_start(u, EXCERPT_CHARS)) for u in shown_utterances],
        "all_utterances": utterances,
        "flagged_utterances": [u for u in utterances if u.workload in flagged],
        "paired": [r for r in rows if r.basis is Basis.PAIRED],
        "counts": report.counts,
        "verdicts": Verdict.by_severity(),
        "excerpt": EXCERPT_CHARS,
        "n_rows": len(rows),
        "improved": sum(1 for r in rows if r.improved),
        "uncalibrated": sum(1 for r in rows if r.basis is Basis.UNCALIBRATED),
        "fallback": sum(1 for r in rows if r.basis is Basis.FALLBACK),
        "looks": list(report.looks),
        "stale_calibrations": [c for c in report.calibration_checks if c.status == "stale"],
    }


def _incomplete_workloads(rows: Sequence[Row], models: dict[str, list[Row]]) -> list[dict]:
    """One entry per workload whose rows are incomplete: its checks were not tested (Coverage says why)."""
    per_workload: dict[str, list[str]] = {}
    for row in rows:
        if row.verdict is Verdict.INCOMPLETE:
            per_workload.setdefault(row.workload, []).append(row.metric)
    total = {w: sum(1 for r in model_rows if r.workload == w) for model_rows in models.values() for w in per_workload}
    return [{"workload": w, "metrics": m, "all": len(m) == total.get(w, 0)} for w, m in per_workload.items()]


def _present(part: str, report: Report, packages: list, incomplete_coverage: list, flagged: set[str]) -> bool:
    """Whether a foldable part had anything in it (the note names only what was really left out)."""
    if part == "utterances":
        return any(u.workload in flagged for u in report.utterances)
    if part == "packages":
        return bool(packages)
    if part == "coverage_ok":
        return bool(incomplete_coverage) and len(incomplete_coverage) < len(report.coverage)
    return True


def _leads(rows: Sequence[Row], models: dict[str, list[Row]]) -> list[dict]:
    """Per non-passing verdict (most severe first): its workloads, each with the metrics concerned."""
    per_workload: dict[str, int] = {}
    for model_rows in models.values():
        for row in model_rows:
            per_workload[row.workload] = per_workload.get(row.workload, 0) + 1
    leads: dict[Verdict, dict[str, list[str]]] = {}
    for row in rows:
        leads.setdefault(row.verdict, {}).setdefault(row.workload, []).append(row.metric)
    return [{"verdict": verdict,
             "workloads": [{"workload": w, "metrics": m, "all": len(m) == per_workload[w]} for w, m in workloads.items()],
             # every check of every workload (a GPU mismatch): one phrase instead of the list
             "every": len(workloads) > 2 and len(workloads) == len(per_workload)
             and all(len(m) == per_workload[w] for w, m in workloads.items())}
            for verdict, workloads in leads.items()]


def _why_lines(rows: Sequence[Row]) -> list[dict]:
    """One line per (workload, reason): six metrics of one incomplete workload say why once."""
    merged: dict[tuple[str, str], dict] = {}
    for row in rows:
        why = fmt_why(row)
        merged.setdefault((row.workload, why), {"workload": row.workload, "why": why, "metrics": []})["metrics"].append(row.metric)
    return list(merged.values())


def _model_summary(model: str, rows: list[Row]) -> dict:
    """One model's rows counted by verdict (most severe first), and how many improved."""
    counts = [(v, sum(1 for r in rows if r.verdict is v)) for v in Verdict.by_severity()]
    return {"model": model, "n": len(rows), "counts": [(v, n) for v, n in counts if n],
            "improved": sum(1 for r in rows if r.improved)}


def _notes(rows: list[Row]) -> list[dict]:
    """One line per (workload, notes, verdict): an incomplete workload says why once, not once per metric."""
    merged: dict[tuple, dict] = {}
    for row in rows:
        key = (row.workload, row.notes, row.verdict)
        if key in merged:
            merged[key]["metrics"].append(row.metric)
        else:
            merged[key] = {"row": row, "workload": row.workload, "verdict": row.verdict,
                           "note": "; ".join(row.notes), "method": row.method, "metrics": [row.metric]}
    return list(merged.values())


_ENV: jinja2.Environment | None = None


def environment() -> jinja2.Environment:
    """The one Jinja environment: templates from gate.templates, strict undefined, filters registered once."""
    global _ENV
    if _ENV is None:
        try:
            root = importlib.resources.files("gate.templates")
        except ModuleNotFoundError:  # a source checkout on PYTHONPATH: templates/ sits beside gate/ (issue 23)
            root = Path(__file__).resolve().parents[1] / "templates"  # type: ignore[assignment]
        env = jinja2.Environment(
            loader=jinja2.FunctionLoader(lambda name: (root / name).read_text(encoding="utf-8")),
            undefined=jinja2.StrictUndefined, autoescape=False, trim_blocks=True, lstrip_blocks=True,
            keep_trailing_newline=True)
        env.filters.update(md=md, plain=plain, value=fmt_value, spread=fmt_spread, delta=fmt_delta, ci=fmt_ci,
                           p=fmt_p, share=fmt_share, pcol=fmt_pcol, why=fmt_why, errors=fmt_errors,
                           commit=short_commit, all_of=all_of, excerpt=md_excerpt, means=fmt_means,
                           coverage_side=fmt_coverage_side, changed_words=changed_words, num=_num_filter, pct=_pct_filter,
                           looks_line=fmt_looks, metric=metric_name, env_kind=env_kind, reason=reason_words,
                           env_item=env_item, html=html_text)
        _ENV = env
    return _ENV


def _num_filter(value: Any, fmt: str = "g") -> str:
    """A number from a typed field, formatted; anything else cannot reach the markdown."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"expected a number, got {type(value).__name__}")
    return format(value, fmt)


def _pct_filter(value: Any, digits: int = 0) -> str:
    return _num_filter(value * 100, f".{digits}f")


def _fit(render: Callable[[tuple[str, ...]], str], budget: Budget, suite: str, keep_marker: bool) -> str:
    """The first rendering within the budget, folding one more part each time; cut as a last resort."""
    text = ""
    for folded in FOLD_LEVELS:
        text = render(folded)
        if budget.size(text) <= budget.limit:
            return text
    head = marker(suite) + "\n" if keep_marker else ""
    body = text[len(head):] if head and text.startswith(head) else text
    room = budget.limit - budget.size(CUT_NOTE) - budget.size(head)
    return head + budget.cut(body, room) + CUT_NOTE


Trends = Mapping[tuple[str, str], str]  # (workload, metric) -> sparkline of the last nights, then the candidate


def render_comment(report: Report, *, budget: Budget = COMMENT_BUDGET, trends: Trends | None = None) -> str:
    """The sticky PR comment, starting with the hidden marker; within GitHub's comment limit."""
    template = environment().get_template("comment.md.j2")
    return _fit(lambda folded: template.render(**_context(report, folded, trends)), budget, report.suite,
                keep_marker=True)


def render_check_summary(report: Report, *, budget: Budget = CHECK_SUMMARY_BUDGET, trends: Trends | None = None) -> str:
    """The check run's output.summary: the comment's content without the marker."""
    template = environment().get_template("summary.md.j2")
    return _fit(lambda folded: template.render(**_context(report, folded, trends)), budget, report.suite,
                keep_marker=False)


def render_summary(report: Report, *, budget: Budget = JOB_SUMMARY_BUDGET, trends: Trends | None = None) -> str:
    """The job summary (GITHUB_STEP_SUMMARY): everything, folded only past 1 MiB."""
    template = environment().get_template("summary.md.j2")
    return _fit(lambda folded: template.render(**_context(report, folded, trends)), budget, report.suite,
                keep_marker=False)


def render_terminal(report: Report, *, show_all: bool = False) -> str:
    """Terminal text: the rows that are not a pass (every row with show_all), coverage, verdict."""
    context = _context(report)
    # Untested rows (incomplete, not comparable) are explained by the coverage and difference lines instead.
    shown = list(report.rows) if show_all else sorted((r for r in report.rows if r.verdict in (Verdict.FAIL, Verdict.WARN)),
                                                      key=lambda r: r.verdict.precedence)
    return environment().get_template("terminal.txt.j2").render(
        **context, show_all=show_all, table=_terminal_table(shown) if shown else "")


def _terminal_table(rows: list[Row]) -> str:
    header = ("workload", "metric", "baseline", "candidate", "change", "95% CI", "p", "verdict")
    lines = [header]
    for r in rows:
        lines.append((plain(r.workload), plain(r.metric), plain(fmt_spread(r.baseline, r.unit, r.kind)),
                      plain(fmt_spread(r.candidate, r.unit, r.kind)), fmt_delta(r), fmt_ci(r), fmt_pcol(r),
                      r.verdict.word))
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(line)).rstrip() for line in lines)
