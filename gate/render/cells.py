"""The cells of a rendering: numbers, deltas, intervals, p-values, reasons and names, each formatted from
the typed Report (gate.formats.report) for the templates. Outside strings pass through gate.render.escape here too."""
from __future__ import annotations

import re
from typing import Any

from gate.formats.report import (
    COMOVING_SUFFIX,
    Basis,
    CoverageProblem,
    CoverageSide,
    LookOutcome,
    ModelLooks,
    Row,
    SideStats,
)
from gate.render.escape import md, plain


def one_line(value: Any) -> str:
    return plain(value) if value is not None else ""


# --- words for readers (the report keeps the metric ids and reason codes) -----------------------------------

METRIC_NAMES = {
    "corpus_wer": "WER", "cer": "CER", "cp_cer": "cpCER",
    "throughput_samples_per_s": "throughput (samples/s)", "throughput_qps": "throughput (req/s)",
    "latency_mean_s": "mean latency", "latency_p95_s": "p95 latency", "rtf_mean": "RTF (mean)",
    "cer_valid_samples": "CER-valid samples", "cp_cer_valid_samples": "cpCER-valid samples",
    "speaker_timestamp_der": "speaker DER", "speaker_timestamp_der_skipped_parse_error": "DER parse errors skipped",
    "failed_requests": "failed requests",
    "text_ttft_p95_s": "p95 time to first text", "text_ttft_mean_s": "mean time to first text",
    "inter_chunk_p95_s": "p95 inter-chunk latency", "inter_chunk_mean_s": "mean inter-chunk latency",
}
ENV_KINDS = {"gpu": "GPU", "driver": "driver", "freeze": "packages", "dataset": "dataset",
             "evaluation_input": "evaluation input", "model": "model", "max_new_tokens": "token budget",
             "client": "client settings"}


def metric_name(metric: str) -> str:
    """The name a reader knows a metric by: "throughput (samples/s)" for throughput_samples_per_s; a co-moving
    group's own row (Row.subset, issue 36) by its measure's name and "co-moving utterances"."""
    if metric.endswith(COMOVING_SUFFIX):
        return f"{metric_name(metric[:-len(COMOVING_SUFFIX)])}, co-moving utterances"
    return METRIC_NAMES.get(metric, metric.replace("_", " "))


def env_kind(kind: str) -> str:
    return ENV_KINDS.get(kind, kind.replace("_", " "))


def summary_text(value: Any) -> str:
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


def reason_words(problem: CoverageProblem) -> str:
    """A coverage problem in words: "run1: qwen3/asr_zh.json: evaluated 2015 of 2020 samples". The code
    stays in the report (the message says it in words); the path keeps only its part inside the run folder
    (none when it is the run folder itself)."""
    if problem.run is None:
        return f"{problem.path}: {problem.message}" if problem.path else problem.message
    path = problem.path or ""
    inside = ("/" + path).split(f"/{problem.run}/", 1)  # "/" first: a tree given as "." leaves "run1/..."
    if len(inside) == 2:
        shown = inside[1] + ": "
    elif not path or ("/" + path).endswith(f"/{problem.run}"):
        shown = ""
    else:
        shown = path + ": "
    return f"{problem.run}: {shown}{problem.message}"


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
    text = (f"{fmt_value(b.mean, row.unit, row.kind, scale_like=scale)} → "  # units on both sides (issue 39)
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
    if row.p_adjusted is not None:  # the q a WARN is decided on beside it (issue 49: a pass on q > level shows it)
        text += f" (adj {fmt_p(row.p_adjusted)}" + (f", q {fmt_p(row.q_value)})" if row.q_value is not None else ")")
    return text


def fmt_above_half(row: Row) -> str:
    """Units over 50% errors, mean per run, baseline → candidate (upstream's n_above_50_pct_*); '' when not said."""
    if row.above_half is None:
        return ""
    base, cand = row.above_half
    return f"{base:g} → {cand:g}"


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
    if not rest and m.final == "undecided" and first.action == "extend":
        parts.append(f"→ not extended{f' ({m.note})' if m.note else ''}: undecided")
    if m.source == "recomputed":
        parts.append("· recomputed from the trees")
    if m.design == "duet" and m.note:  # the design that measured the PR and how it departs from the runbook
        parts.append(f"· {m.note}")
    return " ".join(parts)


def _look_outcome(look: LookOutcome) -> str:
    action = look.action if look.action == "extend" else look.action.upper()
    shown = list(look.reasons[:LOOK_REASONS_SHOWN])
    if len(look.reasons) > LOOK_REASONS_SHOWN:
        shown.append(f"+{len(look.reasons) - LOOK_REASONS_SHOWN} more")
    return f"{action} ({'; '.join(shown)})" if shown else action


def fmt_blind(row: Row) -> str:
    """The smallest worsening a blind row could have caught: relative for speed, percentage points for accuracy."""
    if row.mde is None:
        return "n/a"
    return f"{row.mde * 100:.2g}%" if row.family == "speed" else f"{row.mde * 100:.2g} pp"


def fmt_detects(row: Row) -> str:
    """The change a gated row detects with 80% power, the way its metric moves (Row.detects): "−4.9%" for a
    throughput drop, "+5.1%" for a latency rise, "+0.21 pp" for an error-rate rise; "—" without a test."""
    if row.detects is None:
        return "—"
    sign = "−" if row.detects < 0 else "+"
    if row.family == "speed":
        return f"{sign}{abs(row.detects) * 100:.2g}%"
    return f"{sign}{abs(row.detects) * 100:.2g} pp"


def fmt_model_detects(rows: list[Row]) -> str:
    """A model's detectable changes: per gated metric, its least sensitive workload's ("throughput −4.9%,
    latency_p95_s +5.1%, corpus_wer +0.21 pp"); empty when no gated row has one."""
    worst: dict[str, Row] = {}
    for row in rows:
        if row.detects is not None and (row.metric not in worst or abs(row.detects) > abs(worst[row.metric].detects or 0)):
            worst[row.metric] = row
    return ", ".join(f"{metric_name(m)} {fmt_detects(r)}" for m, r in worst.items())


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
