from __future__ import annotations

import pytest

from gate.publish.settings import Settings, SettingsError


def test_defaults_outside_actions():
    s = Settings.from_environ({})
    assert s.api_url == "https://api.github.com" and s.bot_login == "github-actions[bot]"
    assert s.token is None and not s.in_actions and s.run_url is None


def test_reads_actions_variables_and_hides_the_token():
    s = Settings.from_environ({
        "GITHUB_API_URL": "https://ghe.example/api/v3/", "GITHUB_SERVER_URL": "https://ghe.example",
        "GITHUB_REPOSITORY": "sgl-project/sglang-omni", "GITHUB_TOKEN": "ghs_secret", "GITHUB_RUN_ID": "99",
        "GITHUB_ACTIONS": "true", "GATE_BOT_LOGIN": "omni-bot[bot]", "GATE_ARGS": "--json r.json",
    })
    assert s.api_url == "https://ghe.example/api/v3"
    assert s.run_url == f"https://ghe.example/{s.repository}/actions/runs/99" and s.repository == "sgl-project/sglang-omni"
    assert s.in_actions and s.bot_login == "omni-bot[bot]" and s.args == "--json r.json"
    assert "ghs_secret" not in repr(s)


def test_gate_token_wins_over_github_token():
    assert Settings.from_environ({"GITHUB_TOKEN": "a", "GATE_GITHUB_TOKEN": "b"}).token == "b"


@pytest.mark.parametrize("env, message", [
    ({"GITHUB_API_URL": "ftp://x"}, "GITHUB_API_URL: expected an http(s) URL"),
    ({"GITHUB_REPOSITORY": "no-slash"}, "GITHUB_REPOSITORY: expected 'owner/name'"),
])
def test_bad_values_are_one_line(env, message):
    with pytest.raises(SettingsError, match=message.replace("(", r"\(").replace(")", r"\)")):
        Settings.from_environ(env)


def test_require_names_the_variable():
    with pytest.raises(SettingsError, match=r"GITHUB_TOKEN \(or GATE_GITHUB_TOKEN\): required here but not set"):
        Settings.from_environ({}).require("token")
