"""Tracking issues against the loopback GitHub fake (tests/helpers/fake_github.py), through `gate history detect --track`."""
from __future__ import annotations

import json
import re

from click.testing import CliRunner

from gate.cli import cli
from gate.publish.tracking import MARKER
from gate.publish.trust import ACCEPT_LABEL
from tests.helpers.fake_github import BOT, REPO, TOKEN, FakeGitHub
from tests.helpers.nights import STEP_NIGHT, commit

SERVER, RUN_ID, CHARTS = "https://github.test", "77", "https://pages.test/asr"


def env(fake: FakeGitHub) -> dict[str, str]:
    return {"GITHUB_API_URL": fake.base_url, "GITHUB_REPOSITORY": REPO, "GITHUB_TOKEN": TOKEN,
            "GITHUB_SERVER_URL": SERVER, "GITHUB_RUN_ID": RUN_ID, "GATE_BOT_LOGIN": BOT}


def detect(history_dir, fake, *extra):
    return CliRunner().invoke(cli, ["history", "detect", "--history", str(history_dir), "--recent", "20", "--track",
                                    "--chart-url", CHARTS, *extra], env=env(fake))


def test_one_issue_per_step_listing_its_metrics_then_updates_never_duplicate(history_dir, golden):
    with FakeGitHub() as fake:
        first = detect(history_dir, fake)
        assert first.exit_code == 0, first.output
        issues = fake.state.issues
        # throughput -6% (gated) and mean latency +6% (shown, not gated) from the same night: one step, one issue
        assert len(issues) == 1, first.output
        [issue] = issues.values()
        metric = "throughput_samples_per_s"
        assert issue["title"].startswith("ASR regression on main: ") and f"qwen3/asr_en {metric} -" in issue["title"]
        assert "latency_mean_s" not in issue["title"]  # not gated: listed in the body only
        body = issue["body"]
        golden("tracking_issue_qwen3_step.md", body)  # the whole body: metrics table, links, how to accept
        assert "| throughput\\_samples" in body and "\\_per\\_s (gated) |" in body
        assert "| latency\\_mean\\_s (shown" in body and ", not gated) |" in body
        assert f"https://github.test/{REPO}/compare/{commit(STEP_NIGHT - 1)}...{commit(STEP_NIGHT)}" in body
        assert "95% CI" in body
        assert f"{CHARTS}/qwen3.html#qwen3-asr_en" in body
        assert f"{SERVER}/{REPO}/actions/runs/{RUN_ID}" in body
        key = re.search(MARKER.format(key="(.*)"), body).group(1)
        assert re.fullmatch(r"qwen3/asr_en:2026-09-\d\d", key)
        # The drift guard says here what holds the baseline and how a maintainer releases it (gate.history.guard).
        assert "**This step holds the nightly" in body and "baseline of qwen3**" in body
        assert "`/asr-gate accept <model> " in body and f"`{ACCEPT_LABEL}`" in body
        stored = [json.loads(line) for line in (history_dir / "h100" / "change-points.jsonl").read_text().splitlines()]
        number = next(iter(issues))
        assert {p["metric"]: p["issue"] for p in stored} == {"throughput_samples_per_s": number,
                                                             "latency_mean_s": number}

        again = detect(history_dir, fake)
        assert again.exit_code == 0 and "issue" not in again.output.replace("stored", "")  # filed: no API call
        assert len(fake.state.issues) == 1 and not fake.calls("PATCH", r"/issues/\d+$")


def test_a_github_error_keeps_the_change_points_and_the_next_night_files_them(history_dir):
    with FakeGitHub() as fake:
        fake.fail("POST", r"/issues$", 502, times=100)
        failed = detect(history_dir, fake)
        assert failed.exit_code == 2 and "GitHub" in failed.output.splitlines()[-1]
        stored = (history_dir / "h100" / "change-points.jsonl").read_text().splitlines()
        assert len(stored) == 2 and all(json.loads(line)["issue"] is None for line in stored)
    with FakeGitHub() as fake:
        later = CliRunner().invoke(cli, ["history", "detect", "--history", str(history_dir), "--recent", "1",
                                         "--track"], env=env(fake))
        assert later.exit_code == 0 and "issue opened" in later.output, later.output
        assert len(fake.state.issues) == 1


def test_nothing_new_touches_no_issue(history_dir):
    with FakeGitHub() as fake:
        result = CliRunner().invoke(cli, ["history", "detect", "--history", str(history_dir), "--recent", "1",
                                          "--track"], env=env(fake))
        assert result.exit_code == 0 and "no new change point" in result.output
        assert len(fake.state.issues) == 1  # the stored step had no issue yet: filed once
        again = CliRunner().invoke(cli, ["history", "detect", "--history", str(history_dir), "--recent", "1",
                                         "--track"], env=env(fake))
        issue_posts = [c for c in fake.calls("POST") if c.path.endswith("/issues")]
        assert again.exit_code == 0 and len(fake.state.issues) == 1 and len(issue_posts) == 1


def test_github_error_is_one_line(history_dir):
    with FakeGitHub() as fake:
        fake.fail("POST", r"/issues$", 403)
        result = detect(history_dir, fake)
        assert result.exit_code == 2
        last = result.output.splitlines()[-1]
        assert last.startswith("gate: error: ") and "GitHub refused (403)" in last and "opening the issue" in last


def test_detect_writes_the_new_change_points_as_json(history_dir, tmp_path):
    out = tmp_path / "cp.json"
    result = CliRunner().invoke(cli, ["history", "detect", "--history", str(history_dir), "--recent", "20",
                                      "--json", str(out)])
    assert result.exit_code == 0
    import json

    points = json.loads(out.read_text())
    assert {p["metric"] for p in points} == {"throughput_samples_per_s", "latency_mean_s"}
    assert all(p["commit"] == commit(STEP_NIGHT) for p in points)
    assert {p["metric"]: p["gated"] for p in points} == {"throughput_samples_per_s": True, "latency_mean_s": False}
