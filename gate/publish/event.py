"""What a GitHub event asks the gate to do: which models, on which immutable commit, for which PR.

Reads the webhook payload behind GITHUB_EVENT_PATH for the events the gate's workflows use:
  pull_request (labeled, synchronize), schedule, workflow_dispatch, workflow_run.
Labels map to models through the suite file (Suite.models_for_labels). The commit is always the
head SHA in the payload, never a branch name: a push between labelling and checkout must not run
code nobody reviewed (CodeQL actions/untrusted-checkout-toctou).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping

from gate.formats.config import Suite
from gate.formats.errors import GateError

_SHA = re.compile(r"^[0-9a-f]{40}$")
_MAX_EVENT_BYTES = 25 * 1024 * 1024  # webhook payloads are capped at 25 MB by GitHub
# workflow_run conclusions after which a report artifact may exist: the gate exits 1 on FAIL.
_REPORTABLE_CONCLUSIONS = ("success", "failure")


class EventError(GateError):
    """The event payload is missing, unreadable or not shaped like GitHub's."""


@dataclass(frozen=True)
class Trigger:
    """The gate's reading of one event. `run` False means: do nothing, and `reason` says why."""

    event_name: str
    run: bool
    reason: str
    models: tuple[str, ...] = ()
    sha: str | None = None  # the commit to measure (PR head, or main for schedule/dispatch)
    base_sha: str | None = None  # the PR's base commit (A/B runs measure its merge base)
    pr: int | None = None
    labels: tuple[str, ...] = ()  # one-shot gate labels that triggered this run; removed after reporting
    same_repo: bool | None = None  # PR head lives in the base repository (not a fork)
    # workflow_run only: the run whose artifact is to be reported, and its head.
    run_id: int | None = None
    run_attempt: int | None = None
    created_at: datetime | None = None  # when GitHub created the benchmark run (labels after it did not ask for it)
    conclusion: str | None = None
    head_branch: str | None = None
    head_repository: str | None = None


def read_trigger(event_name: str, event_path: str | Path, *, suite: Suite, default_sha: str | None = None) -> Trigger:
    """Read and parse the payload file of `event_name` (GITHUB_EVENT_NAME / GITHUB_EVENT_PATH)."""
    path = Path(event_path)
    try:
        if path.stat().st_size > _MAX_EVENT_BYTES:
            raise EventError("event payload larger than 25 MB", path=path)
        payload = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise EventError(f"cannot read event payload ({exc.strerror})", path=path) from None
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise EventError("expected the event payload as JSON", path=path) from None
    try:
        return parse_trigger(event_name, payload, suite=suite, default_sha=default_sha)
    except EventError as exc:
        raise EventError(str(exc), path=path) from None


def parse_trigger(event_name: str, payload: Any, *, suite: Suite, default_sha: str | None = None) -> Trigger:
    """Map one event payload to a Trigger. `default_sha` is GITHUB_SHA (schedule, dispatch)."""
    if not isinstance(payload, dict):
        raise EventError("expected the event payload to be a JSON object")
    if event_name in ("pull_request", "pull_request_target"):
        return _pull_request(event_name, payload, suite)
    if event_name == "schedule":
        sha = _sha_or_none(default_sha, "GITHUB_SHA")
        return Trigger(event_name, run=True, reason="nightly: every model on the default branch",
                       models=tuple(suite.models), sha=sha)
    if event_name == "workflow_dispatch":
        return _dispatch(payload, suite, default_sha)
    if event_name == "workflow_run":
        return _workflow_run(payload)
    return Trigger(event_name, run=False, reason=f"event {event_name!r} does not start the gate")


