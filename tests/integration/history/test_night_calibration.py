"""The nightly job's own run-to-run spread pooled into a baseline's within-job σ, beside its A/A pairs.

Known answers: runs are 100·e^(−d), 100, 100·e^(+d), so one arm's sum of squares of ln(value) about its
mean is exactly 2d² on 2 degrees of freedom.
"""
from __future__ import annotations

import datetime as _dt
import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from gate.cli import cli
from gate.examples import ExampleSpec, write_example_tree
from gate.formats import runlog
from gate.formats.config import load_suite
from gate.formats.errors import InputError
from gate.formats.noise_model import Calibration
from gate.history.importer import records_from_tree
from gate.history.noise import NIGHTS_KEPT, pool, write_calibration
from gate.history.records import Record
from gate.history.store import HistoryStore
from gate.judging.calibration import calibrate_baseline
from gate.judging.compare import compare
from gate.reading.baseline_file import read_baseline, write_baseline
from gate.reading.comparability import Fingerprint
from gate.reading.side import Side, WorkloadSide
from gate.stats.performance import with_nights

SUITE = load_suite()
WORKLOADS = ("qwen3/asr_en", "qwen3/asr_zh")
THROUGHPUT = "throughput_samples_per_s"
SPEED = ("throughput_samples_per_s", "latency_mean_s", "latency_p95_s", "rtf_mean")
D_PAIRS = 0.01  # ln spread of the A/A arms' runs
E_NIGHTS = 0.02  # ln spread of the nights' runs
FIRST = _dt.datetime(2026, 11, 1, 2, 0, tzinfo=_dt.timezone.utc)


def runs(spread: float, level: float = 0.0) -> list[float]:
    return [100 * math.exp(level + k * spread) for k in (-1, 0, 1)]


def values(spread: float, level: float = 0.0) -> dict[str, list[float]]:
    speed = runs(spread, level)
    return {"corpus_wer": [0.02] * 3, **{m: speed for m in SPEED}}


def side(label: str, spread: float, level: float = 0.0) -> Side:
    workloads = {w: WorkloadSide(workload_id=w, runs=("run1", "run2", "run3"),
                                 values={m: tuple(v) for m, v in values(spread, level).items()}, complete=True,
                                 problems=(), samples={}, evaluated=(SUITE.workload(w).expected_samples,) * 3)
                 for w in WORKLOADS}
    return Side(kind="tree", path=f"<{label}>", suite=SUITE.name, commit="c0ffee", runs=("run1", "run2", "run3"),
                workloads=workloads, missing=(), fingerprint=Fingerprint())


def night(i: int, spread: float = E_NIGHTS, *, kind: str = "nightly", level: float | None = None,
          time: _dt.datetime | None = None, complete: bool = True, workload: str = WORKLOADS[0],
          speed: list[float] | None = None) -> Record:
    """Night i; its level differs every night so no two nights share a run by chance."""
    vals = values(spread, 0.0013 * i if level is None else level)
    if speed is not None:
        vals = {**vals, **{m: speed for m in SPEED}}
    when = (time or FIRST + _dt.timedelta(days=i)).isoformat()
    return Record(time=when, kind=kind, commit=f"{i:040x}", workload=workload, runs=("run1", "run2", "run3"),
                  values={m: tuple(v) for m, v in vals.items()}, complete=complete, runner_class="h100")


def both(i: int, **kw) -> list[Record]:
    return [night(i, workload=w, **kw) for w in WORKLOADS]


CROSS_SHIFTS = (0.004, -0.006, 0.002)  # each cross-job pair's second arm is this much (ln) off the first


@pytest.fixture
def baseline(tmp_path) -> Path:
    """A baseline calibrated from 3 cross-job A/A pairs of 3+3 runs: df 12 per workload × metric."""
    path = write_baseline(side("base", D_PAIRS), tmp_path / "qwen3.json")
    pairs = [(side(f"a{k}", D_PAIRS, 0.05 + 0.0037 * k), side(f"b{k}", D_PAIRS, 0.05 + 0.0037 * k + shift))
             for k, shift in enumerate(CROSS_SHIFTS)]
    calibrate_baseline(path, pairs, SUITE, cross_job=[True] * 3)
    return path


