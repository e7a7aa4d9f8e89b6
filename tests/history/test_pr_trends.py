"""Trends in the PR comment (issue 15 item 3): each non-passing row shows the last nights of main with
the candidate placed after │ on the same scale; passing rows get none; cmark-gfm keeps the table whole."""
from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from gate.compare import compare
from gate.config import load_suite
from gate.history.pr import NIGHTS, row_trends
from gate.history.sparkline import BREAK
from gate.render import render_comment
from gate.stats.performance import Calibration

# The in-memory side builders of tests/verdict (its conftest, loaded under its own name).
_spec = importlib.util.spec_from_file_location("verdict_builders", Path(__file__).parents[1] / "verdict" / "conftest.py")
_builders = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_builders)
memory_side, seedtts_values = _builders.memory_side, _builders.seedtts_values

SPEED = ("throughput_samples_per_s", "latency_mean_s", "latency_p95_s", "rtf_mean")


@pytest.fixture
def slow_report():
    """qwen3/asr_en throughput 6% below the nights' level (98 samples/s); everything else unchanged."""
    suite = load_suite()
    rng = np.random.default_rng(2)
    values = {w: seedtts_values(rng, tput=98.0) for w in ("qwen3/asr_en", "qwen3/asr_zh")}
    slow = {w: dict(v) for w, v in values.items()}
    slow["qwen3/asr_en"]["throughput_samples_per_s"] = [v * 0.94 for v in values["qwen3/asr_en"]["throughput_samples_per_s"]]
    cal = {w: {m: Calibration(0.01, 40, 20) for m in SPEED} for w in values}
    base, cand = memory_side(suite, label="b", values=values), memory_side(suite, label="c", values=slow)
    return suite, compare(base, cand, suite, calibration=cal)


def test_non_passing_rows_get_the_nights_and_the_candidate(history_dir, slow_report):
    suite, report = slow_report
    trends = row_trends(history_dir, report, suite)
    assert list(trends) == [("qwen3/asr_en", "throughput_samples_per_s")]  # the one failing row
    line = trends[("qwen3/asr_en", "throughput_samples_per_s")]
    nights, candidate = line.split(BREAK)
    assert len(nights) == NIGHTS and len(candidate) == 1
    assert candidate in "▁▂▃" and nights[0] in "▅▆▇█"  # before the step the nights were high; the candidate is low


def test_the_comment_shows_the_trend_beside_the_row_and_cmark_keeps_the_table(history_dir, slow_report):
    suite, report = slow_report
    text = render_comment(report, trends=row_trends(history_dir, report, suite))
    row = next(line for line in text.splitlines() if line.startswith("| qwen3/asr\\_en · throughput"))
    assert BREAK in row and row.count(" | ") == 4  # five columns: the trend sits beside the verdict
    if shutil.which("cmark-gfm") is None:
        pytest.skip("cmark-gfm (Debian package) is not installed")
    html = subprocess.run(["cmark-gfm", "-e", "table", "-e", "tagfilter", "-e", "autolink"], input=text,
                          capture_output=True, text=True, check=True).stdout
    table = html.split("What changed", 1)[1].split("</table>", 1)[0]
    assert table.count("<th>") == 5 and table.count("<td>") % 5 == 0 and BREAK in table
    assert "<script" not in html and "&lt;!-- asr" not in html
