"""PNG charts of nightly trends (matplotlib, the optional `plot` extra: pip install 'asr-regression-gate[plot]').

One chart per workload × metric: each night's runs as small points, the night's value as a line,
the level of each segment between change points with its night-to-night noise band (±2σ), dashed
verticals at change points, and optionally a candidate's runs at the right edge.
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from gate.errors import GateError

COLORS = {"night": "#1f77b4", "runs": "#9ecae1", "band": "#c6dbef", "level": "#08519c", "change": "#d62728",
          "candidate": "#ff7f0e"}


class MissingExtra(GateError):
    """An optional dependency is not installed."""


def chart_file(workload: str, metric: str) -> str:
    return f"{workload.replace('/', '-')}-{metric}.png"


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise MissingExtra("charts need matplotlib: pip install 'asr-regression-gate[plot]'") from None
    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    return plt


def candidate_values(tree: Path, suite) -> dict[tuple[str, str], list[float]]:
    """(workload, metric) -> the candidate tree's per-run values."""
    from gate.results import read_tree

    read = read_tree(tree, suite)
    out: dict[tuple[str, str], list[float]] = {}
    for workload, runs in read.workloads.items():
        for metric in runs[0].metrics if runs else {}:
            out[(workload, metric)] = [v for r in runs if (v := r.metrics.get(metric)) is not None]
    return out


def draw(trend, path: Path, *, nights: int = 90, candidate: Sequence[float] | None = None) -> Path:
    """Write one chart; returns its path."""
    plt = _pyplot()
    shown = trend.nights[-nights:]
    scale = 100.0 if trend.metric.unit == "fraction" else 1.0
    unit = "%" if trend.metric.unit == "fraction" else trend.metric.unit
    x = np.arange(len(shown))
    fig, ax = plt.subplots(figsize=(8, 3.2), dpi=100)
    for i, night in enumerate(shown):
        runs = [v * scale for v in night.runs if v is not None]
        ax.scatter([i] * len(runs), runs, s=9, color=COLORS["runs"], zorder=2, linewidths=0)
    values = np.array([np.nan if n.value is None else n.value * scale for n in shown])
    ax.plot(x, values, color=COLORS["night"], lw=1.4, marker="o", ms=3, zorder=3, label="nightly value")
    # Segments between change points: level and ±2σ night-to-night band.
    times = [n.time for n in shown]
    cuts = [0] + [times.index(cp.night) for cp in trend.change_points if cp.night in times] + [len(shown)]
    for a, b in zip(cuts[:-1], cuts[1:]):
        seg = values[a:b][np.isfinite(values[a:b])]
        if len(seg) == 0:
            continue
        level = float(np.median(seg))
        sigma = float(np.std(seg, ddof=1)) if len(seg) > 2 else 0.0
        ax.fill_between([a - 0.4, b - 0.6], level - 2 * sigma, level + 2 * sigma, color=COLORS["band"], alpha=0.6,
                        zorder=1, lw=0, label="level ±2σ" if a == 0 else None)
        ax.hlines(level, a - 0.4, b - 0.6, color=COLORS["level"], lw=1.2, zorder=2)
    for cp in trend.change_points:
        if cp.night in times:
            i = times.index(cp.night)
            ax.axvline(i - 0.5, color=COLORS["change"], ls="--", lw=1.2, zorder=4)
            text = f"{cp.change:+.1%}" if cp.log else f"{cp.change * 100:+.2f} pp"
            ax.annotate(text, (i - 0.5, 1.0), xycoords=("data", "axes fraction"), xytext=(3, -12),
                        textcoords="offset points", color=COLORS["change"], fontsize=9)
    if candidate:
        cx = len(shown) + 0.5
        ax.scatter([cx] * len(candidate), [v * scale for v in candidate], s=28, color=COLORS["candidate"],
                   marker="D", zorder=5, label="candidate runs")
    step = max(1, len(shown) // 8)
    ax.set_xticks(x[::step], [t[5:10] for t in times[::step]], fontsize=8)
    ax.set_ylabel(unit, fontsize=9)
    better = "higher is better" if trend.metric.direction == "higher" else "lower is better"
    ax.set_title(f"{trend.workload} · {trend.metric.name} ({better})", fontsize=10, loc="left")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="lower left", frameon=False)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def write_charts(trends, out: Path, *, nights: int = 90,
                 candidate: Mapping[tuple[str, str], Sequence[float]] | None = None) -> list[Path]:
    out = Path(out)
    written = []
    try:
        for trend in trends:
            cand = (candidate or {}).get((trend.workload, trend.metric.name))
            written.append(draw(trend, out / chart_file(trend.workload, trend.metric.name), nights=nights,
                                candidate=cand))
    except OSError as exc:
        raise GateError(f"cannot write charts ({exc.strerror})", path=exc.filename or out) from None
    return written