def stored(path: Path, workload: str = WORKLOADS[0], metric: str = THROUGHPUT) -> Calibration:
    found = read_baseline(path, SUITE).calibration[workload][metric]
    assert isinstance(found, Calibration)
    return found


def test_aa_pairs_and_two_nights_pool_sums_of_squares_and_df(baseline):
    before = stored(baseline)
    assert (before.df, before.pairs, before.nights) == (12, 3, 0)
    assert before.sigma == pytest.approx(math.sqrt(6 * 2 * D_PAIRS**2 / 12), rel=1e-9)

    write_calibration(baseline, both(1) + both(2), SUITE, history="h")
    after = stored(baseline)
    # 3 pairs × 2 arms × 2 df = 12, plus 2 nights × 2 df = 4; sums of squares 12 d² + 4 e².
    assert (after.df, after.pair_df, after.night_df, after.nights, after.pairs) == (16, 12, 4, 2, 3)
    assert after.sigma == pytest.approx(math.sqrt((12 * D_PAIRS**2 + 4 * E_NIGHTS**2) / 16), rel=1e-9)
    assert after.night_sum_sq == pytest.approx(4 * E_NIGHTS**2, rel=1e-9)
    assert after.groups == 6 + 2
    # The cross-job part is the pairs' alone and is not disturbed.
    assert (after.cross_pairs, after.cross_diffs) == (3, 3)
    assert after.cross_sum_sq == pytest.approx(sum(s * s for s in CROSS_SHIFTS), rel=1e-9)
    assert (after.cross_sum_sq, after.cross_sum_h, after.delta_sd) == (before.cross_sum_sq, before.cross_sum_h,
                                                                       before.delta_sd)
    source = json.loads(baseline.read_text())["calibration_source"]
    assert source["cross_job_pairs"] == 3 and source["nights"]["used"] == {w: 2 for w in WORKLOADS}


def test_pooling_again_replaces_the_nights_part_never_adds_to_it(baseline):
    write_calibration(baseline, both(1) + both(2), SUITE, history="h")
    first = stored(baseline)
    write_calibration(baseline, both(1) + both(2), SUITE, history="h")
    second = stored(baseline)
    assert second.df == first.df == 16 and second.sigma == pytest.approx(first.sigma, rel=1e-12)
    write_calibration(baseline, both(1), SUITE, history="h")  # the window now holds one night: +2 df, not +6
    assert (stored(baseline).df, stored(baseline).nights) == (14, 1)


def test_the_same_night_is_counted_once(baseline):
    # The same tree imported twice (a re-run job stamps another time), and a record whose run was copied.
    again = both(2, time=FIRST + _dt.timedelta(days=2, hours=5))
    copied = night(3, speed=[100.0, 101.0, night(2).values[THROUGHPUT][2]])  # its run3 is night 2's run3
    found = pool(both(1) + both(2) + again + [copied], SUITE)
    assert found.used == {w: 2 for w in WORKLOADS} and found.repeated == 3
    write_calibration(baseline, both(1) + both(2) + again, SUITE, history="h")
    assert (stored(baseline).df, stored(baseline).nights) == (16, 2)


def test_only_the_newest_nights_are_kept():
    # 6 old nights with a wide spread, then NIGHTS_KEPT recent ones with a narrow one: the old ones age out.
    old = [night(i, 0.05) for i in range(6)]
    recent = [night(i, 0.01) for i in range(6, 6 + NIGHTS_KEPT)]
    found = pool(old + recent, SUITE)
    cal = found.calibration[WORKLOADS[0]][THROUGHPUT]
    assert (cal.df, cal.groups, found.used[WORKLOADS[0]]) == (2 * NIGHTS_KEPT, NIGHTS_KEPT, NIGHTS_KEPT)
    assert cal.sigma == pytest.approx(0.01, rel=1e-9)
    assert NIGHTS_KEPT == 14  # documented in README and `gate baseline nights --help`


