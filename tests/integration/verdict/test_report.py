"""The report model and its renderers: typed facts (never prose), the generated schema, escaping of
hostile strings, per-output budgets, stable output, fan-in. Reports come from the real compare() on
in-memory sides and are edited as typed objects (dataclasses.replace)."""
from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import jsonschema
import numpy as np
import pytest

from gate.formats.github_limits import CUT_NOTE, Limit
from gate.formats.noise_model import Calibration
from gate.formats.report import (
    NO_REPORT,
    Basis,
    CiRetry,
    CoverageProblem,
    CoverageSide,
    EnvDifference,
    Report,
    Utterance,
    report_schema,
)
from gate.formats.result_types import EVALUATED_NE_TOTAL, MISSING_RUN, Problem
from gate.formats.verdict import Verdict
from gate.judging.compare import compare
from gate.publish.actions_io import row_annotations
from gate.publish.publication import verdict_title as check_title
from gate.render.cells import metric_name
from gate.render.escape import md
from gate.render.renderer import (
    COMMENT_MARKER,
    render_comment,
    render_summary,
    render_terminal,
)

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "golden"
SCHEMA_FILE = Path(__file__).parents[3] / "gate" / "schemas" / "report.schema.json"
HOSTILE = ("</details><script>alert(1)</script> @octocat `x` | y [z](http://evil.example) <img src=x onerror=a> "
           "#12 GH-34 $$x^2$$")
SPEED = ("throughput_samples_per_s", "latency_mean_s", "latency_p95_s", "rtf_mean")


@pytest.fixture(scope="module")
def report(suite, sides) -> Report:
    """A deterministic report: qwen3, per-utterance data, one regression, calibrated speed."""
    rng = np.random.default_rng(3)
    ids = [f"utt{i:04d}" for i in range(300)]
    ref = rng.integers(5, 20, size=300)
    habitual = np.where(rng.random(300) < 0.85, 0, rng.integers(1, 4, size=300))
    cand_err = habitual.copy()
    cand_err[:25] += 1
    values = {w: sides.seedtts_values(rng, wer=habitual.sum() / ref.sum()) for w in ("qwen3/asr_en", "qwen3/asr_zh")}
    slow = {w: dict(v) for w, v in values.items()}
    slow["qwen3/asr_en"]["corpus_wer"] = [cand_err.sum() / ref.sum()] * 3
    slow["qwen3/asr_en"]["throughput_samples_per_s"] = [v * 0.94 for v in values["qwen3/asr_en"]["throughput_samples_per_s"]]
    slow["qwen3/asr_zh"]["throughput_samples_per_s"] = [v * 1.10 for v in values["qwen3/asr_zh"]["throughput_samples_per_s"]]
    base = sides.memory_side(suite, label="base", values=values,
                             samples={w: {"wer": (ids, ref, [habitual] * 3)} for w in values})
    cand = sides.memory_side(suite, label="cand", values=slow,
                             samples={"qwen3/asr_en": {"wer": (ids, ref, [cand_err] * 3)},
                                      "qwen3/asr_zh": {"wer": (ids, ref, [habitual] * 3)}})
    cal = {w: {m: Calibration(0.01, 40, 20) for m in SPEED} for w in values}
    return compare(base, cand, suite, calibration=cal)


def _row(report: Report, workload: str, metric: str):
    return next(r for r in report.rows if r.workload == workload and r.metric == metric)


def _hostile(report: Report) -> Report:
    hostile = CoverageProblem(EVALUATED_NE_TOTAL, HOSTILE, HOSTILE, "run1")
    bad_cov = CoverageSide(complete=False, runs_present=3, runs_complete=2, expected_runs=3, reasons=(hostile,))
    coverage = tuple(replace(c, candidate=bad_cov) if c.workload == "qwen3/asr_en" else c for c in report.coverage)
    utterance = Utterance(workload="qwen3/asr_en", measure="wer", id=HOSTILE, why="new_catastrophic", ref_len=5,
                          baseline_errors=0, candidate_errors=4, reference=HOSTILE, baseline_hypothesis=HOSTILE,
                          candidate_hypothesis="\x1b[31m" + HOSTILE)
    rows = (replace(report.rows[0], notes=(HOSTILE,), workload=HOSTILE[:200]),) + report.rows[1:]
    retry = CiRetry("\x1b[31m" + HOSTILE[:190], "run1", HOSTILE[:40], (HOSTILE[-40:],))
    return replace(report, candidate=replace(report.candidate, name=HOSTILE, commit=HOSTILE[:200], retried=(retry,)),
                   rows=rows,
                   coverage=coverage, utterances=(utterance,),
                   environment_diff=(EnvDifference(kind="freeze", workload=None, item=HOSTILE[:200], baseline="1.0",
                                                   candidate=HOSTILE, known=True, blocking=True),))


# --- the model ---------------------------------------------------------------------------------------

