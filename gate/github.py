"""Talk to GitHub through PyGithub: one sticky PR comment, a check run (or commit status), labels, a tracking issue.

Everything here receives already-rendered markdown; it never renders, and never posts text taken
from an uploaded artifact (gate.untrusted re-renders reports first). `base_url` is GITHUB_API_URL, so
GitHub Enterprise Server works unchanged. API failures become one GitHubError line naming the
call and the HTTP status; nothing here prints a traceback.
Facts relied on: shared/reference/github-actions.md §3, §4, §7.
"""
from __future__ import annotations

import logging
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

import requests
from github import Auth, Github, GithubException, GithubRetry
from github.IssueComment import IssueComment
from github.Repository import Repository

from gate.errors import GateError
from gate.render import CHECK_SUMMARY_BUDGET, COMMENT_BUDGET
from gate.verdict import ERROR_CHECK_CONCLUSION, ERROR_STATUS_STATE, Verdict

# GitHub rejects comment bodies over 65,536 characters and check-run summaries over 65,535 (counted in
# UTF-8 bytes in at least one report); stay below both with room for the truncation note.
# A last guard only: gate.render already fits each output within its own budget.
COMMENT_MAX_CHARS = COMMENT_BUDGET.limit
CHECK_SUMMARY_MAX_BYTES = CHECK_SUMMARY_BUDGET.limit
CHECK_TITLE_MAX_CHARS = 250
STATUS_DESCRIPTION_MAX_CHARS = 140
TRUNCATION_NOTE = "\n\n_Cut to fit GitHub's size limit; the full report is in the workflow run's artifact._\n"

def _verdict(value: str) -> Verdict | None:
    """The verdict named by `value`; None for "error" (no report: a neutral check, an error status)."""
    try:
        return Verdict(value)
    except ValueError:
        return None


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


def connect(*, api_url: str, token: str, retry: GithubRetry | None = None, throttle: bool = True) -> Github:
    """A PyGithub client for `api_url` (GITHUB_API_URL). Tests pass retry=None, throttle=False."""
    # PyGithub logs every retry at INFO on stderr; the gate reports failures itself, in one line.
    logging.getLogger("github").setLevel(logging.WARNING)
    extra = {} if throttle else {"seconds_between_requests": None, "seconds_between_writes": None}
    return Github(auth=Auth.Token(token), base_url=api_url, retry=retry, per_page=100, timeout=30, **extra)


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
                f"statuses: write) or a rate limit was hit{detail}")
    if status == 404:
        return f"GitHub found nothing (404) while {what}; check the repository, PR number and token scope{detail}"
    if status == 422:
        return f"GitHub rejected the request (422) while {what}{detail}"
    return f"GitHub answered {status} while {what}{detail}"


def fit_chars(text: str, limit: int) -> str:
    """Cut to `limit` characters, ending with a note that says so."""
    if len(text) <= limit:
        return text
    return text[: limit - len(TRUNCATION_NOTE)] + TRUNCATION_NOTE


