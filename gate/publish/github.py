"""Talk to GitHub through PyGithub: one sticky PR comment, a check run (or commit status), labels, a tracking issue.

Everything here receives already-rendered markdown; it never renders, and never posts text taken
from an uploaded artifact (gate.publish.untrusted re-renders reports first). `base_url` is GITHUB_API_URL, so
GitHub Enterprise Server works unchanged. API failures become one GitHubError line naming the
call and the HTTP status; nothing here prints a traceback.
Facts relied on: GitHub's REST API documentation for issue comments, check runs and commit statuses.
"""
from __future__ import annotations

import ipaddress
import logging
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Iterator
from urllib.parse import quote, urlsplit

import requests
from github import Auth, Github, GithubException, GithubRetry
from github.IssueComment import IssueComment
from github.Repository import Repository

from gate.formats import github_limits
from gate.formats.errors import GateError
from gate.publish.setup import BranchPolicy
from gate.publish.trust import CheckState, CommitStatus, HeadRun, PullInfo, TimelineEntry

# GitHub's limits live in gate.formats.github_limits (rendering fits its outputs to them without PyGithub): a comment
# body over 65,536 characters or a check-run summary over 65,535 UTF-8 bytes is rejected with 422.


class GitHubError(GateError):
    """A GitHub API call failed; the message names the call and what to check."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status  # HTTP status, None when GitHub could not be reached


@dataclass(frozen=True)
class CommentResult:
    action: str  # "created", "updated" or "unchanged"
    comment_id: int
    url: str | None


@dataclass(frozen=True)
class CheckResult:
    kind: str  # "check_run" or "status"
    conclusion: str
    url: str | None


def default_retry() -> GithubRetry:
    """Bounded retries: 3 attempts on 5xx and rate limits, at most 2 minutes' wait for a rate-limit reset.

    POST is deliberately not retried by the transport: a comment POST that was applied but whose
    response was lost would be created twice. Creation is retried by `upsert_comment` after looking
    for the marker again. PATCH (editing a comment or check run with the full body) is idempotent.
    """
    return GithubRetry(total=3, backoff_factor=2.0, max_rate_limit_wait=120,
                       allowed_methods=frozenset({"GET", "HEAD", "PATCH", "PUT", "DELETE"}))


def connect(*, api_url: str, token: str, retry: GithubRetry | None = None, throttle: bool | None = None) -> Github:
    """A PyGithub client for `api_url` (GITHUB_API_URL). Tests pass retry=None.

    PyGithub spaces requests (0.25 s apart, writes 1 s) to stay under GitHub's secondary rate limits. An API on
    this machine's loopback (a local GitHub double) has no such limit, so by default it is not throttled."""
    # PyGithub logs every retry at INFO on stderr; the gate reports failures itself, in one line.
    logging.getLogger("github").setLevel(logging.WARNING)
    if throttle is None:
        throttle = not _on_loopback(api_url)
    if throttle:
        return Github(auth=Auth.Token(token), base_url=api_url, retry=retry, per_page=100, timeout=30)
    return Github(auth=Auth.Token(token), base_url=api_url, retry=retry, per_page=100, timeout=30,
                  seconds_between_requests=None, seconds_between_writes=None)  # type: ignore[arg-type]  # None: no throttle


def _on_loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:  # a name, not an address
        return False


@contextmanager
def api_call(what: str) -> Iterator[None]:
    """Turn PyGithub/requests failures during `what` into one GitHubError line."""
    try:
        yield
    except GithubException as exc:
        raise GitHubError(_explain(exc.status, what, exc.data), status=exc.status) from None
    except requests.exceptions.RetryError:
        raise GitHubError(f"GitHub kept failing (5xx or rate limit) while {what}; gave up after bounded retries") from None
    except requests.exceptions.RequestException as exc:
        raise GitHubError(f"cannot reach GitHub while {what} ({type(exc).__name__})") from None


