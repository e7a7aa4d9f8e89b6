"""The slow tests of integration/github/test_gh_pr_trend.py, kept out of the fast tier (tests/README.md)."""
from __future__ import annotations

import dataclasses
import json
import os
import re

from click.testing import CliRunner

from gate.cli import cli
from gate.formats.config import load_suite
from gate.history.analysis import trends
from gate.history.sparkline import BARS, BREAK
from gate.history.store import HistoryStore
from tests.helpers import gh_payloads as p
from tests.helpers.fake_github import BOT, REPO, TOKEN
from tests.helpers.gh_trees import make_trees
from tests.integration.github.test_gh_pr_trend import _history_records, judge_argv


def test_the_trusted_jobs_comment_shows_the_trend_of_main(fake, tmp_path, example_reports, monkeypatch):
    suite = load_suite()
    store = HistoryStore(tmp_path / "baseline-store" / "history")
    store.append(_history_records())
    [step] = [cp for t in trends(store.read(), suite) for cp in t.change_points if cp.gated]
    store.record_change_points("h100", [dataclasses.replace(step, issue=12)])  # filed by the nightly as #12
    runner_temp = tmp_path / "rt"
    make_trees(runner_temp / "untrusted" / "trees", example_reports, "qwen3")
    argv = judge_argv("ab", tmp_path, runner_temp)
    assert argv[argv.index("--history") + 1] == "baseline-store/history"

    fake.add_pull(42, labels=("run-qwen3-asr",))
    event = tmp_path / "wr.json"
    event.write_text(json.dumps(p.workflow_run(prs=[42])), encoding="utf-8")
    env = {k: None for k in os.environ if k.startswith(("GITHUB_", "GATE_", "RUNNER_"))}
    env.update(GITHUB_API_URL=fake.base_url, GITHUB_TOKEN=TOKEN, GITHUB_REPOSITORY=REPO, GITHUB_RUN_ID="555",
               GITHUB_SERVER_URL="https://github.test", GITHUB_EVENT_NAME="workflow_run", GITHUB_EVENT_PATH=str(event))
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, argv, env=env, catch_exceptions=False)
    assert result.exit_code == 0, result.output

    (comment,) = [c["body"] for c in fake.comments_on(42) if c["user"] == BOT]
    (check,) = [c for c in fake.state.check_runs if c["name"] == "ASR gate / qwen3"]
    for text in (comment, check["output"]["summary"]):
        cells = re.findall(rf"`([{BARS} ]+){BREAK}([{BARS}])` ([+-]\d+\.\d%) vs the last 14 nights' band of "
                           rf"±(\d+\.\d)%", text)
        assert cells, text[:3000]
        nights, candidate, where, band = cells[0]
        assert len(nights) == 14 and float(band) < 5  # the band of 1% noise, in numbers
        assert re.search(rf"baseline [{BARS}]", text)  # the baseline's level, on the same scale
        assert f"step since {step.night[:10]} #12" in text  # the open change-point issue of that workload


def test_a_history_that_is_named_but_missing_is_an_error_not_a_quiet_comment(tmp_path, example_reports):
    trees = make_trees(tmp_path / "trees", example_reports, "qwen3")
    result = CliRunner().invoke(cli, ["post", "--trees", str(trees), "--model", "qwen3", "--dry-run",
                                      "--history", str(tmp_path / "nowhere")])
    assert result.exit_code == 2 and "--history: expected the nightly history directory" in result.output
    assert "Traceback" not in result.output
