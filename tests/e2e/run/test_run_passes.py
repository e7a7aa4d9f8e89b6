"""`gate run` with `passes: 4` for a model (issue 37), on the stand-in: the client runs --repeats 4 in each server
start, the tree reads complete with one observation a start and the four passes kept, the per-utterance data
is the first pass's; calibrating a baseline on two such A/A trees stores the components with the start cost
gate-run.json timed, and the dry run plans from them."""
from __future__ import annotations

import dataclasses
import json
import shutil

from gate.reading.baseline_file import stored_components
from gate.reading.side import MATCH
from gate.reading.tree_side import side_from_tree
from tests.helpers.fixtures_run import REPO, Bench

GATE = "import sys\nfrom gate.cli import main\nsys.argv = ['gate', *sys.argv[1:]]\nmain()\n"


def _with_passes(bench: Bench, passes: int) -> Bench:
    text = bench.suite_path.read_text(encoding="utf-8")
    marker = "revision: 7278e1e70fe206f11671096ffdd38061171dd6e5\n"
    assert text.count(marker) == 1
    path = bench.root / "suite-passes.yaml"
    path.write_text(text.replace(marker, f"{marker}    passes: {passes}\n"), encoding="utf-8")
    return dataclasses.replace(bench, suite_path=path)


def test_four_passes_a_start_read_as_one_observation_and_calibrate(bench):
    import subprocess
    import sys

    four = _with_passes(bench, 4)
    trees = []
    for name in ("aa1", "aa2"):
        done = four.run("--models", "qwen3", "--runs", "warm,1,2", "--name", name, timeout=180)
        assert done.returncode == 0, done.stderr
        trees.append(four.out / name)
    doc = json.loads((trees[0] / "run1" / "qwen3" / "asr_en.json").read_text())
    assert doc["results"][0]["repeats"] == 4 and len(doc["results"][0]["per_repeat"]) == 4
    side = side_from_tree(trees[0], four.suite, models=("qwen3",))
    en = side.workloads["qwen3/asr_en"]
    assert en.complete, en.problems
    assert len(en.values["throughput_samples_per_s"]) == 2  # two starts, two observations
    assert [len(p) for p in en.passes["throughput_samples_per_s"]] == [4, 4]
    assert all(c.status == MATCH for c in en.samples["wer"].checks)

    baseline = bench.root / "baseline.json"
    gate = [sys.executable, "-c", GATE]
    env = four.env()
    made = subprocess.run([*gate, "baseline", "create", str(trees[0]), "--out", str(baseline), "--suite",
                           str(four.suite_path)], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    copy = shutil.copy(baseline, bench.root / "before.json")
    calibrated = subprocess.run([*gate, "baseline", "calibrate", *map(str, trees), "--baseline", str(baseline),
                                 "--suite", str(four.suite_path)], cwd=REPO, env=env, capture_output=True, text=True,
                                timeout=120)
    assert calibrated.returncode == 0, calibrated.stderr
    assert stored_components(copy) == {}
    stored = stored_components(baseline)["qwen3"]
    assert stored.passes == 4 and stored.df_pass == 2 * 2 * 3 and stored.df_start == 2
    assert stored.start_cost_s is not None and stored.start_cost_s > 0 and stored.pass_cost_s > 0

    planned = four.run("--models", "qwen3", "--dry-run", "--calibration", str(baseline), "--name", "plan")
    assert planned.returncode == 0, planned.stderr
    assert "# --- plan by detectable change" in planned.stdout and "# qwen3: σ_start" in planned.stdout
