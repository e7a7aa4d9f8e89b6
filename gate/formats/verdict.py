"""The verdict vocabulary: one enum carries everything a verdict means to every consumer.

Adding a verdict state touches this module and the templates only: precedence (the overall verdict is
the most severe present), the exit code of `gate compare`, the icon and words of the report, the
GitHub check-run conclusion, the commit-status state and the workflow annotation level all live here.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Iterable


@dataclass(frozen=True)
class _Meaning:
    precedence: int  # 0 is the most severe; the overall verdict is the present verdict with the lowest
    exit_code: int  # of `gate compare` (2 is a usage error or unopenable input, never a verdict)
    icon: str
    word: str  # as a report writes it
    headline: str  # after "ASR regression gate: <word>"
    lead: str | None  # the sentence that names this verdict's workloads under the headline
    check_conclusion: str  # GitHub check run: WARN is visible but does not block; only PASS is success
    status_state: str  # commit status (no "neutral" there: WARN stays green, its word in the description)
    annotation_level: str | None  # workflow annotation for a row with this verdict


class Verdict(str, Enum):
    INCOMPLETE = "incomplete"
    NOT_COMPARABLE = "not_comparable"
    FAIL = "fail"
    WARN = "warn"
    PASS = "pass"

    @property
    def _meaning(self) -> _Meaning:
        return _MEANINGS[self]

    @property
    def precedence(self) -> int:
        return self._meaning.precedence

    @property
    def exit_code(self) -> int:
        return self._meaning.exit_code

    @property
    def icon(self) -> str:
        return self._meaning.icon

    @property
    def word(self) -> str:
        return self._meaning.word

    @property
    def headline(self) -> str:
        return self._meaning.headline

    @property
    def lead(self) -> str | None:
        return self._meaning.lead

    @property
    def check_conclusion(self) -> str:
        return self._meaning.check_conclusion

    @property
    def status_state(self) -> str:
        return self._meaning.status_state

    @property
    def annotation_level(self) -> str | None:
        return self._meaning.annotation_level

    @property
    def is_pass(self) -> bool:
        return self is Verdict.PASS

    @property
    def blocks(self) -> bool:
        """Whether a required check with this verdict blocks the merge."""
        return self.check_conclusion == "failure"

    def __str__(self) -> str:  # f-strings and templates print the value, not "Verdict.PASS"
        return self.value

    @classmethod
    def by_severity(cls) -> tuple[Verdict, ...]:
        return tuple(sorted(cls, key=lambda v: v.precedence))

    @classmethod
    def worst(cls, verdicts: Iterable[Verdict | str]) -> Verdict:
        """The overall verdict: the most severe present; no verdicts at all is INCOMPLETE."""
        present = [cls(v) for v in verdicts]
        return min(present, key=lambda v: v.precedence) if present else cls.INCOMPLETE


_MEANINGS = {
    Verdict.INCOMPLETE: _Meaning(0, 3, "⛔", "incomplete", "incomplete results: cannot judge",
                                 "Cannot judge (see Coverage)", "failure", "failure", "error"),
    Verdict.NOT_COMPARABLE: _Meaning(1, 4, "🚫", "not comparable", "the two sides are not comparable",
                                     "Not comparable (see Environment)", "failure", "failure", "warning"),
    Verdict.FAIL: _Meaning(2, 1, "❌", "FAIL", "regression beyond noise",
                           "Worse beyond noise and above the floors", "failure", "failure", "error"),
    Verdict.WARN: _Meaning(3, 0, "⚠️", "warn", "possible regression: confirm with a rerun",
                           "Possibly worse, rerun to confirm", "neutral", "success", "warning"),
    Verdict.PASS: _Meaning(4, 0, "✅", "pass", "no regression beyond noise", None, "success", "success", None),
}
