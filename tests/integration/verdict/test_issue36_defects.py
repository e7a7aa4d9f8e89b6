"""Issue 36's two defects: a tree without gate-run.json plans its run directories; calibrate's σ is readable."""
from __future__ import annotations

from gate.formats.noise_model import Calibration
from gate.reading import results
from gate.reading.baseline_file import MIN_SIGMA


def test_a_tree_without_a_run_log_plans_its_run_directories(tmp_path, suite):
    for r in (*suite.scored_runs, 4, 5, 6):
        (tmp_path / f"run{r}").mkdir()
    (tmp_path / f"run{suite.warm_run}").mkdir(exist_ok=True)
    planned = results.planned_runs(tmp_path, suite)
    assert planned == tuple(f"run{r}" for r in (*suite.scored_runs, 4, 5, 6))


def test_a_tree_without_a_run_log_still_plans_the_suites_runs(tmp_path, suite):
    (tmp_path / "run1").mkdir()
    assert results.planned_runs(tmp_path, suite) == tuple(f"run{r}" for r in suite.scored_runs)


def test_a_constant_metric_is_written_at_the_readers_floor():
    written = Calibration(sigma=0.0, df=4, groups=2).to_dict()
    assert written["sigma"] >= MIN_SIGMA
    assert Calibration.from_dict(written).sigma == MIN_SIGMA
