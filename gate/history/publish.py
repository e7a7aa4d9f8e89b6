"""`gate history publish OUT`: the dashboard a maintainer opens every morning, as a static site for GitHub Pages.

    OUT/index.html     overview: one row per model × workload with its latest status, trend arrow, a small
                       chart, its change points (named, linked to their issue), σ and the detectable change
    OUT/<model>.html   per model: the charts of workloads that moved first, change points, latest verdicts

Charts are inline SVG (gate.history.svg): hovering a night shows its date, commit and value. No script,
font or style is fetched from anywhere; nothing on the pages exists only for tests. Every value shown
comes from the history files (trusted: only trusted jobs write them) and is HTML-escaped anyway.

σ and the detectable change (speed metrics): σ is the run-to-run and night-to-night spread of ln(value)
since the last change point (gate.history.analysis.noise); the detectable change is what a PR's 3+3
interleaved runs in one job detect with 80% power at a two-sided 5% level,
(z₀.₉₇₅ + z₀.₈)·σ_run·√(2/3) ≈ 2.8·σ_run·0.816, and never less than the gate's floor.
"""
from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Sequence

from gate.formats import atomic
from gate.formats.config import Suite
from gate.formats.errors import GateError
from gate.history.analysis import Night, Trend, noise
from gate.history.records import ChangePoint
from gate.history.steps import format_change, group_steps
from gate.history.svg import axis_label, chart, display_name, floor_of
from gate.render.escape import html_text as escape  # controls and bidi characters never reach a page

