"""What a reviewer sees first: only the rows that are not a pass, most severe first; coverage and the
environment stay visible; everything else folded. Reports are built by the real compare() on in-memory
sides, then edited as typed objects."""
from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from gate.cli import cli
from gate.formats.noise_model import Calibration
from gate.formats.report import Basis, CoverageProblem, CoverageSide, EnvDifference, Report, Utterance
from gate.formats.result_types import MISSING_RUN
from gate.formats.verdict import Verdict
from gate.judging.compare import compare
from gate.render.renderer import render_comment, render_summary, render_terminal

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "golden"
SPEED = ("throughput_samples_per_s", "latency_mean_s", "latency_p95_s", "rtf_mean")


@pytest.fixture(scope="module")
def report(suite, sides) -> Report:
    """qwen3: asr_en throughput 6% lower (a calibrated FAIL); everything else identical."""
    rng = np.random.default_rng(11)
    values = {w: sides.seedtts_values(rng) for w in ("qwen3/asr_en", "qwen3/asr_zh")}
    slow = {w: dict(v) for w, v in values.items()}
    slow["qwen3/asr_en"]["throughput_samples_per_s"] = [v * 0.94 for v in values["qwen3/asr_en"]["throughput_samples_per_s"]]
    base = sides.memory_side(suite, label="base", values=values)
    cand = sides.memory_side(suite, label="cand", values=slow)
    cal = {w: {m: Calibration(0.01, 40, 20) for m in SPEED} for w in values}
    return compare(base, cand, suite, calibration=cal)


def _visible(text: str) -> str:
    """The part of the comment above the first folded section."""
    return text.split("<details>", 1)[0]


def _changed_rows(text: str) -> list[str]:
    section = _visible(text).split("### What changed", 1)[1]
    return [line for line in section.splitlines() if line.startswith("| qwen3/")]


def _with_verdicts(report: Report, changes: dict[tuple[str, str], tuple[Verdict, tuple[str, ...]]]) -> Report:
    rows = tuple(replace(r, verdict=changes[(r.workload, r.metric)][0], notes=changes[(r.workload, r.metric)][1])
                 if (r.workload, r.metric) in changes else r for r in report.rows)
    return replace(report, rows=rows, verdict=Verdict.worst(r.verdict for r in rows))


def test_only_non_passing_rows_are_visible_most_severe_first(report, golden):
    edited = _with_verdicts(report, {
        ("qwen3/asr_zh", "latency_p95_s"): (Verdict.WARN, ("large change, weakly significant: rerun to confirm",)),
        ("qwen3/asr_zh", "rtf_mean"): (Verdict.INCOMPLETE, ("incomplete (candidate: no results)",))})
    changed = _changed_rows(render_comment(edited))
    verdicts = [re.search(r"(⛔ incomplete|❌ FAIL|⚠️ warn)", line).group(1) for line in changed]
    assert verdicts == ["❌ FAIL", "⚠️ warn"]  # tested rows, most severe first
    lead = _visible(render_comment(edited)).split("### What changed")[0]
    assert "⛔ Cannot judge" in lead and "rtf_mean" not in "".join(changed)  # untested: named, not tabled
    golden("comment_qwen3_most_severe_first.md", _visible(render_comment(edited)))
    assert "✅ pass" not in _visible(render_comment(edited))
    assert "rerun to confirm" in changed[-1]
    folded = render_comment(edited).split("<details><summary>All 10 checks", 1)[1].split("</details>", 1)[0]
    assert folded.count("✅ pass") == 7 and folded.count("| asr\\_") == 10


def test_the_why_says_how_each_row_was_tested_and_fits_a_narrow_page(report):
    line = next(row for row in _changed_rows(render_comment(report)) if "throughput" in row)
    row = next(r for r in report.rows if r.workload == "qwen3/asr_en" and r.metric == "throughput_samples_per_s")
    assert row.basis is Basis.CALIBRATED and row.method.startswith("log-scale t, run-to-run σ ")
    assert row.method.endswith(", df 88, one job") and "own runs" in row.method  # calibration + the A/B's own runs
    # plain words first (issue 39): the cause, the adjusted p that decided it against α, what to do (issue 49)
    assert "FAIL: slower beyond run-to-run noise: 6.0% slower ± 1.5%, Holm p &lt;0.0001 ≤ 0.005; if intended" in line
    assert line.count("|") == 5  # four columns: the why is never pushed off a 900 px page by numbers
    folded = render_comment(report).split("<summary>Statistics behind each reason</summary>", 1)[1].split("</details>")[0]
    stats = next(text for text in folded.splitlines() if "throughput" in text)
    assert row.method in stats and "Holm" in stats and "floor 2%" in stats