def test_calibration_arms_and_pr_trees_are_never_nights():
    found = pool([night(1, 0.05, kind="calibration"), night(2, 0.05, kind="accepted"), night(3)], SUITE)
    assert found.not_nightly == 2 and found.used == {WORKLOADS[0]: 1}
    assert found.calibration[WORKLOADS[0]][THROUGHPUT].sigma == pytest.approx(E_NIGHTS, rel=1e-9)
    only_untrusted = pool([night(1, kind="accepted"), night(2, kind="calibration")], SUITE)
    assert only_untrusted.calibration == {} and only_untrusted.not_nightly == 2


def test_incomplete_nights_are_skipped_and_a_wild_run_is_set_aside_as_calibrate_does():
    wild = night(2, speed=[100.0, 100 * math.exp(0.01), 75.0])  # a slow restart: -25% from the night's median
    found = pool([night(1), night(3, 0.05, complete=False), wild], SUITE)
    cal = found.calibration[WORKLOADS[0]][THROUGHPUT]
    assert found.incomplete == 1 and cal.set_aside == 1
    assert cal.df == 2 + 1  # night 1: three runs; the wild night: two kept
    assert cal.sigma**2 * cal.df == pytest.approx(2 * E_NIGHTS**2 + 0.01**2 / 2, rel=1e-9)


def test_recalibrating_from_pairs_keeps_the_nights(baseline):
    write_calibration(baseline, both(1) + both(2), SUITE, history="h")
    calibrate_baseline(baseline, [(side("x", 0.03), side("y", 0.03, 0.0041))], SUITE)  # one new pair replaces the three
    cal = stored(baseline)
    assert (cal.df, cal.pair_df, cal.night_df, cal.pairs, cal.cross_pairs) == (8, 4, 4, 1, 0)
    assert cal.sigma == pytest.approx(math.sqrt((2 * 2 * 0.03**2 + 4 * E_NIGHTS**2) / 8), rel=1e-9)
    assert "nights" in json.loads(baseline.read_text())["calibration_source"]


def test_nights_alone_make_a_calibration_and_the_pairs_part_is_recovered_exactly():
    nights_only = pool(both(1) + both(2), SUITE).calibration[WORKLOADS[0]][THROUGHPUT]
    merged = with_nights(None, nights_only)
    assert merged is not None and (merged.df, merged.pair_df, merged.pairs) == (4, 0, 0)
    assert merged.without_nights() is None
    pairs = Calibration(sigma=0.01, df=12, groups=6, within_pairs=3)
    again = with_nights(with_nights(pairs, nights_only), nights_only)  # the second replaces the first's nights
    assert again is not None and (again.df, again.nights) == (16, 2)
    recovered = again.without_nights()
    assert recovered is not None and (recovered.df, recovered.groups, recovered.nights) == (12, 6, 0)
    assert recovered.sigma == pytest.approx(0.01, rel=1e-12)


def test_the_report_says_where_sigma_comes_from(baseline):
    write_calibration(baseline, both(1) + both(2), SUITE, history="h")
    report = compare(read_baseline(baseline, SUITE), side("cand", D_PAIRS), SUITE, models=("qwen3",))
    row = next(r for r in report.rows if r.workload == WORKLOADS[0] and r.metric == THROUGHPUT)
    pairs, nights, df = 3, 2, 32  # 16 per workload
    assert "pooled over the model's" in row.method
    assert f" workloads ({pairs} A/A pairs + {nights} nights, df {df})" in row.method


def test_a_nights_part_larger_than_the_whole_refuses_the_baseline(baseline, tmp_path):
    write_calibration(baseline, both(1) + both(2), SUITE, history="h")
    data = json.loads(baseline.read_text())
    data["calibration"][WORKLOADS[0]][THROUGHPUT]["night_df"] = 99
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(InputError, match=r"night_df <= df"):
        read_baseline(bad, SUITE)
    result = CliRunner().invoke(cli, ["compare", str(bad), str(bad)])
    assert result.exit_code == 2 and result.output.count("\n") == 1 and "throughput_samples_per_s" in result.output


def test_write_calibration_without_any_night_is_an_error_only_when_asked(baseline):
    with pytest.raises(InputError, match="no complete nightly runs"):
        write_calibration(baseline, [night(1, kind="accepted")], SUITE, history="h")
    write_calibration(baseline, both(1), SUITE, history="h")
    write_calibration(baseline, [], SUITE, history=None, require=False)  # empties the nights' part
    cal = stored(baseline)
    assert (cal.df, cal.nights, cal.night_df) == (12, 0, 0)


