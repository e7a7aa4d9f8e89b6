"""Who accepted a change and how (a label or a comment): found by gate.publish.trust, read by the drift guard."""
from __future__ import annotations

from dataclasses import dataclass

# How a writer accepts a FAIL (gate.publish.trust finds it; the comment says it): a comment whose first line is
# ACCEPT_COMMAND <model|all> <reason>, or the label, while it is on the pull request.
ACCEPT_COMMAND = "/asr-gate accept"
ACCEPT_LABEL = "asr-gate-accept"


@dataclass(frozen=True)
class Acceptance:
    by: str
    reason: str
    via: str  # "label" or "comment"
    at: str = ""  # ISO time of the label or comment

    def to_json(self) -> dict:
        return {"by": self.by, "reason": self.reason, "via": self.via, "at": self.at}
