"""Text and JSON views of history trends: the `gate history` table and its --json document."""
from __future__ import annotations

from typing import Sequence

from gate.history.analysis import Noise, Trend
from gate.history.sparkline import sparkline
from gate.history.steps import format_change


def _value(value: float | None, unit: str) -> str:
    if value is None:
        return "—"
    if unit == "fraction":
        return f"{value * 100:.2f}%"
    return f"{value:.4g} {unit}"  # the unit beside the number (issue 39)


def table(trends: Sequence[Trend], *, nights: int, history: str) -> str:
    """One row per workload × metric: latest value, sparkline of the last `nights` (│ = change point)."""
    all_times = sorted({n.time for t in trends for n in t.nights})
    shown_times = all_times[-nights:]
    header = (f"History {history}: {len(all_times)} nights"
              + (f", showing {shown_times[0][:10]} … {shown_times[-1][:10]}" if shown_times else ""))
    rows = [("Workload", "Metric", "Latest", f"Last {len(shown_times)} nights (│ change point)", "Change points")]
    for t in trends:
        index = {n.time: n for n in t.nights}
        values = [index[time].value if time in index else None for time in shown_times]
        starts = {cp.night for cp in t.change_points}
        breaks = [i for i, time in enumerate(shown_times) if time in starts]
        latest = next((n.value for n in reversed(t.nights) if n.value is not None), None)
        changes = "; ".join(f"{format_change(cp).split(' (')[0]} {'worse' if cp.worse else 'better'} from "
                            f"{cp.night[:10]} ({(cp.previous_commit or '?')[:7]}..{(cp.commit or '?')[:7]})"
                            for cp in t.change_points) or "—"
        rows.append((t.workload, t.metric.name, _value(latest, t.metric.unit), sparkline(values, breaks=breaks), changes))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = [header, ""]
    for r in rows:
        lines.append("  ".join(r[i].ljust(widths[i]) for i in range(4)) + "  " + r[4])
    count = sum(len(t.change_points) for t in trends)
    lines += ["", f"{count} change point(s); values are the nightly mean of the scored runs (geometric for speed)."]
    return "\n".join(lines)


def trends_json(trends: Sequence[Trend], *, nights: int, history: str) -> dict:
    return {
        "history": history,
        "trends": [{
            "workload": t.workload, "metric": t.metric.name, "unit": t.metric.unit, "direction": t.metric.direction,
            "nights": [{"time": n.time, "commit": n.commit, "value": n.value, "runs": list(n.runs),
                        "verdict": n.verdict, "complete": n.complete} for n in t.nights[-nights:]],
            "sparkline": sparkline([n.value for n in t.nights[-nights:]]),
            "change_points": [cp.to_json() for cp in t.change_points],
        } for t in trends],
    }


def noise_table(noises: Sequence[Noise]) -> str:
    rows = [("Workload", "Metric", "Nights", "Run-to-run σ", "Night-to-night σ", "Since")]
    for n in noises:
        def fmt(s: float | None) -> str:
            if s is None:
                return "—"
            return f"{s:.2%}" if n.log else f"{s * 100:.3f} pp"  # noqa: B023  # called before the loop moves on
        rows.append((n.workload, n.metric, str(n.nights), f"{fmt(n.run_sigma)} (df {n.run_df})", fmt(n.night_sigma),
                     (n.since or "—")[:10]))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(r[i].ljust(widths[i]) for i in range(len(r))) for r in rows]
    lines.append("")
    lines.append("Speed σ are of ln(value) (relative); accuracy σ in percentage points. Nights since the last change point.")
    return "\n".join(lines)
