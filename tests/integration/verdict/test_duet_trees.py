"""Duet trees through the real click group (issue 53): a torn gate-duet.json is one line and exit 2; a duet A/A
calibrates the duet's components into the baseline, which the planner's dry run reads."""
from __future__ import annotations

import dataclasses
import json
import math
import shutil
import statistics

import pytest
from click.testing import CliRunner

from gate.cli import cli
from gate.examples import ExampleSpec, write_example_tree
from gate.formats import duet_log
from gate.formats.config import load_suite
from gate.formats.reasons import CannotFail
from gate.formats.report import NextStep, Report
from gate.reading.baseline_file import stored_components, stored_duet_components
from gate.reading.tree_side import side_from_tree
from tests.helpers import duet_records


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def test_compare_on_a_torn_duet_record_exits_2_in_one_line(make_tree, tmp_path):
    base, cand = tmp_path / "base", tmp_path / "cand"
    shutil.copytree(make_tree("base"), base)
    shutil.copytree(make_tree("base-again", seed=2), cand)
    for tree in (base, cand):
        (tree / duet_log.FILE).write_text(duet_log.dumps(duet_records.record(3))[:150])
    result = invoke("compare", base, cand)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("gate: error: ") and duet_log.FILE in lines[0]
    assert "Traceback" not in result.output


def _duet_aa(tmp_path, sessions: int, pairs: int, seconds: tuple[float, ...]):
    """Two trees of one commit with `sessions` × `pairs` runs each and the duet record the runner writes in both."""
    runs = ("warm", *(str(r) for r in range(1, sessions * pairs + 1)))
    trees = [write_example_tree(tmp_path / name, load_suite(), ExampleSpec(seed=seed, models=("qwen3",), runs=runs,
                                                                           speed_sigma=0.02))
             for name, seed in (("aa-a", 31), ("aa-b", 32))]
    log = duet_records.record(sessions, pairs=pairs)
    log = dataclasses.replace(log, sessions=tuple(dataclasses.replace(s, seconds=t)
                                                  for s, t in zip(log.sessions, seconds, strict=True)))
    for tree in trees:
        duet_records.write(tree, log)
    return trees


def _by_hand(a, b, sessions: int, pairs: int) -> dict[str, float]:
    """σ of a session's mean ln c − ln b per qwen3 workload, from the trees' own throughput values."""
    suite = load_suite()
    sa, sb = side_from_tree(a, suite), side_from_tree(b, suite)
    out = {}
    for workload in suite.workloads_for(("qwen3",)):
        metric = next(m.name for m in workload.metrics if m.kind == "speed" and m.higher_is_better)
        va = dict(zip(sa.workloads[workload.id].runs, sa.workloads[workload.id].values[metric], strict=True))
        vb = dict(zip(sb.workloads[workload.id].runs, sb.workloads[workload.id].values[metric], strict=True))
        means = [statistics.fmean(math.log(vb[f"run{r}"]) - math.log(va[f"run{r}"])
                                  for r in range((s - 1) * pairs + 1, s * pairs + 1)) for s in range(1, sessions + 1)]
        out[workload.id] = statistics.stdev(means)
    return out


def test_a_duet_aa_calibration_stores_the_duet_components(make_tree, tmp_path, bench):
    a, b = _duet_aa(tmp_path, sessions=4, pairs=2, seconds=(30.0, 50.0, 40.0, 90.0))
    path = tmp_path / "baseline.json"
    assert invoke("baseline", "create", make_tree("base"), "--out", path).exit_code == 0
    result = invoke("baseline", "calibrate", a, b, "--baseline", path)
    assert result.exit_code == 0, result.output
    stored = stored_duet_components(path)["qwen3"]
    hand = _by_hand(a, b, 4, 2)
    assert stored.workload == max(hand, key=hand.__getitem__)
    assert stored.session_sd == pytest.approx(hand[stored.workload], abs=1e-6)
    assert stored.session_cost_s == 45.0  # the median session (one model: all of its time)
    assert stored.sessions == 4 and stored.block_sd is not None and stored.block_sd > 0
    assert stored_components(path) == {}  # one-pass runs: no interleave components
    # the planner reads them from the baseline as it reads the interleave's
    done = bench.run("--models", "qwen3", "--dry-run", "--calibration", str(path), "--target-change", "3")
    assert done.returncode == 0, done.stderr
    planned = [line for line in done.stdout.splitlines() if line.startswith("# qwen3: duet σ")]
    assert len(planned) == 1 and f"{100 * stored.session_sd:.2f}%" in planned[0]


def test_a_duet_aa_of_two_sessions_stores_nothing(make_tree, tmp_path):
    a, b = _duet_aa(tmp_path, sessions=2, pairs=2, seconds=(30.0, 40.0))
    path = tmp_path / "baseline.json"
    assert invoke("baseline", "create", make_tree("base"), "--out", path).exit_code == 0
    result = invoke("baseline", "calibrate", a, b, "--baseline", path)
    assert result.exit_code == 0, result.output
    assert stored_duet_components(path) == {} and "qwen3: 2 duet session" in result.stderr


def test_an_undecided_duet_speed_row_names_more_sessions(tmp_path):
    """Two sessions cannot FAIL (df 1): a gated speed row can WARN at most and its step is more duet sessions."""
    trees = [write_example_tree(tmp_path / name, load_suite(), ExampleSpec(seed=seed, models=("qwen3",),
                                                                           runs=("warm", "1", "2", "3", "4")))
             for name, seed in (("base", 41), ("cand", 42))]
    for tree in trees:
        duet_records.write(tree, duet_records.record(2, pairs=2))
    out = tmp_path / "report.json"
    result = invoke("compare", *trees, "--json", out)
    assert result.exit_code == 0, result.output
    report = Report.from_json(json.loads(out.read_text(encoding="utf-8")))
    speed = [r for r in report.rows if CannotFail.FEW_DUET_SESSIONS in r.cannot_fail and r.family is not None]
    assert "throughput_samples_per_s" in {r.metric for r in speed}
    assert {r.next_step for r in speed} == {NextStep.MORE_SESSIONS}
    assert all(r.next_step is not NextStep.MORE_SESSIONS for r in report.rows if r not in speed)
