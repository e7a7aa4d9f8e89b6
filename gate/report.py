"""Render a comparison report (the JSON dict of Comparison.to_dict) as markdown or terminal text.

Everything renders FROM THE REPORT DICT, never from live objects, so the trusted workflow can
re-render a schema-validated, untrusted uploaded report. Every string that came from outside (ids,
transcripts, package names, paths, commits) passes through one filter, `md`, which neutralises
markdown, HTML, @mentions, backticks and table pipes. The environment uses StrictUndefined, so a
misspelt variable fails loudly instead of rendering as nothing.

Layout (comment and job summary): the verdict and one sentence naming the workloads concerned;
the sides; the counts; "What changed", a table of only the rows that are not a pass, most severe
first, each with why (the test, what it rests on, its floor); one line per model; coverage and the
environment (one line each when clean, a table when not); then, folded in <details>, every row,
the paired tests, per-run values, changed utterances and the statistics used. The terminal shows
the same minus the folded parts; `show_all` prints every row.

The PR comment is capped (default 60,000, counted in UTF-8 bytes, which is never less than the
character count GitHub limits): when too long, the least important parts are left out first
(utterance excerpts, per-run values, package lists, the tables of all rows), and the comment says so.
"""
from __future__ import annotations

import importlib.resources
import re
from typing import Any

import jinja2

from gate.compare import EXIT_CODES, PRECEDENCE, overall_verdict

COMMENT_MARKER = "<!-- asr-regression-gate: {suite} -->"  # gate.github finds the sticky comment by it
COMMENT_MAX_CHARS = 60_000
EXCERPT_CHARS = 160

VERDICT_ICONS = {"pass": "✅", "warn": "⚠️", "fail": "❌", "incomplete": "⛔", "not_comparable": "🚫"}
VERDICT_WORDS = {"pass": "pass", "warn": "warn", "fail": "FAIL", "incomplete": "incomplete",
                 "not_comparable": "not comparable"}
HEADLINES = {
    "pass": "no regression beyond noise",
    "warn": "possible regression: confirm with a rerun",
    "fail": "regression beyond noise",
    "incomplete": "incomplete results: cannot judge",
    "not_comparable": "the two sides are not comparable",
}
# The one sentence under the headline: which workloads, per non-passing verdict.
LEADS = {"incomplete": "Cannot judge (see Coverage)", "not_comparable": "Not comparable (see Environment)",
         "fail": "Worse beyond noise and above the floors", "warn": "Possibly worse, rerun to confirm"}

# Parts of the comment, least important first: each level drops one more (see render_comment).
FOLD_LEVELS = (
    (),
    ("utterances",),
    ("utterances", "per_run"),
    ("utterances", "per_run", "packages"),
    ("utterances", "per_run", "packages", "passing_rows"),
    ("utterances", "per_run", "packages", "passing_rows", "coverage_ok", "statistics"),
)
FOLD_WORDS = {"utterances": "changed-utterance excerpts", "per_run": "per-run values",
              "packages": "the full package diff", "passing_rows": "the tables of all checks and of the paired tests",
              "coverage_ok": "complete-coverage lines", "statistics": "the statistics section"}

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")
# Inline markdown that can change meaning mid-line (md() never lets data start a line).
_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~])")


def marker(suite: str) -> str:
    return COMMENT_MARKER.format(suite=re.sub(r"[^A-Za-z0-9_.-]", "", str(suite))[:60])


def md(value: Any, limit: int | None = None) -> str:
    """Escape an outside string for GitHub markdown (inline, table-safe). None renders as an em dash."""
    if value is None:
        return "—"
    text = _plain(str(value))
    text = re.sub(r"\s+", " ", text).strip()
    if limit is not None and len(text) > limit:
        text = text[: max(limit - 1, 0)] + "…"
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = _MD_SPECIAL.sub(r"\\\1", text)
    # No pings, no autolinks, no issue references from data: a zero-width space breaks each.
    text = re.sub(r"@(?=\w)", "@\u200b", text)
    text = re.sub(r"#(?=\d)", "#\u200b", text)
    text = text.replace("://", ":\u200b//").replace("www.", "www\u200b.")
    return text


