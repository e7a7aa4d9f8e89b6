from __future__ import annotations

from gate.formats.github_limits import CUT_NOTE, JOB_SUMMARY, fit
from gate.formats.report import Basis, Row, SideStats
from gate.formats.verdict import Verdict
from gate.publish.actions_io import (
    MAX_ANNOTATIONS_PER_LEVEL,
    Annotation,
    format_outputs,
    normalise_verdict,
    row_annotations,
)


def row(verdict, i=0, note=""):
    side = SideStats.of
    return Row(workload=f"qwen3/asr_en{i}", model="qwen3", metric="corpus_wer", kind="accuracy", unit="fraction",
               direction="lower", baseline=side([0.01], [True], 1, None), candidate=side([0.02], [True], 1, None),
               verdict=Verdict(normalise_verdict(verdict)), basis=Basis.PAIRED, delta_rel=1.0, p_value=0.001,
               notes=(note,) if note else ())


def test_levels_follow_the_verdict():
    levels = [(a.level, a.title.split(":")[0]) for a in row_annotations(
        [row("pass"), row("fail"), row("incomplete"), row("warn"), row("NOT COMPARABLE")])]
    assert levels == [("error", "ASR gate FAIL"), ("error", "ASR gate INCOMPLETE"),
                      ("warning", "ASR gate WARN"), ("warning", "ASR gate NOT COMPARABLE")]


def test_at_most_ten_per_level_and_the_last_says_how_many_more():
    shown = row_annotations([row("fail", i) for i in range(25)] + [row("warn", i) for i in range(3)])
    errors = [a for a in shown if a.level == "error"]
    assert len(errors) == MAX_ANNOTATIONS_PER_LEVEL == 10
    assert errors[-1].title == "ASR gate: 16 more error rows"
    assert len([a for a in shown if a.level == "warning"]) == 3


def test_annotation_data_cannot_start_a_second_command():
    hostile = "ok\n::add-mask::secret\r\n::error::forged 100%"
    command = row_annotations([row("fail", note=hostile)])[0].command()
    assert "\n" not in command and "\r" not in command
    escaped = hostile.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")  # GitHub's data escaping
    assert escaped in command and "ok%0A::add-mask::" in command


def test_annotation_drops_control_and_bidi_characters():
    hostile = "real\x1b[2K\x1b[1Afake\x00 \u202eevil\u202c \u2066x\u2069 \ufeffend"
    command = Annotation("error", title="t\x1b]0;title\x07", message=hostile).command()
    title, message = "t]0;title", "real[2K[1Afake evil x end"  # what is left once the characters are dropped
    assert command == f"::error title={title}::{message}"
    assert not any(ch in command for ch in "\x1b\x00\u202e\u202c\u2066\u2069\ufeff\x07")


def test_title_properties_are_escaped():
    command = Annotation("error", title="a:b,c\nd", message="m").command()
    escaped = "a%3Ab%2Cc%0Ad"  # ":" %3A, "," %2C, newline %0A
    assert command == f"::error title={escaped}::m"


def test_outputs_multiline_uses_a_delimiter_not_in_the_value():
    text = format_outputs({"verdict": "fail", "body": "line 1\nEOF\nline 3"})
    lines = text.splitlines()
    assert lines[0] == "verdict=fail" and lines[1].startswith("body<<gate_")
    delimiter = lines[1].split("<<", 1)[1]
    assert lines[2:5] == ["line 1", "EOF", "line 3"] and lines[5] == delimiter


def test_summary_is_cut_to_the_one_job_summary_limit():
    assert fit("small", JOB_SUMMARY) == "small"
    cut = fit("界\n" * 500_000, JOB_SUMMARY)  # 2 MB of UTF-8
    assert len(cut.encode()) <= JOB_SUMMARY.limit and cut.endswith(CUT_NOTE)


def test_normalise_verdict_spellings():
    assert {normalise_verdict(v) for v in ("NOT COMPARABLE", "not-comparable", " not_comparable ")} == {"not_comparable"}
