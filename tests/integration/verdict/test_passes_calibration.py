"""`gate baseline calibrate` on A/A runs with P timed passes a server start stores σ_start and σ_pass (issue 37) in
the baseline's calibration_source; the plan reads them back. One-pass A/A runs store none, and older baselines
read as none."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from gate.cli import cli
from gate.formats.errors import InputError
from gate.judging.calibration import components_from_pairs
from gate.reading.baseline_file import stored_components
from gate.reading.tree_side import side_from_tree
from gate.runner.plan_by_change import lines as plan_lines
from tests.helpers.passes import as_passes

FORMATS = Path(__file__).resolve().parents[2] / "fixtures" / "formats"
START, PASS = 0.03, 0.01  # σ of ln(throughput) between starts and between passes, planted


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def _with_passes(tree: Path, dest: Path, suite, seed: int, passes: int = 4) -> Path:
    out = Path(shutil.copytree(tree, dest))
    rng = np.random.default_rng(seed)
    for run in ("run1", "run2", "run3"):
        start = rng.normal(0.0, START)
        factors = np.exp(start + rng.normal(0.0, PASS, passes))
        for workload in suite.workloads_for(("qwen3",)):
            as_passes(out / run, workload, tuple(float(f) for f in factors))
    return out


@pytest.fixture(scope="module")
def aa(make_tree, suite, tmp_path_factory):
    root = tmp_path_factory.mktemp("aa-passes")
    return [_with_passes(make_tree(f"pp{k}", seed=60 + k), root / f"aa{k}", suite, seed=k) for k in range(4)]


def test_calibrate_stores_the_components_and_the_plan_reads_them(make_tree, suite, aa, tmp_path):
    out = tmp_path / "baseline.json"
    assert invoke("baseline", "create", make_tree("base"), "--out", out).exit_code == 0
    result = invoke("baseline", "calibrate", *aa, "--baseline", out)
    assert result.exit_code == 0, result.output
    entry = json.loads(out.read_text())["calibration_source"]["components"]["qwen3"]
    assert entry["passes"] == 4 and entry["df_pass"] == 4 * 3 * 3 and entry["df_start"] == 4 * 2
    assert entry["start_cost_s"] is None  # synthetic trees have no gate-run.json to time a start
    stored = stored_components(out)["qwen3"]
    assert 0.2 * PASS < stored.sigma_pass < 2 * PASS
    assert stored.workload in ("qwen3/asr_en", "qwen3/asr_zh") and stored.metric == "throughput_samples_per_s"
    assert stored.components() is None
    components = stored.components(start_cost_s=60.0)
    assert components is not None and components.pass_cost_s == pytest.approx(stored.pass_cost_s)
    text = "\n".join(plan_lines({"qwen3": components}, ("qwen3",), 0.03, 12))
    assert f"σ_pass {100 * stored.sigma_pass:.2f}%" in text and "two-level" in text


def test_the_tree_side_keeps_one_observation_per_start(aa, suite):
    side = side_from_tree(aa[0], suite).workloads["qwen3/asr_en"]
    assert len(side.values["throughput_samples_per_s"]) == 3
    assert [len(p) for p in side.passes["throughput_samples_per_s"]] == [4, 4, 4]


def test_one_pass_runs_store_no_components(make_tree, suite, tmp_path):
    pairs = [(side_from_tree(make_tree("pp0", seed=60), suite), side_from_tree(make_tree("pp1", seed=61), suite))]
    assert components_from_pairs(pairs, suite) == {}
    out = tmp_path / "baseline.json"
    assert invoke("baseline", "create", make_tree("base"), "--out", out).exit_code == 0
    assert invoke("baseline", "calibrate", make_tree("pp0", seed=60), make_tree("pp1", seed=61),
                  "--baseline", out).exit_code == 0
    assert "components" not in json.loads(out.read_text())["calibration_source"]
    assert stored_components(out) == {}


@pytest.mark.parametrize("folder", ["baseline", "calibration"])
def test_older_baselines_read_as_no_components(folder):
    for path in sorted((FORMATS / folder).glob("2026-*.json")):
        assert stored_components(path) == {}, path


def test_a_malformed_stored_entry_is_one_error_naming_the_field(make_tree, tmp_path):
    out = tmp_path / "baseline.json"
    assert invoke("baseline", "create", make_tree("base"), "--out", out).exit_code == 0
    doc = json.loads(out.read_text())
    doc["calibration_source"] = {"components": {"qwen3": {"sigma_start": -1}}}
    out.write_text(json.dumps(doc))
    with pytest.raises(InputError, match=r"calibration_source.components.qwen3: expected \{sigma_start, sigma_pass"):
        stored_components(out)
