"""Tracking issues against the loopback GitHub fake (tests/github/fake_github.py), through `gate history detect --track`."""
from __future__ import annotations

import re

from click.testing import CliRunner
from conftest import STEP_NIGHT, commit
from fake_github import BOT, REPO, TOKEN, FakeGitHub

from gate.cli import cli


def env(fake: FakeGitHub) -> dict[str, str]:
    return {"GITHUB_API_URL": fake.base_url, "GITHUB_REPOSITORY": REPO, "GITHUB_TOKEN": TOKEN,
            "GITHUB_SERVER_URL": "https://github.test", "GITHUB_RUN_ID": "77", "GATE_BOT_LOGIN": BOT}


def detect(history_dir, fake, *extra):
    return CliRunner().invoke(cli, ["history", "detect", "--history", str(history_dir), "--recent", "20", "--track",
                                    "--chart-url", "https://pages.test/asr", *extra], env=env(fake))


def test_one_issue_per_change_point_then_updates_never_duplicates(history_dir):
    with FakeGitHub() as fake:
        first = detect(history_dir, fake)
        assert first.exit_code == 0, first.output
        issues = fake.state.issues
        # throughput -6% and latency +6% from the same night: two metrics, two change points, two issues
        assert len(issues) == 2, first.output
        titles = sorted(i["title"] for i in issues.values())
        assert titles[0].startswith("ASR regression on main: qwen3/asr_en latency_mean_s +")
        assert titles[1].startswith("ASR regression on main: qwen3/asr_en throughput_samples_per_s -")
        body = next(i["body"] for i in issues.values() if "throughput" in i["title"])
        assert f"https://github.test/{REPO}/compare/{commit(STEP_NIGHT - 1)}...{commit(STEP_NIGHT)}" in body
        assert "95% CI" in body and "| Change |" in body
        assert "https://pages.test/asr/charts/qwen3-asr_en-throughput_samples_per_s.png" in body
        assert "https://github.test/sgl-project/sglang-omni/actions/runs/77" in body
        assert re.search(r"<!-- asr-gate-changepoint: qwen3/asr_en:throughput_samples_per_s:2026-09-\d\d -->", body)

        again = detect(history_dir, fake)
        assert again.exit_code == 0 and again.output.count("issue unchanged") == 2
        assert len(fake.state.issues) == 2 and not fake.calls("PATCH", r"/issues/\d+$")

        number = next(n for n, i in fake.state.issues.items() if "latency" in i["title"])
        fake.state.issues[number]["state"] = "closed"  # a maintainer closed it: it stays closed
        third = detect(history_dir, fake)
        assert "issue closed-by-maintainer" in third.output and len(fake.state.issues) == 2


def test_nothing_new_touches_no_issue(history_dir):
    with FakeGitHub() as fake:
        result = CliRunner().invoke(cli, ["history", "detect", "--history", str(history_dir), "--recent", "1",
                                          "--track"], env=env(fake))
        assert result.exit_code == 0 and "no new change point" in result.output
        assert fake.state.issues == {} and not fake.calls("POST")


def test_github_error_is_one_line(history_dir):
    with FakeGitHub() as fake:
        fake.fail("POST", r"/issues$", 403)
        result = detect(history_dir, fake)
        assert result.exit_code == 2
        assert result.output.splitlines()[-1].startswith("gate: error: GitHub refused (403) while opening the issue")


def test_detect_writes_the_new_change_points_as_json(history_dir, tmp_path):
    out = tmp_path / "cp.json"
    result = CliRunner().invoke(cli, ["history", "detect", "--history", str(history_dir), "--recent", "20",
                                      "--json", str(out)])
    assert result.exit_code == 0
    import json

    points = json.loads(out.read_text())
    assert {p["metric"] for p in points} == {"throughput_samples_per_s", "latency_mean_s"}
    assert all(p["commit"] == commit(STEP_NIGHT) for p in points)