def md_excerpt(value: Any, start: int, limit: int) -> str:
    """md() of a window of `limit` characters from `start` (an ellipsis marks the cut-off head)."""
    if value is None:
        return md(None)
    text = _one_line(value)
    if start <= 0 or len(text) <= limit:
        return md(text, limit)
    return "…" + md(text[start:], limit - 1)


def excerpt_start(utterance: dict, limit: int) -> int:
    """Where the excerpts of a changed utterance start: a little before the hypotheses first differ
    (or, when they do not, where the candidate first departs from the reference), so a long MOSS
    session shows the change instead of its unchanged first `limit` characters."""
    ref, base, cand = (_one_line(utterance[k] or "") for k in ("reference", "baseline_hypothesis", "candidate_hypothesis"))
    if max(len(ref), len(base), len(cand)) <= limit:
        return 0
    first = _first_difference(base, cand)
    if first is None:
        first = _first_difference(ref, cand) or 0
    return max(0, first - limit // 4)


def _first_difference(a: str, b: str) -> int | None:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def _one_line(value: Any) -> str:
    return re.sub(r"\s+", " ", _plain(str(value))).strip()


def plain(value: Any, limit: int | None = None) -> str:
    """A single-line string for the terminal: control characters (ANSI escapes too) removed."""
    if value is None:
        return "-"
    text = re.sub(r"\s+", " ", _plain(str(value))).strip()
    if limit is not None and len(text) > limit:
        text = text[: max(limit - 1, 0)] + "…"
    return text


def _plain(text: str) -> str:
    return _CONTROL.sub("", text)


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


def fmt_spread(side: dict, unit: str, kind: str) -> str:
    """mean [min–max] (runs × samples), in the mean's unit; 'partial' when coverage was incomplete."""
    if side["mean"] is None:
        return "—"
    text = fmt_value(side["mean"], unit, kind)
    if side["n_runs"] > 1:
        lo = fmt_value(side["min"], unit, kind, scale_like=side["mean"])
        hi = fmt_value(side["max"], unit, kind, scale_like=side["mean"])
        text += f" [{_strip_unit(lo)}–{_strip_unit(hi)}]"
    count = f"{side['n_runs']}×{side['n_samples']}" if side.get("n_samples") else f"{side['n_runs']} runs"
    text += f" ({count})"
    if side.get("partial"):
        text += " partial"
    return text


def _strip_unit(text: str) -> str:
    for suffix in (" samples/s", " req/s", " ms", " s", "%"):
        if text.endswith(suffix):
            return text[: -len(suffix)]
    return text


def fmt_delta(row: dict) -> str:
    if row["kind"] == "accuracy" and row["unit"] == "fraction":
        if row["delta_abs"] is None:
            return "—"
        text = f"{row['delta_abs'] * 100:+.3f} pp"
        if row["delta_rel"] is not None:
            text += f" ({row['delta_rel']:+.1%})"
        return text
    if row["delta_rel"] is None:
        return "—"
    return f"{row['delta_rel']:+.1%}"


def fmt_ci(row: dict) -> str:
    ci = row.get("ci")
    if not ci or ci[0] is None or ci[1] is None:
        return "—"
    if row.get("ci_kind") == "ratio":
        return f"[{ci[0] - 1:+.1%}, {ci[1] - 1:+.1%}]"
    return f"[{ci[0] * 100:+.3f}, {ci[1] * 100:+.3f}] pp"


def fmt_p(value: float | None) -> str:
    if value is None:
        return "—"
    if value < 0.0001:
        return "<0.0001"
    return f"{value:.4f}" if value < 0.01 else f"{value:.3f}"


def fmt_pcol(row: dict) -> str:
    if row.get("p_value") is None:
        method = str(row.get("method", ""))
        for word in ("uncalibrated", "fallback"):
            if method.startswith(word):
                return f"n/a ({word})"
        return "—"
    text = fmt_p(row["p_value"])
    if row.get("p_adjusted") is not None:
        text += f" (adj {fmt_p(row['p_adjusted'])})"
    return text


def fmt_why(row: dict) -> str:
    """Why a row got its verdict, in plain words: the note, then the method and what it rests on."""
    if row["verdict"] == "incomplete":
        return "not tested: incomplete coverage (see Coverage)"
    if row["verdict"] == "not_comparable":  # its test result would not mean anything
        return f"{row['note'] or 'not comparable'} (see Environment)"
    parts = [row["note"]] if row["note"] else []
    method = str(row["method"])
    if row.get("p_adjusted") is not None:
        method += ", Holm"
    parts.append(method)
    if row.get("n_worse") is not None and (row["n_worse"] or row["n_better"]):
        parts.append(f"{row['n_worse']} worse, {row['n_better']} better")
    floor = row.get("floor") or {}
    if row.get("p_value") is not None and "abs" in floor and "rel" in floor:
        parts.append(f"floors {floor['abs'] * 100:.2f} pp and {floor['rel']:.0%}")
    elif row.get("p_value") is not None and "rel" in floor:
        parts.append(f"floor {floor['rel']:.0%}")
    return "; ".join(parts)


def fmt_errors(value: float) -> str:
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.2f}"


