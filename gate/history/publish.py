"""`gate history publish OUT`: the dashboard a maintainer opens every morning, as a static site for GitHub Pages.

    OUT/index.html     overview: one row per model × workload with its latest status, trend arrow, a small
                       chart, its change points (named, linked to their issue), σ and the detectable change
    OUT/<model>.html   per model: the charts of workloads that moved first, change points, latest verdicts

Charts are inline SVG (gate.history.svg): hovering a night shows its date, commit and value. No script,
font or style is fetched from anywhere; nothing on the pages exists only for tests. Every value shown
comes from the history files (trusted: only trusted jobs write them) and is HTML-escaped anyway: the pages are
Jinja templates (templates/dashboard*.html.j2) with autoescape, fed plain values; only the SVG the gate drew
(gate.history.svg) and the style sheet pass as markup.

σ and the detectable change (speed metrics): σ is the run-to-run and night-to-night spread of ln(value)
since the last change point (gate.history.analysis.noise); the detectable change is what a PR's 3+3
interleaved runs in one job detect with 80% power at a two-sided 5% level,
(z₀.₉₇₅ + z₀.₈)·σ_run·√(2/3) ≈ 2.8·σ_run·0.816, and never less than the gate's floor.
"""
from __future__ import annotations

import importlib.resources
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import jinja2
from markupsafe import Markup

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


@dataclass(frozen=True)
class Link:
    """Text that is a link where `href` is set (a page builds it; the template escapes both)."""
    text: str
    href: str | None = None


def _html() -> jinja2.Environment:
    """The dashboard's Jinja environment: the templates beside the comment's, autoescaped. Every value shown goes
    through the one HTML escape (controls and bidi characters removed first); markup the gate drew itself (the SVG
    charts, the style sheet) is passed as Markup."""
    global _ENV
    if _ENV is None:
        try:
            root = importlib.resources.files("gate.templates")
        except ModuleNotFoundError:  # a source checkout on PYTHONPATH: templates/ sits beside gate/ (issue 23)
            root = Path(__file__).resolve().parents[2] / "templates"  # type: ignore[assignment]
        _ENV = jinja2.Environment(
            loader=jinja2.FunctionLoader(lambda name: (root / name).read_text(encoding="utf-8")),
            autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
            keep_trailing_newline=True,
            finalize=lambda value: value if isinstance(value, Markup) else Markup(escape(value)))
    return _ENV


_ENV: jinja2.Environment | None = None


def _page(template: str, title: str, models: Sequence[str], **values: Any) -> str:
    return _html().get_template(template).render(title=title, style=Markup(_STYLE), models=models, **values)


def anchor(workload: str, metric: str | None = None) -> str:
    return workload.replace("/", "-") + (f"-{metric}" if metric else "")


def _commit_link(sha: str | None, repository: str | None, server_url: str) -> Link | None:
    if not sha:
        return None
    if not repository or not _HEX.fullmatch(sha):  # a history's commit is data: only a hash becomes a link
        return Link(sha[:10])
    return Link(sha[:10], f"{server_url}/{repository}/commit/{sha}")


def _issue_link(cp: ChangePoint, repository: str | None, server_url: str) -> Link | None:
    if cp.issue is None:
        return None
    return Link(f"#{cp.issue}", f"{server_url}/{repository}/issues/{cp.issue}" if repository else None)


def _change(cp: ChangePoint, page: str = "") -> dict[str, Any]:
    return {"page": page, "anchor": anchor(cp.workload, cp.metric), "name": display_name(cp.metric),
            "css": "worse" if cp.worse else "better", "text": format_change(cp).split(" (")[0]}


