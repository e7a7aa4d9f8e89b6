"""`gate history publish OUT`: a self-contained static site of the nightly history, for GitHub Pages.

    OUT/index.html          models, their latest verdicts and open change points
    OUT/<model>.html        per model: the change-point table (commit links), latest verdicts, every chart
    OUT/charts/<workload>-<metric>.png

No script, font or style is fetched from anywhere: CSS is inline, charts are files beside the pages.
Every chart sits in a frame of one colour (FRAME_COLOR) that appears nowhere else, so a screenshot
test can find each chart and check it is not blank (tests/history/test_dashboard_browser.py).
Every value shown comes from the history files (trusted: only trusted jobs write them) and is
HTML-escaped anyway.
"""
from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Sequence

from gate.config import Suite
from gate.errors import GateError
from gate.history.analysis import Night, Trend
from gate.history.plot import chart_file, write_charts
from gate.history.tracking import format_change

FRAME_COLOR = "#7f3fbf"
CHART_SIZE = (800, 320)  # plot.draw writes 8 x 3.2 in at 100 dpi

_STYLE = f"""
body {{ font-family: system-ui, sans-serif; margin: 24px; color: #1b1f24; background: #fff; }}
h1 {{ font-size: 22px; margin: 0 0 4px; }} h2 {{ font-size: 17px; margin: 28px 0 8px; }}
p.note {{ color: #57606a; font-size: 13px; margin: 4px 0 16px; }}
table {{ border-collapse: collapse; font-size: 13px; margin: 6px 0; }}
th, td {{ border: 1px solid #d0d7de; padding: 4px 8px; text-align: left; }}
th {{ background: #f6f8fa; }}
.worse {{ color: #cf222e; font-weight: 600; }} .better {{ color: #1a7f37; font-weight: 600; }}
.fail, .incomplete, .not_comparable {{ color: #cf222e; }} .warn {{ color: #9a6700; }} .pass {{ color: #1a7f37; }}
figure {{ margin: 0 0 18px; width: {CHART_SIZE[0]}px; border: 4px solid {FRAME_COLOR}; padding: 0; }}
figure img {{ display: block; width: {CHART_SIZE[0]}px; height: {CHART_SIZE[1]}px; }}
nav a {{ margin-right: 14px; }}
"""


def _page(title: str, body: str, models: Sequence[str]) -> str:
    nav = " ".join(f'<a href="{escape(m)}.html">{escape(m)}</a>' for m in models)
    return (f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<link rel="icon" href="data:,">'
            f"<title>{escape(title)}</title><style>{_STYLE}</style></head>\n<body>\n"
            f'<nav><a href="index.html">Overview</a> {nav}</nav>\n{body}\n</body></html>\n')


def _commit_link(sha: str | None, repository: str | None, server_url: str) -> str:
    if not sha:
        return "?"
    if not repository:
        return f"<code>{escape(sha[:10])}</code>"
    return f'<a href="{escape(server_url)}/{escape(repository)}/commit/{escape(sha)}"><code>{escape(sha[:10])}</code></a>'


def _change_table(trends: Sequence[Trend], repository: str | None, server_url: str) -> str:
    rows = []
    for t in trends:
        for cp in t.change_points:
            cls = "worse" if cp.worse else "better"
            rng = (f"{_commit_link(cp.previous_commit, repository, server_url)} … "
                   f"{_commit_link(cp.commit, repository, server_url)}")
            if repository and cp.previous_commit and cp.commit:
                rng += (f' (<a href="{escape(server_url)}/{escape(repository)}/compare/'
                        f'{escape(cp.previous_commit)}...{escape(cp.commit)}">diff</a>)')
            rows.append(f"<tr><td>{escape(cp.workload)}</td><td>{escape(cp.metric)}</td>"
                        f'<td class="{cls}">{escape(format_change(cp))}</td><td>{escape(cp.night[:10])}</td>'
                        f"<td>{rng}</td><td>{cp.p_value:.1g}</td></tr>")
    if not rows:
        return "<p>No change point in the nights shown.</p>"
    return ("<table><tr><th>Workload</th><th>Metric</th><th>Change (95% CI)</th><th>From night</th>"
            "<th>Commit range</th><th>p</th></tr>" + "".join(rows) + "</table>")


def _verdict_table(trends: Sequence[Trend], repository: str | None, server_url: str) -> str:
    latest: dict[str, Night] = {}
    for t in trends:
        if t.nights:
            latest.setdefault(t.workload, t.nights[-1])
    if not latest:
        return ""
    rows = "".join(f"<tr><td>{escape(w)}</td><td>{escape(n.time[:16].replace('T', ' '))}</td>"
                   f"<td>{_commit_link(n.commit, repository, server_url)}</td>"
                   f'<td class="{escape(n.verdict or "")}">{escape(n.verdict or "not recorded")}</td>'
                   f"<td>{'complete' if n.complete else 'incomplete'}</td></tr>" for w, n in latest.items())
    return ("<table><tr><th>Workload</th><th>Latest night (UTC)</th><th>Commit</th><th>Verdict</th><th>Coverage</th>"
            "</tr>" + rows + "</table>")


def publish_site(trends: Sequence[Trend], out: Path, *, suite: Suite, nights: int = 90,
                 repository: str | None = None, server_url: str = "https://github.com") -> list[Path]:
    """Write the site; returns the HTML pages written."""
    out = Path(out)
    if not trends:
        raise GateError("nothing to publish: the history has no tracked metric")
    write_charts(trends, out / "charts", nights=nights)
    models = list(dict.fromkeys(suite.workload(t.workload).model for t in trends))
    pages = []
    try:
        overview = ["<h1>ASR regression gate: nightly history of main</h1>",
                    f"<p class=\"note\">{len(trends)} workload × metric series over the last {nights} nights, "
                    "from the history on the baseline branch.</p>"]
        for model in models:
            mine = [t for t in trends if suite.workload(t.workload).model == model]
            open_points = sum(len(t.change_points) for t in mine)
            overview.append(f'<h2><a href="{escape(model)}.html">{escape(model)}</a></h2>'
                            f"<p>{open_points} change point(s).</p>" + _verdict_table(mine, repository, server_url))
            body = [f"<h1>{escape(model)}: nightly history</h1>",
                    '<p class="note">Points: each scored run; line: the night\'s value; band: level ±2σ between '
                    "change points; dashed red: change point.</p>",
                    "<h2>Change points</h2>", _change_table(mine, repository, server_url),
                    "<h2>Latest verdicts</h2>", _verdict_table(mine, repository, server_url), "<h2>Charts</h2>"]
            for t in mine:
                name = chart_file(t.workload, t.metric.name)
                alt = f"{t.workload} {t.metric.name} over the last nights"
                body.append(f'<figure id="{escape(name[:-4])}"><img src="charts/{escape(name)}" alt="{escape(alt)}" '
                            f'width="{CHART_SIZE[0]}" height="{CHART_SIZE[1]}"></figure>')
            path = out / f"{model}.html"
            path.write_text(_page(f"{model}: ASR nightly history", "\n".join(body), models), encoding="utf-8")
            pages.append(path)
        index = out / "index.html"
        index.write_text(_page("ASR nightly history", "\n".join(overview), models), encoding="utf-8")
        (out / ".nojekyll").write_text("", encoding="utf-8")  # serve files as they are on GitHub Pages
    except OSError as exc:
        raise GateError(f"cannot write the site ({exc.strerror})", path=exc.filename or out) from None
    return [index, *pages]