def all_of(n: int, noun: str) -> str:
    """'the workload', 'both workloads', 'all 10 workloads'."""
    return f"the {noun}" if n == 1 else f"both {noun}s" if n == 2 else f"all {n} {noun}s"


def short_commit(value: Any) -> str:
    if not value:
        return "unknown"
    return " | ".join(part.strip()[:10] for part in str(value).split("|"))


# --- context -------------------------------------------------------------------------------------------

def _context(report: dict, folded: tuple[str, ...] = ()) -> dict:
    rows = report["rows"]
    models: dict[str, list[dict]] = {}
    for row in rows:
        models.setdefault(row["model"], []).append(row)
    # What changed: every row that is not a pass, most severe first (the overall verdict's precedence).
    changed = sorted((r for r in rows if r["verdict"] != "pass"), key=lambda r: PRECEDENCE.index(r["verdict"]))
    # Notes worth reading: every non-passing row's, and a passing row's unless it only says "unchanged".
    notes = _notes([r for r in rows if r["note"] and (r["verdict"] != "pass" or not str(r["note"]).startswith("unchanged"))])
    coverage = [{"workload": w, **c} for w, c in report["coverage"].items()]
    incomplete_coverage = [c for c in coverage if not (c["baseline"]["complete"] and c["candidate"]["complete"])]
    complete_by_model: dict[str, list[str]] = {}
    for c in coverage:
        if c not in incomplete_coverage:
            model, _, name = c["workload"].partition("/")
            complete_by_model.setdefault(model, []).append(name or model)
    differences = report["environment_diff"]
    packages = [d for d in differences if d["kind"] == "freeze"]
    # Changed utterances of workloads with a failing or warning accuracy row come first (and alone in the terminal).
    flagged = {r["workload"] for r in changed if r["kind"] == "accuracy" and r["verdict"] in ("fail", "warn")}
    utterances = sorted(report["utterances"], key=lambda u: u["workload"] not in flagged)
    return {
        "report": report,
        "marker": marker(report["suite"]),
        "icon": VERDICT_ICONS[report["verdict"]],
        "verdict_word": VERDICT_WORDS[report["verdict"]],
        "headline": HEADLINES[report["verdict"]],
        "models": models,
        "model_summaries": [_model_summary(model, model_rows) for model, model_rows in models.items()],
        "changed": changed,
        "leads": _leads(changed, models),
        "why_lines": _why_lines(changed),
        "notes": notes,
        "coverage": coverage,
        "incomplete_coverage": incomplete_coverage,
        "complete_by_model": complete_by_model,
        "all_complete": not incomplete_coverage,
        "differences": [d for d in differences if d["kind"] != "freeze"],
        "packages": packages,
        "blocking": [d for d in differences if d["blocking"]],
        "folded": folded,
        "folded_words": [FOLD_WORDS[f] for f in folded if _present(f, report, packages, incomplete_coverage)],
        "utterances": [dict(u, start=excerpt_start(u, EXCERPT_CHARS)) for u in utterances],
        "flagged_utterances": [u for u in utterances if u["workload"] in flagged],
        "per_run_rows": rows,
        "counts": report["counts"],
        "excerpt": EXCERPT_CHARS,
        "n_rows": len(rows),
        "uncalibrated": sum(1 for r in rows if str(r["method"]).startswith("uncalibrated")),
        "fallback": sum(1 for r in rows if str(r["method"]).startswith("fallback")),
    }


