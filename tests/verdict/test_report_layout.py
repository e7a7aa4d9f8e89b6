"""What a reviewer sees first: only the rows that are not a pass, most severe first; coverage and the
environment stay visible; everything else folded. Reports are built by the real compare() and then
edited as dicts (rendering works from the dict alone, as in the trusted workflow)."""
from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from gate.cli import cli
from gate.compare import compare
from gate.report import render_comment, render_summary, render_terminal
from gate.stats.performance import Calibration

GOLDEN = Path(__file__).parent / "golden"
SPEED = ("throughput_samples_per_s", "latency_mean_s", "latency_p95_s", "rtf_mean")


@pytest.fixture(scope="module")
def report(suite, sides):
    """qwen3: asr_en throughput 6% lower (a calibrated FAIL); everything else identical."""
    rng = np.random.default_rng(11)
    values = {w: sides.seedtts_values(rng) for w in ("qwen3/asr_en", "qwen3/asr_zh")}
    slow = {w: dict(v) for w, v in values.items()}
    slow["qwen3/asr_en"]["throughput_samples_per_s"] = [v * 0.94 for v in values["qwen3/asr_en"]["throughput_samples_per_s"]]
    base = sides.memory_side(suite, label="base", values=values)
    cand = sides.memory_side(suite, label="cand", values=slow)
    cal = {w: {m: Calibration(0.01, 40, 20) for m in SPEED} for w in values}
    return json.loads(json.dumps(compare(base, cand, suite, calibration=cal).to_dict()))


def _visible(text: str) -> str:
    """The part of the comment above the first folded section."""
    return text.split("<details>", 1)[0]


def _changed_rows(text: str) -> list[str]:
    section = _visible(text).split("### What changed", 1)[1]
    return [line for line in section.splitlines() if line.startswith("| qwen3/")]


def test_only_non_passing_rows_are_visible_most_severe_first(report):
    edited = copy.deepcopy(report)
    rows = {(r["workload"], r["metric"]): r for r in edited["rows"]}
    rows[("qwen3/asr_zh", "latency_p95_s")].update(verdict="warn", note="large change, not significant: rerun to confirm")
    rows[("qwen3/asr_zh", "rtf_mean")].update(verdict="incomplete", note="incomplete (candidate: no results)")
    edited["verdict"] = "incomplete"
    text = render_comment(edited)
    changed = _changed_rows(text)
    verdicts = [re.search(r"(⛔ incomplete|❌ FAIL|⚠️ warn)", line).group(1) for line in changed]
    # incomplete > not comparable > fail > warn, as the overall verdict ranks them
    assert verdicts == ["⛔ incomplete", "❌ FAIL", "⚠️ warn"]
    assert "✅ pass" not in _visible(text)
    assert "rerun to confirm" in changed[-1] and "not tested: incomplete coverage" in changed[0]
    # every row, passes included, is still there, folded
    folded = text.split("<details><summary>All 10 checks", 1)[1].split("</details>", 1)[0]
    assert folded.count("✅ pass") == 7 and folded.count("| asr\\_") == 10


def test_the_why_column_says_how_each_row_was_tested(report):
    line = next(row for row in _changed_rows(render_comment(report)) if "throughput" in row)
    assert "log-scale t, σ=1.00% pooled over the model's workloads (df 80)" in line and "Holm" in line and "floor 2%" in line
    uncalibrated = copy.deepcopy(report)
    for row in uncalibrated["rows"]:
        if row["verdict"] == "fail":
            row.update(method="uncalibrated: maintainers' ratio policy (>= 0.97×)", p_value=None, p_adjusted=None)
    line = _changed_rows(render_comment(uncalibrated))[0]
    assert "uncalibrated: maintainers' ratio policy (&gt;= 0.97×)" in line and "Holm" not in line


def test_all_passing_says_so_in_one_line(report):
    quiet = copy.deepcopy(report)
    for row in quiet["rows"]:
        row["verdict"] = "pass"
    quiet.update(verdict="pass", exit_code=0, counts={**quiet["counts"], "fail": 0, "pass": 10})
    text = render_comment(quiet)
    assert "### What changed" not in text
    assert "✅ All 10 checks pass: nothing is worse beyond noise." in _visible(text)
    assert "Why:" not in render_terminal(quiet) and "All 10 checks pass" in render_terminal(quiet)


