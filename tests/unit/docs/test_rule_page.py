"""docs/statistics.md's "The rule on one page" names every typed reason the rule can give (issue 49), so a reason added
to gate/formats/reasons.py without its line on that page fails here; and the page stays one page."""
from __future__ import annotations

from pathlib import Path

from gate.formats.reasons import CannotFail, ExtendCause, WarnCause

PAGE = Path(__file__).resolve().parents[3] / "docs" / "statistics.md"


def _section() -> str:
    text = PAGE.read_text(encoding="utf-8")
    return text.split("\n## The rule on one page\n", 1)[1].split("\n## ", 1)[0]


def test_every_reason_a_row_or_a_look_can_give_is_on_the_page():
    section = _section()
    missing = [f"{kind.__name__}.{code.name}" for kind in (CannotFail, WarnCause, ExtendCause) for code in kind
               if f"`{code.value}`" not in section]
    assert not missing, f"docs/statistics.md, 'The rule on one page', does not name {missing}"


def test_the_rule_fits_on_one_page():
    lines = _section().strip().splitlines()
    assert len(lines) <= 60, f"'The rule on one page' is {len(lines)} lines: a page is 60"