def _explain(status: int | None, what: str, data: object) -> str:
    message = data.get("message") if isinstance(data, dict) else None
    detail = f": {str(message)[:200]}" if message else ""
    if status == 401:
        return f"GitHub rejected the token (401) while {what}; check GITHUB_TOKEN{detail}"
    if status == 403:
        return (f"GitHub refused (403) while {what}; the token lacks a permission (pull-requests/issues/checks/"
                f"statuses: write) or a rate limit was hit{detail}; fix: give the job `permissions:` with those scopes "
                f"(docs/use-in-sglang-omni.md)")
    if status == 404:
        return (f"GitHub found nothing (404) while {what}; check that the repository exists, the PR number and "
                f"the token's access to it{detail}")
    if status == 422:
        return f"GitHub rejected the request (422) while {what}{detail}"
    return f"GitHub answered {status} while {what}{detail}"


def _mapping(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _time(value: object) -> datetime | None:
    """GitHub's ISO 8601 UTC time ("2026-12-03T10:00:00Z"), or None."""
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=timezone.utc)


def _fit_comment(body: str, marker: str) -> str:
    """A comment body within GitHub's limit that still carries its marker (the sticky comment is found by it)."""
    fitted = github_limits.fit(body, github_limits.COMMENT)
    return fitted if marker in fitted else github_limits.with_marker(body, marker)


