"""Dashboard links: a history's commits are data, so only hex hashes become links (issue 35)."""
from __future__ import annotations

from types import SimpleNamespace

from gate.history.publish import _change_table
from gate.history.records import ChangePoint


def _cp(previous: str, commit: str) -> ChangePoint:
    return ChangePoint(workload="w", metric="wer", unit="%", log=False, worse=True, night="2026-01-01T00:00:00Z",
                       commit=commit, previous_commit=previous, reported="2026-01-02T00:00:00Z", before=1.0,
                       after=2.0, change=1.0, ci=(0.5, 1.5), p_value=0.001, gated=True)


def _table(cp: ChangePoint) -> str:
    return _change_table([SimpleNamespace(change_points=(cp,))], "o/r", "https://github.test")  # type: ignore[list-item]


def test_diff_link_only_between_hashes() -> None:
    before, after = "abc1234", "def5678"
    assert f"/o/r/compare/{before}...{after}" in _table(_cp(before, after))


def test_diff_link_refuses_a_path_as_commit() -> None:
    body = _table(_cp("../../../../x/y", "def5678"))
    assert "compare/" not in body
    assert "x/y" not in body.split("<code>")[0]
