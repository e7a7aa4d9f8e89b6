"""The slow tests of integration/history/test_pr_trends.py, kept out of the fast tier (tests/README.md)."""
from __future__ import annotations

import re

import pytest

from gate.history.sparkline import BREAK


@pytest.mark.slow  # the whole trusted job against the GitHub fake
def test_the_trusted_jobs_pr_comment_shows_the_trend(tmp_path, history_dir, monkeypatch):
    """`gate post --history` (the trusted report job) against the GitHub fake: the sticky comment has the trend."""
    import json as _json
    import os

    from click.testing import CliRunner

    import gate.publish.posting as post_module
    from gate.cli import cli
    from gate.examples import write_example_pair
    from gate.formats.config import load_suite as _load
    from gate.publish.github import connect
    from tests.helpers import gh_payloads as p
    from tests.helpers.fake_github import REPO, TOKEN, FakeGitHub
    from tests.helpers.gh_trees import make_trees

    monkeypatch.setattr(post_module, "connect", lambda **kw: connect(**kw))
    baseline, candidate = write_example_pair(tmp_path / "pair", _load())
    trees = make_trees(tmp_path / "trees", {"trees": (baseline, candidate)}, "qwen3")
    event = tmp_path / "wr.json"
    event.write_text(_json.dumps(p.workflow_run(conclusion="success", prs=[], fork=True)))
    with FakeGitHub() as fake:
        fake.add_pull(42, labels=("run-qwen3-asr",), head_repo="contributor/sglang-omni")
        env = {k: None for k in os.environ if k.startswith(("GITHUB_", "GATE_", "RUNNER_"))}
        env.update({"GITHUB_API_URL": fake.base_url, "GITHUB_TOKEN": TOKEN, "GITHUB_REPOSITORY": REPO,
                    "GITHUB_SERVER_URL": "https://github.test", "GITHUB_RUN_ID": "555",
                    "GITHUB_EVENT_NAME": "workflow_run", "GITHUB_EVENT_PATH": str(event)})
        result = CliRunner().invoke(cli, ["post", "--trees", str(trees), "--model", "qwen3", "--history",
                                          str(history_dir)], env=env, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        (comment,) = fake.comments_on(42)
    row = next(line for line in comment["body"].splitlines() if "throughput" in line and BREAK in line)
    assert re.search(r"`[▁▂▃▄▅▆▇█]{14}│[▁▂▃▄▅▆▇█]` [+-]\d+\.\d% vs the last 14 nights' band of ±\d+\.\d%", row), row