class Publisher:
    """Writes the gate's results to one repository. Collaborators come in; nothing reads the environment."""

    def __init__(self, client: Github, repository: str, *, bot_login: str) -> None:
        self.client = client
        self.repository = repository
        self.bot_login = bot_login
        self._repo: Repository | None = None

    @property
    def repo(self) -> Repository:
        if self._repo is None:
            with api_call(f"reading repository {self.repository}"):
                self._repo = self.client.get_repo(self.repository)
        return self._repo

    # -- pull requests ---------------------------------------------------------------------------

    def pull_request(self, number: int) -> PullInfo:
        with api_call(f"reading pull request #{number} of {self.repository}"):
            pr = self.repo.get_pull(number)
            return PullInfo(number=pr.number, head_sha=pr.head.sha,
                            head_repo=pr.head.repo.full_name if pr.head.repo is not None else None,
                            head_ref=pr.head.ref, base_repo=pr.base.repo.full_name,
                            labels=tuple(label.name for label in pr.labels), base_sha=pr.base.sha)

    def find_pull_for_head(self, head_repo: str | None, head_branch: str | None, sha: str) -> int | None:
        """The open PR whose head is `head_repo:head_branch` at `sha` (fork runs carry no PR number)."""
        if not head_repo or not head_branch:
            return None
        owner = head_repo.split("/")[0]
        with api_call(f"looking up the pull request for {head_repo}:{head_branch} in {self.repository}"):
            for pr in self.repo.get_pulls(state="open", head=f"{owner}:{head_branch}"):
                if pr.head.sha == sha and pr.head.repo is not None and pr.head.repo.full_name == head_repo:
                    return pr.number
        return None

    def changed_files(self, number: int) -> list[str]:
        with api_call(f"listing the files of #{number} in {self.repository}"):
            return [f.filename for f in self.repo.get_pull(number).get_files()]

    def timeline(self, number: int) -> list[TimelineEntry]:
        """The PR's issue timeline in order: label changes, pushed commits, force pushes, comments.

        Server times (`created_at`) are kept for every event that has one; `committed` events carry only
        the commit's own dates, which its author sets, so they get none."""
        out = []
        with api_call(f"reading the timeline of #{number} in {self.repository}"):
            for item in self.repo.get_issue(number).get_timeline():
                raw = item.raw_data
                event = _text(raw.get("event")) or ""
                actor = _mapping(raw.get("actor")) or _mapping(raw.get("user"))  # "commented" events name a user
                ident = raw.get("id")
                out.append(TimelineEntry(
                    event=event, label=_text(_mapping(raw.get("label")).get("name")), actor=_text(actor.get("login")),
                    sha=_text(raw.get("sha") if event == "committed" else raw.get("commit_id")),
                    body=_text(raw.get("body")) if event == "commented" else None,
                    id=ident if isinstance(ident, int) and not isinstance(ident, bool) else None,
                    created_at=None if event == "committed" else _time(raw.get("created_at"))))
        return out

    def head_runs(self, sha: str) -> list[HeadRun]:
        """Workflow runs GitHub created for pull_request events with head `sha` (server-time evidence of the head)."""
        out = []
        with api_call(f"listing workflow runs of {sha[:12]} in {self.repository}"):
            # Attributes from the list answer only: raw_data would fetch every run again.
            for run in self.repo.get_workflow_runs(head_sha=sha, event="pull_request"):
                created = run.created_at
                if created is None:
                    continue
                repo = run.head_repository
                out.append(HeadRun(id=run.id, head_sha=run.head_sha or "", head_branch=run.head_branch,
                                   head_repo=repo.full_name if repo is not None else None, event=run.event or "",
                                   created_at=created if created.tzinfo else created.replace(tzinfo=timezone.utc)))
        return out

    def merge_base(self, base: str, head: str) -> str:
        """The merge base of `base` and `head`, as GitHub computes it (compare API)."""
        with api_call(f"comparing {base[:12]}...{head[:12]} in {self.repository}"):
            return self.repo.compare(base, head).merge_base_commit.sha

    def permission(self, login: str) -> str:
        """'admin', 'maintain', 'write', 'triage', 'read' or 'none' (404: not a collaborator)."""
        try:
            with api_call(f"reading the permission of @{login} on {self.repository}"):
                data = self.repo.get_collaborator_permission(login)
        except GitHubError as exc:
            if exc.status == 404:
                return "none"
            raise
        return str(data)

    def comments(self, number: int) -> list[IssueComment]:
        with api_call(f"listing comments of #{number} in {self.repository}"):
            return list(self.repo.get_issue(number).get_comments())

    def find_sticky(self, number: int, marker: str) -> IssueComment | None:
        """The bot's oldest comment carrying `marker`; a user's comment quoting the marker is never matched."""
        found = self._stickies(number, marker)
        return found[0] if found else None

    def _stickies(self, number: int, marker: str) -> list[IssueComment]:
        mine = [c for c in self.comments(number)
                if marker in (c.body or "") and c.user is not None and c.user.login == self.bot_login]
        return sorted(mine, key=lambda c: c.id)

    def upsert_comment(self, number: int, body: str, *, marker: str) -> CommentResult:
        """Edit the sticky comment in place, or create it; afterwards delete the bot's duplicates (oldest kept).

        Two report runs can both find no comment and both create one; listing again after creating
        and deleting all but the oldest makes them converge on one comment.
        """
        if marker not in body:
            raise GitHubError(f"refusing to post a comment without its marker {marker!r}")
        body = _fit_comment(body, marker)
        found = self._stickies(number, marker)
        if found:
            result = self._edit(found[0], body)
            self._delete(number, found[1:])  # duplicates left by an earlier run would keep stale text
            return result
        result = self._create(number, body, marker)
        keep = self.dedupe(number, marker)
        if keep is not None and keep.id != result.comment_id:
            result = self._edit(keep, body)
        return result

    def _create(self, number: int, body: str, marker: str) -> CommentResult:
        try:
            with api_call(f"creating the comment on #{number} in {self.repository}"):
                created = self.repo.get_issue(number).create_comment(body)
            return CommentResult("created", created.id, created.html_url)
        except GitHubError as first_failure:
            # The POST may have been applied although its response was lost: look again before retrying.
            existing = self.find_sticky(number, marker)
            if existing is not None:
                return self._edit(existing, body)
            if first_failure.status is not None and first_failure.status < 500:  # a client error will not change
                raise
            with api_call(f"creating the comment on #{number} in {self.repository} (second attempt)"):
                created = self.repo.get_issue(number).create_comment(body)
            return CommentResult("created", created.id, created.html_url)

    def dedupe(self, number: int, marker: str) -> IssueComment | None:
        """Delete every bot comment with `marker` but the oldest; return the one kept."""
        found = self._stickies(number, marker)
        self._delete(number, found[1:])
        return found[0] if found else None

    def _delete(self, number: int, extras: list[IssueComment]) -> None:
        for extra in extras:
            try:
                with api_call(f"deleting duplicate comment {extra.id} on #{number}"):
                    extra.delete()
            except GitHubError as exc:
                if exc.status != 404:  # another run deleted it first
                    raise

    def _edit(self, comment: IssueComment, body: str) -> CommentResult:
        if comment.body == body:
            return CommentResult("unchanged", comment.id, comment.html_url)
        with api_call(f"editing comment {comment.id}"):
            comment.edit(body)
        return CommentResult("updated", comment.id, comment.html_url)

    def remove_label(self, number: int, label: str) -> bool:
        """Remove a one-shot label; False when it was already gone (GitHub answers a plain 404)."""
        try:
            with api_call(f"removing label {label!r} from #{number} in {self.repository}"):
                self.repo.get_issue(number).remove_from_labels(label)
        except GitHubError as exc:
            if exc.status == 404:
                return False
            raise
        return True

    # -- set-up (issue 50) -------------------------------------------------------------------------

    def default_branch(self) -> str:
        with api_call(f"reading repository {self.repository}"):
            return self.repo.default_branch or "main"

    def environment_policy(self, name: str) -> BranchPolicy:
        """The deployment branch policy of environment `name`; `error` says why it could not be read (the token
        may lack actions: read), never raised: the caller reports it as one line."""
        base = f"/repos/{self.repository}/environments/{quote(name, safe='')}"
        try:
            with api_call(f"reading the environment {name}"):
                _, data = self.client.requester.requestJsonAndCheck("GET", base)
                policy = _mapping(_mapping(data).get("deployment_branch_policy")) or None
                if policy is None:
                    return BranchPolicy(any_branch=True)
                custom: tuple[str, ...] = ()
                if policy.get("custom_branch_policies"):
                    _, listed = self.client.requester.requestJsonAndCheck(
                        "GET", f"{base}/deployment-branch-policies", parameters={"per_page": 100})
                    custom = tuple(("tag:" if _mapping(b).get("type") == "tag" else "") + str(_mapping(b).get("name"))
                                   for b in _mapping(listed).get("branch_policies") or [])
                return BranchPolicy(protected_branches=bool(policy.get("protected_branches")), custom=custom)
        except GitHubError as exc:
            return BranchPolicy(error=f"HTTP {exc.status}" if exc.status else "GitHub unreachable")

    def secret_names(self, where: str) -> set[str] | None:
        """Names of the secrets at `/repos/<repo>/<where>` (never their values); None when the token may not
        list them (only an admin's token may)."""
        try:
            with api_call(f"listing the secrets' names at {where}"):
                _, data = self.client.requester.requestJsonAndCheck(
                    "GET", f"/repos/{self.repository}/{where}", parameters={"per_page": 100})
        except GitHubError:
            return None
        return {str(_mapping(secret).get("name")) for secret in _mapping(data).get("secrets") or []}

    def installation_covers_repository(self) -> bool | None:
        """Whether the token's App installation covers this repository (None: the token cannot say)."""
        try:
            with api_call("listing the installation's repositories"):
                _, data = self.client.requester.requestJsonAndCheck("GET", "/installation/repositories",
                                                                    parameters={"per_page": 100})
        except GitHubError:
            return None
        names = {_mapping(r).get("full_name") for r in _mapping(data).get("repositories") or []}
        if self.repository in names:
            return True
        total = _mapping(data).get("total_count")
        return False if isinstance(total, int) and total <= len(names) else None  # beyond one page: unknown

    # -- check run / commit status ----------------------------------------------------------------

    def check_runs(self, sha: str, *, prefix: str) -> list[CheckState]:
        """Every check run on `sha` whose name starts with `prefix`, newest first, with who made it (`app`,
        set by GitHub) and its `external_id` (settable only through the API). filter=all: GitHub's default
        (latest) keeps one check run per name, so a look-alike posted later would hide the gate's own."""
        out: list[CheckState] = []
        with api_call(f"listing check runs on {sha[:12]} in {self.repository}"):
            for run in self.repo.get_commit(sha).get_check_runs(filter="all"):
                if not run.name.startswith(prefix):
                    continue
                output = run.output
                out.append(CheckState(name=run.name, conclusion=run.conclusion, run_id=run.id,
                                      title=(output.title or "") if output else "",
                                      summary=(output.summary or "") if output else "",
                                      external_id=run.external_id, app=run.app.slug if run.app is not None else None,
                                      at=run.completed_at or run.started_at))
        return sorted(out, key=lambda state: -state.run_id)

    def commit_statuses(self, sha: str, *, prefix: str) -> list[CommitStatus]:
        """Every commit status on `sha` whose context starts with `prefix`, with who set it: branch protection
        takes a status as a required check of that name, and any writer's workflow can set one."""
        with api_call(f"listing commit statuses on {sha[:12]} in {self.repository}"):
            return [CommitStatus(context=status.context, state=status.state, at=status.created_at,
                                 creator=status.creator.login if status.creator is not None else None)
                    for status in self.repo.get_commit(sha).get_statuses()
                    if (status.context or "").casefold().startswith(prefix.casefold())]  # contexts ignore case

    def publish_check(self, sha: str, *, name: str, conclusion: str, status_state: str, title: str, summary: str,
                      details_url: str | None = None, fallback_to_status: bool = True,
                      external_id: str | None = None) -> CheckResult:
        """A completed check run on `sha`; a commit status where check runs are not allowed (403)."""
        output: dict = {"title": title[:github_limits.CHECK_TITLE_MAX_CHARS], "summary": github_limits.fit(summary, github_limits.CHECK_SUMMARY)}
        extra: dict = {"details_url": details_url} if details_url else {}
        if external_id:
            extra["external_id"] = external_id
        try:
            with api_call(f"creating check run {name!r} on {sha[:12]} in {self.repository}"):
                run = self.repo.create_check_run(name=name, head_sha=sha, status="completed",
                                                 conclusion=conclusion, output=output, **extra)
            return CheckResult("check_run", conclusion, run.html_url)
        except GitHubError as exc:
            # Only GitHub Apps (incl. the Actions token with checks: write) may create check runs; a PAT
            # or a token without that scope gets 403. A commit status says the same thing.
            if not (fallback_to_status and exc.status == 403):
                raise
        return self.publish_status(sha, name=name, state=status_state, description=title, target_url=details_url)

    def publish_status(self, sha: str, *, name: str, state: str, description: str,
                       target_url: str | None = None) -> CheckResult:
        extra = {"target_url": target_url} if target_url else {}
        with api_call(f"setting commit status {name!r} on {sha[:12]} in {self.repository}"):
            status = self.repo.get_commit(sha).create_status(
                state=state, description=description[:github_limits.STATUS_DESCRIPTION_MAX_CHARS], context=name, **extra)
        return CheckResult("status", state, status.url)

    # -- tracking issue (nightly on main) -----------------------------------------------------------

    def upsert_tracking_issue(self, *, title: str, body: str, marker: str, regressed: bool,
                              note: str) -> str:
        """One open issue for regressions on main: opened or updated while regressed, closed on recovery.

        Returns what was done: "opened", "updated", "closed" or "none".
        """
        with api_call("listing open issues"):
            # PyGithub sends `creator` as given; its stub asks for a NamedUser, a login string is what the API takes.
            issue = next((i for i in self.repo.get_issues(state="open", creator=self.bot_login)  # type: ignore[arg-type]
                          if marker in (i.body or "") and i.pull_request is None), None)
        body = github_limits.with_marker(body, marker)
        if regressed and issue is None:
            with api_call("opening the tracking issue"):
                self.repo.create_issue(title=title[:250], body=body)
            return "opened"
        if regressed and issue is not None:
            with api_call(f"updating tracking issue #{issue.number}"):
                issue.edit(body=body)
                issue.create_comment(github_limits.fit(note, github_limits.COMMENT))
            return "updated"
        if issue is not None:
            with api_call(f"closing tracking issue #{issue.number}"):
                issue.create_comment(github_limits.fit(note, github_limits.COMMENT))
                issue.edit(state="closed", state_reason="completed")
            return "closed"
        return "none"
