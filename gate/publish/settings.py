"""The one place that reads GitHub Actions' environment (GITHUB_*) and the action's inputs (GATE_*).

`Settings.from_environ(os.environ)` is called by CLI entry points only; everything else receives the
frozen `Settings` (or the fields it needs) as a parameter, so tests pass a plain dict.
Variables: https://docs.github.com/en/actions/reference/variables-reference
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Mapping

from gate.formats.errors import GateError

DEFAULT_API_URL = "https://api.github.com"
DEFAULT_SERVER_URL = "https://github.com"
# The login that owns comments posted with the Actions GITHUB_TOKEN (GET /user is 403 for that token).
DEFAULT_BOT_LOGIN = "github-actions[bot]"
# The GitHub App whose check runs are the gate's own (GitHub sets a check run's `app`; the Actions token's is
# github-actions). A caller posting with its own GitHub App's token names that app's slug (GATE_APP_SLUG).
DEFAULT_APP = "github-actions"
# HMAC-SHA256 keys shorter than this are guessable in practice; `openssl rand -hex 32` gives 64 characters.
MIN_STAMP_KEY_CHARS = 32
_SECRET_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,99}$")
_REPOSITORY = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")


class SettingsError(GateError):
    """An environment variable or action input has a value the gate cannot use."""


@dataclass(frozen=True)
class Settings:
    api_url: str = DEFAULT_API_URL
    server_url: str = DEFAULT_SERVER_URL
    repository: str | None = None
    token: str | None = field(default=None, repr=False)  # never logged
    event_name: str | None = None
    event_path: str | None = None
    sha: str | None = None
    ref: str | None = None
    run_id: str | None = None
    run_attempt: str | None = None
    workflow: str | None = None
    step_summary: str | None = None  # file to append the job summary to
    output: str | None = None  # file to append step outputs to
    in_actions: bool = False
    bot_login: str = DEFAULT_BOT_LOGIN
    app_slug: str = DEFAULT_APP
    stamp_key: str | None = field(default=None, repr=False)  # never logged: proves the gate's check runs
    environment: str | None = None  # the protected environment holding the key or App secrets (set-up check)
    exposed_secrets: tuple[str, ...] = ()  # gate secrets the workflow saw outside that environment
    # Inputs of action.yml, passed through `env:` with a GATE_ prefix (never `${{ }}` inside `run:`).
    command: str | None = None
    args: str = ""
    report: str | None = None
    fail_on_regression: bool = True

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> Settings:
        def get(name: str) -> str | None:
            value = environ.get(name, "")
            return value.strip() or None

        api_url = (get("GITHUB_API_URL") or DEFAULT_API_URL).rstrip("/")
        if not api_url.startswith(("https://", "http://")):
            raise SettingsError(f"GITHUB_API_URL: expected an http(s) URL, got {api_url!r}")
        repository = get("GITHUB_REPOSITORY")
        if repository is not None and not _REPOSITORY.match(repository):
            raise SettingsError(f"GITHUB_REPOSITORY: expected 'owner/name', got {repository!r}")
        return cls(
            api_url=api_url,
            server_url=(get("GITHUB_SERVER_URL") or DEFAULT_SERVER_URL).rstrip("/"),
            repository=repository,
            # GATE_GITHUB_TOKEN lets a caller pass a token without exporting GITHUB_TOKEN to every tool.
            token=get("GATE_GITHUB_TOKEN") or get("GITHUB_TOKEN"),
            event_name=get("GITHUB_EVENT_NAME"),
            event_path=get("GITHUB_EVENT_PATH"),
            sha=get("GITHUB_SHA"),
            ref=get("GITHUB_REF"),
            run_id=get("GITHUB_RUN_ID"),
            run_attempt=get("GITHUB_RUN_ATTEMPT"),
            workflow=get("GITHUB_WORKFLOW"),
            step_summary=get("GITHUB_STEP_SUMMARY"),
            output=get("GITHUB_OUTPUT"),
            in_actions=get("GITHUB_ACTIONS") == "true",
            bot_login=get("GATE_BOT_LOGIN") or DEFAULT_BOT_LOGIN,
            app_slug=get("GATE_APP_SLUG") or DEFAULT_APP,
            stamp_key=_stamp_key(get("GATE_STAMP_KEY")),
            environment=get("GATE_ENVIRONMENT"),
            exposed_secrets=_secret_names(get("GATE_EXPOSED_SECRETS")),
            command=get("GATE_COMMAND"),
            args=get("GATE_ARGS") or "",
            report=get("GATE_REPORT"),
            fail_on_regression=_boolean(get("GATE_FAIL_ON_REGRESSION"), "GATE_FAIL_ON_REGRESSION", default=True),
        )

    @property
    def run_url(self) -> str | None:
        """Link to this workflow run, for comments and check runs."""
        if not (self.repository and self.run_id):
            return None
        return f"{self.server_url}/{self.repository}/actions/runs/{self.run_id}"

    def require(self, name: str) -> str:
        """A field the current command cannot do without, or one line naming its variable."""
        value = getattr(self, name)
        if not value:
            variable = {
                "repository": "GITHUB_REPOSITORY",
                "token": "GITHUB_TOKEN (or GATE_GITHUB_TOKEN)",
                "event_path": "GITHUB_EVENT_PATH",
                "event_name": "GITHUB_EVENT_NAME",
                "sha": "GITHUB_SHA",
            }.get(name, name)
            raise SettingsError(f"{variable}: required here but not set; expected the GitHub Actions environment: "
                                f"run it in the workflow, or set {variable.split()[0]} yourself")
        return value


def _stamp_key(value: str | None) -> str | None:
    if value is not None and len(value) < MIN_STAMP_KEY_CHARS:
        raise SettingsError(f"GATE_STAMP_KEY: expected at least {MIN_STAMP_KEY_CHARS} characters "
                            f"(e.g. `openssl rand -hex 32`), got {len(value)}")
    return value


def _secret_names(value: str | None) -> tuple[str, ...]:
    names = tuple(name.strip() for name in (value or "").split(",") if name.strip())
    bad = [name for name in names if not _SECRET_NAME.match(name)]
    if bad:
        raise SettingsError(f"GATE_EXPOSED_SECRETS: expected comma-separated secret names, got {bad[0][:60]!r}")
    return names


def _boolean(value: str | None, name: str, *, default: bool) -> bool:
    if value is None:
        return default
    if value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise SettingsError(f"{name}: expected true or false, got {value!r}")