def _present(part: str, report: dict, packages: list, incomplete_coverage: list) -> bool:
    """Whether a foldable part had anything in it (the note names only what was really left out)."""
    if part == "utterances":
        return bool(report["utterances"])
    if part == "packages":
        return bool(packages)
    if part == "coverage_ok":
        return bool(incomplete_coverage) and len(incomplete_coverage) < len(report["coverage"])
    return True


def _leads(changed: list[dict], models: dict[str, list[dict]]) -> list[dict]:
    """Per non-passing verdict (most severe first): its workloads, each with the metrics concerned."""
    per_workload = {}
    for rows in models.values():
        for row in rows:
            per_workload[row["workload"]] = per_workload.get(row["workload"], 0) + 1
    leads: dict[str, dict[str, list[str]]] = {}
    for row in changed:
        leads.setdefault(row["verdict"], {}).setdefault(row["workload"], []).append(row["metric"])
    return [{"verdict": verdict, "text": LEADS[verdict],
             "workloads": [{"workload": w, "metrics": m, "all": len(m) == per_workload[w]} for w, m in workloads.items()]}
            for verdict, workloads in leads.items()]


def _why_lines(rows: list[dict]) -> list[dict]:
    """One line per (workload, reason): six metrics of one incomplete workload say why once."""
    merged: dict[tuple[str, str], dict] = {}
    for row in rows:
        why = fmt_why(row)
        merged.setdefault((row["workload"], why), {"workload": row["workload"], "why": why, "metrics": []})["metrics"].append(row["metric"])
    return list(merged.values())


def _model_summary(model: str, rows: list[dict]) -> dict:
    """One model's rows counted by verdict (most severe first), and how many improved."""
    counts = [(v, sum(1 for r in rows if r["verdict"] == v)) for v in PRECEDENCE]
    return {"model": model, "n": len(rows), "counts": [(v, n) for v, n in counts if n],
            "improved": sum(1 for r in rows if str(r["note"]).startswith("improved"))}


def _notes(rows: list[dict]) -> list[dict]:
    """One line per (workload, note): an incomplete workload says why once, not once per metric."""
    merged: dict[tuple, dict] = {}
    for row in rows:
        key = (row["workload"], row["note"], row["verdict"])
        if key in merged:
            merged[key]["metrics"].append(row["metric"])
        else:
            merged[key] = {**row, "metrics": [row["metric"]]}
    return list(merged.values())


_ENV: jinja2.Environment | None = None


def environment() -> jinja2.Environment:
    """The one Jinja environment: templates from gate.templates, strict undefined, filters registered once."""
    global _ENV
    if _ENV is None:
        root = importlib.resources.files("gate.templates")
        env = jinja2.Environment(
            loader=jinja2.FunctionLoader(lambda name: (root / name).read_text(encoding="utf-8")),
            undefined=jinja2.StrictUndefined, autoescape=False, trim_blocks=True, lstrip_blocks=True,
            keep_trailing_newline=True)
        env.filters.update(md=md, plain=plain, value=fmt_value, spread=fmt_spread, delta=fmt_delta, ci=fmt_ci,
                           p=fmt_p, pcol=fmt_pcol, why=fmt_why, errors=fmt_errors, commit=short_commit,
                           all_of=all_of, excerpt=md_excerpt)
        env.globals.update(icons=VERDICT_ICONS, words=VERDICT_WORDS)
        _ENV = env
    return _ENV


def render_comment(report: dict, *, max_chars: int = COMMENT_MAX_CHARS) -> str:
    """The sticky PR comment, starting with the hidden marker; never longer than max_chars (UTF-8 bytes)."""
    template = environment().get_template("comment.md.j2")
    for folded in FOLD_LEVELS:
        text = template.render(**_context(report, folded))
        if _size(text) <= max_chars:
            return text
    head = marker(report["suite"]) + "\n"
    note = "\n\n_Cut to fit the comment size limit; the full report is in the workflow run's artifact._\n"
    budget = max_chars - _size(note)
    return _cut(text, budget) + note if text.startswith(head) else _cut(head + text, budget) + note


