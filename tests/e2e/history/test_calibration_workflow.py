"""The nightly's σ pooling and the calibration workflow's history, run as the workflows are written.

Shell steps execute here (bash) with their `env:` filled in as Actions would; a step that uses the
composite action runs `gate action` with its `with:` inputs, as action.yml does. The baseline branch is
a local git repository, so the push jobs' union of the history is checked on real git.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gate.examples import ExampleSpec, write_example_tree
from gate.formats import runlog
from gate.formats.config import load_suite
from gate.formats.noise_model import Calibration
from gate.history.store import HistoryStore
from gate.judging.calibration import calibrate_baseline
from gate.reading.baseline_file import read_baseline
from gate.reading.tree_side import side_from_tree
from tests.helpers.nights import synthetic_records

ROOT = Path(__file__).resolve().parents[3]
WORKFLOWS = ROOT / ".github" / "workflows"
SUITE = load_suite()
EN, ZH, THROUGHPUT = "qwen3/asr_en", "qwen3/asr_zh", "throughput_samples_per_s"
EXPRESSION = re.compile(r"\$\{\{\s*(.+?)\s*\}\}")


def jobs(name: str) -> dict:
    return yaml.safe_load((WORKFLOWS / name).read_text(encoding="utf-8"))["jobs"]


def step(job: dict, name: str) -> dict:
    return next(s for s in job["steps"] if s.get("name") == name)


def fill(text: str, values: dict[str, str]) -> str:
    return EXPRESSION.sub(lambda m: values[m[1]], text)


def run_shell(s: dict, workdir: Path, values: dict[str, str], extra: dict[str, str] | None = None):
    env = {**os.environ, **(extra or {})}
    env.update({k: fill(str(v), values) for k, v in (s.get("env") or {}).items()})
    return subprocess.run(["bash", "-c", s["run"]], cwd=workdir, env=env, capture_output=True, text=True, timeout=300)


def run_action(s: dict, workdir: Path, values: dict[str, str]):
    """`uses: ./.gate` as action.yml runs it: `gate action` with the step's inputs."""
    inputs = s["with"]
    env = {**os.environ, "GATE_COMMAND": inputs["command"], "GATE_ARGS": fill(inputs.get("args", ""), values),
           "GATE_REPORT": "", "GATE_FAIL_ON_REGRESSION": "true", "GITHUB_OUTPUT": str(workdir / "gh-output"),
           "GITHUB_STEP_SUMMARY": str(workdir / "gh-summary")}
    gate = Path(sys.executable).parent / "gate"
    return subprocess.run([str(gate), "action"], cwd=workdir, env=env, capture_output=True, text=True, timeout=300)


def speed_only(*_args):
    return {}


def stored(path: Path, workload: str) -> Calibration:
    found = read_baseline(path, SUITE).calibration[workload][THROUGHPUT]
    assert isinstance(found, Calibration)
    return found


# --- nightly: tonight's and the history's nights pooled into the candidate baseline ---------------------

def test_nightly_pools_the_nights_into_the_candidate_baseline_it_stores():
    bench = jobs("asr-gate-nightly.yml")["bench"]
    names = [s.get("name") for s in bench["steps"]]
    pool_step = "Pool the nights' run-to-run spread into the candidate's σ"
    store_step = "Store tonight as a candidate baseline"
    assert names.index(store_step) < names.index(pool_step) < names.index("Upload the candidate baseline")
    args = bench["steps"][names.index(pool_step)]["with"]["args"]
    store = "baseline-store/history"  # the branch's history, as the bench job checks it out (when there is one)
    assert "--tonight results/nightly" in args and f"'--history {store}'" in args


@pytest.mark.slow  # the nightly workflow's steps end to end
def test_nightly_bench_steps_pool_tonight_and_the_history(tmp_path):
    bench = jobs("asr-gate-nightly.yml")["bench"]
    model = {"qwen3/asr_en": "qwen3"}
    # The baseline branch as the bench job checks it out: a stored baseline calibrated from 3 cross-job A/A
    # pairs, and the history of 36 nights of qwen3/asr_en.
    store = tmp_path / "baseline-store"
    stored_file = store / "h100" / "qwen3.json"
    assert subprocess.run([str(Path(sys.executable).parent / "gate"), "baseline", "create",
                           str(write_example_tree(tmp_path / "old", SUITE, ExampleSpec(seed=1, models=("qwen3",),
                                                                                         runs=("1", "2", "3")))),
                           "--out", str(stored_file)], capture_output=True).returncode == 0
    arms = [side_from_tree(write_example_tree(tmp_path / f"aa{k}", SUITE, ExampleSpec(seed=40 + k, models=("qwen3",),
                                                                                      runs=("1", "2", "3"))),
                           SUITE, sample_reader=speed_only) for k in range(6)]
    calibrate_baseline(stored_file, list(zip(arms[0::2], arms[1::2], strict=True)), SUITE, cross_job=[True] * 3)
    before = stored(stored_file, EN)
    HistoryStore(store / "history").append(synthetic_records())
    write_example_tree(tmp_path / "results" / "nightly", SUITE, ExampleSpec(seed=3, models=("qwen3",),
                                                                            runs=("1", "2", "3")))
    values = {"matrix.model": model[EN], "inputs.runner-class": "h100",
              "format('baseline-store/{0}/{1}.json', inputs.runner-class, matrix.model)": str(stored_file),
              # The stored file and the history exist (the bench job's conditional arguments, issue 22):
              "steps.baseline.outputs.path != '' && format('--keep-calibration {0}', steps.baseline.outputs.path) || ''":
                  f"--keep-calibration {stored_file}",
              "hashFiles('baseline-store/history/**') != '' && '--history baseline-store/history' || ''":
                  "--history baseline-store/history"}
    for name in ("Store tonight as a candidate baseline", "Pool the nights' run-to-run spread into the candidate's σ"):
        done = run_action(step(bench, name), tmp_path, values)
        assert done.returncode == 0, done.stdout + done.stderr
    new = tmp_path / "new-baseline" / "qwen3.json"
    en, zh = stored(new, EN), stored(new, ZH)
    # asr_en: tonight + the history's 13 newest nights (14 kept) on top of the pairs' 12 df.
    assert (en.pair_df, en.nights, en.night_df, en.df) == (12, 14, 28, 40)
    assert (zh.pair_df, zh.nights, zh.night_df, zh.df) == (12, 1, 2, 14)  # the history has no asr_zh: tonight only
    assert (en.cross_pairs, en.cross_sum_sq, en.cross_sum_h, en.delta_sd) == (before.cross_pairs, before.cross_sum_sq,
                                                                              before.cross_sum_h, before.delta_sd)
    assert stored(stored_file, EN) == before  # the stored file is not touched; the store job replaces it


