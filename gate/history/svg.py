"""Inline SVG charts of a nightly trend: readable without a legend hunt, every night hoverable.

A chart shows each night's runs (small points) and value (line and points; hovering a point shows its
night, commit, value and runs as the browser's tooltip, from an SVG <title>), the level of each segment
between change points with its ±2σ night-to-night band, the gate's floor around the current level
(dashed: a change inside it would never fail a PR), change points as dashed verticals labelled with
their effect, date and commit range, and optionally a candidate's runs at the right edge.

Axes say what they show: the y label is the metric and its unit, x ticks are dates with the year. A
flat series is not stretched: the y range spans at least twice the floor around the level, so 1% of
noise never fills the plot. The legend sits below the axes, outside the data. No script, no external
resource: the SVG is text inside the page. Every string is escaped (values come from the trusted
history, but escaping costs nothing).
"""
from __future__ import annotations

import math
from typing import Sequence

from gate.history.analysis import Trend, detector_for, speed_floor
from gate.render.escape import html_text as escape  # controls and bidi characters never reach a page

COLORS = {"night": "#1f6feb", "runs": "#9ec5fe", "band": "#dbe9ff", "level": "#0a3069", "change": "#cf222e",
          "floor": "#8250df", "candidate": "#bc4c00", "grid": "#eaeef2", "axis": "#57606a", "text": "#1f2328"}
FONT = "font-family=\"system-ui, sans-serif\""


NAMES = {"throughput_samples_per_s": "throughput", "latency_p95_s": "p95 latency", "latency_mean_s": "mean latency",
         "rtf_mean": "RTF", "corpus_wer": "WER", "corpus_cer": "CER", "cp_cer": "cpCER",
         "text_ttft_p95_s": "p95 time to first text", "inter_chunk_p95_s": "p95 inter-chunk latency"}


def display_name(metric: str) -> str:
    """What a person calls the metric (the suite's name where there is no short one)."""
    return NAMES.get(metric, metric)


def display_value(value: float, unit: str) -> str:
    if unit == "fraction":
        return f"{value * 100:.2f}%"
    return f"{value:.4g} {unit}"


def axis_label(trend: Trend) -> str:
    better = "higher is better" if trend.metric.direction == "higher" else "lower is better"
    return f"{_short_unit(trend)}, {better}"


def floor_of(trend: Trend, suite) -> tuple[float, bool]:
    """(floor, relative): the smallest change the gate would fail a PR for on this metric."""
    detector, log = detector_for(trend.metric, suite.workload(trend.workload))
    if log:
        return speed_floor(trend.metric), True
    return detector.magnitude, False


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    span = high - low
    if span <= 0 or not math.isfinite(span):
        return [low]
    raw = span / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    first = math.ceil(low / step) * step
    return [first + i * step for i in range(int((high - first) / step + 1e-9) + 1)]


def _tick_text(value: float, step: float) -> str:
    decimals = max(0, -int(math.floor(math.log10(step))) + (0 if step >= 1 else 1)) if step > 0 else 2
    return f"{value:.{min(decimals, 6)}f}"


