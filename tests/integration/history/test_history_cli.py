from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from click.testing import CliRunner

from gate.cli import cli
from gate.history.analysis import last_nights
from gate.history.sparkline import sparkline
from tests.helpers.nights import STEP_NIGHT, commit


def test_sparkline():
    assert sparkline([0, 1, 2, 3, 4, 5, 6, 7]) == "▁▂▃▄▅▆▇█"
    assert sparkline([1, None, 1]) == "▅ ▅"
    assert sparkline([0, 7, 0], breaks=[1]) == "▁│█▁"
    assert sparkline([]) == ""


def test_table_shows_the_step_with_its_commit_range(history_dir):
    result = CliRunner().invoke(cli, ["history", "--history", str(history_dir), "--nights", "20"])
    assert result.exit_code == 0, result.output
    line = next(row for row in result.output.splitlines() if "throughput_samples_per_s" in row)
    assert "│" in line and "worse" in line and f"{commit(STEP_NIGHT - 1)[:7]}..{commit(STEP_NIGHT)[:7]}" in line
    wer = next(row for row in result.output.splitlines() if "corpus_wer" in row)
    assert wer.rstrip().endswith("—")  # no change point on WER


def test_json_lists_nights_and_change_points(history_dir):
    result = CliRunner().invoke(cli, ["history", "--history", str(history_dir), "--json", "--nights", "10"])
    doc = json.loads(result.output)
    thr = next(t for t in doc["trends"] if t["metric"] == "throughput_samples_per_s")
    assert len(thr["nights"]) == 10
    [cp] = thr["change_points"]
    assert cp["commit"] == commit(STEP_NIGHT) and cp["previous_commit"] == commit(STEP_NIGHT - 1)
    assert cp["worse"] and cp["ci"][0] < cp["change"] < cp["ci"][1] < 0
    assert cp["change"] == pytest.approx(-0.06, abs=0.02)


def test_noise_between_change_points(history_dir):
    result = CliRunner().invoke(cli, ["history", "noise", "--history", str(history_dir), "--json"])
    rows = {r["metric"]: r for r in json.loads(result.output)}
    thr = rows["throughput_samples_per_s"]
    assert thr["nights"] == 36 - STEP_NIGHT  # since the change point only
    assert 0.005 < thr["run_sigma"] < 0.02  # simulated with 1% run noise
    text = CliRunner().invoke(cli, ["history", "noise", "--history", str(history_dir)]).output
    assert "Run-to-run σ" in text and "qwen3/asr_en" in text


def test_last_nights_helper(history_dir):
    nights = last_nights(history_dir, "qwen3/asr_en", "throughput_samples_per_s", 5)
    assert [n.commit for n in nights] == [commit(i) for i in range(31, 36)]
    assert all(90 < n.value < 96 for n in nights)


def test_example_nights_import_and_table(tmp_path):
    out = tmp_path / "nights"
    result = CliRunner().invoke(cli, ["history", "example-nights", str(out), "--nights", "3"])
    assert result.exit_code == 0, result.output
    trees = sorted(str(p) for p in out.glob("night-*"))
    history = tmp_path / "history"
    first = CliRunner().invoke(cli, ["history", "import", "--history", str(history), "--runner-class", "h100", *trees])
    assert first.exit_code == 0 and "12 new records from 3 trees" in first.output
    again = CliRunner().invoke(cli, ["history", "import", "--history", str(history), "--runner-class", "h100", *trees])
    assert "0 new records" in again.output
    table = CliRunner().invoke(cli, ["history", "--history", str(history)])
    assert table.exit_code == 0 and "whisper/asr_zh" in table.output and "3 nights" in table.output
    times = [json.loads(row)["time"] for row in next(history.rglob("*.jsonl")).read_text().splitlines()]
    assert times[0] == "2026-10-01T02:00:00+00:00" and times[-1] == "2026-10-03T02:00:00+00:00"


def test_import_of_a_non_tree_is_one_line(tmp_path):
    result = CliRunner().invoke(cli, ["history", "import", "--history", str(tmp_path / "h"), str(tmp_path)])
    assert result.exit_code == 2 and result.output.startswith("gate: error:") and result.output.count("\n") == 1


def test_base_install_does_not_import_matplotlib(history_dir):
    code = ("import sys; from gate.cli import main; sys.argv=['gate','history','--history',%r]; "
            "import contextlib, io\n"
            "with contextlib.suppress(SystemExit): main()\n"
            "assert 'matplotlib' not in sys.modules, 'matplotlib imported'" % str(history_dir))
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)


def test_plot_needs_no_matplotlib(history_dir, tmp_path):
    code = ("import sys; sys.modules['matplotlib'] = None; from gate.cli import main; "
            "sys.argv=['gate','history','plot',%r,'--history',%r]; main()" % (str(tmp_path / "c"), str(history_dir)))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert len(list((tmp_path / "c").glob("*.svg"))) == 3


def test_noise_refreshes_a_baseline_calibration(history_dir, tmp_path):
    from gate.examples import ExampleSpec, write_example_tree
    from gate.formats.config import load_suite
    from gate.reading.baseline_file import read_baseline, write_baseline
    from gate.reading.tree_side import side_from_tree

    suite = load_suite()
    tree = write_example_tree(tmp_path / "tree", suite, ExampleSpec(models=("qwen3",), runs=("1", "2", "3")))
    baseline = write_baseline(side_from_tree(tree, suite, sample_reader=lambda *a: {}), tmp_path / "b.json")
    result = CliRunner().invoke(cli, ["history", "noise", "--history", str(history_dir), "--write-calibration",
                                      str(baseline)])
    assert result.exit_code == 0, result.output
    side = read_baseline(baseline, suite)
    cal = side.calibration["qwen3/asr_en"]["throughput_samples_per_s"]
    # The newest 14 nights of 3 runs (a level step does not bias the within-night spread), no A/A pair yet.
    assert (cal.df, cal.nights, cal.night_df, cal.pairs) == (2 * 14, 14, 2 * 14, 0)
    assert 0.005 < cal.sigma < 0.02 and cal.usable
    assert "qwen3/asr_zh" not in side.calibration  # the history has nothing on it