def _pull_request(event_name: str, payload: dict, suite: Suite) -> Trigger:
    action = _str(payload, "action")
    pr = _dig(payload, "pull_request", kind=dict)
    number = _dig(pr, "number", kind=int, where="pull_request.number")
    head_sha = _sha(_dig(pr, "head", "sha", kind=str, where="pull_request.head.sha"), "pull_request.head.sha")
    base_sha = _sha(_dig(pr, "base", "sha", kind=str, where="pull_request.base.sha"), "pull_request.base.sha")
    base_repo = _dig(pr, "base", "repo", "full_name", kind=str, where="pull_request.base.repo.full_name")
    head_repo = (pr.get("head") or {}).get("repo") or {}  # null when the fork was deleted
    same_repo = head_repo.get("full_name") == base_repo
    common = dict(sha=head_sha, base_sha=base_sha, pr=number, same_repo=same_repo)
    current = [label.get("name") for label in pr.get("labels") or [] if isinstance(label, dict)]
    gate_labels = tuple(str(name) for name in current if isinstance(name, str) and name in suite.labels)

    if action == "labeled":
        label = _dig(payload, "label", "name", kind=str, where="label.name")
        if label not in suite.labels:
            return Trigger(event_name, run=False, reason=f"label {label!r} is not a gate label; expected one of "
                           f"{', '.join(suite.labels)} (create them with the README's `gh label create` block)",
                           **common)
        # Only the label just added counts: each application is one run of that label's models.
        return Trigger(event_name, run=True, reason=f"label {label} added", models=suite.models_for_labels([label]),
                       labels=(label,), **common)
    if action == "synchronize":
        # One label event is one judgement of the head it was added to (docs/trust-model.md): new commits,
        # fork or not, need the label again; this run only lets the report set the required check.
        reason = "new commits need a gate label again" if gate_labels else "new commits, but no gate label on the PR"
        return Trigger(event_name, run=False, reason=reason, **common)
    return Trigger(event_name, run=False, reason=f"pull_request action {action!r} does not start the gate", **common)


def _dispatch(payload: dict, suite: Suite, default_sha: str | None) -> Trigger:
    inputs = payload.get("inputs") or {}
    if not isinstance(inputs, dict):
        raise EventError("inputs: expected an object")
    requested = str(inputs.get("models") or "all").replace(",", " ").split()
    if requested == ["all"]:
        models = tuple(suite.models)
    else:
        unknown = sorted(set(requested) - set(suite.models))
        if unknown:
            raise EventError(f"inputs.models: unknown model(s) {', '.join(unknown)}; expected 'all' or some of "
                             f"{', '.join(suite.models)}")
        models = tuple(m for m in suite.models if m in requested)
    sha = _sha_or_none(default_sha, "GITHUB_SHA")
    return Trigger("workflow_dispatch", run=True, reason="started by hand", models=models, sha=sha)


def _workflow_run(payload: dict) -> Trigger:
    run = _dig(payload, "workflow_run", kind=dict)
    run_id = _dig(run, "id", kind=int, where="workflow_run.id")
    head_sha = _sha(_dig(run, "head_sha", kind=str, where="workflow_run.head_sha"), "workflow_run.head_sha")
    conclusion = run.get("conclusion")
    # pull_requests is empty for fork PRs; the PR number then comes from the artifact and is verified
    # against head_branch/head_repository, which come from GitHub, not from the artifact.
    prs = [p.get("number") for p in run.get("pull_requests") or [] if isinstance(p, dict)]
    head_repository = (run.get("head_repository") or {}).get("full_name")
    attempt = run.get("run_attempt", 1)
    if not isinstance(attempt, int) or isinstance(attempt, bool) or attempt < 1:
        raise EventError("workflow_run.run_attempt: expected a positive integer")
    common = dict(sha=head_sha, run_id=run_id, run_attempt=attempt, created_at=_time(run.get("created_at")),
                  conclusion=conclusion, pr=prs[0] if len(prs) == 1 else None,
                  head_branch=run.get("head_branch"), head_repository=head_repository)
    if conclusion not in _REPORTABLE_CONCLUSIONS:
        return Trigger("workflow_run", run=False, reason=f"benchmark run ended {conclusion!r}; nothing to report", **common)
    return Trigger("workflow_run", run=True, reason=f"benchmark run {run_id} ended {conclusion}", **common)


def _time(value: Any) -> datetime | None:
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        raise EventError(f"workflow_run.created_at: expected an ISO 8601 time, got {str(value)[:40]!r}") from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=timezone.utc)


def _dig(value: Any, *keys: str, kind: type, where: str | None = None) -> Any:
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    if not isinstance(value, kind) or isinstance(value, bool):
        raise EventError(f"{where or '.'.join(keys)}: expected {'an integer' if kind is int else 'a ' + kind.__name__}")
    return value


def _str(payload: Mapping[str, Any], key: str) -> str:
    return _dig(payload, key, kind=str)


def _sha(value: str, where: str) -> str:
    if not _SHA.match(value):
        raise EventError(f"{where}: expected a 40-hex commit SHA, got {value[:60]!r}")
    return value


def _sha_or_none(value: str | None, where: str) -> str | None:
    return None if value is None else _sha(value, where)
