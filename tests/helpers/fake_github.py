"""TEST DOUBLE: a tiny GitHub REST server on 127.0.0.1 for PyGithub to talk to, recording every request.

It implements only the endpoints gate.publish.github uses, with GitHub's JSON shapes (the fields PyGithub
reads), its error bodies ({"message": ...}), Link-header pagination, and URLs in bodies that use
exactly the host:port PyGithub was given (PyGithub asserts on that). Failures are injected per
method + path: `fail(...)` answers a status instead of the real handler, optionally after
applying the change (a POST whose response was lost).
"""
from __future__ import annotations

import itertools
import json
import re
import threading
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

REPO = "sgl-project/sglang-omni"
TOKEN = "test-token"
STAMP_KEY = b"0123456789abcdef0123456789abcdef"  # the trusted job's stamp key (an environment secret)
BOT = "github-actions[bot]"
APP = {"id": 15368, "slug": "github-actions", "name": "GitHub Actions"}  # the app behind the Actions token
MERGE_BASE = "b" * 40
START = datetime(2026, 12, 1, 9, 0, tzinfo=timezone.utc)


def iso(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, list[str]]
    body: Any
    headers: dict[str, str]


@dataclass
class Failure:
    method: str
    pattern: re.Pattern
    status: int
    times: int
    apply: bool  # run the real handler first (the change happens), then answer the error


@dataclass
class State:
    labels: dict[int, list[str]] = field(default_factory=dict)  # PR/issue number -> label names
    comments: dict[int, dict[str, Any]] = field(default_factory=dict)  # comment id -> {issue, body, user}
    issues: dict[int, dict[str, Any]] = field(default_factory=dict)  # tracking issues by number
    check_runs: list[dict[str, Any]] = field(default_factory=list)
    statuses: list[dict[str, Any]] = field(default_factory=list)
    pulls: dict[int, dict[str, Any]] = field(default_factory=dict)  # number -> {head_sha, head_repo, head_ref, files}
    timeline: dict[int, list[dict[str, Any]]] = field(default_factory=dict)  # number -> issue-timeline events
    permissions: dict[str, str] = field(default_factory=dict)  # login -> admin/maintain/write/triage/read
    workflow_runs: list[dict[str, Any]] = field(default_factory=list)  # runs GitHub created for pull_request events
    # Environments (name -> {"deployment_branch_policy": None | {...}, "branch_policies": [{"name", "type"}],
    # "secrets": [names]}); secrets' names at repository and organisation level; the token's installation repos.
    environments: dict[str, dict[str, Any]] = field(default_factory=dict)
    repo_secrets: list[str] = field(default_factory=list)
    org_secrets: list[str] = field(default_factory=list)
    installation_repos: list[str] = field(default_factory=lambda: [REPO])


