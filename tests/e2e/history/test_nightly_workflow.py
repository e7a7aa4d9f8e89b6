"""The nightly workflow's history job, run as written: its shell steps execute here against the GitHub fake.

The step scripts are taken from the parsed workflow; `${{ }}` only ever appears in `env:`, whose
values are replaced by what Actions would pass. The gate the steps call is this checkout's.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gate.examples import ExampleSpec, write_example_tree
from gate.formats.config import load_suite
from gate.history.store import HistoryStore
from tests.helpers.fake_github import BOT, REPO, TOKEN, FakeGitHub
from tests.helpers.nights import synthetic_records

ROOT = Path(__file__).resolve().parents[3]
WORKFLOW = ROOT / ".github" / "workflows" / "asr-gate-nightly.yml"


def jobs() -> dict:
    return yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))["jobs"]


def step(job: dict, name: str) -> dict:
    return next(s for s in job["steps"] if s.get("name") == name)


def test_history_job_shape():
    all_jobs = jobs()
    history = all_jobs["history"]
    assert history["needs"] == ["plan", "bench", "report"]
    assert "always()" in history["if"]  # every night is kept, whatever the verdict
    assert history["permissions"] == {"actions": "read", "contents": "read", "issues": "write"}
    names = [s.get("name") for s in history["steps"]]
    order = ["Append tonight to the history", "Change points and tracking issues", "Build the dashboard",
             "Upload the history for the baseline branch"]
    assert [n for n in names if n in order] == order
    assert any("upload-pages-artifact" in (s.get("uses") or "") for s in history["steps"])
    upload = step(history, "Upload the history for the baseline branch")
    assert upload["if"] == "always()"  # a failed tracking step does not lose the night
    store = all_jobs["store-history"]
    assert "needs.history.result" not in store["if"] and "always()" in store["if"]
    assert store["permissions"] == {"actions": "read", "contents": "write"}
    assert store["concurrency"]["group"] == all_jobs["update-baseline"]["concurrency"]["group"]
    # The job that can push runs only the gate's own pinned action (`gate store history`, tested against a real
    # bare repository in tests/e2e/github/test_gh_store.py), never PR code, and keeps no token in .git/config.
    gate_steps = [s for s in store["steps"] if (s.get("uses") or "").startswith("./")]
    assert gate_steps and all(s["uses"] == "./.gate" and s["with"]["command"] == "store" and s["with"]["args"].startswith("history")
                              for s in gate_steps)
    for s in store["steps"]:
        assert (s.get("with") or {}).get("persist-credentials", False) is False
    # The drift guard: the baseline moves only after tonight is in the branch's history, held to it by `gate store`.
    update = all_jobs["update-baseline"]
    history_stored = "needs.store-history.result == 'success'"  # a GitHub expression, compared as written
    assert "store-history" in update["needs"] and history_stored in update["if"]
    [stored] = [s for s in update["steps"] if (s.get("with") or {}).get("command") == "store"]
    assert "--tonight trees" in stored["with"]["args"]
    trees = next(s for s in update["steps"] if "download-artifact" in (s.get("uses") or "")
                 and "asr-gate-trees-" in (s.get("with") or {}).get("pattern", ""))
    assert trees["with"]["path"] == "trees" and "continue-on-error" not in trees


def run_step(job: dict, name: str, workdir: Path, values: dict[str, str], extra_env: dict[str, str]):
    s = step(job, name)
    env = {**os.environ, **extra_env}
    for key, value in (s.get("env") or {}).items():
        expression = re.fullmatch(r"\$\{\{\s*(.+?)\s*\}\}", str(value))
        env[key] = values[expression[1]] if expression else str(value)
    return subprocess.run(["bash", "-c", s["run"]], cwd=workdir, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.slow  # the nightly workflow's steps end to end
def test_append_detect_and_file_the_issue_as_the_workflow_does(tmp_path):
    suite = load_suite()
    # The stored history (as on the baseline branch): 40 nights, qwen3/asr_en 6% slower for the last two.
    HistoryStore(tmp_path / "baseline-store" / "history").append(
        synthetic_records(nights=40, step_night=38, base=98.4 / 0.94))
    # Tonight's tree, as download-artifact lays it out: trees/<artifact>/nightly/run<R>/...
    write_example_tree(tmp_path / "trees" / "asr-gate-trees-qwen3-1-1" / "nightly", suite,
                       ExampleSpec(seed=3, models=("qwen3",), runs=("1", "2", "3")))
    runner_temp = tmp_path / "runner-temp"
    (runner_temp / "gate-venv" / "bin").mkdir(parents=True)
    (runner_temp / "gate-venv" / "bin" / "gate").symlink_to(Path(sys.executable).parent / "gate")
    values = {"inputs.runner-class": "h100", "inputs.pages-url": "https://pages.test/asr", "github.token": TOKEN,
              "secrets.gate-token || github.token": TOKEN,
              "steps.app.outputs.token || secrets.gate-token || github.token": TOKEN,
              "steps.app.outputs.app-slug && format('{0}[bot]', steps.app.outputs.app-slug) || 'github-actions[bot]'": BOT}
    history = jobs()["history"]
    with FakeGitHub() as fake:
        common = {"RUNNER_TEMP": str(runner_temp), "GITHUB_API_URL": fake.base_url, "GITHUB_REPOSITORY": REPO,
                  "GITHUB_SERVER_URL": "https://github.test", "GATE_BOT_LOGIN": BOT, "GITHUB_TOKEN": ""}
        appended = run_step(history, "Append tonight to the history", tmp_path, values, common)
        assert appended.returncode == 0, appended.stderr
        assert "2 new records from 1 trees" in appended.stdout
        read = HistoryStore(tmp_path / "history").read()
        assert len(read.records) == 42 and read.records[-1].workload in ("qwen3/asr_en", "qwen3/asr_zh")

        detected = run_step(history, "Change points and tracking issues", tmp_path, values, common)
        assert detected.returncode == 0, detected.stderr
        titles = [i["title"] for i in fake.state.issues.values()]
        metric = "throughput_samples_per_s"
        assert any(f"qwen3/asr_en {metric} -" in t for t in titles), detected.stdout
        body = next(i["body"] for i in fake.state.issues.values() if "throughput" in i["title"])
        assert f"{values['inputs.pages-url']}/qwen3.html#qwen3-asr_en" in body
        assert (tmp_path / "history-out" / "change-points.json").is_file()

        again = run_step(history, "Change points and tracking issues", tmp_path, values, common)
        assert again.returncode == 0 and len(fake.state.issues) == len(titles)  # updated in place, never twice


def test_a_github_error_in_the_tracking_step_keeps_the_night_for_the_store(tmp_path):
    suite = load_suite()
    HistoryStore(tmp_path / "baseline-store" / "history").append(
        synthetic_records(nights=40, step_night=38, base=98.4 / 0.94))
    write_example_tree(tmp_path / "trees" / "asr-gate-trees-qwen3-1-1" / "nightly", suite,
                       ExampleSpec(seed=3, models=("qwen3",), runs=("1", "2", "3")))
    runner_temp = tmp_path / "runner-temp"
    (runner_temp / "gate-venv" / "bin").mkdir(parents=True)
    (runner_temp / "gate-venv" / "bin" / "gate").symlink_to(Path(sys.executable).parent / "gate")
    values = {"inputs.runner-class": "h100", "inputs.pages-url": "", "github.token": TOKEN,
              "secrets.gate-token || github.token": TOKEN,
              "steps.app.outputs.token || secrets.gate-token || github.token": TOKEN,
              "steps.app.outputs.app-slug && format('{0}[bot]', steps.app.outputs.app-slug) || 'github-actions[bot]'": BOT}
    history = jobs()["history"]
    with FakeGitHub() as fake:
        fake.fail("POST", r"/issues$", 502, times=100)
        common = {"RUNNER_TEMP": str(runner_temp), "GITHUB_API_URL": fake.base_url, "GITHUB_REPOSITORY": REPO,
                  "GITHUB_SERVER_URL": "https://github.test", "GATE_BOT_LOGIN": BOT, "GITHUB_TOKEN": ""}
        assert run_step(history, "Append tonight to the history", tmp_path, values, common).returncode == 0
        failed = run_step(history, "Change points and tracking issues", tmp_path, values, common)
        assert failed.returncode == 2 and "GitHub" in failed.stderr
    # What the always() upload hands to store-history: tonight's records and the unfiled change points.
    read = HistoryStore(tmp_path / "history").read()
    assert len(read.records) == 42
    assert read.change_points and all(cp.issue is None for cp in read.change_points)