# --- the command the nightly runs ----------------------------------------------------------------------

def test_baseline_nights_command_with_tonight_and_the_history(tmp_path):
    tonight = write_example_tree(tmp_path / "nightly", SUITE, ExampleSpec(seed=5, models=("qwen3",),
                                                                          runs=("1", "2", "3")))
    runner = CliRunner()
    out = tmp_path / "new" / "qwen3.json"
    assert runner.invoke(cli, ["baseline", "create", str(tonight), "--out", str(out), "--models", "qwen3"]).exit_code == 0

    first = runner.invoke(cli, ["baseline", "nights", str(out), "--tonight", str(tonight), "--tonight", str(tonight),
                                "--history", str(tmp_path / "none"), "--runner-class", "h100"])
    assert first.exit_code == 0, first.output
    assert "no history at" in first.output and "repeated night" in first.output
    assert (stored(out).df, stored(out).nights) == (2, 1)  # tonight once: 3 runs, 2 df

    history = tmp_path / "history"
    HistoryStore(history).append(both(1) + both(2) + records_from_tree(tonight, SUITE, runner_class="h100"))
    second = runner.invoke(cli, ["baseline", "nights", str(out), "--tonight", str(tonight), "--history", str(history),
                                 "--runner-class", "h100"])
    assert second.exit_code == 0, second.output
    assert (stored(out).df, stored(out).nights) == (6, 3)  # two stored nights + tonight (also stored: once)
    assert "2 repeated night(s) skipped" in second.output  # tonight's two workloads, already in the history

    other = runner.invoke(cli, ["baseline", "nights", str(out), "--history", str(history), "--runner-class", "a100"])
    assert other.exit_code == 0 and "keeps the A/A pairs' σ only" in other.output
    assert "qwen3/asr_en" not in read_baseline(out, SUITE).calibration


def test_baseline_nights_on_a_non_baseline_is_one_line(tmp_path):
    bad = tmp_path / "b.json"
    bad.write_text("{}")
    result = CliRunner().invoke(cli, ["baseline", "nights", str(bad)])
    assert result.exit_code == 2 and result.output.count("\n") == 1 and str(bad) in result.output


def test_history_noise_write_calibration_merges_with_the_aa_pairs(baseline, tmp_path):
    history = tmp_path / "history"
    HistoryStore(history).append(both(1) + both(2) + [night(3, 0.05, kind="calibration")])
    result = CliRunner().invoke(cli, ["history", "noise", "--history", str(history), "--write-calibration",
                                      str(baseline)])
    assert result.exit_code == 0, result.output
    assert (stored(baseline).df, stored(baseline).pair_df, stored(baseline).cross_pairs) == (16, 12, 3)


def test_an_arm_made_by_gate_run_is_timed_by_its_run_log(tmp_path):
    tree = write_example_tree(tmp_path / "aa-first", SUITE, ExampleSpec(models=("qwen3",), runs=("1", "2", "3")))
    log = runlog.skeleton({tree.name: "/checkouts/main"}, {f"{tree.name}/run{r}": "completed" for r in "123"},
                          started="2026-11-05T03:04:05.678+01:00", status="completed")
    (tree / "gate-run.json").write_text(json.dumps(log))
    [record, _] = records_from_tree(tree, SUITE, runner_class="h100", kind="calibration")
    assert record.time == "2026-11-05T02:04:05+00:00"


def test_the_nightly_refresh_carries_both_parts_over(baseline, tmp_path):
    from gate.judging.calibration import carry_calibration

    write_calibration(baseline, both(1) + both(2), SUITE, history="h")
    carried, source = carry_calibration(side("tonight", 0.015), baseline, SUITE)
    new = write_baseline(carried, tmp_path / "new.json", calibration_source=source)
    assert stored(new) == stored(baseline) and stored(new).night_df == 4
    assert source["nights"]["used"] == {w: 2 for w in WORKLOADS} and source["carried_from"] == str(baseline)
