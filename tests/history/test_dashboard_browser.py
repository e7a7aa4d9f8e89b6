"""The published dashboard in a real headless Chromium (OS package): no console errors, every chart drawn.

Pages are served over loopback HTTP (as GitHub Pages serves them); any request answered with an
error (a missing chart) fails. Chromium logs every console message to stderr
(--enable-logging=stderr): the pages log nothing, so any CONSOLE line (a script error) fails.
The screenshot is searched for the chart frames (publish.FRAME_COLOR appears nowhere else); each
frame must hold a chart with enough ink, so a blank or missing PNG fails.
The checker is shown to fail on a blanked chart and on a deleted one.
"""
from __future__ import annotations

import functools
import shutil
import subprocess
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from scipy import ndimage

from gate.cli import cli

pytestmark = pytest.mark.browser
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if CHROMIUM is None:
    pytest.skip("chromium is not installed (apt-get install chromium; .ci/run does it)", allow_module_level=True)
pytest.importorskip("matplotlib", reason="charts need the plot extra (pip install -e '.[plot]')")

FRAME = np.array([0x7F, 0x3F, 0xBF]) / 255
MIN_INK = 0.03  # share of a chart's pixels that are not white; a rendered chart has ~0.15


class _Recording(SimpleHTTPRequestHandler):
    """Serves the site and records every request answered with an error (a missing chart is a 404)."""

    failed: list[str] = []

    def log_request(self, code="-", size="-"):
        if str(code).isdigit() and int(code) >= 400:
            self.failed.append(f"{code} {self.path}")

    def log_message(self, *args):
        pass


@pytest.fixture
def site(history_dir, tmp_path):
    out = tmp_path / "site"
    result = CliRunner().invoke(cli, ["history", "publish", str(out), "--history", str(history_dir),
                                      "--repository", "sgl-project/sglang-omni"])
    assert result.exit_code == 0, result.output
    _Recording.failed = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Recording, directory=str(out)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield out, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def screenshot(url: str, path: Path, height: int) -> tuple[np.ndarray, list[str]]:
    """The page as RGB pixels, and the console lines Chromium logged for it."""
    result = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--enable-logging=stderr",
         "--v=0", f"--screenshot={path}", f"--window-size=1280,{height}", url],
        capture_output=True, text=True, timeout=120)
    assert path.is_file(), result.stderr[-2000:]
    import matplotlib.image

    pixels = matplotlib.image.imread(str(path))[..., :3]
    console = [line for line in result.stderr.splitlines() if "CONSOLE" in line]
    return pixels, console


def chart_problems(pixels: np.ndarray, expected: int) -> list[str]:
    """Find the framed charts; say what is wrong (count, blank) or nothing."""
    frame = np.all(np.abs(pixels - FRAME) < 0.06, axis=-1)
    labels, count = ndimage.label(frame)
    boxes = [b for b in ndimage.find_objects(labels) if b[0].stop - b[0].start > 100 and b[1].stop - b[1].start > 100]
    problems = [] if len(boxes) == expected else [f"{len(boxes)} chart frames on screen, expected {expected}"]
    for rows, cols in boxes:
        inside = pixels[rows.start + 6: rows.stop - 6, cols.start + 6: cols.stop - 6]
        ink = float(np.mean(np.any(inside < 0.9, axis=-1)))
        if ink < MIN_INK:
            problems.append(f"blank chart at y={rows.start} (ink {ink:.3f})")
    return problems


def charts_on(page: Path) -> int:
    return page.read_text(encoding="utf-8").count("<figure ")


def test_pages_load_without_console_errors_and_show_every_chart(site, tmp_path):
    out, base = site
    pages = sorted(out.glob("*.html"))
    assert [p.name for p in pages] == ["index.html", "qwen3.html"]
    for page in pages:
        expected = charts_on(page)
        pixels, console = screenshot(f"{base}/{page.name}", tmp_path / f"{page.stem}.png", 400 + 360 * expected)
        assert console == [], console
        assert _Recording.failed == []
        assert chart_problems(pixels, expected) == []
        if page.name == "index.html":
            assert expected == 0 and float(np.mean(pixels < 0.9)) > 0.005  # the overview has text and tables
    assert charts_on(out / "qwen3.html") == 3  # corpus_wer, throughput, latency_mean


def test_the_checks_fail_on_a_blank_or_missing_chart(site, tmp_path):
    out, base = site
    charts = sorted((out / "charts").glob("*.png"))
    import matplotlib.pyplot as plt

    plt.imsave(charts[0], np.ones((320, 800, 3)))  # a blank white chart
    charts[1].unlink()  # a missing chart: 404
    expected = charts_on(out / "qwen3.html")
    pixels, console = screenshot(f"{base}/qwen3.html", tmp_path / "broken.png", 400 + 360 * expected)
    problems = chart_problems(pixels, expected)
    assert sum("blank chart" in p for p in problems) == 2, problems
    assert _Recording.failed == [f"404 /charts/{charts[1].name}"]


def test_a_script_error_shows_up_as_a_console_line(site, tmp_path):
    out, base = site
    page = out / "qwen3.html"
    page.write_text(page.read_text().replace("</body>", "<script>notDefined();</script></body>"))
    _, console = screenshot(f"{base}/qwen3.html", tmp_path / "js.png", 600)
    assert any("notDefined is not defined" in line for line in console), console
