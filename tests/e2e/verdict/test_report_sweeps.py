"""The slow tests of integration/verdict/test_report.py, kept out of the fast tier (tests/README.md)."""
from __future__ import annotations

from dataclasses import replace

import pytest

from gate.formats.github_limits import CHECK_SUMMARY, COMMENT, CUT_NOTE, Limit
from gate.render.renderer import (
    COMMENT_MARKER,
    render_check_summary,
    render_comment,
    render_summary,
)
from tests.integration.verdict import test_report as fast_tier

# The fixtures these tests share with the fast tier's module (pytest finds them by these names).
report = fast_tier.report


@pytest.mark.slow  # renders every output at many sizes
def test_each_output_fits_its_own_budget_dropping_excerpts_before_rows(report):
    flagged = [u for u in report.utterances if u.workload == "qwen3/asr_en"]
    assert flagged, "the regressed workload has changed utterances"
    # 150 long changed utterances put the whole summary ~1.5x over the comment's limit (characters) and ~3.5x over the
    # check summary's (bytes): both must fit by dropping. (400 did too, at 20x the rendering time.)
    many = [replace(flagged[0], id=f"z{i}", reference="词" * 590, baseline_hypothesis="词" * 590,
                    candidate_hypothesis="语" * 590) for i in range(150)]
    big = replace(report, utterances=tuple(flagged) + tuple(many))
    comment, whole = render_comment(big), render_summary(big)
    assert len(comment) <= COMMENT.limit < len(whole) / 1.4  # characters, GitHub's unit
    assert CHECK_SUMMARY.limit < len(whole.encode("utf-8")) / 3
    assert "changed-utterance excerpts" in comment.split("<details>")[0] and "z0" not in comment
    check = render_check_summary(big)
    assert len(check.encode("utf-8")) <= CHECK_SUMMARY.limit
    tiny = render_comment(big, budget=Limit(1300, "characters"))  # below even the fully folded comment
    assert len(tiny) <= 1300 and tiny.startswith(COMMENT_MARKER.format(suite="asr")) and tiny.endswith(CUT_NOTE)
    # The failing rows come first: the first survives whole, and a row that does not fit is dropped whole.
    rows = [line for line in render_comment(big).splitlines() if line.startswith("| qwen3/asr\\_en · ")]
    assert rows[0] in tiny.splitlines()
    assert all(row in tiny.splitlines() or row[:40] not in tiny for row in rows[1:])