def test_json_round_trip_and_the_shipped_schema_is_the_generated_one(report):
    data = json.loads(json.dumps(report.to_json()))
    assert Report.from_json(data) == report
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    assert schema == report_schema(), "run: python -m gate.formats.report > gate/schemas/report.schema.json"
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(data, schema)
    for broken in (dict(data, verdict="great"), dict(data, extra="x"),
                   dict(data, rows=[dict(data["rows"][0], improved="yes")] + data["rows"][1:])):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(broken, schema)


def test_rows_carry_facts_the_regression_and_the_improvement(report):
    fail = _row(report, "qwen3/asr_en", "throughput_samples_per_s")
    assert fail.verdict is Verdict.FAIL and fail.basis is Basis.CALIBRATED and not fail.improved
    better = _row(report, "qwen3/asr_zh", "throughput_samples_per_s")
    assert better.verdict is Verdict.PASS and better.improved and better.ci[0] > 1
    noise = _row(report, "qwen3/asr_zh", "latency_p95_s")
    assert not noise.improved  # unchanged: nothing to report
    assert _row(report, "qwen3/asr_zh", "corpus_wer").basis is Basis.IDENTICAL


def test_no_consumer_parses_prose(report):
    """Misleading notes change nothing that is counted, shown as an icon or sent to GitHub."""
    lying = tuple(replace(r, notes=("unchanged: improved by 99% (not really)",)) if not r.improved
                  else replace(r, notes=("regressed badly (not really)",)) for r in report.rows)
    edited = replace(report, rows=lying)
    for r in (report, edited):
        assert sum(1 for row in r.rows if row.improved) == 1
        [better] = [row for row in r.rows if row.improved]
        assert (better.workload, better.metric) == ("qwen3/asr_zh", "throughput_samples_per_s")
        assert f"**Improved:** {md(better.workload)} {metric_name(better.metric)} +" in render_comment(r)  # from row.improved
        assert "1 improved" in render_terminal(r)
        assert check_title(r).startswith("FAIL: ")
        assert r.verdict.check_conclusion == "failure"
        assert [a.level for a in row_annotations(r.rows)] == ["error", "error"]


def test_each_verdict_is_defined_once():
    assert [v.value for v in Verdict.by_severity()] == ["incomplete", "not_comparable", "fail", "warn", "pass"]
    assert {v: v.check_conclusion for v in Verdict}[Verdict.WARN] == "neutral"
    assert Verdict.PASS.blocks is False and Verdict.INCOMPLETE.blocks is True


def test_merge_is_the_one_fan_in(report, suite, sides):
    moss = "moss_td/googletime"
    speed = {"throughput_qps": [1.0] * 3, "latency_mean_s": [1.0] * 3, "latency_p95_s": [2.0] * 3,
             "rtf_mean": [0.1] * 3, "cer": [0.05] * 3, "cp_cer": [0.05] * 3}
    one = sides.memory_side(suite, values={moss: speed})
    other = compare(one, one, suite)
    merged = Report.merge([report, other])
    jsonschema.validate(merged.to_json(), report_schema())
    assert merged.verdict is Verdict.FAIL and merged.models == ("qwen3", "moss_td")
    assert len(merged.rows) == len(report.rows) + len(other.rows)
    assert merged.counts[Verdict.FAIL] == report.counts[Verdict.FAIL] and merged.statistics.merged_from == 2
    assert "moss\\_td" in render_comment(merged)
    lost = Report.merge([other], expected_models=("moss_td", "qwen3"), missing_workloads={"qwen3": ("qwen3/asr_en",)})
    assert lost.verdict is Verdict.INCOMPLETE and any(not c.complete for c in lost.coverage)
    assert {p.code for c in lost.coverage for p in c.candidate.reasons} == {NO_REPORT}
    with pytest.raises(ValueError):
        Report.merge([report, replace(other, suite="other")])


# --- rendering ----------------------------------------------------------------------------------------

def test_comment_starts_with_the_marker_and_states_the_verdict(report):
    text = render_comment(report)
    assert text.startswith(COMMENT_MARKER.format(suite="asr") + "\n")
    assert "ASR regression gate: FAIL" in text
    assert "<details>" in text and text.count("<details>") == text.count("</details>")


def test_hostile_strings_are_neutralised(report):
    bad = _hostile(report)
    jsonschema.validate(bad.to_json(), report_schema())  # hostile, yet schema-valid: only escaping stands in between
    for text in (render_comment(bad), render_summary(bad)):
        assert "<script" not in text and "<img" not in text
        assert text.count("<details>") == text.count("</details>")  # the data closed nothing
        assert "@octocat" not in text and "@\u200boctocat" in text
        assert "[z](http" not in text and "`x`" not in text and "://evil" not in text
        assert "#\u200b12" in text and "GH-\u200b34" in text and "$$" not in text
        assert len(_tables(text)) >= 3
        for table in _tables(text):  # a pipe in data never adds a table column
            assert len({len(re.findall(r"(?<!\\)\|", line)) for line in table}) == 1, table
    assert "\x1b" not in render_terminal(bad)


