"""`gate history plot DIR`: one SVG chart per workload × metric (gate.history.svg), no extra dependency.

Optionally with a candidate's runs (a PR's result tree) drawn at the right edge of each chart.
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

from gate.formats import atomic
from gate.history.svg import chart, floor_of


def chart_file(workload: str, metric: str) -> str:
    return f"{workload.replace('/', '-')}-{metric}.svg"


def candidate_values(tree: Path, suite) -> dict[tuple[str, str], list[float]]:
    """(workload, metric) -> the candidate tree's per-run values."""
    from gate.reading.results import read_tree

    read = read_tree(tree, suite)
    out: dict[tuple[str, str], list[float]] = {}
    for workload, runs in read.workloads.items():
        for metric in runs[0].metrics if runs else {}:
            out[(workload, metric)] = [v for r in runs if (v := r.metrics.get(metric)) is not None]
    return out


def write_charts(trends, out: Path, *, suite, nights: int = 90,
                 candidate: Mapping[tuple[str, str], Sequence[float]] | None = None) -> list[Path]:
    """Write one standalone SVG file per trend (each written whole); returns the paths."""
    written = []
    for trend in trends:
        cand = (candidate or {}).get((trend.workload, trend.metric.name))
        svg = chart(trend, floor_of(trend, suite), nights=nights, candidate=cand)
        svg = svg.replace("<svg ", '<svg xmlns="http://www.w3.org/2000/svg" ', 1)
        path = Path(out) / chart_file(trend.workload, trend.metric.name)
        written.append(atomic.write_text(path, '<?xml version="1.0" encoding="utf-8"?>\n' + svg + "\n", what="chart"))
    return written