# --- calibration: the pair's arms go into the history, and the pairs are cross-job ---------------------

def test_calibration_workflow_shape():
    all_jobs = jobs("asr-gate-calibration.yml")
    history = all_jobs["history"]
    assert history["needs"] == ["plan", "first", "second"] and history["runs-on"] == "ubuntu-latest"
    assert "permissions" not in history  # read-only (the workflow's contents: read); the store job pushes
    append = step(history, "Append the arms to the history (kind calibration)")
    assert "history import" in append["run"] and "--kind calibration" in append["run"]
    stored = "store/history/**/*.jsonl"
    assert append["if"] == f"hashFiles('{stored}') != ''"  # never starts a history
    assert "history" in all_jobs["store"]["needs"]
    recalibrate = step(all_jobs["recalibrate"], "Recalibrate the baseline from those pairs")["run"]
    assert "--cross-job" in recalibrate  # each pair's arms ran in two separate jobs


def test_calibration_appends_both_arms_as_calibration_records(tmp_path):
    history_job = jobs("asr-gate-calibration.yml")["history"]
    HistoryStore(tmp_path / "store" / "history").append(synthetic_records())
    for k, (arm, started) in enumerate((("first", "2026-11-07T01:00:00.250+00:00"),
                                        ("second", "2026-11-07T03:30:00.125+00:00"))):
        tree = write_example_tree(tmp_path / "arms" / f"asr-gate-aa-{arm}-qwen3-9-1", SUITE,
                                  ExampleSpec(seed=60 + k, models=("qwen3",), runs=("1", "2", "3")))
        log = runlog.skeleton({tree.name: "/checkouts/main"}, {f"{tree.name}/run{r}": "completed" for r in "123"},
                              started=started, status="completed")
        (tree / "gate-run.json").write_text(json.dumps(log))
    runner_temp = tmp_path / "runner-temp"
    (runner_temp / "gate-venv" / "bin").mkdir(parents=True)
    (runner_temp / "gate-venv" / "bin" / "gate").symlink_to(Path(sys.executable).parent / "gate")
    done = run_shell(step(history_job, "Append the arms to the history (kind calibration)"), tmp_path,
                     {"inputs.runner-class": "h100"}, {"RUNNER_TEMP": str(runner_temp)})
    assert done.returncode == 0, done.stderr
    assert "4 new records from 2 trees" in done.stdout and "trees (2 nights" in done.stdout
    records = HistoryStore(tmp_path / "history").read().records
    added = [r for r in records if r.kind == "calibration"]
    assert len(records) == 36 + 4 and {r.workload for r in added} == {EN, ZH}
    assert sorted({r.time for r in added}) == ["2026-11-07T01:00:00+00:00", "2026-11-07T03:30:00+00:00"]
    # The arms are A/A pairs already: pooling the nights from this history never counts them.
    from gate.history.noise import pool

    assert pool(records, SUITE).not_nightly == 4


# --- the push jobs merge the history line by line ---------------------------------------------------------

def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


# Both store jobs run `gate store` (gate/publish/branch.py): the nightly's `store history`, the calibration's
# `store calibration`, tested against a real bare repository and a concurrent writer in tests/e2e/github/test_gh_store.py.
def test_store_jobs_write_only_through_gate_store():
    for workflow, job, sub in (("asr-gate-calibration.yml", "store", "calibration"),
                               ("asr-gate-nightly.yml", "store-history", "history"),
                               ("asr-gate-nightly.yml", "update-baseline", "baselines")):
        found = jobs(workflow)[job]
        writes = [s for s in found["steps"] if (s.get("with") or {}).get("command") == "store"]
        assert len(writes) == 1 and writes[0]["with"]["args"].split()[0] == sub, (workflow, job)
        assert not any("git " in str(s.get("run", "")) for s in found["steps"]), (workflow, job)