def test_a_ci_retry_is_one_header_line_kept_before_the_rows(report):
    """A failed earlier CI attempt (issue 51) is said once, above the rows: a size cut drops rows first."""
    retry = CiRetry("qwen3/asr_en", "run1", "pytest-3", ("pytest-1", "pytest-2"))
    retried = replace(report, candidate=replace(report.candidate, retried=(retry,)))
    assert "pytest-" not in render_comment(report) + render_terminal(report)
    tiny = render_comment(retried, budget=Limit(1000, "characters"))
    assert len(tiny) <= 1000 and tiny.endswith(CUT_NOTE)
    for text in (render_comment(retried), render_summary(retried), render_terminal(retried), tiny):
        assert text.count("pytest-1, pytest-2") == 1


def _tables(text: str) -> list[list[str]]:
    tables, current = [], []
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            current.append(line)
        elif current:
            tables.append(current)
            current = []
    return tables


def test_md_escapes_each_dangerous_character():
    assert md("a|b") == "a\\|b"
    assert md("`code`") == "\\`code\\`"
    assert md("<b>&") == "&lt;b&gt;&amp;"
    assert md("$x$") == "&#36;x&#36;"
    assert md("line1\nline2") == "line1 line2"
    assert md(None) == "—"
    assert md("x" * 50, limit=10) == "x" * 9 + "…"


def test_changed_utterances_of_passing_workloads_stay_in_the_json_only(report):
    passing = tuple(replace(u, workload="qwen3/asr_zh", id=f"p{i}") for i, u in enumerate(report.utterances[:3]))
    both = replace(report, utterances=report.utterances + passing)
    assert both.to_json()["utterances"][-1]["id"] == "p2"
    for text in (render_comment(both), render_summary(both), render_terminal(both, show_all=False)):
        assert "p0" not in text and "qwen3/asr\\_zh** · p" not in text


def test_partial_data_is_labelled_truthfully(suite, sides):
    """One run with 2010 of 2020 samples; another workload missing a run: means over the complete runs."""
    rng = np.random.default_rng(5)
    values = {w: sides.seedtts_values(rng) for w in ("qwen3/asr_en", "qwen3/asr_zh")}
    base = sides.memory_side(suite, label="base", values=values)
    cand = sides.memory_side(suite, label="cand", values=values)
    zh = cand.workloads["qwen3/asr_zh"]
    short_run = replace(zh, complete=False, run_complete=(False, True, True), expected_runs=3,
                        problems=(Problem(EVALUATED_NE_TOTAL, "evaluated 2010 of 2020", run="run1"),), evaluated=(2010, 2020, 2020))
    en = cand.workloads["qwen3/asr_en"]
    missing = replace(en, runs=en.runs[1:], values={m: v[1:] for m, v in en.values.items()}, complete=False,
                      run_complete=(True, True), expected_runs=3, problems=(Problem(MISSING_RUN, "only 2 of 3 scored runs"),),
                      evaluated=en.evaluated[1:])
    cand = replace(cand, workloads={"qwen3/asr_zh": short_run, "qwen3/asr_en": missing})
    result = compare(base, cand, suite)
    assert result.verdict is Verdict.INCOMPLETE
    zh_row = _row(result, "qwen3/asr_zh", "throughput_samples_per_s")
    assert zh_row.candidate.n_used == 2 and zh_row.candidate.partial and not zh_row.baseline.partial
    assert zh_row.candidate.mean == pytest.approx(np.mean(values["qwen3/asr_zh"]["throughput_samples_per_s"][1:]))
    text = render_comment(result)
    assert "(2 of 3 runs × 2020)" in text and "3 runs, 1 incomplete" in text and "2 of 3 runs, 1 missing" in text
    assert "partial" not in text.split("### ⛔ Coverage")[0]
    assert text.index("### ⛔ Coverage") < text.index("<details>")
    assert "### What changed" not in text  # nothing was tested: the coverage table is the explanation
    zh = next(c for c in result.coverage if c.workload == "qwen3/asr_zh")
    assert zh.candidate.reasons == (CoverageProblem(EVALUATED_NE_TOTAL, "evaluated 2010 of 2020", run="run1"),)
    assert Report.from_json(json.loads(json.dumps(result.to_json()))) == result  # problems stay typed in report.json
    assert "run1: evaluated 2010 of 2020" in text and "evaluated_ne_total" not in text


def test_no_local_paths_are_rendered(report):
    located = replace(report, baseline=replace(report.baseline, name="baseline.json"))
    for text in (render_comment(located), render_terminal(located)):
        assert "/work/" not in text and "/tmp/" not in text


def test_rendering_is_stable_and_matches_the_golden_file(report, golden):
    first = render_comment(report)
    assert render_comment(Report.from_json(json.loads(json.dumps(report.to_json())))) == first
    golden("comment_qwen3.md", first)
    golden("terminal_qwen3.txt", render_terminal(report))
