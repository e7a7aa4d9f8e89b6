"""Issue 50: the set-up check at run time (a PR post inside GitHub Actions) and for a maintainer
(`gate post --check-setup`), against the recording fake GitHub through the real PyGithub and CLI."""
from __future__ import annotations

import pytest

from tests.helpers import gh_payloads as p
from tests.helpers.fake_github import STAMP_KEY
from tests.integration.github.test_gh_commands import github_env, invoke

KEY = STAMP_KEY.decode()


@pytest.fixture
def qwen3_trees(tmp_path, example_reports):
    from tests.helpers.gh_trees import make_trees

    return make_trees(tmp_path / "trees", example_reports, "qwen3")


def overall(fake):
    return [r for r in fake.check_runs_on(p.HEAD) if r["name"] == "ASR gate"][-1]


def post_in_actions(fake, tmp_path, trees, **env):
    summary = tmp_path / "summary.md"
    base = github_env(fake, tmp_path, p.workflow_run(conclusion="success", prs=[42]))
    base.update(GITHUB_ACTIONS="true", GITHUB_STEP_SUMMARY=str(summary), **env)
    result = invoke(["post", "--trees", str(trees), "--model", "qwen3"], **base)
    return result, summary.read_text() if summary.exists() else ""


def test_an_unprotected_environment_holding_the_key_fails_the_overall_check_closed(fake, tmp_path, qwen3_trees):
    fake.add_pull(42, labels=("run-qwen3-asr",))
    fake.add_environment("asr-gate", branches=None)  # what GitHub creates when a workflow names a new environment
    result, summary = post_in_actions(fake, tmp_path, qwen3_trees, GATE_ENVIRONMENT="asr-gate", GATE_STAMP_KEY=KEY)
    assert result.exit_code == 0, result.output
    check = overall(fake)
    assert check["conclusion"] == "failure" and check["output"]["title"].startswith("set-up unsafe")
    line = "the environment asr-gate admits every branch"
    assert check["output"]["summary"].count(line) == 1 and summary.count(line) == 1
    assert f"set-up (fails closed): {line}" in result.stdout


def test_a_repository_level_app_secret_and_a_blank_key_are_one_line_each(fake, tmp_path, qwen3_trees):
    fake.add_pull(42, labels=("run-qwen3-asr",))
    fake.add_environment("asr-gate")
    result, summary = post_in_actions(fake, tmp_path, qwen3_trees, GATE_ENVIRONMENT="asr-gate",
                                      GATE_EXPOSED_SECRETS="ASR_GATE_APP_PRIVATE_KEY", GATE_STAMP_KEY="")
    assert result.exit_code == 0, result.output
    text, summary = (md.replace("\\_", "_") for md in (overall(fake)["output"]["summary"], summary))  # as rendered
    for line in ("ASR_GATE_APP_PRIVATE_KEY is also set as a repository or organisation secret",
                 "gives no ASR_GATE_STAMP_KEY (blank or missing)"):
        assert text.count(line) == 1 and summary.count(line) == 1, line
    assert overall(fake)["output"]["title"].startswith("set-up unsafe")  # the exposed App key fails closed


def test_a_protected_set_up_adds_nothing(fake, tmp_path, qwen3_trees):
    fake.add_pull(42, labels=("run-qwen3-asr",))
    fake.add_environment("asr-gate")
    result, summary = post_in_actions(fake, tmp_path, qwen3_trees, GATE_ENVIRONMENT="asr-gate", GATE_STAMP_KEY=KEY)
    assert result.exit_code == 0, result.output
    check = overall(fake)
    assert check["conclusion"] == "failure" and "set-up" not in check["output"]["summary"] and "set-up" not in summary


def test_check_setup_for_a_maintainer(fake, tmp_path):
    env = {**github_env(fake, tmp_path), "GATE_ENVIRONMENT": "asr-gate"}
    fake.add_environment("asr-gate", secrets=("ASR_GATE_APP_CLIENT_ID", "ASR_GATE_APP_PRIVATE_KEY"))
    ok = invoke(["post", "--check-setup"], **env)
    assert ok.exit_code == 0 and "ok (environment asr-gate, App" in ok.stdout, ok.output
    fake.add_environment("asr-gate", branches=("main", "dev/*"), secrets=("ASR_GATE_STAMP_KEY",))
    fake.state.repo_secrets.append("ASR_GATE_STAMP_KEY")
    bad = invoke(["post", "--check-setup"], **env)
    assert bad.exit_code == 2
    closed = [line for line in bad.stdout.splitlines() if line.startswith("gate: set-up (fails closed): ")]
    assert len(closed) == 2 and "ASR_GATE_STAMP_KEY is also" in closed[0] and "also admits dev/*" in closed[1]
    assert bad.stderr.count("\n") == 1 and "gate: error:" in bad.stderr