def test_all_passing_says_so_in_one_line(report, golden):
    quiet = _with_verdicts(report, {(r.workload, r.metric): (Verdict.PASS, ()) for r in report.rows})
    text = render_comment(quiet)
    assert "### What changed" not in text
    assert "✅ All 10 checks pass" in _visible(text)
    golden("comment_qwen3_all_pass_visible.md", _visible(text))
    assert "Why:" not in render_terminal(quiet) and "All 10 checks pass" in render_terminal(quiet)


def test_coverage_is_one_line_when_complete_and_names_what_is_missing_otherwise(report, golden):
    text = _visible(render_comment(report))
    assert "✅ Coverage complete" in text and "| qwen3/asr\\_" not in text.split("Coverage complete", 1)[1]
    short = CoverageSide(complete=False, runs_present=2, runs_complete=2, expected_runs=3,
                         reasons=(CoverageProblem(MISSING_RUN, "only 2 of 3 scored runs"),))
    broken = replace(report, coverage=tuple(replace(c, candidate=short) if c.workload == "qwen3/asr_zh" else c
                                            for c in report.coverage))
    text = _visible(render_comment(broken))
    assert "⛔ 2 of 3 runs, 1 missing" in text and "✅ Complete on both sides" in text
    golden("comment_qwen3_coverage_missing_visible.md", text)
    terminal = render_terminal(broken)
    assert "qwen3/asr_zh: baseline 3 runs" in terminal and "candidate 2 of 3 runs" in terminal
    golden("terminal_qwen3_coverage_missing.txt", terminal)


def test_an_environment_difference_is_visible(report, golden):
    assert "✅ Environment: no differences" in _visible(render_comment(report))
    diff = replace(report, environment_diff=(EnvDifference(kind="gpu", workload=None, item="gpu name",
                                                            baseline="NVIDIA H200", candidate="NVIDIA H100",
                                                            known=True, blocking=True),))
    for name, text in (("comment", render_comment(diff)), ("summary", render_summary(diff))):
        visible = _visible(text)
        assert "### 🚫 Not comparable" in visible and "NVIDIA H200 | NVIDIA H100 |" in visible
        assert "`--allow-diff gpu`" in visible  # the exact flag that would accept it
        assert "| gpu name | NVIDIA H200 |" in text.split("<details>", 1)[1]  # the full table, folded
        golden(f"{name}_qwen3_gpu_differs.md", text)
    terminal = render_terminal(diff)
    assert "gpu all gpu name:" in terminal and "NVIDIA H200 -> NVIDIA H100" in terminal
    golden("terminal_qwen3_gpu_differs.txt", terminal)


def test_terminal_shows_non_passing_rows_unless_all(report, golden):
    short, full = render_terminal(report), render_terminal(report, show_all=True)
    assert any(line.split()[:2] == ["qwen3/asr_en", "throughput_samples_per_s"] for line in short.splitlines())
    assert "qwen3/asr_zh" not in short.split("Why:")[0]
    golden("terminal_qwen3_fail.txt", short)
    assert "qwen3      1 FAIL, 9 pass" in short
    assert sum(1 for line in full.splitlines() if line.startswith("qwen3/")) == 10
    golden("terminal_qwen3_all.txt", full)


def test_compare_all_flag_prints_every_row(make_tree):
    base, cand = make_tree("base"), make_tree("aa1", seed=21)
    runner = CliRunner()
    short = runner.invoke(cli, ["compare", str(base), str(cand)], catch_exceptions=False)
    full = runner.invoke(cli, ["compare", str(base), str(cand), "--all"], catch_exceptions=False)
    assert short.exit_code == full.exit_code == 0
    assert "All 10 checks pass" in short.stdout and not re.search(r"^qwen3/asr_en +corpus_wer", short.stdout, re.M)
    assert len(re.findall(r"^qwen3/asr_(en|zh) ", full.stdout, re.M)) == 10


