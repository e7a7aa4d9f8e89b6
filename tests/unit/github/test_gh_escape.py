"""The one escape filter: what an attacker's string becomes in markdown, a terminal line and an annotation."""
from __future__ import annotations

import re

import pytest

from gate.render.escape import CUT, annotation, md, md_excerpt, plain

ZW = "\u200b"


@pytest.mark.parametrize("hostile, never", [
    ("<img src=x onerror=alert(1)>", "<img"),
    ("<!-- asr-regression-gate: sticky -->", "<!--"),
    ("</details>", "</details>"),
    ("@sgl-project/maintainers", "@sgl"),
    ("fixes #123", "#123"),
    ("see GH-123 and gh-7", "GH-123"),
    ("$$\\frac{1}{0}$$", "$"),
    ("price $5", "$"),
    ("![x](https://evil.test/x.png)", "!["),
    ("[click](javascript:alert(1))", "[click]"),
    ("https://evil.test", "https://"),
    ("www.evil.test", "www."),
    ("a | b", " | "),
    ("`code`", "`code`"),
    ("\u202eevil\u202c", "\u202e"),
    ("\x1b[31mred", "\x1b"),
])
def test_md_neutralises(hostile, never):
    assert never not in md(hostile)


def test_md_keeps_the_text_readable():
    assert md("qwen3/seedtts_en WER") == "qwen3/seedtts" + "\\_" + "en WER"
    assert md(None) == "—"
    assert "\n" not in md("line one\nline two\r\nthree") and md("a\n\nb") == "a b"


@pytest.mark.parametrize("start", ["# heading", "> quote", "- item", "+ item", "1. item", "= setext"])
def test_md_never_starts_a_block(start):
    assert not re.match(r"[#>\-+=]|\d+[.)]", md(start))


def test_md_cut_is_visible():
    assert md("x" * 50, 10) == "x" * 9 + CUT and md_excerpt("y" * 500, 300, 20).startswith(CUT)


def test_plain_and_annotation_drop_controls():
    assert plain("a\x1b[2Jb\u2066c\u2069\x00") == "a[2Jbc"
    assert annotation("50%\nnext\x1b\u202e") == "50%25%0Anext"


@pytest.mark.parametrize("kind", ["` <img src=x onerror=alert(1)> `", "`[x](https://evil.test)`", "` @sgl-project/team `",
                                  "` #1 `", "`<!-- asr-regression-gate: sticky -->`", "$x$ | y"])
def test_a_report_kind_never_leaves_the_allow_diff_code_span(kind):
    """Issue 35: environment_diff[].kind (free text of an uploaded report) is placed inside a code span."""
    from gate.render.escape import code

    inside = code(kind, 40)
    assert not set(inside) & set("`<>[]()@#$|!\\&*~") and len(inside) <= 40
    assert code("gpu") == "gpu" and code("cuda_build") == "cuda_build"


def test_the_allow_diff_instruction_escapes_the_kind(example_reports):
    import dataclasses

    from gate.formats.report import EnvDifference
    from gate.publish.untrusted import load_untrusted_report
    from gate.render import renderer

    report = load_untrusted_report(example_reports["qwen3"])
    hostile = EnvDifference(kind="`<img src=x onerror=alert(1)>`", workload=None, item="gpu name", baseline="A",
                            candidate="B", known=True, blocking=True)
    text = renderer.render_comment(dataclasses.replace(report, environment_diff=(hostile,)))
    line = next(line for line in text.splitlines() if "--allow-diff" in line)
    assert "<img" not in line and line.count("`") == 2