# Complexity over 15: one chart drawn layer by layer (band, cuts, runs, line, candidate, axes).
def chart(trend: Trend, floor_rule: tuple[float, bool], *, nights: int = 90, width: int = 720, height: int = 260,  # noqa: C901 (reason above)
          chart_id: str = "", candidate: Sequence[float] | None = None, small: bool = False) -> str:
    """One chart as an <svg> element; `floor` from floor_of. `small`: the overview's thumbnail (no axes
    text, no legend)."""
    shown = trend.nights[-nights:]
    scale = 100.0 if trend.metric.unit == "fraction" else 1.0
    unit = trend.metric.unit
    left, right, top, bottom = (6, 6, 6, 6) if small else (64, 16, 40, 70)
    plot_w, plot_h = width - left - right, height - top - bottom
    values = [n.value * scale if n.value is not None else None for n in shown]
    runs = [[v * scale for v in n.runs if v is not None] for n in shown]
    present = [v for v in values if v is not None]
    title = f"{trend.workload} · {axis_label(trend)}"
    if not present:
        return (f'<svg role="img" width="{width}" height="{height}" viewBox="0 0 {width} {height}">'
                f"<title>{escape(title)}: no values</title></svg>")
    floor, relative = floor_rule
    times = [n.time for n in shown]
    cuts = [0] + sorted({i for cp in trend.change_points for i, t in enumerate(times) if t == cp.night}) + [len(shown)]
    segments = []
    for a, b in zip(cuts[:-1], cuts[1:], strict=True):
        seg = sorted(v for v in values[a:b] if v is not None)
        if seg:
            level = seg[len(seg) // 2] if len(seg) % 2 else (seg[len(seg) // 2 - 1] + seg[len(seg) // 2]) / 2
            mean = sum(seg) / len(seg)
            sigma = math.sqrt(sum((v - mean) ** 2 for v in seg) / (len(seg) - 1)) if len(seg) > 2 else 0.0
            segments.append((a, b, level, sigma))
    current = segments[-1][2] if segments else present[-1]
    floor_half = current * floor if relative else floor * scale
    pool = present + [v for r in runs for v in r] + list(candidate and [v * scale for v in candidate] or [])
    low, high = min(pool), max(pool)
    low, high = min(low, current - 2 * floor_half), max(high, current + 2 * floor_half)  # never stretch noise
    pad = (high - low) * 0.06 or abs(current) * 0.05 or 1.0
    low, high = low - pad, high + pad
    slots = len(shown) + (1 if candidate else 0)

    def x(i: float) -> float:
        return left + (i + 0.5) * plot_w / max(slots, 1)

    def y(v: float) -> float:
        return top + (high - v) / (high - low) * plot_h

    out = [f'<svg class="chart" role="img" aria-label="{escape(title)}" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" {FONT} font-size="11"'
           + (f' id="{escape(chart_id)}"' if chart_id else "") + ">", f"<title>{escape(title)}</title>"]
    ticks = nice_ticks(low, high, 3 if small else 5)
    step = ticks[1] - ticks[0] if len(ticks) > 1 else 1.0
    if not small:
        for t in ticks:
            out.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y(t):.1f}" y2="{y(t):.1f}" '
                       f'stroke="{COLORS["grid"]}"/>')
            out.append(f'<text x="{left - 6}" y="{y(t) + 4:.1f}" text-anchor="end" fill="{COLORS["axis"]}">'
                       f"{_tick_text(t, step)}</text>")
    for a, b, level, sigma in segments:
        x0, x1 = x(a - 0.5), x(b - 0.5)
        if sigma > 0:
            out.append(f'<rect x="{x0:.1f}" y="{y(level + 2 * sigma):.1f}" width="{x1 - x0:.1f}" '
                       f'height="{max(0.5, y(level - 2 * sigma) - y(level + 2 * sigma)):.1f}" fill="{COLORS["band"]}"/>')
        out.append(f'<line x1="{x0:.1f}" x2="{x1:.1f}" y1="{y(level):.1f}" y2="{y(level):.1f}" '
                   f'stroke="{COLORS["level"]}" stroke-width="1.2"/>')
    if segments:  # the floor around the current level
        a = segments[-1][0]
        for edge in (current - floor_half, current + floor_half):
            out.append(f'<line x1="{x(a - 0.5):.1f}" x2="{x(len(shown) - 0.5):.1f}" y1="{y(edge):.1f}" '
                       f'y2="{y(edge):.1f}" stroke="{COLORS["floor"]}" stroke-dasharray="5 4" stroke-width="1"/>')
    for i, r in enumerate(runs):
        for v in r:
            out.append(f'<circle cx="{x(i):.1f}" cy="{y(v):.1f}" r="{1.2 if small else 1.8}" fill="{COLORS["runs"]}"/>')
    path: list[str] = []
    for i, value in enumerate(values):
        if value is not None:
            path.append(f"{'M' if not path or values[i - 1] is None else 'L'}{x(i):.1f},{y(value):.1f}")
    out.append(f'<path d="{" ".join(path)}" fill="none" stroke="{COLORS["night"]}" stroke-width="1.4"/>')
    for i, (night, night_value) in enumerate(zip(shown, values, strict=True)):
        if night_value is None:
            continue
        v = night_value
        tip = (f"{night.time[:16].replace('T', ' ')} UTC · commit {(night.commit or 'unknown')[:12]} · "
               f"{display_value(night.value or 0.0, unit)}"
               + (f" (runs: {', '.join(display_value(r, unit) for r in night.runs if r is not None)})" if night.runs else "")
               + (f" · verdict {night.verdict}" if night.verdict else "") + ("" if night.complete else " · incomplete"))
        out.append(f'<g class="night"><title>{escape(tip)}</title>'
                   f'<circle cx="{x(i):.1f}" cy="{y(v):.1f}" r="{2 if small else 2.8}" fill="{COLORS["night"]}"/>'
                   f'<circle cx="{x(i):.1f}" cy="{y(v):.1f}" r="{5 if small else 8}" fill="transparent"/></g>')
    if candidate:
        for v in candidate:
            cx, cy = x(len(shown)), y(v * scale)
            out.append(f'<path d="M{cx:.1f},{cy - 5:.1f} L{cx + 5:.1f},{cy:.1f} L{cx:.1f},{cy + 5:.1f} '
                       f'L{cx - 5:.1f},{cy:.1f} Z" fill="{COLORS["candidate"]}"><title>candidate run: '
                       f"{escape(display_value(v, unit))}</title></path>")
    out.extend(_change_points(trend, times, x, top, plot_h, small, width))
    if not small:
        out.append(f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" '
                   f'stroke="{COLORS["axis"]}" stroke-width="0.8"/>')
        out.extend(_x_ticks(times, x, top + plot_h))
        out.append(f'<text transform="translate(14,{top + plot_h / 2:.0f}) rotate(-90)" text-anchor="middle" '
                   f'fill="{COLORS["text"]}">{escape(_short_unit(trend))}</text>')
        out.append(_legend(top + plot_h + 40, left, width, floor, relative, bool(candidate)))
    out.append("</svg>")
    return "".join(out)