def test_plot_with_a_candidate(history_dir, tmp_path):
    import xml.etree.ElementTree as ET

    from gate.examples import ExampleSpec, write_example_tree
    from gate.formats.config import load_suite

    tree = write_example_tree(tmp_path / "cand", load_suite(), ExampleSpec(models=("qwen3",), runs=("1", "2", "3")))
    result = CliRunner().invoke(cli, ["history", "plot", str(tmp_path / "charts"), "--history", str(history_dir),
                                      "--candidate", str(tree)])
    assert result.exit_code == 0, result.output
    charts = sorted(p.name for p in (tmp_path / "charts").glob("*.svg"))
    assert charts == [f"qwen3-asr_en-{metric}.svg" for metric in ("corpus_wer", "latency_mean_s", "throughput_samples_per_s")]
    svg = ET.parse(tmp_path / "charts" / charts[2]).getroot()  # well-formed standalone SVG
    texts = [t.text or "" for t in svg.iter("{http://www.w3.org/2000/svg}text")]
    assert "throughput (samples/s)" in texts and "candidate runs" in texts
    assert any(t.startswith("2026-09-") for t in texts)  # x ticks are dates with the year
    night, commits = r"2026-09-\d\d", r"\(0{7}\.\.0{7}\)"  # the step's first night and its commit range
    assert any(re.match(rf"-[56]\.\d% from {night} {commits}", t) for t in texts), texts  # change point
    titles = [t.text or "" for t in svg.iter("{http://www.w3.org/2000/svg}title")]
    assert sum(t.startswith("candidate run: ") for t in titles) == 3


def test_import_stores_each_workloads_worst_verdict_from_the_report(tmp_path):
    from gate.examples import ExampleSpec, write_example_tree
    from gate.formats.config import load_suite

    tree = write_example_tree(tmp_path / "t", load_suite(), ExampleSpec(models=("qwen3",), runs=("1", "2", "3")))
    from dataclasses import replace

    from gate.formats.verdict import Verdict
    from gate.judging.compare import compare
    from gate.reading.side_loader import load_side

    side = load_side(tree, load_suite(), ("qwen3",))  # a real report (read by the typed report reader)
    judged = compare(side, side, load_suite(), models=("qwen3",))
    planted = {("qwen3/asr_en", "corpus_wer"): Verdict.WARN, ("qwen3/asr_en", "throughput_samples_per_s"): Verdict.FAIL}
    rows = tuple(replace(r, verdict=planted.get((r.workload, r.metric), Verdict.PASS)) for r in judged.rows)
    report = tmp_path / "report.json"
    report.write_text(json.dumps(replace(judged, rows=rows, verdict=Verdict.FAIL).to_json()))
    partial = tmp_path / "partial.json"  # rows alone are not a report: refused, not read loosely
    partial.write_text(json.dumps({"rows": [{"workload": "qwen3/asr_en", "metric": "rtf_mean", "verdict": "fail"}]}))
    refused = CliRunner().invoke(cli, ["history", "import", "--history", str(tmp_path / "h"), "--report", str(partial),
                                       "--time", "2026-11-03T02:00:00+00:00", str(tree)])
    assert refused.exit_code == 2 and f"{partial}: report " in refused.output
    assert "does not match the schema" in refused.output
    result = CliRunner().invoke(cli, ["history", "import", "--history", str(tmp_path / "h"), "--report", str(report),
                                      "--time", "2026-11-03T02:00:00+00:00", str(tree)])
    assert result.exit_code == 0, result.output
    lines = [json.loads(row) for row in (tmp_path / "h" / "default" / "2026-11.jsonl").read_text().splitlines()]
    assert {r["workload"]: r["verdict"] for r in lines} == {"qwen3/asr_en": "fail", "qwen3/asr_zh": "pass"}
    bad = CliRunner().invoke(cli, ["history", "import", "--history", str(tmp_path / "h"), "--time", "tonight", str(tree)])
    assert bad.exit_code == 2 and "--time 'tonight'" in bad.output


@pytest.mark.parametrize("broken", [b'{"schema_version": NaN}', b"\xef\xbb\xbf{}", b'{"a": "\x00"}',
                                    b"[" * 65 + b"]" * 65])
def test_import_names_the_file_that_made_a_workload_incomplete(tmp_path, broken):
    """Issue 38: a malformed result file was stored as complete: false without a word."""
    import shutil

    out = tmp_path / "nights"
    assert CliRunner().invoke(cli, ["history", "example-nights", str(out), "--nights", "2"]).exit_code == 0
    tree = next(out.glob("night-*"))
    target = next(p for p in sorted(tree.rglob("asr_en.json")) if "run2" in p.parts)
    target.write_bytes(broken)
    result = CliRunner().invoke(cli, ["history", "import", "--history", str(tmp_path / "h"), "--runner-class", "h100",
                                      str(tree)])
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.stderr.splitlines() if line.startswith("gate: warning: ")]
    assert any(str(target) in line and "stored as incomplete" in line for line in warnings), result.stderr
    shutil.rmtree(tmp_path / "h")
