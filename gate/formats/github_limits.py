"""GitHub's size limits, the one note that says a text was cut, and the one cut step.

Kept apart from gate.publish.github (PyGithub) so that rendering, which must fit these limits, stays free of
the API client. gate.render.renderer folds the least important parts first and then calls `fit` as its last
step; gate.publish.github and gate.publish.publication call the same `fit` only as a guard on what reaches the API.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limit:
    limit: int
    unit: str  # "characters" or "bytes" (UTF-8)

    def size(self, text: str) -> int:
        # backslashreplace: a non-UTF-8 path (lone surrogates) is counted as the escape it is written as
        return len(text) if self.unit == "characters" else len(text.encode("utf-8", "backslashreplace"))

    def fits(self, text: str) -> bool:
        return self.size(text) <= self.limit

    def prefix(self, text: str, room: int) -> str:
        """The longest prefix of whole lines within `room` units (a partial line when there is no newline)."""
        if self.unit == "characters":
            head = text[: max(room, 0)]
        else:
            head = text.encode("utf-8", "backslashreplace")[: max(room, 0)].decode("utf-8", errors="ignore")
        return head.rsplit("\n", 1)[0] if "\n" in head else head


# An issue or PR comment body: 65,536 characters; a check run's output.summary: 65,535 bytes;
# a job summary (GITHUB_STEP_SUMMARY): 1 MiB; a check run title and a commit status description.
COMMENT = Limit(65_536, "characters")
CHECK_SUMMARY = Limit(65_535, "bytes")
JOB_SUMMARY = Limit(1_048_576, "bytes")
CHECK_TITLE_MAX_CHARS = 250
STATUS_DESCRIPTION_MAX_CHARS = 140

CUT_NOTE = "\n\n_Cut to fit GitHub's size limit; the full report is in the workflow run's artifact._\n"


def fit(text: str, limit: Limit, *, head: str = "", tail: str = "") -> str:
    """`text` when it fits; else `head` + whole lines of the rest + CUT_NOTE + `tail`, within `limit`.

    `head` and `tail` (a comment's marker) are kept whole: a sticky comment is found by its marker.
    """
    if limit.fits(text):
        return text
    body = text[len(head):] if head and text.startswith(head) else text
    room = limit.limit - limit.size(head) - limit.size(CUT_NOTE) - limit.size(tail)
    return head + limit.prefix(body, room) + CUT_NOTE + tail


def with_marker(body: str, marker: str) -> str:
    """`body`, then `marker` on a line of its own, within a comment's limit. The marker is kept whole: a sticky
    comment or a tracking issue is found again by it."""
    return fit(body + "\n" + marker, COMMENT, tail="\n" + marker)
