"""Dashboard links: a history's commits are data, so only hex hashes become links (issue 35)."""
from __future__ import annotations

from types import SimpleNamespace

from gate.history.publish import _changes
from gate.history.records import ChangePoint


def _cp(previous: str, commit: str) -> ChangePoint:
    return ChangePoint(workload="w", metric="wer", unit="%", log=False, worse=True, night="2026-01-01T00:00:00Z",
                       commit=commit, previous_commit=previous, reported="2026-01-02T00:00:00Z", before=1.0,
                       after=2.0, change=1.0, ci=(0.5, 1.5), p_value=0.001, gated=True)


def _row(cp: ChangePoint) -> dict:
    [row] = _changes([SimpleNamespace(change_points=(cp,))], "o/r", "https://github.test")  # type: ignore[list-item]
    return row


def test_diff_link_only_between_hashes() -> None:
    before, after = "abc1234", "def5678"
    row = _row(_cp(before, after))
    assert row["diff"] == f"https://github.test/o/r/compare/{before}...{after}"
    assert row["before"].href == f"https://github.test/o/r/commit/{before}"


def test_diff_link_refuses_a_path_as_commit() -> None:
    row = _row(_cp("../../../../x/y", "def5678"))
    assert row["diff"] is None
    assert row["before"].href is None and row["before"].text == "../../../."  # shown as text, never a link