class FakeGitHub:
    def __init__(self) -> None:
        self.state = State()
        self.requests: list[Recorded] = []
        self.failures: list[Failure] = []
        self.checks_forbidden = False
        self.app = APP  # the app behind the token the gate posts with (a dedicated App in some tests)
        self.now = START  # the fake's clock: every recorded event advances it a minute
        self._ids = itertools.count(1000)
        self._lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)

    def __enter__(self) -> FakeGitHub:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    # -- setup helpers -------------------------------------------------------------------------

    @property
    def poster(self) -> str:
        """The login the token's writes show: github-actions[bot], or `<slug>[bot]` for a dedicated App."""
        return BOT if self.app["slug"] == APP["slug"] else f"{self.app['slug']}[bot]"

    def tick(self) -> datetime:
        self.now += timedelta(minutes=1)
        return self.now

    def add_pull(self, number: int, *, labels: tuple[str, ...] = (), head_sha: str = "a" * 40,
                 head_repo: str | None = REPO, head_ref: str = "feature/x", files: tuple[str, ...] = (),
                 run: bool = True) -> None:
        """A PR opened at its head commit (a pull_request run records when), then the given labels added by
        'maintainer' (who has write access)."""
        self.state.permissions.setdefault("maintainer", "write")
        self.state.labels[number] = []
        self.state.pulls[number] = {"head_sha": head_sha, "head_repo": head_repo, "head_ref": head_ref,
                                    "files": list(files)}
        self.state.timeline[number] = []
        self._commit_event(number, head_sha, None)
        if run:
            self.add_workflow_run(number, head_sha)
        for label in labels:
            self.add_label(number, label)

    def push(self, number: int, sha: str, *, author_date: datetime | None = None, run: bool = True) -> None:
        """New commits on the PR: the head moves, the timeline shows a `committed` event placed by the commit's
        (author-set) date, and GitHub creates a pull_request (synchronize) run for the new head."""
        self.state.pulls[number]["head_sha"] = sha
        self._commit_event(number, sha, author_date)
        if run:
            self.add_workflow_run(number, sha)

    def force_push(self, number: int, sha: str, *, name_commit: bool = True, run: bool = True) -> None:
        """A force push: a head_ref_force_pushed event with a server time (commit_id null when not named)."""
        self.state.pulls[number]["head_sha"] = sha
        self._event(number, {"event": "head_ref_force_pushed", "actor": self._user("contributor"),
                             "commit_id": sha if name_commit else None})
        if run:
            self.add_workflow_run(number, sha)

    def add_workflow_run(self, number: int, sha: str, *, event: str = "pull_request") -> dict[str, Any]:
        p = self.state.pulls[number]
        run = {"id": next(self._ids), "head_sha": sha, "head_branch": p["head_ref"], "event": event,
               "head_repo": p["head_repo"], "created_at": self.tick()}
        self.state.workflow_runs.append(run)
        return run

    def workflow_run_payload(self, number: int, sha: str, *, attempt: int = 1) -> dict[str, Any]:
        """The benchmark run a label started, as the workflow_run event describes it (GitHub writes it)."""
        run = self.add_workflow_run(number, sha)
        return {"id": run["id"], "run_attempt": attempt, "created_at": run["created_at"]}

    def add_label(self, number: int, label: str, *, actor: str = "maintainer") -> int:
        if label not in self.state.labels[number]:
            self.state.labels[number].append(label)
        return self._event(number, {"event": "labeled", "label": {"name": label, "color": "ededed"},
                                    "actor": self._user(actor)})

    def remove_label_as(self, number: int, label: str, *, actor: str) -> None:
        """A person removes a label (an `unlabeled` event)."""
        self.state.labels[number].remove(label)
        self._event(number, {"event": "unlabeled", "label": {"name": label, "color": "ededed"},
                             "actor": self._user(actor)})

    def comment_as(self, number: int, body: str, *, user: str) -> int:
        """A comment by a person (shows in the timeline as a 'commented' event, removed with the comment)."""
        cid = self.add_comment(number, body, user=user)
        self._event(number, {"event": "commented", "id": cid, "body": body, "user": self._user(user),
                             "actor": self._user(user), "author_association": "MEMBER"})
        return cid

    def add_job_check(self, sha: str, name: str, conclusion: str = "success") -> None:
        """A check run made by a workflow job named `name` (GitHub Actions sets a GUID external_id)."""
        self.state.check_runs.append({"id": next(self._ids), "name": name, "head_sha": sha, "status": "completed",
                                      "conclusion": conclusion, "external_id": str(uuid.uuid4()), "app": APP,
                                      "output": {"title": "job", "summary": ""}, "completed_at": iso(self.tick())})

    def add_check_as(self, sha: str, name: str, conclusion: str, *, external_id: str | None,
                     app: dict[str, Any] | None = None, title: str = "forged", summary: str = "") -> int:
        """A check run created through the API by another token: a writer's branch workflow (the Actions app,
        like the gate's own token) or another GitHub App (`app`), with any `external_id`, title and summary it
        chooses (a copy of a genuine check run's, say)."""
        ident = next(self._ids)
        self.state.check_runs.append({"id": ident, "name": name, "head_sha": sha, "status": "completed",
                                      "conclusion": conclusion, "external_id": external_id, "app": app or APP,
                                      "output": {"title": title, "summary": summary},
                                      "completed_at": iso(self.tick())})
        return ident

    def add_status_as(self, sha: str, context: str, state: str, *, creator: str) -> None:
        """A commit status set through the API by another token (a writer's branch workflow: the Actions token
        may set any context, `ASR gate` included)."""
        self.state.statuses.append({"sha": sha, "state": state, "context": context, "description": "forged",
                                    "id": next(self._ids), "creator": creator, "created_at": iso(self.tick())})

    def _event(self, number: int, event: dict[str, Any]) -> int:
        eid = event.get("id") or next(self._ids)
        self.state.timeline.setdefault(number, []).append(dict(event, id=eid, created_at=self.tick()))
        return eid

    def _commit_event(self, number: int, sha: str, author_date: datetime | None) -> None:
        """GitHub sorts `committed` events by the commit's own date, which its author sets."""
        date = author_date or self.tick()
        event = {"event": "committed", "sha": sha, "author": {"name": "dev", "date": iso(date)},
                 "committer": {"name": "dev", "date": iso(date)}, "message": "change", "_date": date}
        events = self.state.timeline[number]
        at = next((i for i, e in enumerate(events) if (e.get("_date") or e.get("created_at")) > date), len(events))
        events.insert(at, event)

    def check_runs_on(self, sha: str) -> list[dict[str, Any]]:
        return [r for r in self.state.check_runs if r["head_sha"] == sha]

    def add_comment(self, number: int, body: str, *, user: str = BOT) -> int:
        cid = next(self._ids)
        self.state.comments[cid] = {"issue": number, "body": body, "user": user}
        return cid

    def fail(self, method: str, path_regex: str, status: int, *, times: int = 1, apply: bool = False) -> None:
        self.failures.append(Failure(method, re.compile(path_regex), status, times, apply))

    def comments_on(self, number: int) -> list[dict[str, Any]]:
        return [c for c in self.state.comments.values() if c["issue"] == number]

    def calls(self, method: str, path_regex: str = "") -> list[Recorded]:
        return [r for r in self.requests if r.method == method and re.search(path_regex, r.path)]

    # -- JSON shapes -----------------------------------------------------------------------------

    def _user(self, login: str) -> dict[str, Any]:
        return {"login": login, "id": 41898282, "type": "Bot" if login.endswith("[bot]") else "User",
                "url": f"{self.base_url}/users/{login}"}

    def _repo(self) -> dict[str, Any]:
        return {"id": 1, "name": REPO.split("/")[1], "full_name": REPO, "url": f"{self.base_url}/repos/{REPO}",
                "owner": self._user(REPO.split("/")[0]), "private": False, "default_branch": "main"}

    def _comment(self, cid: int) -> dict[str, Any]:
        c = self.state.comments[cid]
        return {"id": cid, "body": c["body"], "user": self._user(c["user"]),
                "url": f"{self.base_url}/repos/{REPO}/issues/comments/{cid}",
                "html_url": f"https://github.test/{REPO}/pull/{c['issue']}#issuecomment-{cid}",
                "issue_url": f"{self.base_url}/repos/{REPO}/issues/{c['issue']}"}

    def _issue(self, number: int) -> dict[str, Any]:
        i = self.state.issues[number]
        return {"number": number, "id": number, "title": i["title"], "body": i["body"], "state": i["state"],
                "user": self._user(i["user"]), "labels": [{"name": n} for n in self.state.labels.get(number, [])],
                "pull_request": None,
                "url": f"{self.base_url}/repos/{REPO}/issues/{number}",
                "html_url": f"https://github.test/{REPO}/issues/{number}",
                "comments_url": f"{self.base_url}/repos/{REPO}/issues/{number}/comments"}

    def _pull(self, number: int) -> dict[str, Any]:
        p = self.state.pulls[number]
        head_repo = None if p["head_repo"] is None else {"full_name": p["head_repo"],
                                                          "url": f"{self.base_url}/repos/{p['head_repo']}"}
        return {"number": number, "id": number, "state": "open",
                "url": f"{self.base_url}/repos/{REPO}/pulls/{number}",
                "issue_url": f"{self.base_url}/repos/{REPO}/issues/{number}",
                "head": {"sha": p["head_sha"], "ref": p["head_ref"], "repo": head_repo},
                "base": {"sha": "f" * 40, "ref": "main", "repo": self._repo()},
                "labels": [{"name": n} for n in self.state.labels.get(number, [])]}

    # -- request handling ------------------------------------------------------------------------

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # keep pytest output clean
                pass

            def _serve(self) -> None:
                split = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                body = json.loads(raw) if raw else None
                with fake._lock:
                    fake.requests.append(Recorded(self.command, split.path, parse_qs(split.query), body, dict(self.headers)))
                    status, payload, headers = fake._dispatch(self.command, split.path, parse_qs(split.query), body,
                                                              self.headers.get("Authorization", ""))
                data = b"" if payload is None else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PATCH = do_DELETE = do_PUT = _serve

        return Handler

    def _dispatch(self, method: str, path: str, query: dict, body: Any, auth: str) -> tuple[int, Any, dict]:
        if auth != f"token {TOKEN}":
            return 401, {"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest"}, {}
        failure = next((f for f in self.failures if f.method == method and f.pattern.search(path) and f.times > 0), None)
        if failure is not None:
            failure.times -= 1
            if failure.apply:
                self._route(method, path, query, body)
            return failure.status, {"message": f"injected {failure.status}"}, {}
        return self._route(method, path, query, body)

    def _route(self, method: str, path: str, query: dict, body: Any) -> tuple[int, Any, dict]:
        base = f"/repos/{REPO}"
        if method == "GET" and path == "/installation/repositories":
            repos = [dict(self._repo(), full_name=name) for name in self.state.installation_repos]
            return 200, {"total_count": len(repos), "repositories": repos}, {}
        if not path.startswith(base):
            return 404, {"message": "Not Found"}, {}
        rest = path[len(base):]
        routes = [
            ("GET", r"", lambda m: (200, self._repo(), {})),
            ("GET", r"/pulls", lambda m: self._list_pulls(query)),
            ("GET", r"/environments/([^/]+)", lambda m: self._environment(unquote(m[1]))),
            ("GET", r"/environments/([^/]+)/deployment-branch-policies", lambda m: self._branch_policies(unquote(m[1]))),
            ("GET", r"/environments/([^/]+)/secrets", lambda m: self._secrets(
                self.state.environments[unquote(m[1])].get("secrets", []) if unquote(m[1]) in self.state.environments
                else None)),
            ("GET", r"/actions/secrets", lambda m: self._secrets(self.state.repo_secrets)),
            ("GET", r"/actions/organization-secrets", lambda m: self._secrets(self.state.org_secrets)),
            ("GET", r"/pulls/(\d+)", self._get_pull),
            ("GET", r"/pulls/(\d+)/files", lambda m: self._pull_files(int(m[1]))),
            ("GET", r"/issues/(\d+)/timeline", lambda m: self._timeline(int(m[1]), query)),
            ("GET", r"/collaborators/([^/]+)/permission", lambda m: self._permission(unquote(m[1]))),
            ("GET", r"/actions/runs", lambda m: self._list_workflow_runs(query)),
            ("GET", r"/compare/([0-9a-f]{40})\.\.\.([0-9a-f]{40})", lambda m: self._compare(m[1], m[2])),
            ("GET", r"/commits/([0-9a-f]{40})/check-runs", lambda m: self._list_check_runs(m[1], query)),
            ("DELETE", r"/issues/comments/(\d+)", lambda m: self._delete_comment(int(m[1]))),
            ("GET", r"/issues/(\d+)", lambda m: self._get_issue(int(m[1]))),
            ("GET", r"/issues/(\d+)/comments", lambda m: self._list_comments(int(m[1]), query)),
            ("POST", r"/issues/(\d+)/comments", lambda m: self._create_comment(int(m[1]), body)),
            ("PATCH", r"/issues/comments/(\d+)", lambda m: self._edit_comment(int(m[1]), body)),
            ("DELETE", r"/issues/(\d+)/labels/(.+)", lambda m: self._remove_label(int(m[1]), unquote(m[2]))),
            ("POST", r"/check-runs", lambda m: self._create_check_run(body)),
            ("GET", r"/commits/([0-9a-f]{40})",
             lambda m: (200, {"sha": m[1], "url": f"{self.base_url}{base}/commits/{m[1]}"}, {})),
            ("POST", r"/statuses/([0-9a-f]{40})", lambda m: self._create_status(m[1], body)),
            # The documented path, and the older one PyGithub's Commit.get_statuses calls; GitHub serves both.
            ("GET", r"/commits/([0-9a-f]{40})/statuses", lambda m: self._list_statuses(m[1], query)),
            ("GET", r"/statuses/([0-9a-f]{40})", lambda m: self._list_statuses(m[1], query)),
            ("GET", r"/issues", lambda m: self._list_issues(query)),
            ("POST", r"/issues", lambda m: self._create_issue(body)),
            ("PATCH", r"/issues/(\d+)", lambda m: self._edit_issue(int(m[1]), body)),
        ]
        for verb, pattern, handler in routes:
            match = re.fullmatch(pattern, rest)
            if verb == method and match:
                return handler(match)
        return 404, {"message": "Not Found"}, {}

    def add_environment(self, name: str, *, branches: tuple[str, ...] | None = ("main",), protected: bool = False,
                        secrets: tuple[str, ...] = ()) -> None:
        """An environment: `branches` None admits every branch (what GitHub creates when a workflow names an
        environment that does not exist); else its custom deployment branch policies."""
        policy = None if branches is None and not protected else {
            "protected_branches": protected, "custom_branch_policies": branches is not None and not protected}
        self.state.environments[name] = {"deployment_branch_policy": policy, "secrets": list(secrets),
                                         "branch_policies": [{"name": b, "type": "branch"} for b in branches or ()]}

    def _environment(self, name: str) -> tuple[int, Any, dict]:
        env = self.state.environments.get(name)
        if env is None:
            return 404, {"message": "Not Found"}, {}
        return 200, {"id": 1, "name": name, "deployment_branch_policy": env["deployment_branch_policy"],
                     "protection_rules": [], "url": f"{self.base_url}/repos/{REPO}/environments/{name}"}, {}

    def _branch_policies(self, name: str) -> tuple[int, Any, dict]:
        env = self.state.environments.get(name)
        if env is None:
            return 404, {"message": "Not Found"}, {}
        policies = [dict(p, id=i + 1) for i, p in enumerate(env["branch_policies"])]
        return 200, {"total_count": len(policies), "branch_policies": policies}, {}

    def _secrets(self, names: list[str] | None) -> tuple[int, Any, dict]:
        if names is None:
            return 404, {"message": "Not Found"}, {}
        return 200, {"total_count": len(names), "secrets": [{"name": n, "created_at": iso(START), "updated_at": iso(START)}
                                                            for n in names]}, {}

    def _get_issue(self, number: int) -> tuple[int, Any, dict]:
        if number in self.state.issues:
            return 200, self._issue(number), {}
        if number in self.state.pulls:  # a PR is also an issue, with a pull_request key
            return 200, {"number": number, "id": number, "state": "open", "title": "PR", "body": "",
                         "user": self._user("contributor"), "labels": [{"name": n} for n in self.state.labels[number]],
                         "url": f"{self.base_url}/repos/{REPO}/issues/{number}",
                         "pull_request": {"url": f"{self.base_url}/repos/{REPO}/pulls/{number}"}}, {}
        return 404, {"message": "Not Found"}, {}

    def _get_pull(self, m: re.Match) -> tuple[int, Any, dict]:
        number = int(m[1])
        if number not in self.state.pulls:
            return 404, {"message": "Not Found"}, {}
        return 200, self._pull(number), {}

    def _list_pulls(self, query: dict) -> tuple[int, Any, dict]:
        head = query.get("head", [None])[0]
        chosen = [n for n, p in sorted(self.state.pulls.items())
                  if head is None or (p["head_repo"] and f"{p['head_repo'].split('/')[0]}:{p['head_ref']}" == head)]
        return 200, [self._pull(n) for n in chosen], {}

    def _pull_files(self, number: int) -> tuple[int, Any, dict]:
        if number not in self.state.pulls:
            return 404, {"message": "Not Found"}, {}
        return 200, [{"filename": f, "status": "modified", "sha": "0" * 40} for f in self.state.pulls[number]["files"]], {}

    def _timeline(self, number: int, query: dict) -> tuple[int, Any, dict]:
        if number not in self.state.timeline:
            return 404, {"message": "Not Found"}, {}
        out = []
        for event in self.state.timeline[number]:
            shaped = {k: v for k, v in event.items() if not k.startswith("_")}
            if "created_at" in shaped:
                shaped["created_at"] = iso(shaped["created_at"])
                shaped["node_id"] = f"E{shaped['id']}"
                shaped.setdefault("commit_id", None)
                shaped["performed_via_github_app"] = None
            out.append(shaped)
        return 200, out, {}

    def _list_workflow_runs(self, query: dict) -> tuple[int, Any, dict]:
        head = query.get("head_sha", [None])[0]
        event = query.get("event", [None])[0]
        runs = [r for r in self.state.workflow_runs
                if (head is None or r["head_sha"] == head) and (event is None or r["event"] == event)]
        shaped = [{"id": r["id"], "name": "ASR gate", "head_sha": r["head_sha"], "head_branch": r["head_branch"],
                   "event": r["event"], "status": "completed", "conclusion": "success", "run_attempt": 1,
                   "created_at": iso(r["created_at"]), "updated_at": iso(r["created_at"]),
                   "url": f"{self.base_url}/repos/{REPO}/actions/runs/{r['id']}",
                   "head_repository": None if r["head_repo"] is None else {
                       "full_name": r["head_repo"], "url": f"{self.base_url}/repos/{r['head_repo']}"}}
                  for r in sorted(runs, key=lambda r: -r["id"])]
        return 200, {"total_count": len(shaped), "workflow_runs": shaped}, {}

    def _compare(self, base: str, head: str) -> tuple[int, Any, dict]:
        commit = {"sha": MERGE_BASE, "url": f"{self.base_url}/repos/{REPO}/commits/{MERGE_BASE}"}
        return 200, {"status": "ahead", "ahead_by": 1, "behind_by": 0, "total_commits": 1,
                     "base_commit": {"sha": base, "url": f"{self.base_url}/repos/{REPO}/commits/{base}"},
                     "merge_base_commit": commit, "commits": [], "files": [],
                     "url": f"{self.base_url}/repos/{REPO}/compare/{base}...{head}"}, {}

    def _permission(self, login: str) -> tuple[int, Any, dict]:
        permission = self.state.permissions.get(login, "read")
        return 200, {"permission": permission, "role_name": permission, "user": self._user(login)}, {}

    def _list_check_runs(self, sha: str, query: dict) -> tuple[int, Any, dict]:
        runs = sorted((r for r in self.state.check_runs if r["head_sha"] == sha), key=lambda r: -r["id"])
        if query.get("filter", ["latest"])[0] != "all":  # GitHub's default: only the most recent run of each name
            seen: set[tuple[str, str]] = set()
            latest = []
            for r in runs:
                key = (r["name"], r.get("app", APP)["slug"])
                if key not in seen:
                    seen.add(key)
                    latest.append(r)
            runs = latest
        per_page = int(query.get("per_page", ["30"])[0])
        page = int(query.get("page", ["1"])[0])
        chunk = runs[(page - 1) * per_page: page * per_page]
        headers = {}
        if page * per_page < len(runs):
            url = f"{self.base_url}/repos/{REPO}/commits/{sha}/check-runs?per_page={per_page}&page={page + 1}"
            headers["Link"] = f'<{url}>; rel="next"'
        return 200, {"total_count": len(runs), "check_runs": [self._check_run(r) for r in chunk]}, headers

    def _check_run(self, r: dict[str, Any]) -> dict[str, Any]:
        return {"id": r["id"], "name": r["name"], "head_sha": r["head_sha"], "status": r.get("status"),
                "conclusion": r.get("conclusion"), "output": r.get("output"),
                "external_id": r.get("external_id"), "app": r.get("app", APP),
                "started_at": r.get("completed_at"), "completed_at": r.get("completed_at"),
                "url": f"{self.base_url}/repos/{REPO}/check-runs/{r['id']}",
                "html_url": f"https://github.test/{REPO}/runs/{r['id']}"}

    def _delete_comment(self, cid: int) -> tuple[int, Any, dict]:
        if cid not in self.state.comments:
            return 404, {"message": "Not Found"}, {}
        self.delete_comment(cid)
        return 204, None, {}

    def delete_comment(self, cid: int) -> None:
        """A deleted comment leaves the timeline too."""
        number = self.state.comments.pop(cid)["issue"]
        self.state.timeline[number] = [e for e in self.state.timeline.get(number, [])
                                       if not (e["event"] == "commented" and e["id"] == cid)]

    def _list_comments(self, number: int, query: dict) -> tuple[int, Any, dict]:
        if number not in self.state.labels and number not in self.state.issues:
            return 404, {"message": "Not Found"}, {}
        ids = sorted(cid for cid, c in self.state.comments.items() if c["issue"] == number)
        per_page = int(query.get("per_page", ["30"])[0])
        page = int(query.get("page", ["1"])[0])
        chunk = ids[(page - 1) * per_page: page * per_page]
        headers = {}
        if page * per_page < len(ids):
            url = f"{self.base_url}/repos/{REPO}/issues/{number}/comments?per_page={per_page}&page={page + 1}"
            headers["Link"] = f'<{url}>; rel="next"'
        return 200, [self._comment(cid) for cid in chunk], headers

    def _create_comment(self, number: int, body: Any) -> tuple[int, Any, dict]:
        text = body["body"]
        if len(text) > 65536:
            too_long = "Body is too long (maximum is 65536 characters)"
            return 422, {"message": "Validation Failed", "errors": [{"message": too_long}]}, {}
        if number not in self.state.labels and number not in self.state.issues:
            return 404, {"message": "Not Found"}, {}
        cid = self.add_comment(number, text, user=self.poster)
        return 201, self._comment(cid), {}

    def _edit_comment(self, cid: int, body: Any) -> tuple[int, Any, dict]:
        if cid not in self.state.comments:
            return 404, {"message": "Not Found"}, {}
        if len(body["body"]) > 65536:
            return 422, {"message": "Validation Failed"}, {}
        self.state.comments[cid]["body"] = body["body"]
        return 200, self._comment(cid), {}

    def _remove_label(self, number: int, name: str) -> tuple[int, Any, dict]:
        labels = self.state.labels.get(number, [])
        if name not in labels:
            return 404, {"message": "Label does not exist"}, {}
        labels.remove(name)
        self._event(number, {"event": "unlabeled", "label": {"name": name, "color": "ededed"}, "actor": self._user(BOT)})
        return 200, [{"name": n} for n in labels], {}

    def _create_check_run(self, body: Any) -> tuple[int, Any, dict]:
        if self.checks_forbidden:
            return 403, {"message": "Resource not accessible by personal access token"}, {}
        for key in ("summary", "text"):
            if len((body.get("output") or {}).get(key, "").encode()) > 65535:
                return 422, {"message": f"Invalid request. Only 65535 characters are allowed; {key}"}, {}
        run = dict(body, id=next(self._ids), app=self.app, completed_at=iso(self.now))
        self.state.check_runs.append(run)
        return 201, self._check_run(run), {}

    def _create_status(self, sha: str, body: Any) -> tuple[int, Any, dict]:
        status = {"sha": sha, **body, "id": next(self._ids), "creator": self.poster, "created_at": iso(self.now)}
        self.state.statuses.append(status)
        return 201, self._status(status), {}

    def _list_statuses(self, sha: str, query: dict) -> tuple[int, Any, dict]:
        """GET /commits/{ref}/statuses (or /statuses/{ref}): every status on the commit, newest first (a plain list,
        Link-paginated)."""
        statuses = sorted((s for s in self.state.statuses if s["sha"] == sha), key=lambda s: -s["id"])
        per_page = int(query.get("per_page", ["30"])[0])
        page = int(query.get("page", ["1"])[0])
        headers = {}
        if page * per_page < len(statuses):
            url = f"{self.base_url}/repos/{REPO}/commits/{sha}/statuses?per_page={per_page}&page={page + 1}"
            headers["Link"] = f'<{url}>; rel="next"'
        return 200, [self._status(s) for s in statuses[(page - 1) * per_page: page * per_page]], headers

    def _status(self, s: dict[str, Any]) -> dict[str, Any]:
        return {"id": s["id"], "node_id": f"SC_{s['id']}", "state": s["state"], "context": s.get("context", "default"),
                "description": s.get("description"), "target_url": s.get("target_url"),
                "avatar_url": None, "creator": self._user(s["creator"]), "created_at": s["created_at"],
                "updated_at": s["created_at"], "url": f"{self.base_url}/repos/{REPO}/statuses/{s['sha']}"}

    def _list_issues(self, query: dict) -> tuple[int, Any, dict]:
        state = query.get("state", ["open"])[0]
        creator = query.get("creator", [None])[0]
        chosen = [n for n, i in sorted(self.state.issues.items())
                  if (state == "all" or i["state"] == state) and (creator is None or i["user"] == creator)]
        return 200, [self._issue(n) for n in chosen], {}

    def _create_issue(self, body: Any) -> tuple[int, Any, dict]:
        number = max([1000, *self.state.issues, *self.state.labels]) + 1
        self.state.issues[number] = {"title": body["title"], "body": body.get("body", ""), "state": "open", "user": BOT}
        self.state.labels.setdefault(number, [])
        self.state.timeline.setdefault(number, [])  # comments and labels on the issue land here
        return 201, self._issue(number), {}

    def add_issue(self, title: str, body: str = "") -> int:
        """An issue the bot opened (as `gate history detect --track` does)."""
        return self._create_issue({"title": title, "body": body})[1]["number"]

    def _edit_issue(self, number: int, body: Any) -> tuple[int, Any, dict]:
        if number not in self.state.issues:
            return 404, {"message": "Not Found"}, {}
        issue = self.state.issues[number]
        for key in ("title", "body", "state"):
            if key in body:
                issue[key] = body[key]
        return 200, self._issue(number), {}
