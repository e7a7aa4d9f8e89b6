"""Rendering tests: escaping of hostile strings, the size cap, stable output, the schema, fan-in."""
from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import jinja2
import jsonschema
import numpy as np
import pytest

from gate.compare import compare
from gate.report import (COMMENT_MARKER, md, merge_reports, render_comment, render_summary, render_terminal)
from gate.stats.performance import Calibration

GOLDEN = Path(__file__).parent / "golden"
SCHEMA = json.loads((Path(__file__).parents[2] / "gate" / "schemas" / "report.schema.json").read_text(encoding="utf-8"))
HOSTILE = "</details><script>alert(1)</script> @octocat `x` | y [z](http://evil.example) <img src=x onerror=a> #12"
SPEED = ("throughput_samples_per_s", "latency_mean_s", "latency_p95_s", "rtf_mean")


@pytest.fixture(scope="module")
def report(suite, sides):
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
    base = sides.memory_side(suite, label="base", values=values,
                             samples={w: {"wer": (ids, ref, [habitual] * 3)} for w in values})
    cand = sides.memory_side(suite, label="cand", values=slow,
                             samples={"qwen3/asr_en": {"wer": (ids, ref, [cand_err] * 3)},
                                      "qwen3/asr_zh": {"wer": (ids, ref, [habitual] * 3)}})
    cal = {w: {m: Calibration(0.01, 40, 20) for m in SPEED} for w in values}
    return json.loads(json.dumps(compare(base, cand, suite, calibration=cal).to_dict()))


def _hostile(report: dict) -> dict:
    bad = copy.deepcopy(report)
    bad["sides"]["candidate"]["path"] = HOSTILE
    bad["sides"]["candidate"]["commit"] = HOSTILE
    bad["rows"][0]["note"] = HOSTILE
    bad["environment_diff"] = [{"kind": "freeze", "workload": None, "item": HOSTILE, "baseline": "1.0",
                                "candidate": HOSTILE, "known": True, "blocking": True}]
    bad["coverage"]["qwen3/asr_en"]["candidate"] = {"complete": False, "runs": 3, "expected_runs": 3,
                                                    "reasons": [HOSTILE]}
    bad["utterances"] = [{"workload": "qwen3/asr_en", "measure": "wer", "id": HOSTILE, "why": "new_catastrophic",
                          "ref_len": 5, "baseline_errors": 0, "candidate_errors": 40, "reference": HOSTILE,
                          "baseline_hypothesis": HOSTILE, "candidate_hypothesis": "\x1b[31m" + HOSTILE}]
    return bad


def test_report_validates_against_the_schema(report):
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    jsonschema.validate(report, SCHEMA)
    broken = dict(report, verdict="great")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, SCHEMA)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(dict(report, extra="x"), SCHEMA)


def test_comment_starts_with_the_marker_and_states_the_verdict(report):
    text = render_comment(report)
    assert text.startswith(COMMENT_MARKER.format(suite="asr") + "\n")
    assert "ASR regression gate: FAIL" in text
    assert "<details>" in text and text.count("<details>") == text.count("</details>")


def test_hostile_strings_are_neutralised(report):
    bad = _hostile(report)
    jsonschema.validate(bad, SCHEMA)  # hostile, yet schema-valid: only the escaping stands between it and GitHub
    for text in (render_comment(bad), render_summary(bad)):
        assert "<script" not in text and "<img" not in text
        assert text.count("<details>") == text.count("</details>")  # the data closed nothing
        assert "@octocat" not in text and "@\u200boctocat" in text
        assert "[z](http" not in text and "`x`" not in text and "://evil" not in text
        assert "#\u200b12" in text
        assert len(_tables(text)) >= 3
        for table in _tables(text):  # a pipe in data never adds a table column
            assert len({len(re.findall(r"(?<!\\)\|", line)) for line in table}) == 1, table
    terminal = render_terminal(bad)
    assert "\x1b" not in terminal


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
    assert md("line1\nline2") == "line1 line2"
    assert md(None) == "—"
    assert md("x" * 50, limit=10) == "x" * 9 + "…"


def test_comment_respects_the_size_cap_and_says_what_it_folded(report):
    big = copy.deepcopy(report)
    big["utterances"] = [dict(big["utterances"][0], id=f"u{i}", reference="词" * 1500, candidate_hypothesis="词" * 1500,
                              baseline_hypothesis="词" * 1500) for i in range(400)]
    text = render_comment(big)
    assert len(text.encode("utf-8")) <= 60_000
    assert text.startswith(COMMENT_MARKER.format(suite="asr"))
    assert "changed-utterance excerpts" in text and "left out" in text
    tiny = render_comment(big, max_chars=800)
    assert len(tiny.encode("utf-8")) <= 800 and tiny.startswith(COMMENT_MARKER.format(suite="asr"))
    assert "Cut to fit" in tiny


def test_rendering_is_stable_and_matches_the_golden_file(report):
    first = render_comment(report)
    assert render_comment(copy.deepcopy(report)) == first
    golden = GOLDEN / "comment_qwen3.md"
    assert first == golden.read_text(encoding="utf-8"), "templates changed: review and update tests/verdict/golden"
    assert render_terminal(report) == (GOLDEN / "terminal_qwen3.txt").read_text(encoding="utf-8")


def test_strict_undefined_fails_loudly(report):
    broken = copy.deepcopy(report)
    del broken["sides"]["baseline"]["commit"]
    with pytest.raises(jinja2.UndefinedError):
        render_comment(broken)


def test_merge_reports_fans_in(report, suite, sides):
    moss = "moss_td/googletime"
    speed = {"throughput_qps": [1.0] * 3, "latency_mean_s": [1.0] * 3, "latency_p95_s": [2.0] * 3,
             "rtf_mean": [0.1] * 3, "cer": [0.05] * 3, "cp_cer": [0.05] * 3}
    one = sides.memory_side(suite, values={moss: speed})
    other = json.loads(json.dumps(compare(one, one, suite).to_dict()))
    merged = merge_reports([report, other])
    jsonschema.validate(merged, SCHEMA)
    assert merged["verdict"] == "fail" and merged["models"] == ["qwen3", "moss_td"]
    assert len(merged["rows"]) == len(report["rows"]) + len(other["rows"])
    assert merged["counts"]["fail"] == report["counts"]["fail"]
    assert merged["statistics"]["merged_from"] == 2
    assert "moss\\_td" in render_comment(merged)
    with pytest.raises(ValueError):
        merge_reports([report, dict(other, suite="other")])