def _short_unit(trend: Trend) -> str:
    unit = "%" if trend.metric.unit == "fraction" else trend.metric.unit
    return f"{display_name(trend.metric.name)} ({unit})"


def _change_points(trend: Trend, times: list[str], x, top: float, plot_h: float, small: bool, width: int) -> list[str]:
    from gate.history.steps import format_change

    out = []
    for k, cp in enumerate(trend.change_points):
        if cp.night not in times:
            continue
        cx = x(times.index(cp.night) - 0.5)
        text = (f"{format_change(cp).split(' (')[0]} from {cp.night[:10]} "
                f"({(cp.previous_commit or '?')[:7]}..{(cp.commit or '?')[:7]})")
        tip = f"change point: {format_change(cp)}, first night {cp.night[:16]} UTC, p = {cp.p_value:.1g}" + (
            f", issue #{cp.issue}" if cp.issue else "")
        out.append(f'<g class="change-point"><title>{escape(tip)}</title>'
                   f'<line x1="{cx:.1f}" x2="{cx:.1f}" y1="{top:.1f}" y2="{top + plot_h:.1f}" '
                   f'stroke="{COLORS["change"]}" stroke-dasharray="4 3" stroke-width="1.4"/>')
        if not small:
            anchor = "end" if cx > width * 0.6 else "start"
            dx = -4 if anchor == "end" else 4
            out.append(f'<text x="{cx + dx:.1f}" y="{top - 8 - 13 * (k % 2):.1f}" text-anchor="{anchor}" '
                       f'fill="{COLORS["change"]}">{escape(text)}</text>')
        out.append("</g>")
    return out


def _x_ticks(times: list[str], x, bottom: float) -> list[str]:
    count = len(times)
    step = max(1, math.ceil(count / 6))
    out = []
    for i in range(0, count, step):
        out.append(f'<line x1="{x(i):.1f}" x2="{x(i):.1f}" y1="{bottom:.1f}" y2="{bottom + 4:.1f}" '
                   f'stroke="{COLORS["axis"]}"/>')
        out.append(f'<text x="{x(i):.1f}" y="{bottom + 16:.1f}" text-anchor="middle" fill="{COLORS["axis"]}">'
                   f"{escape(times[i][:10])}</text>")
    return out


def _legend(y0: float, left: float, width: int, floor: float, relative: bool, candidate: bool) -> str:
    floor_text = f"gate floor ±{floor:.0%} of the level" if relative else f"gate floor ±{floor * 100:.2g} pp"
    items = [("circle", COLORS["night"], "night (hover: commit, value)"), ("runs", COLORS["runs"], "runs"),
             ("band", COLORS["band"], "level ±2σ"), ("dash", COLORS["floor"], floor_text),
             ("dash", COLORS["change"], "change point")]
    if candidate:
        items.append(("circle", COLORS["candidate"], "candidate runs"))
    out, xpos = ['<g class="legend">'], left
    for shape, color, label in items:
        if xpos + 24 + 6.2 * len(label) > width:  # wrap: the legend never runs into the data or off the chart
            xpos, y0 = left, y0 + 16
        if shape == "band":
            out.append(f'<rect x="{xpos:.0f}" y="{y0 - 8:.0f}" width="14" height="10" fill="{color}"/>')
        elif shape == "dash":
            out.append(f'<line x1="{xpos:.0f}" x2="{xpos + 14:.0f}" y1="{y0 - 3:.0f}" y2="{y0 - 3:.0f}" '
                       f'stroke="{color}" stroke-dasharray="4 3" stroke-width="1.5"/>')
        else:
            out.append(f'<circle cx="{xpos + 7:.0f}" cy="{y0 - 3:.0f}" r="{3 if shape == "circle" else 2}" '
                       f'fill="{color}"/>')
        out.append(f'<text x="{xpos + 18:.0f}" y="{y0 + 1:.0f}" fill="{COLORS["text"]}">{escape(label)}</text>')
        xpos += 26 + 6.2 * len(label)
    out.append("</g>")
    return "".join(out)
