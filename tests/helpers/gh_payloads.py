"""Webhook payloads shaped like GitHub's (octokit/webhooks payload-examples), built with overrides."""
from __future__ import annotations

import copy
from typing import Any

HEAD = "a" * 40
BASE = "b" * 40
MAIN = "c" * 40


def pull_request(action: str = "labeled", *, label: str | None = "run-qwen3-asr", labels: list[str] | None = None,
                 fork: bool = False, number: int = 42, head_sha: str = HEAD) -> dict[str, Any]:
    labels = [label] if labels is None and label else (labels or [])
    head_repo = "contributor/sglang-omni" if fork else "sgl-project/sglang-omni"
    payload: dict[str, Any] = {
        "action": action,
        "number": number,
        "pull_request": {
            "number": number,
            "draft": False,
            "labels": [{"id": i, "name": name, "color": "ededed"} for i, name in enumerate(labels)],
            "head": {"sha": head_sha, "ref": "feature/x", "repo": {"full_name": head_repo, "fork": fork}},
            "base": {"sha": BASE, "ref": "main", "repo": {"full_name": "sgl-project/sglang-omni", "fork": False}},
            "author_association": "CONTRIBUTOR",
        },
        "repository": {"full_name": "sgl-project/sglang-omni"},
        "sender": {"login": "maintainer"},
    }
    if action == "labeled" and label:
        payload["label"] = {"id": 7, "name": label, "color": "ededed"}
    if action == "synchronize":
        payload["before"], payload["after"] = "d" * 40, head_sha
    return payload


def schedule() -> dict[str, Any]:
    return {"schedule": "17 3 * * *", "repository": {"full_name": "sgl-project/sglang-omni"}}


def dispatch(models: str | None = None) -> dict[str, Any]:
    inputs = {} if models is None else {"models": models}
    return {"inputs": inputs, "ref": "refs/heads/main", "repository": {"full_name": "sgl-project/sglang-omni"},
            "sender": {"login": "maintainer"}, "workflow": ".github/workflows/asr-gate-nightly.yml"}


def workflow_run(*, conclusion: str = "success", prs: list[int] | None = None, head_sha: str = HEAD,
                 fork: bool = False, created_at: str = "2026-12-01T12:00:00Z", run_attempt: int = 1) -> dict[str, Any]:
    return {
        "action": "completed",
        "workflow_run": {
            "id": 123456789,
            "name": "ASR gate",
            "run_attempt": run_attempt,
            "created_at": created_at,  # after the fake GitHub's labels (its clock starts 2026-12-01T09:00Z)
            "event": "pull_request",
            "status": "completed",
            "conclusion": conclusion,
            "head_sha": head_sha,
            "head_branch": "feature/x",
            "head_repository": {"full_name": "contributor/sglang-omni" if fork else "sgl-project/sglang-omni"},
            "pull_requests": [{"number": n, "head": {"sha": head_sha}} for n in (prs or [])],
        },
        "repository": {"full_name": "sgl-project/sglang-omni"},
    }


def without(payload: dict[str, Any], *path: str) -> dict[str, Any]:
    """A deep copy with one nested key removed (for malformed-payload tests)."""
    out = copy.deepcopy(payload)
    node = out
    for key in path[:-1]:
        node = node[key]
    del node[path[-1]]
    return out
