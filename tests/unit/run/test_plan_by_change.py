"""`gate run --dry-run --components FILE` (issue 37): the plan by detectable change, and bad files."""
from __future__ import annotations

import json
import math

import pytest

from gate.formats import components as components_file
from gate.formats.errors import InputError
from gate.runner.plan_by_change import lines
from gate.stats.nested import WARM_CYCLES, cheapest_for

GOOD = {"schema": "gate-components/1",
        "models": {"whisper": {"sigma_start": 0.0246, "sigma_pass": 0.0256, "start_cost_s": 7.6, "pass_cost_s": 2.24}}}


def _write(tmp_path, doc) -> object:
    path = tmp_path / "components.json"
    path.write_text(json.dumps(doc) if not isinstance(doc, str) else doc)
    return path


def test_file_loads_to_components(tmp_path):
    loaded = components_file.load(_write(tmp_path, GOOD))
    assert loaded["whisper"].sigma_start == 0.0246 and loaded["whisper"].pass_cost_s == 2.24


@pytest.mark.parametrize("doc", ["{not json", {"schema": "other", "models": {}},
                                 {"schema": "gate-components/1", "models": {"whisper": {"sigma_start": 0.01}}},
                                 {"schema": "gate-components/1", "models": {"whisper": {
                                     "sigma_start": 0.01, "sigma_pass": 0.01, "start_cost_s": -1, "pass_cost_s": 1}}}])
def test_bad_files_are_one_input_error(tmp_path, doc):
    with pytest.raises(InputError):
        components_file.load(_write(tmp_path, doc))


def test_plan_lines_carry_the_planner_numbers(tmp_path):
    loaded = components_file.load(_write(tmp_path, GOOD))
    text = "\n".join(lines(loaded, ("whisper", "qwen3"), 0.03, 14))
    today = cheapest_for(loaded["whisper"], 0.03, passes=1)
    assert today is not None
    assert f"= {WARM_CYCLES + 2 * today.starts} cycles, {today.gpu_minutes:.1f} GPU min" in text


def test_dry_run_plans_by_change_and_bad_components_exit_2(bench, tmp_path):
    path = _write(tmp_path, GOOD)
    done = bench.run("--models", "whisper", "--dry-run", "--components", str(path), "--target-change", "3")
    assert done.returncode == 0, done.stderr
    assert any(line.startswith("# --- plan by detectable change") for line in done.stdout.splitlines())
    bad = bench.run("--models", "whisper", "--dry-run", "--components", str(_write(tmp_path, "{")))
    assert bad.returncode == 2 and bad.stderr.startswith("gate: error:") and "Traceback" not in bad.stderr
    no_dry = bench.run("--models", "whisper", "--components", str(path))
    assert no_dry.returncode == 2 and "Traceback" not in no_dry.stderr


DUET = {"session_sd": 0.009, "session_cost_s": 35.8, "block_sd": None, "sessions": 5, "workload": "w", "metric": "m"}


def test_a_baselines_stored_duet_components_read_strictly(tmp_path):
    source = {"components": {"qwen3": {"duet": DUET}}}
    assert components_file.stored(source, tmp_path) == {}  # a duet-only entry has no interleave components
    duet = components_file.stored_duet(source, tmp_path)["qwen3"].components()
    assert (duet.session_sd, duet.session_cost_s, math.isnan(duet.block_sd)) == (0.009, 35.8, True)
    for bad in ({**DUET, "sessions": 2}, {**DUET, "session_cost_s": 0}, {k: v for k, v in DUET.items() if k != "metric"}):
        with pytest.raises(InputError):
            components_file.stored_duet({"components": {"qwen3": {"duet": bad}}}, tmp_path)
