"""The trend a PR comment shows beside each row that is not a pass: the last nights of main and the
candidate placed on the same axis, as a Unicode sparkline (renders in any GitHub comment, no images)."""
from __future__ import annotations

from pathlib import Path

from gate.config import Suite
from gate.history.analysis import last_nights
from gate.history.sparkline import sparkline
from gate.history.store import HistoryStore
from gate.report import Report

NIGHTS = 14


def row_trends(history_dir: str | Path, report: Report, suite: Suite, *, runner_class: str | None = None,
               nights: int = NIGHTS) -> dict[tuple[str, str], str]:
    """(workload, metric) -> "▅▆▅▆▅▆▅│▁" for every row that is not a pass and has nightly history:
    the last `nights` nights, then (after │) the candidate's mean, scaled together."""
    HistoryStore(history_dir).read(runner_class=runner_class)  # an unreadable history is one clear error
    out: dict[tuple[str, str], str] = {}
    for row in report.rows:
        if row.verdict.is_pass or row.candidate.mean is None:
            continue
        values = [night.value for night in last_nights(history_dir, row.workload, row.metric, nights,
                                                        runner_class=runner_class, suite=suite)]
        if any(v is not None for v in values):
            out[(row.workload, row.metric)] = sparkline([*values, row.candidate.mean], breaks=[len(values)])
    return out