PR_RUNS = 3  # runs per side of a PR's first look (the plan's 3+3)
POWER_Z = 1.959964 + 0.841621  # two-sided 5%, 80% power
TREND_NIGHTS = 7  # the arrow compares the last 7 nights with the 14 before them
ARROW_Z = 3.0  # ... and points only past 3 standard errors of that difference of medians
MEDIAN_SE = 1.2533  # standard error of a median over that of a mean, normal nights

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 20px; color: #1f2328; background: #fff; max-width: 1180px; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 26px 0 8px; }
p.note { color: #57606a; font-size: 13px; margin: 4px 0 14px; }
table { border-collapse: collapse; font-size: 13px; margin: 6px 0; }
th, td { border: 1px solid #d0d7de; padding: 4px 8px; text-align: left; vertical-align: middle; }
th { background: #f6f8fa; }
.worse { color: #cf222e; font-weight: 600; } .better { color: #1a7f37; font-weight: 600; } .steady { color: #57606a; }
.fail, .incomplete, .not_comparable { color: #cf222e; font-weight: 600; } .warn { color: #9a6700; font-weight: 600; }
.pass { color: #1a7f37; font-weight: 600; }
figure { margin: 0 0 18px; } figcaption { font-size: 14px; font-weight: 600; margin: 0 0 2px; }
nav a { margin-right: 14px; }
td.nw { white-space: nowrap; }
"""
_HEX = re.compile(r"[0-9a-f]{7,40}")
_ICONS = {"pass": "✅", "warn": "⚠️", "fail": "❌", "incomplete": "⛔", "not_comparable": "🚫"}


def _page(title: str, body: str, models: Sequence[str]) -> str:
    nav = " ".join(f'<a href="{escape(m)}.html">{escape(m)}</a>' for m in models)
    return (f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<link rel="icon" href="data:,">'
            f"<title>{escape(title)}</title><style>{_STYLE}</style></head>\n<body>\n"
            f'<nav><a href="index.html">Overview</a> {nav}</nav>\n{body}\n</body></html>\n')


def anchor(workload: str, metric: str | None = None) -> str:
    return workload.replace("/", "-") + (f"-{metric}" if metric else "")


def _commit_link(sha: str | None, repository: str | None, server_url: str) -> str:
    if not sha:
        return "?"
    if not repository or not _HEX.fullmatch(sha):  # a history's commit is data: only a hash becomes a link
        return f"<code>{escape(sha[:10])}</code>"
    return f'<a href="{escape(server_url)}/{escape(repository)}/commit/{escape(sha)}"><code>{escape(sha[:10])}</code></a>'


def _issue_link(cp: ChangePoint, repository: str | None, server_url: str) -> str:
    if cp.issue is None:
        return ""
    if not repository:
        return f" (#{cp.issue})"
    return f' (<a href="{escape(server_url)}/{escape(repository)}/issues/{cp.issue}">#{cp.issue}</a>)'


def _change_text(cp: ChangePoint, repository: str | None, server_url: str, page: str = "") -> str:
    cls = "worse" if cp.worse else "better"
    return (f'<a href="{escape(page)}#{escape(anchor(cp.workload, cp.metric))}">{escape(display_name(cp.metric))}</a> '
            f'<span class="{cls}">{escape(format_change(cp).split(" (")[0])}</span>')


def _step_text(step: Sequence[ChangePoint], repository: str | None, server_url: str, page: str) -> str:
    """One step of a workload: its date and issue, the gated metrics that moved, then the others."""
    gated = [cp for cp in step if cp.gated]
    others = [cp for cp in step if not cp.gated]
    issue = next((cp for cp in step if cp.issue is not None), None)
    text = f"<b>{escape(min(cp.night for cp in step)[:10])}</b>" + (
        _issue_link(issue, repository, server_url) if issue else "") + ": "
    text += ", ".join(_change_text(cp, repository, server_url, page) for cp in gated) or "not gated"
    if others:
        text += '<br><span class="steady">also ' + ", ".join(
            f"{escape(display_name(cp.metric))} {escape(format_change(cp).split(' (')[0])}" for cp in others) + "</span>"
    return text


def arrow(trend: Trend, floor: tuple[float, bool]) -> tuple[str, str, float | None]:
    """(arrow, css class, change) of the last TREND_NIGHTS nights against the 2×TREND_NIGHTS before them."""
    values = [n.value for n in trend.nights if n.value is not None and (n.value > 0 or trend.metric.kind != "speed")]
    if len(values) < 2 * TREND_NIGHTS:
        return "·", "steady", None
    recent, before = values[-TREND_NIGHTS:], values[-3 * TREND_NIGHTS:-TREND_NIGHTS]
    mid = sorted(before)[len(before) // 2]
    now = sorted(recent)[len(recent) // 2]
    limit, relative = floor
    change = (now / mid - 1) if relative and mid > 0 else (now - mid)
    xs = [math.log(v) for v in before] if relative else before
    mean = sum(xs) / len(xs)
    sigma = math.sqrt(sum((x - mean) ** 2 for x in xs) / (len(xs) - 1))
    noise_limit = ARROW_Z * MEDIAN_SE * sigma * math.sqrt(1 / len(recent) + 1 / len(before))
    if abs(change) < max(limit / 2, noise_limit):  # steady: within half the floor, or within the nights' noise
        return "→", "steady", change
    up = change > 0
    worse = up if trend.metric.direction == "lower" else not up
    return ("↗" if up else "↘"), ("worse" if worse else "better"), change


def detectable(trend: Trend, floor: tuple[float, bool]) -> tuple[float | None, float | None, float | None]:
    """(run σ, night σ, detectable change) of a speed metric, relative; Nones where not estimable."""
    if trend.metric.kind != "speed":
        return None, None, None
    found = noise(trend)
    if found.run_sigma is None:
        return None, found.night_sigma, None
    mde = max(floor[0], math.expm1(POWER_Z * found.run_sigma * math.sqrt(2 / PR_RUNS)))
    return found.run_sigma, found.night_sigma, mde


def _pct(value: float | None, *, signed: bool = False) -> str:
    if value is None or not math.isfinite(value):
        return "—"
    return f"{value:+.1%}" if signed else f"{value:.1%}"


def _lead_trend(mine: Sequence[Trend]) -> Trend:
    """The metric a workload's thumbnail shows: a gated speed metric with a change point, else the first gated one."""
    gated = [t for t in mine if t.metric.gated] or list(mine)
    moved = [t for t in gated if t.change_points]
    speed = [t for t in (moved or gated) if t.metric.kind == "speed"]
    return (speed or moved or gated)[0]


def _overview_rows(trends: Sequence[Trend], suite: Suite, nights: int, repository: str | None,
                   server_url: str) -> list[str]:
    rows = []
    for workload in dict.fromkeys(t.workload for t in trends):
        mine = [t for t in trends if t.workload == workload]
        model = suite.workload(workload).model
        latest: Night = max((t.nights[-1] for t in mine), key=lambda n: n.time)
        verdict = latest.verdict
        status = (f'<span class="{escape(verdict)}">{_ICONS.get(verdict, "")} {escape(verdict.replace("_", " "))}</span>'
                  if verdict else '<span class="steady">no verdict stored</span>')
        if not latest.complete:
            status += ' <span class="incomplete">(incomplete)</span>'
        arrows = []
        for t in mine:
            if t.metric.gated:
                sign, cls, change = arrow(t, floor_of(t, suite))
                amount = "" if change is None or cls == "steady" else (
                    f" {change:+.1%}" if floor_of(t, suite)[1] else f" {change * 100:+.2f} pp")
                arrows.append(f'<span class="{cls}" title="median of the last {TREND_NIGHTS} nights against the '
                              f'{2 * TREND_NIGHTS} before">{escape(display_name(t.metric.name))} {sign}{escape(amount)}'
                              "</span>")
        lead = _lead_trend(mine)
        thumb = chart(lead, floor_of(lead, suite), nights=nights, width=200, height=56, small=True)
        points = [cp for t in mine for cp in t.change_points if cp.night >= t.nights[-min(nights, len(t.nights))].time]
        named = "<br>".join(_step_text(step, repository, server_url, f"{model}.html")
                            for step in group_steps(points)) or "none"
        speed = next((t for t in mine if t.metric.kind == "speed" and t.metric.gated), None)
        run_sigma, night_sigma, mde = detectable(speed, floor_of(speed, suite)) if speed else (None, None, None)
        rows.append(f'<tr><td><a href="{escape(model)}.html#{escape(anchor(workload))}">{escape(workload)}</a></td>'
                    f"<td>{escape(latest.time[:10])}<br>{_commit_link(latest.commit, repository, server_url)}</td>"
                    f"<td>{status}</td><td class=\"nw\">{'<br>'.join(arrows)}</td><td>{thumb}<br>"
                    f'<span class="steady">{escape(display_name(lead.metric.name))}</span></td><td>{named}</td>'
                    f'<td class="nw">run {_pct(run_sigma)}<br>night {_pct(night_sigma)}</td><td>{_pct(mde)}</td></tr>')
    return rows


def publish_site(trends: Sequence[Trend], out: Path, *, suite: Suite, nights: int = 90,
                 repository: str | None = None, server_url: str = "https://github.com") -> list[Path]:
    """Write the site; returns the HTML pages written."""
    out = Path(out)
    if not trends:
        raise GateError("nothing to publish: the history has no tracked metric")
    models = list(dict.fromkeys(suite.workload(t.workload).model for t in trends))
    times = sorted({n.time for t in trends for n in t.nights})
    shown = times[-nights:]
    span = f"{len(shown)} nights from {shown[0][:10]} to {shown[-1][:10]}" if shown else "no nights"
    overview = ["<h1>ASR regression gate: nightly history of main</h1>",
                f'<p class="note">{escape(span)} ({len(times)} in the history). Status: the latest night\'s '
                "verdict against the stored baseline. Trend: the median of the last 7 nights against the 14 before "
                "(→ within half the gate's floor or 3 standard errors of the nights' noise). "
                "σ: spread of ln(throughput) since the last change point; "
                "detectable: the change a PR's 3+3 runs detect with 80% power (never below the floor).</p>",
                "<table><tr><th>Workload</th><th>Latest night</th><th>Status</th><th>Trend (gated)</th>"
                f"<th>Last {len(shown)} nights</th><th>Change points</th><th>σ</th><th>Detectable</th></tr>",
                *_overview_rows(trends, suite, nights, repository, server_url), "</table>"]
    pages = []
    for model in models:
        mine = [t for t in trends if suite.workload(t.workload).model == model]
        pages.append((out / f"{model}.html", _page(f"{model}: ASR nightly history",
                                                    _model_body(model, mine, suite, nights, repository, server_url),
                                                    models)))
    index = out / "index.html"
    try:
        for path, html in [(index, _page("ASR nightly history", "\n".join(overview), models)), *pages]:
            atomic.write_text(path, html, what="dashboard page")
        atomic.write_text(out / ".nojekyll", "", what="dashboard")  # serve files as they are on GitHub Pages
    except OSError as exc:
        raise GateError(f"cannot write the site ({exc.strerror})", path=exc.filename or out) from None
    return [index, *(p for p, _ in pages)]


def _model_body(model: str, mine: Sequence[Trend], suite: Suite, nights: int, repository: str | None,
                server_url: str) -> str:
    moved = [w for w in dict.fromkeys(t.workload for t in mine) if any(t.change_points for t in mine if t.workload == w)]
    order = moved + [w for w in dict.fromkeys(t.workload for t in mine) if w not in moved]
    body = [f"<h1>{escape(model)}: nightly history of main</h1>",
            '<p class="note">Hover a point for its night, commit and value. Line and points: each night\'s value '
            "(geometric mean of the runs for speed); light points: the runs; band: level ±2σ between change "
            "points; dashed violet: the gate's floor around the current level; dashed red: change point.</p>",
            "<h2>Change points</h2>", _change_table(mine, repository, server_url)]
    for workload in order:
        body.append(f'<h2 id="{escape(anchor(workload))}">{escape(workload)}'
                    f"{' (moved)' if workload in moved else ''}</h2>")
        series = sorted((t for t in mine if t.workload == workload), key=lambda t: (not t.change_points, not t.metric.gated))
        for t in series:
            caption = f"{workload} · {axis_label(t)}{'' if t.metric.gated else ' · shown, not gated'}"
            body.append(f'<figure id="{escape(anchor(workload, t.metric.name))}">'
                        f"<figcaption>{escape(caption)}</figcaption>{chart(t, floor_of(t, suite), nights=nights)}"
                        "</figure>")
    body += ["<h2>Latest nights</h2>", _verdict_table(mine, repository, server_url)]
    return "\n".join(body)


def _change_table(trends: Sequence[Trend], repository: str | None, server_url: str) -> str:
    rows = []
    for t in trends:
        for cp in t.change_points:
            cls = "worse" if cp.worse else "better"
            rng = (f"{_commit_link(cp.previous_commit, repository, server_url)} … "
                   f"{_commit_link(cp.commit, repository, server_url)}")
            if (repository and cp.previous_commit and cp.commit  # only hashes become a link (history is data)
                    and _HEX.fullmatch(cp.previous_commit) and _HEX.fullmatch(cp.commit)):
                rng += (f' (<a href="{escape(server_url)}/{escape(repository)}/compare/'
                        f'{escape(cp.previous_commit)}...{escape(cp.commit)}">diff</a>)')
            issue = _issue_link(cp, repository, server_url).strip(" ()") or "—"
            rows.append(f'<tr><td><a href="#{escape(anchor(cp.workload, cp.metric))}">{escape(cp.workload)} · '
                        f"{escape(display_name(cp.metric))}</a>{'' if cp.gated else ' (not gated)'}</td>"
                        f'<td class="{cls}">{escape(format_change(cp))}</td><td>{escape(cp.night[:10])}</td>'
                        f"<td>{rng}</td><td>{cp.p_value:.1g}</td><td>{issue}</td></tr>")
    if not rows:
        return "<p>No change point in the history.</p>"
    return ("<table><tr><th>Series</th><th>Change (95% CI)</th><th>From night</th>"
            "<th>Commit range</th><th>p</th><th>Issue</th></tr>" + "".join(rows) + "</table>")


def _verdict_table(trends: Sequence[Trend], repository: str | None, server_url: str) -> str:
    latest: dict[str, Night] = {}
    for t in trends:
        if t.nights:
            latest.setdefault(t.workload, t.nights[-1])
    rows = "".join(f"<tr><td>{escape(w)}</td><td>{escape(n.time[:16].replace('T', ' '))}</td>"
                   f"<td>{_commit_link(n.commit, repository, server_url)}</td>"
                   f'<td class="{escape(n.verdict or "")}">{escape(n.verdict or "no verdict stored")}</td>'
                   f"<td>{'complete' if n.complete else 'incomplete'}</td></tr>" for w, n in latest.items())
    return ("<table><tr><th>Workload</th><th>Latest night (UTC)</th><th>Commit</th><th>Verdict</th><th>Coverage</th>"
            "</tr>" + rows + "</table>")
