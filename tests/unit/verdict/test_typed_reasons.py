"""Issue 49: why a row cannot FAIL and what made it WARN are codes on the Row, worded once (gate.render.reasons); the
first visible line of a non-PASS row names its real cause and the number that decided it; no code reads a note."""
from __future__ import annotations

import importlib.util
import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from gate.formats.reasons import UNSTABLE, CannotFail, ExtendCause, WarnCause
from gate.formats.report import Basis, CiKind, Direction, Family, NextStep, Report, Row, RowKind, SideStats
from gate.formats.verdict import Verdict
from gate.judging.compare import statistics_of
from gate.render.cells import fmt_pcol
from gate.render.escape import md
from gate.render.reasons import CANNOT_FAIL, EXTEND_CAUSE, NEXT_STEP, accept_line, cause_line, extend_line, next_step, pass_line
from gate.stats.thresholds import Thresholds

ROOT = Path(__file__).resolve().parents[3]
STATS = statistics_of(Thresholds(), (), 0)


def _architecture():
    spec = importlib.util.spec_from_file_location("architecture", ROOT / "scripts" / "architecture.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _side(values: tuple[float, ...]) -> SideStats:
    return SideStats.of(values, (True,) * len(values), len(values), 1088)


def _speed(**changes) -> Row:
    """A throughput row 6.0% slower, ± 1.5%, as compare writes one (the fields the words read)."""
    row = Row(workload="qwen3/asr_en", model="qwen3", metric="throughput_samples_per_s", kind=RowKind.SPEED,
              unit="samples/s", direction=Direction.HIGHER, baseline=_side((100.0, 101.0, 99.0)),
              candidate=_side((94.0, 94.9, 93.1)), verdict=Verdict.PASS, basis=Basis.CALIBRATED,
              family=Family.SPEED, delta_rel=-0.06, worse_rel=0.0638, p_value=0.0012, p_adjusted=0.0048,
              q_value=0.0072, ci=(0.925, 0.955), ci_kind=CiKind.RATIO, floor_rel=0.02, sigma=0.02, df=8,
              method="log-scale t")
    return replace(row, **changes)


def _wer(**changes) -> Row:
    row = Row(workload="qwen3/asr_en", model="qwen3", metric="corpus_wer", kind=RowKind.ACCURACY, unit="fraction",
              direction=Direction.LOWER, baseline=_side((0.0249,) * 3), candidate=_side((0.0252,) * 3),
              verdict=Verdict.PASS, basis=Basis.PAIRED, family=Family.QUALITY, delta_abs=0.0003, p_value=0.5,
              p_adjusted=1.0, q_value=0.5, ci=(-0.0004, 0.0010), ci_kind=CiKind.DELTA_ABS, floor_abs=0.001,
              floor_rel=0.03, method="paired exact sign-flip over 300 utterances")
    return replace(row, **changes)


def test_a_newly_catastrophic_utterance_is_the_visible_cause_not_the_whole_set_s_p():
    """The traced pr_hallucinate row: qwen3/asr_en WER WARNs only for one newly catastrophic utterance; its line
    opened "more errors than transcript churn explains … p 0.500", which the whole set's p contradicts."""
    line = cause_line(_wer(verdict=Verdict.WARN, warn_cause=WarnCause.NEW_CATASTROPHIC, new_catastrophic=1), STATS)
    head, whole, step = line.split("; ")
    assert head.startswith("1 newly catastrophic utterance: ") and "every candidate run" in head
    assert whole == "the whole set: +0.030 pp ± 0.070 pp, p 0.500" and step.startswith("next: read that")
    assert "beyond" not in line


def test_an_unstable_row_opens_with_its_instability():
    """The traced p95 row WARNed because its runs were unstable, which its visible line hid in a fold."""
    row = _speed(metric="latency_p95_s", direction=Direction.LOWER, delta_rel=0.05, worse_rel=0.05, p_value=0.016,
                 verdict=Verdict.WARN, warn_cause=WarnCause.UNSTABLE, unstable=True,
                 cannot_fail=(CannotFail.WORSE_RUNS_SET_ASIDE,), next_step=NextStep.MORE_RUNS)
    cause, size, step = cause_line(row, STATS).split("; ")[:3]
    assert cause == "unstable runs: " + CANNOT_FAIL[CannotFail.WORSE_RUNS_SET_ASIDE]
    assert (size, step[:18]) == ("5.0% slower ± 1.5%, p 0.016", "next: re-measure (")
    assert "WARN at most" not in cause_line(row, STATS)  # the instability is the cause, said once


def test_a_pass_on_q_above_the_warn_level_shows_its_q():
    """The traced −6.0% throughput row passes because q 0.0072 > 0.005; the q is shown beside its p."""
    row = _speed()
    assert fmt_pcol(row) == "0.0012 (adj 0.0048, q 0.0072)"
    words, size, q = pass_line(row, STATS).partition(": ")[0], *pass_line(row, STATS).split(": ")[1].split(", ")
    assert (words, size, q) == ("within run-to-run noise", "6.0% slower ± 1.5%", "BH q 0.0072 > 0.005")


def test_a_warn_says_why_it_is_no_fail_and_what_decides_it():
    across = cause_line(_speed(verdict=Verdict.WARN, warn_cause=WarnCause.BEYOND_NOISE, q_value=0.001,
                               cannot_fail=(CannotFail.ACROSS_JOBS,), next_step=NextStep.AB_RUN), STATS)
    head, blocked, step = across.split("; ", 2)
    assert head.endswith(": 6.0% slower ± 1.5%, BH q 0.0010 ≤ 0.005") and head.startswith("possibly slower")
    assert blocked == "can WARN at most: " + CANNOT_FAIL[CannotFail.ACROSS_JOBS]
    assert step == "next: " + NEXT_STEP[NextStep.AB_RUN]
    short = cause_line(_speed(verdict=Verdict.WARN, warn_cause=WarnCause.BEYOND_NOISE, q_value=0.004,
                              p_adjusted=0.008), STATS)
    assert short.split("; ")[1:3] == ["no FAIL: Holm p 0.0080 > 0.005", "next: " + next_step(NextStep.MORE_RUNS, 3)]


def test_a_fail_shows_its_adjusted_p_and_how_to_accept_it():
    line = cause_line(_speed(verdict=Verdict.FAIL, p_adjusted=0.0001), STATS)
    head, step = line.split("; ")
    assert head.split(": ") == ["slower beyond run-to-run noise", "6.0% slower ± 1.5%, Holm p 0.0001 ≤ 0.005"]
    assert step.startswith("if intended, accept it")
    accept = accept_line(["qwen3"])
    assert "`/asr-gate accept qwen3 <reason>`" in accept and "`asr-gate-accept`" in accept
    assert "label again to re-measure" in accept and accept_line([]) == ""


def test_every_code_has_words_and_no_reason_text_escapes_badly():
    """One table words every code; md() of every reason line leaves no backslash a reader would see (a backslash
    before a digit or letter is no escape: "warn: \\5.8% slower")."""
    assert set(CANNOT_FAIL) == set(CannotFail) and set(NEXT_STEP) | {NextStep.MORE_RUNS} == set(NextStep)
    assert set(EXTEND_CAUSE) == set(ExtendCause) and extend_line(()) == ""
    lines = [*CANNOT_FAIL.values(), *NEXT_STEP.values(), next_step(NextStep.MORE_RUNS, 3), accept_line(["qwen3"]),
             extend_line(tuple(ExtendCause))]
    for cause in WarnCause:
        for code in CannotFail:
            for row in (_speed(verdict=Verdict.WARN, warn_cause=cause, cannot_fail=(code,)),
                        _wer(verdict=Verdict.WARN, warn_cause=cause, cannot_fail=(code,), new_catastrophic=2)):
                lines.append(cause_line(row, STATS))
    lines.append(cause_line(_speed(verdict=Verdict.WARN, basis=Basis.UNCALIBRATED, warn_cause=WarnCause.OVER_FLOOR,
                                   tolerance=0.05, delta_rel=-0.058, ci=None, p_value=None), STATS))
    assert lines[-1].startswith("5.8% slower by the ratio of means")
    for text in lines:
        assert not re.search(r"\\[0-9A-Za-z]", md(text)), md(text)
    assert md("5.8% slower") == "5.8% slower" and md("1. item") == "1\\. item"


def test_unstable_codes_are_a_subset_named_once():
    assert set(UNSTABLE) < set(CannotFail)


def test_reasons_round_trip_and_older_reports_read_them_as_not_said():
    folder = ROOT / "tests" / "fixtures" / "formats" / "report"
    old = Report.from_json(json.loads((folder / "2026-12-04-e54a742-compare-v4.json").read_text(encoding="utf-8")))
    assert old.rows and all(r.cannot_fail == () and r.warn_cause is None and r.differs == () for r in old.rows)
    coded = replace(old, rows=tuple(replace(r, cannot_fail=(CannotFail.ACROSS_JOBS, CannotFail.FEW_CROSS_PAIRS),
                                            warn_cause=WarnCause.BEYOND_NOISE) for r in old.rows))
    again = Report.from_json(json.loads(json.dumps(coded.to_json())))
    assert again.rows[0].cannot_fail == (CannotFail.ACROSS_JOBS, CannotFail.FEW_CROSS_PAIRS)
    assert again.rows[0].warn_cause is WarnCause.BEYOND_NOISE
    bad = coded.to_json()
    bad["rows"][0]["cannot_fail"] = ["a reason in words"]
    with pytest.raises(Exception, match="cannot_fail"):
        Report.from_json(bad)


@pytest.mark.parametrize("source", [
    "def f(row):\n    return [n for n in row.notes if n.startswith('can WARN')]\n",
    "def f(row):\n    return any('blind' in note for note in row.notes)\n",
    "def f(row):\n    row.notes[0] = row.notes[0].removeprefix('x')\n",
    "def f(row):\n    return 'x' in '; '.join(row.notes)\n",
    "def f(draft):\n    for note in draft.notes:\n        if note.endswith('.'):\n            return note\n",
])
def test_the_architecture_check_finds_a_note_read_by_its_text(source):
    assert _architecture().note_text_tests(source) != []


def test_the_architecture_check_finds_a_function_above_complexity_25():
    branches = "".join(f"    if x == {k}:\n        y += {k}\n" for k in range(30))
    source = f"def simple(x):\n    return x\n\n\ndef branchy(x):\n    y = 0\n{branches}    return y\n"
    assert _architecture().too_complex(source) == [("branchy", 31)]


def test_the_architecture_check_leaves_other_text_alone():
    clean = ("def f(row, w):\n    kinds = [k for k in row.cannot_fail if k in UNSTABLE]\n"
             "    return [n for n in w.sample_notes if n.startswith('x')], '; '.join(row.notes)\n")
    assert _architecture().note_text_tests(clean) == []
    gate = ROOT / "gate"
    assert [p for p in gate.rglob("*.py") if _architecture().note_text_tests(p.read_text(encoding="utf-8"))] == []


def test_the_architecture_check_counts_each_knob_once():
    """A number bound to a public name is a knob; a value derived from one, a private numeric and a non-verdict
    size are not (issue 49: at most 20 in the rule)."""
    source = ("from x import FEWEST_RUNS\nALPHA = 0.005\nLOW: float = -1.0\nCHOOSE = FEWEST_RUNS + 1\n_SCALE = 0.689\n"
              "MAX_SESSIONS = 40\nNAMES = ('a', 'b')\ndef f():\n    INNER = 3\n")
    assert _architecture().verdict_constants(source) == ["ALPHA", "LOW"]


def test_the_rule_holds_at_most_twenty_knobs():
    arch = _architecture()
    found = [name for path in [*(ROOT / "gate" / "stats").glob("*.py"), *(ROOT / "gate" / "judging").glob("*.py"),
                               ROOT / "gate" / "formats" / "noise_model.py"]
             for name in arch.verdict_constants(path.read_text(encoding="utf-8"))]
    assert "FEWEST_RUNS" in found and "MIN_CALIBRATION_DF" not in found  # the df a calibration needs is derived
    assert len(found) <= arch.MAX_CONSTANTS