def test_long_excerpts_show_where_the_hypotheses_differ(report):
    reference = "甲" * 300 + "乙" * 290
    candidate = "甲" * 300 + "丙" + "乙" * 289
    utterance = Utterance(workload="qwen3/asr_en", measure="cer", id="session_01", why="worse", ref_len=590,
                          baseline_errors=0, candidate_errors=1, reference=reference, baseline_hypothesis=reference,
                          candidate_hypothesis=candidate)
    text = render_comment(replace(report, utterances=(utterance,)))
    line = next(line for line in text.splitlines() if line.startswith("  - candidate: "))
    assert line.startswith("  - candidate: …") and "**丙**" in line and line.endswith("…")
    reference_line = next(line for line in text.splitlines() if line.startswith("  - reference: "))
    assert reference_line.startswith("  - reference: …甲") and "丙" not in reference_line
    short = replace(utterance, reference="a b c", baseline_hypothesis="a b c", candidate_hypothesis="a x c")
    text = render_comment(replace(report, utterances=(short,)))
    assert "  - baseline: a ~~b~~ c\n" in text and "  - candidate: a **x** c\n" in text


def test_changed_words_are_marked_and_escaped(report, golden):
    hostile = Utterance(workload="qwen3/asr_en", measure="wer", id="u1", why="worse", ref_len=4, baseline_errors=0,
                        candidate_errors=2, reference="we met the team", baseline_hypothesis="we met the team",
                        candidate_hypothesis="we met @team <b>here</b>")
    text = render_comment(replace(report, utterances=(hostile,)))
    lines = [line for line in text.splitlines() if line.startswith("  - ")]
    candidate = next(line for line in lines if line.startswith("  - candidate: "))
    assert candidate.startswith("  - candidate: we met ") and "<b>" not in text
    assert " **@\u200bteam " in candidate and candidate.endswith(" &lt;b&gt;here&lt;/b&gt;**")  # mention defused
    baseline = next(line for line in lines if line.startswith("  - baseline: "))
    assert baseline.endswith(": we met ~~the team~~")
    golden("comment_utterance_hostile.md", "\n".join(lines) + "\n")


def _blind_report(suite, sides, sigma: float) -> Report:
    """qwen3 in one job without a calibration, no change; run-to-run σ `sigma`: at 5% its 3+3 runs cannot see 2%."""
    rng = np.random.default_rng(21)
    workloads = ("qwen3/asr_en", "qwen3/asr_zh")
    base = sides.memory_side(suite, values={w: sides.seedtts_values(rng, sigma=sigma) for w in workloads})
    cand = sides.memory_side(suite, values={w: sides.seedtts_values(rng, sigma=sigma) for w in workloads}, label="cand")
    return compare(base, cand, suite, cross_job=False, calibration={})


def test_a_pass_on_blind_rows_is_a_pass_with_a_caveat(suite, sides):
    """Issue 21: a model whose gated rows could not have seen a change at their floor does not get a clean
    PASS: the headline says which checks are blind and below what, and the model's counts say how many."""
    blind = _blind_report(suite, sides, 0.05)
    blind_rows = [r for r in blind.rows if r.blind and r.family is not None]
    assert blind.verdict is Verdict.PASS and blind_rows
    comment, terminal = render_comment(blind), render_terminal(blind)
    assert "A pass with a caveat" in comment
    assert f"({len(blind_rows)} blind)" in comment
    assert f"({len(blind_rows)} blind: a pass with a caveat)" in terminal
    first = blind_rows[0]
    assert f"(blind below {first.mde * 100:.2g}%)" in comment or f"(blind below {first.mde * 100:.2g} pp)" in comment
    clean = _blind_report(suite, sides, 0.001)
    assert clean.verdict is Verdict.PASS and not any(r.blind for r in clean.rows)
    assert "caveat" not in render_comment(clean) and "blind" not in render_terminal(clean)
