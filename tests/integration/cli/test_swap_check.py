"""`gate compare` warns when BASE and CANDIDATE look swapped, and the verdict stays what it was."""
from __future__ import annotations

import datetime as dt
import json

import pytest
from click.testing import CliRunner

from gate.cli import cli
from gate.examples import ExampleSpec, write_example_tree
from gate.formats import runlog
from gate.formats.config import load_suite
from gate.formats.errors import InputError
from gate.judging.swap_check import Recorded, RowOutcome, recorded, swap_warnings
from gate.reading.baseline_file import write_baseline
from gate.reading.tree_side import side_from_tree

T0 = dt.datetime(2026, 11, 1, 12, 0, tzinfo=dt.timezone.utc)
LATER = T0 + dt.timedelta(hours=3)


def test_base_recorded_after_candidate_warns():
    warnings = swap_warnings(Recorded("tree", LATER, "gate-run.json started"),
                             Recorded("tree", T0, "gate-run.json started"), [])
    source = "gate-run.json started"
    times = f"({source} {LATER:%Y-%m-%d %H:%M} UTC, {source} {T0:%Y-%m-%d %H:%M} UTC)"  # the base's, then the candidate's
    assert len(warnings) == 1 and "BASE was recorded after" in warnings[0] and f" CANDIDATE {times}" in warnings[0]


def test_in_order_or_unknown_times_do_not_warn():
    rows = [RowOutcome(gated=True, improved=False), RowOutcome(gated=True, improved=True)]
    assert swap_warnings(Recorded("tree", T0, "x"), Recorded("tree", LATER, "x"), rows) == []
    assert swap_warnings(Recorded("tree", None, "x"), Recorded("tree", T0, "x"), rows) == []
    assert swap_warnings(Recorded("tree", T0, "x"), Recorded("tree", T0, "x"), rows) == []  # one `gate run --ab`


def test_every_gated_row_improving_warns_but_one_ungated_does_not_count():
    rows = [RowOutcome(gated=True, improved=True)] * 3 + [RowOutcome(gated=False, improved=False)]
    unknown = Recorded("tree", None, "")
    assert any("all 3 gated rows improved" in w for w in swap_warnings(unknown, unknown, rows))
    assert swap_warnings(Recorded("tree", None, ""), Recorded("tree", None, ""), rows[:1]) == []  # one row says little


def test_recorded_reads_run_log_and_baseline_created(tmp_path):
    tree = tmp_path / "tree"
    tree.mkdir()
    assert recorded(tree).when is None
    log = runlog.skeleton({"tree": "/checkouts/tree"}, {"tree/run1": "completed"}, started="2026-11-01T13:00:00.000+01:00")
    (tree / "gate-run.json").write_text(json.dumps(log))
    assert (recorded(tree).when, recorded(tree).source) == (T0, "gate-run.json started")
    baseline = stored_baseline(tmp_path, "2026-11-01T15:00:00+00:00")
    assert (recorded(baseline).kind, recorded(baseline).when, recorded(baseline).source) == ("baseline", LATER, "baseline created")
    # The same readers as the verdict's (gate.formats.runlog, gate.reading.baseline_file): what they refuse is refused here too.
    (tmp_path / "garbage.json").write_text("{not json")
    with pytest.raises(InputError, match="garbage.json: not valid JSON"):
        recorded(tmp_path / "garbage.json")
    (tree / "gate-run.json").write_text(json.dumps({**log, "started": "2026-11-01T12:00:00"}))  # naive: a guess
    with pytest.raises(InputError, match=r"gate-run.json: \$.started: expected a string matching"):
        recorded(tree)


def stored_baseline(folder, created: str):
    """A baseline file as `gate baseline create` writes it, stored at `created`."""
    suite = load_suite()
    tree = write_example_tree(folder / "stored", suite, ExampleSpec(models=("qwen3",), runs=("1", "2", "3")))
    path = write_baseline(side_from_tree(tree, suite, models=("qwen3",)), folder / "baseline.json")
    path.write_text(json.dumps({**json.loads(path.read_text()), "created": created}))
    return path


def test_compare_warns_on_swapped_sides_and_keeps_the_verdict(tmp_path):
    suite = load_suite()
    old = write_example_tree(tmp_path / "old", suite, ExampleSpec(models=("qwen3",), runs=("1", "2", "3"), seed=0))
    new = write_example_tree(tmp_path / "new", suite, ExampleSpec(models=("qwen3",), runs=("1", "2", "3"), seed=1,
                                                                  speed_factor={"qwen3/asr_en": 1.10}))
    for tree, started in ((old, T0), (new, LATER)):  # one-side runs of `gate run`
        log = runlog.skeleton({tree.name: f"/checkouts/{tree.name}"}, {f"{tree.name}/run{r}": "completed" for r in "123"},
                              started=started.isoformat(timespec="milliseconds"), status="completed")
        (tree / "gate-run.json").write_text(json.dumps(log))
    runner = CliRunner()
    straight = runner.invoke(cli, ["compare", str(old), str(new), "--format", "json", "--no-cache"])
    swapped = runner.invoke(cli, ["compare", str(new), str(old), "--format", "json", "--no-cache"])
    assert "may be swapped" not in straight.stderr
    assert "BASE was recorded after " in swapped.stderr and "after CANDIDATE (" in swapped.stderr
    assert swapped.exit_code == json.loads(swapped.stdout)["exit_code"]
    (new / "gate-run.json").unlink()
    (old / "gate-run.json").unlink()
    unmarked = runner.invoke(cli, ["compare", str(new), str(old), "--format", "json", "--no-cache"])
    assert json.loads(unmarked.stdout)["verdict"] == json.loads(swapped.stdout)["verdict"]  # the warning changes nothing
    assert unmarked.exit_code == swapped.exit_code