def test_coverage_is_one_line_when_complete_and_names_what_is_missing_otherwise(report):
    text = _visible(render_comment(report))
    assert "**Coverage:** ✅ both workloads complete on both sides" in text and "qwen3 (asr\\_en, asr\\_zh)" in text
    broken = copy.deepcopy(report)
    broken["coverage"]["qwen3/asr_zh"]["candidate"] = {"complete": False, "runs": 2, "expected_runs": 3,
                                                       "reasons": ["run2: missing_file: qwen3/asr_zh.json"]}
    text = _visible(render_comment(broken))
    assert "### Coverage" in text and "| ⛔ qwen3/asr\\_zh | ✅ 3/3 runs complete | ⛔ 2/3 runs: run2: missing\\_file" in text
    assert "✅ Complete on both sides: qwen3 (asr\\_en)" in text
    terminal = render_terminal(broken)
    assert "qwen3/asr_zh: baseline complete; candidate run2: missing_file: qwen3/asr_zh.json" in terminal


def test_an_environment_difference_is_visible(report):
    assert "**Environment:** ✅ no differences" in _visible(render_comment(report))
    diff = copy.deepcopy(report)
    diff["environment_diff"] = [{"kind": "gpu", "workload": None, "item": "GPU name", "baseline": "NVIDIA H200",
                                 "candidate": "NVIDIA H100", "known": True, "blocking": True}]
    for text in (render_comment(diff), render_summary(diff)):
        visible = _visible(text)
        assert "### Environment" in visible and "| gpu | all | GPU name | NVIDIA H200 | NVIDIA H100 | yes |" in visible
    assert "gpu all GPU name: NVIDIA H200 -> NVIDIA H100" in render_terminal(diff)


def test_terminal_shows_non_passing_rows_unless_all(report):
    short, full = render_terminal(report), render_terminal(report, show_all=True)
    assert "qwen3/asr_en  throughput_samples_per_s" in short and "qwen3/asr_zh" not in short.split("Why:")[0]
    assert "qwen3      1 FAIL, 9 pass" in short
    assert sum(1 for line in full.splitlines() if line.startswith("qwen3/")) == 10
    assert full == (GOLDEN / "terminal_qwen3_all.txt").read_text(encoding="utf-8"), \
        "templates changed: review and update tests/verdict/golden"


def test_compare_all_flag_prints_every_row(make_tree):
    base, cand = make_tree("base"), make_tree("aa1", seed=21)
    runner = CliRunner()
    short = runner.invoke(cli, ["compare", str(base), str(cand)], catch_exceptions=False)
    full = runner.invoke(cli, ["compare", str(base), str(cand), "--all"], catch_exceptions=False)
    assert short.exit_code == full.exit_code == 0
    assert "All 10 checks pass" in short.stdout and not re.search(r"^qwen3/asr_en +corpus_wer", short.stdout, re.M)
    assert len(re.findall(r"^qwen3/asr_(en|zh) ", full.stdout, re.M)) == 10


def test_long_excerpts_show_where_the_hypotheses_differ(report):
    long = copy.deepcopy(report)
    reference = "甲" * 500 + "乙" * 300
    candidate = "甲" * 500 + "丙" + "乙" * 299
    long["utterances"] = [{"workload": "qwen3/asr_en", "measure": "cer", "id": "session_01", "why": "worse",
                           "ref_len": 800, "baseline_errors": 0, "candidate_errors": 1, "reference": reference,
                           "baseline_hypothesis": reference, "candidate_hypothesis": candidate}]
    text = render_comment(long)
    line = next(line for line in text.splitlines() if line.startswith("  - candidate: "))
    assert line.startswith("  - candidate: …") and "丙" in line and line.endswith("…")
    reference_line = next(line for line in text.splitlines() if line.startswith("  - reference: "))
    assert reference_line.startswith("  - reference: …甲") and "丙" not in reference_line
    short = copy.deepcopy(long)
    short["utterances"][0].update(reference="a b c", baseline_hypothesis="a b c", candidate_hypothesis="a x c")
    assert "  - candidate: a x c\n" in render_comment(short)