def _step(step: Sequence[ChangePoint], repository: str | None, server_url: str, page: str) -> dict[str, Any]:
    """One step of a workload: its date and issue, the gated metrics that moved, then the others."""
    issue = next((cp for cp in step if cp.issue is not None), None)
    return {"date": min(cp.night for cp in step)[:10],
            "issue": _issue_link(issue, repository, server_url) if issue else None,
            "gated": [_change(cp, page) for cp in step if cp.gated],
            "others": [_change(cp) for cp in step if not cp.gated]}


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
                   server_url: str) -> list[dict[str, Any]]:
    rows = []
    for workload in dict.fromkeys(t.workload for t in trends):
        mine = [t for t in trends if t.workload == workload]
        model = suite.workload(workload).model
        latest: Night = max((t.nights[-1] for t in mine), key=lambda n: n.time)
        arrows = []
        for t in mine:
            if t.metric.gated:
                sign, cls, change = arrow(t, floor_of(t, suite))
                amount = "" if change is None or cls == "steady" else (
                    f" {change:+.1%}" if floor_of(t, suite)[1] else f" {change * 100:+.2f} pp")
                arrows.append({"css": cls, "name": display_name(t.metric.name), "sign": sign, "amount": amount})
        lead = _lead_trend(mine)
        points = [cp for t in mine for cp in t.change_points if cp.night >= t.nights[-min(nights, len(t.nights))].time]
        speed = next((t for t in mine if t.metric.kind == "speed" and t.metric.gated), None)
        run_sigma, night_sigma, mde = detectable(speed, floor_of(speed, suite)) if speed else (None, None, None)
        verdict = latest.verdict
        rows.append({"model": model, "anchor": anchor(workload), "workload": workload, "date": latest.time[:10],
                     "commit": _commit_link(latest.commit, repository, server_url), "verdict": verdict,
                     "icon": _ICONS.get(verdict or "", ""), "verdict_words": (verdict or "").replace("_", " "),
                     "complete": latest.complete, "arrows": arrows,
                     "thumb": Markup(chart(lead, floor_of(lead, suite), nights=nights, width=200, height=56, small=True)),
                     "lead": display_name(lead.metric.name),
                     "steps": [_step(step, repository, server_url, f"{model}.html") for step in group_steps(points)],
                     "run_sigma": _pct(run_sigma), "night_sigma": _pct(night_sigma), "mde": _pct(mde)})
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
    overview = _page("dashboard_index.html.j2", "ASR nightly history", models, span=span, total=len(times),
                     shown=len(shown), trend_nights=TREND_NIGHTS,
                     rows=_overview_rows(trends, suite, nights, repository, server_url))
    pages = []
    for model in models:
        mine = [t for t in trends if suite.workload(t.workload).model == model]
        pages.append((out / f"{model}.html", _page("dashboard_model.html.j2", f"{model}: ASR nightly history", models,
                                                    **_model_values(model, mine, suite, nights, repository, server_url))))
    index = out / "index.html"
    try:
        for path, html in [(index, overview), *pages]:
            atomic.write_text(path, html, what="dashboard page")
        atomic.write_text(out / ".nojekyll", "", what="dashboard")  # serve files as they are on GitHub Pages
    except OSError as exc:
        raise GateError(f"cannot write the site ({exc.strerror})", path=exc.filename or out) from None
    return [index, *(p for p, _ in pages)]


def _model_values(model: str, mine: Sequence[Trend], suite: Suite, nights: int, repository: str | None,
                  server_url: str) -> dict[str, Any]:
    moved = [w for w in dict.fromkeys(t.workload for t in mine) if any(t.change_points for t in mine if t.workload == w)]
    order = moved + [w for w in dict.fromkeys(t.workload for t in mine) if w not in moved]
    workloads = []
    for workload in order:
        series = sorted((t for t in mine if t.workload == workload), key=lambda t: (not t.change_points, not t.metric.gated))
        figures = [{"anchor": anchor(workload, t.metric.name),
                    "caption": f"{workload} · {axis_label(t)}{'' if t.metric.gated else ' · shown, not gated'}",
                    "chart": Markup(chart(t, floor_of(t, suite), nights=nights))} for t in series]
        workloads.append({"anchor": anchor(workload), "workload": workload, "moved": workload in moved,
                          "figures": figures})
    return {"model": model, "changes": _changes(mine, repository, server_url), "workloads": workloads,
            "latest": _latest(mine, repository, server_url)}


def _changes(trends: Sequence[Trend], repository: str | None, server_url: str) -> list[dict[str, Any]]:
    rows = []
    for t in trends:
        for cp in t.change_points:
            diff = None
            if (repository and cp.previous_commit and cp.commit  # only hashes become a link (history is data)
                    and _HEX.fullmatch(cp.previous_commit) and _HEX.fullmatch(cp.commit)):
                diff = f"{server_url}/{repository}/compare/{cp.previous_commit}...{cp.commit}"
            rows.append({"anchor": anchor(cp.workload, cp.metric), "workload": cp.workload,
                         "name": display_name(cp.metric), "gated": cp.gated, "css": "worse" if cp.worse else "better",
                         "text": format_change(cp), "date": cp.night[:10],
                         "before": _commit_link(cp.previous_commit, repository, server_url),
                         "after": _commit_link(cp.commit, repository, server_url), "diff": diff,
                         "p": f"{cp.p_value:.1g}", "issue": _issue_link(cp, repository, server_url)})
    return rows


def _latest(trends: Sequence[Trend], repository: str | None, server_url: str) -> list[dict[str, Any]]:
    latest: dict[str, Night] = {}
    for t in trends:
        if t.nights:
            latest.setdefault(t.workload, t.nights[-1])
    return [{"workload": w, "time": n.time[:16].replace("T", " "), "commit": _commit_link(n.commit, repository, server_url),
             "verdict": n.verdict, "complete": n.complete} for w, n in latest.items()]