def render_summary(report: dict) -> str:
    """The job summary (GITHUB_STEP_SUMMARY): everything, nothing folded away."""
    return environment().get_template("summary.md.j2").render(**_context(report))


def render_terminal(report: dict, *, show_all: bool = False) -> str:
    """Terminal text: the rows that are not a pass (every row with show_all), coverage, verdict."""
    context = _context(report)
    shown = report["rows"] if show_all else context["changed"]
    return environment().get_template("terminal.txt.j2").render(
        **context, show_all=show_all, table=_terminal_table(shown) if shown else "")


def _terminal_table(rows: list[dict]) -> str:
    header = ("workload", "metric", "baseline", "candidate", "change", "95% CI", "p", "verdict")
    lines = [header]
    for r in rows:
        lines.append((plain(r["workload"]), plain(r["metric"]), plain(fmt_spread(r["baseline"], r["unit"], r["kind"])),
                      plain(fmt_spread(r["candidate"], r["unit"], r["kind"])), fmt_delta(r), fmt_ci(r), fmt_pcol(r),
                      VERDICT_WORDS[r["verdict"]]))
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(line)).rstrip() for line in lines)


def _size(text: str) -> int:
    return len(text.encode("utf-8"))


def _cut(text: str, budget: int) -> str:
    data = text.encode("utf-8")[: max(budget, 0)]
    return data.decode("utf-8", errors="ignore").rsplit("\n", 1)[0]


# --- fan-in -----------------------------------------------------------------------------------------------

def merge_reports(reports: list[dict]) -> dict:
    """One report from several per-model reports (the fan-in job). Multiplicity stays per input report."""
    if not reports:
        raise ValueError("no reports to merge")
    versions = {r["schema_version"] for r in reports}
    suites = {r["suite"] for r in reports}
    if len(versions) != 1 or len(suites) != 1:
        raise ValueError("reports of different schema versions or suites cannot be merged")
    rows = [row for r in reports for row in r["rows"]]
    verdict = overall_verdict([r["verdict"] for r in reports])
    differences, seen = [], set()
    for r in reports:
        for d in r["environment_diff"]:
            key = (d["kind"], d["workload"], d["item"], str(d["baseline"]), str(d["candidate"]))
            if key not in seen:
                seen.add(key)
                differences.append(d)
    merged = dict(reports[0])
    merged.update(
        verdict=verdict,
        exit_code=EXIT_CODES[verdict],
        models=list(dict.fromkeys(m for r in reports for m in r["models"])),
        sides={side: _merge_side([r["sides"][side] for r in reports]) for side in ("baseline", "candidate")},
        counts={v: sum(1 for row in rows if row["verdict"] == v) for v in VERDICT_WORDS},
        rows=rows,
        coverage={w: c for r in reports for w, c in r["coverage"].items()},
        environment_diff=differences,
        allowed_diff=sorted({k for r in reports for k in r["allowed_diff"]}),
        utterances=[u for r in reports for u in r["utterances"]],
    )
    statistics = dict(reports[0]["statistics"])
    statistics["merged_from"] = len(reports)
    statistics["quality"] = dict(statistics["quality"], family_size=sum(r["statistics"]["quality"]["family_size"] for r in reports))
    statistics["speed"] = dict(statistics["speed"], family_size=sum(r["statistics"]["speed"]["family_size"] for r in reports))
    statistics["families"] = "Holm and BH were applied within each merged report (one per model job)"
    merged["statistics"] = statistics
    return merged


def _merge_side(sides: list[dict]) -> dict:
    def join(key: str) -> Any:
        values = list(dict.fromkeys(str(s[key]) for s in sides if s.get(key) is not None))
        return " | ".join(values) if values else None

    return {"kind": join("kind"), "path": join("path"), "commit": join("commit"),
            "runs": max((s["runs"] for s in sides), default=0), "calibrated": all(s["calibrated"] for s in sides)}


def exit_code(report: dict) -> int:
    return EXIT_CODES[report["verdict"]]