def fit_utf8(text: str, limit: int) -> str:
    """Cut to `limit` UTF-8 bytes without splitting a character, ending with a note that says so."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    room = limit - len(TRUNCATION_NOTE.encode("utf-8"))
    return data[:room].decode("utf-8", errors="ignore") + TRUNCATION_NOTE


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

    def pull_request_head(self, number: int) -> tuple[str, str | None, str]:
        """(head SHA, head repository full name or None if deleted, head branch) of PR `number`."""
        with api_call(f"reading pull request #{number}"):
            pr = self.repo.get_pull(number)
            head_repo = pr.head.repo.full_name if pr.head.repo is not None else None
            return pr.head.sha, head_repo, pr.head.ref

    def find_sticky(self, number: int, marker: str) -> IssueComment | None:
        """The bot's comment carrying `marker`; a user's comment quoting the marker is never matched."""
        with api_call(f"listing comments of #{number}"):
            for comment in self.repo.get_issue(number).get_comments():
                if marker in (comment.body or "") and comment.user is not None and comment.user.login == self.bot_login:
                    return comment
        return None

    def upsert_comment(self, number: int, body: str, *, marker: str) -> CommentResult:
        """Edit the sticky comment in place, or create it; never a second one for the same marker."""
        if marker not in body:
            raise GitHubError(f"refusing to post a comment without its marker {marker!r}")
        body = fit_chars(body, COMMENT_MAX_CHARS)
        if marker not in body:  # the marker sits at the end and was cut off: put it back
            body = fit_chars(body, COMMENT_MAX_CHARS - len(marker) - 1) + "\n" + marker
        existing = self.find_sticky(number, marker)
        if existing is not None:
            return self._edit(existing, body)
        try:
            with api_call(f"creating the comment on #{number}"):
                created = self.repo.get_issue(number).create_comment(body)
            return CommentResult("created", created.id, created.html_url)
        except GitHubError as first_failure:
            # The POST may have been applied although its response was lost: look again before retrying.
            existing = self.find_sticky(number, marker)
            if existing is not None:
                return self._edit(existing, body)
            if first_failure.status is not None and first_failure.status < 500:  # a client error will not change
                raise
            with api_call(f"creating the comment on #{number} (second attempt)"):
                created = self.repo.get_issue(number).create_comment(body)
            return CommentResult("created", created.id, created.html_url)

    def _edit(self, comment: IssueComment, body: str) -> CommentResult:
        if comment.body == body:
            return CommentResult("unchanged", comment.id, comment.html_url)
        with api_call(f"editing comment {comment.id}"):
            comment.edit(body)
        return CommentResult("updated", comment.id, comment.html_url)

    def remove_label(self, number: int, label: str) -> bool:
        """Remove a one-shot label; False when it was already gone (GitHub answers a plain 404)."""
        try:
            with api_call(f"removing label {label!r} from #{number}"):
                self.repo.get_issue(number).remove_from_labels(label)
        except GitHubError as exc:
            if exc.status == 404:
                return False
            raise
        return True

    # -- check run / commit status ----------------------------------------------------------------

    def publish_check(self, sha: str, *, name: str, verdict: str, title: str, summary: str,
                      details_url: str | None = None, fallback_to_status: bool = True) -> CheckResult:
        """A completed check run on `sha`; a commit status where check runs are not allowed (403)."""
        conclusion = _verdict(verdict).check_conclusion if _verdict(verdict) else ERROR_CHECK_CONCLUSION
        output = {"title": title[:CHECK_TITLE_MAX_CHARS], "summary": fit_utf8(summary, CHECK_SUMMARY_MAX_BYTES)}
        extra = {"details_url": details_url} if details_url else {}
        try:
            with api_call(f"creating check run {name!r} on {sha[:12]}"):
                run = self.repo.create_check_run(name=name, head_sha=sha, status="completed",
                                                 conclusion=conclusion, output=output, **extra)
            return CheckResult("check_run", conclusion, run.html_url)
        except GitHubError as exc:
            # Only GitHub Apps (incl. the Actions token with checks: write) may create check runs; a PAT
            # or a token without that scope gets 403. A commit status says the same thing.
            if not (fallback_to_status and exc.status == 403):
                raise
        return self.publish_status(sha, name=name, verdict=verdict, description=title, target_url=details_url)

    def publish_status(self, sha: str, *, name: str, verdict: str, description: str,
                       target_url: str | None = None) -> CheckResult:
        state = _verdict(verdict).status_state if _verdict(verdict) else ERROR_STATUS_STATE
        extra = {"target_url": target_url} if target_url else {}
        with api_call(f"setting commit status {name!r} on {sha[:12]}"):
            status = self.repo.get_commit(sha).create_status(
                state=state, description=description[:STATUS_DESCRIPTION_MAX_CHARS], context=name, **extra)
        return CheckResult("status", state, status.url)

    # -- tracking issue (nightly on main) -----------------------------------------------------------

    def upsert_tracking_issue(self, *, title: str, body: str, marker: str, regressed: bool,
                              note: str) -> str:
        """One open issue for regressions on main: opened or updated while regressed, closed on recovery.

        Returns what was done: "opened", "updated", "closed" or "none".
        """
        with api_call("listing open issues"):
            issue = next((i for i in self.repo.get_issues(state="open", creator=self.bot_login)
                          if marker in (i.body or "") and i.pull_request is None), None)
        body = fit_chars(body, COMMENT_MAX_CHARS - len(marker) - 1) + "\n" + marker
        if regressed and issue is None:
            with api_call("opening the tracking issue"):
                self.repo.create_issue(title=title[:250], body=body)
            return "opened"
        if regressed:
            with api_call(f"updating tracking issue #{issue.number}"):
                issue.edit(body=body)
                issue.create_comment(fit_chars(note, COMMENT_MAX_CHARS))
            return "updated"
        if issue is not None:
            with api_call(f"closing tracking issue #{issue.number}"):
                issue.create_comment(fit_chars(note, COMMENT_MAX_CHARS))
                issue.edit(state="closed", state_reason="completed")
            return "closed"
        return "none"
