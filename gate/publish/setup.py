"""Is the gate's proof of authorship set up so that no writer's branch workflow can hold it? (issue 50)

The stamp key and the App's private key prove the gate's check runs only while no branch workflow can read
them: they must be secrets of an environment whose deployment branch policy admits only the default branch,
and of nothing else (a repository or organisation secret reaches every workflow). GitHub creates an
unprotected environment when a workflow names one that does not exist, so the trusted job reads the policy
through the API each time. Pure rules here over plain records; gate.publish.github reads them.

Each finding is one line; `closed` ones (the key could have been read by a branch workflow) keep the overall
check from passing (docs/github-app.md, docs/trust-model.md).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

DOCS = "docs/github-app.md"


@dataclass(frozen=True)
class BranchPolicy:
    """An environment's deployment branch policy as the API gives it; `error` when it could not be read."""

    any_branch: bool = False  # deployment_branch_policy is null: every branch may deploy
    protected_branches: bool = False  # every branch with a protection rule may deploy
    custom: tuple[str, ...] = ()  # names or patterns of the custom branch (and tag) policies ("tag:v*" for tags)
    error: str | None = None


@dataclass(frozen=True)
class SetupFinding:
    line: str
    closed: bool  # True: the proof could be in a branch workflow's hands, so nothing counts as proven


def check(*, environment: str | None, policy: BranchPolicy | None, default_branch: str, key: bool, app: bool,
          exposed: Sequence[str] = (), installed: bool | None = None) -> tuple[SetupFinding, ...]:
    """The set-up's problems, one line each (none: the set-up holds). `key`/`app`: a stamp key or the App's
    token is in use; `exposed`: gate secrets also set outside the environment (the workflow names them);
    `installed`: whether the App's installation covers this repository (None: not known)."""
    proof = key or app
    found = [SetupFinding(f"{name} is also set as a repository or organisation secret: every writer's branch workflow "
                     f"can read it; delete it there and keep it only in the environment "
                     f"{environment or 'asr-gate'} ({DOCS})", True) for name in exposed]
    if not environment:
        if proof:
            found.append(SetupFinding("no environment is named (stamp-environment): the key or App secrets come from the "
                                 "repository, where every branch workflow can read them; move them into the "
                                 f"environment asr-gate restricted to {default_branch} ({DOCS})", True))
        else:
            found.append(SetupFinding("no stamp key and no App: no earlier judgement can be proven, so only this run's "
                                 f"counts; set up the App or the key in the environment asr-gate ({DOCS})", False))
        return tuple(found)
    if not proof:
        found.append(SetupFinding(f"the environment {environment} gives no ASR_GATE_STAMP_KEY (blank or missing) and no "
                             "App key: no earlier judgement can be proven, so only this run's counts; set one "
                             f"({DOCS})", False))
    if policy is None or policy.error is not None:
        why = policy.error if policy is not None and policy.error else "not read"
        found.append(SetupFinding(f"the deployment branch policy of the environment {environment} could not be read "
                             f"({why}); check by hand that it admits only {default_branch} ({DOCS})", False))
    elif policy.any_branch:
        found.append(SetupFinding(f"the environment {environment} admits every branch: a writer's branch workflow that "
                             f"names it reads its secrets; restrict its deployment branches to {default_branch} "
                             f"({DOCS})", proof))
    else:
        others = [name for name in policy.custom if name != default_branch]
        if others:
            found.append(SetupFinding(f"the environment {environment} also admits {', '.join(others[:5])}: restrict its "
                                 f"deployment branches to {default_branch} alone ({DOCS})", proof))
        if policy.protected_branches:
            found.append(SetupFinding(f"the environment {environment} admits every protected branch, not only "
                                 f"{default_branch}: select {default_branch} alone ({DOCS})", False))
    if app and installed is False:
        found.append(SetupFinding(f"the App's installation does not cover this repository: install it here ({DOCS})", True))
    return tuple(found)


def blocking(findings: Sequence[SetupFinding]) -> bool:
    return any(finding.closed for finding in findings)
