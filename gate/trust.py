"""Decisions the trusted report job takes from GitHub's own records, never from an uploaded artifact.

- `bind_trigger`: may a result for these models on this commit be posted on this PR? Only when the
  benchmark run measured the PR's current head, and a gate label selecting each model was applied
  to that head: a `labeled` event in the issue timeline after the head commit arrived, or (same-
  repository PRs only, where pushing needs write access) a selecting label still present.
- `find_acceptance`: did a user with write access accept a FAIL of this model on this head? Either
  the label ACCEPT_LABEL added after the head commit, or a comment after it whose line starts
  `/asr-gate accept <model|all> <reason>`. Permissions are asked of the API by the caller.

Pure functions over `PullInfo` and `TimelineEntry` lists, so every case is testable without a server.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Sequence

from gate.config import Suite
from gate.github import PullInfo, TimelineEntry

ACCEPT_LABEL = "asr-gate-accept"
WRITE_PERMISSIONS = ("admin", "maintain", "write")
_ACCEPT_COMMAND = re.compile(r"^/asr-gate\s+accept\s+([A-Za-z0-9_]+)\s+(\S.*)$", re.MULTILINE)
MAX_REASON_CHARS = 200


@dataclass(frozen=True)
class Binding:
    """Whether to post; `reason` is said in the trusted job's log either way."""

    ok: bool
    reason: str
    labels: tuple[str, ...] = ()  # selecting gate labels still on the PR (one-shot: removed after posting)


@dataclass(frozen=True)
class Acceptance:
    by: str
    reason: str
    via: str  # "label" or "comment"

    def to_json(self) -> dict:
        return {"by": self.by, "reason": self.reason, "via": self.via}


def head_position(timeline: Sequence[TimelineEntry], sha: str) -> int:
    """Index of the last event that made `sha` the PR's head (-1 when the timeline does not show it)."""
    for index in range(len(timeline) - 1, -1, -1):
        entry = timeline[index]
        if entry.sha == sha and entry.event in ("committed", "head_ref_force_pushed"):
            return index
    return -1


def bind_trigger(*, run_sha: str, pull: PullInfo, timeline: Sequence[TimelineEntry], models: Sequence[str],
                 suite: Suite) -> Binding:
    if not models:
        return Binding(False, "the run names no model")
    unknown = [m for m in models if m not in suite.models]
    if unknown:
        return Binding(False, f"the run names model(s) the suite does not know: {', '.join(sorted(unknown))[:200]}")
    if run_sha != pull.head_sha:
        return Binding(False, f"stale: the run measured {run_sha[:12]}, but PR #{pull.number}'s head is now "
                              f"{pull.head_sha[:12]}; nothing posted (label again to measure the new head)")
    labelled = models_labelled_at_head(pull, timeline, suite)
    missing = [m for m in models if m not in labelled]
    if missing:
        how = "after its head commit" if not pull.same_repo else "after its head commit, and none is on the PR now"
        return Binding(False, f"no gate label selecting {', '.join(missing)} was added to PR #{pull.number} {how}; "
                              "nothing posted")
    present = {label for label in pull.labels if label in suite.labels}
    selecting = tuple(sorted(label for label in present if set(suite.labels[label]) & set(models)))
    return Binding(True, f"PR #{pull.number} at {run_sha[:12]} was labelled for {', '.join(models)}", selecting)


def models_labelled_at_head(pull: PullInfo, timeline: Sequence[TimelineEntry], suite: Suite) -> tuple[str, ...]:
    """The models a maintainer asked for on the PR's current head: gate labels added after the head
    commit arrived, and (same-repository PRs only) gate labels still on the PR. Suite order."""
    since = head_position(timeline, pull.head_sha)
    labels = {e.label for e in timeline[since + 1:] if e.event == "labeled" and e.label and e.label in suite.labels}
    if pull.same_repo:
        labels |= {label for label in pull.labels if label in suite.labels}
    return suite.models_for_labels(sorted(labels))


def find_acceptance(timeline: Sequence[TimelineEntry], *, sha: str, model: str,
                    permission_of: Callable[[str], str]) -> tuple[Acceptance | None, list[str]]:
    """The latest acceptance of `model` on head `sha` by a user with write access, and the refusals seen.

    Refusals (an acceptance by someone without write access) are returned so the job can log them;
    they never change a verdict.
    """
    since = head_position(timeline, sha)
    found: Acceptance | None = None
    refused: list[str] = []
    for entry in timeline[since + 1:]:
        candidate = _acceptance_in(entry, model)
        if candidate is None:
            continue
        permission = permission_of(candidate.by)
        if permission in WRITE_PERMISSIONS:
            found = candidate
        else:
            refused.append(f"@{candidate.by} ({permission}) cannot accept a regression: write access is needed")
    return found, refused


def _acceptance_in(entry: TimelineEntry, model: str) -> Acceptance | None:
    if not entry.actor or entry.actor.endswith("[bot]"):  # bots (the gate's own comments included) never accept
        return None
    if entry.event == "labeled" and entry.label == ACCEPT_LABEL:
        return Acceptance(by=entry.actor, reason=f"label {ACCEPT_LABEL}", via="label")
    if entry.event == "commented" and entry.body:
        for match in _ACCEPT_COMMAND.finditer(entry.body):
            if match[1] in (model, "all"):
                return Acceptance(by=entry.actor, reason=match[2].strip()[:MAX_REASON_CHARS], via="comment")
    return None
