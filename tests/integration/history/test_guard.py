"""The drift guard: tonight does not become the baseline when main moved the wrong way."""
from __future__ import annotations

import dataclasses
import json

from click.testing import CliRunner

from gate.cli import cli
from gate.formats.config import load_suite
from gate.history.analysis import trends
from gate.history.guard import LEVEL_NIGHTS, guard
from gate.history.store import HistoryStore
from tests.helpers.nights import synthetic_records

SUITE = load_suite()


def test_a_flat_history_lets_tonight_through(tmp_path):
    records = synthetic_records(nights=30, step_night=99)
    store = HistoryStore(tmp_path / "h")
    store.append(records)
    assert guard(store.read(), records[-1:], SUITE) == []


def test_one_slow_night_is_caught_by_the_level_before_any_change_point(tmp_path):
    records = synthetic_records(nights=21, step_night=20)  # only tonight is 6% slower: no change point yet
    store = HistoryStore(tmp_path / "h")
    store.append(records)
    history = store.read()
    assert not any(t.change_points for t in trends(history, SUITE))
    [finding] = guard(history, records[-1:], SUITE)
    assert finding.kind == "level" and finding.metric == "throughput_samples_per_s"
    assert LEVEL_NIGHTS == 14 and f"against the last {LEVEL_NIGHTS} nights' level" in finding.text


def test_a_step_blocks_until_a_maintainer_accepts_it(tmp_path):
    records = synthetic_records(nights=36, step_night=24)
    store = HistoryStore(tmp_path / "h")
    store.append(records)
    findings = guard(store.read(), records[-1:], SUITE)
    assert [(f.kind, f.metric) for f in findings] == [("step", "throughput_samples_per_s")]  # gated only
    accept = dataclasses.replace(records[-1], kind="accepted", time="2026-10-06T09:00:00+00:00")
    store.append([accept])
    assert guard(store.read(), records[-1:], SUITE) == []  # and the level is the new one, since the step


def test_the_command_writes_block_for_the_workflow(tmp_path):
    from gate.examples import ExampleSpec, write_example_tree

    store = HistoryStore(tmp_path / "h")
    store.append(synthetic_records(nights=36, step_night=24))
    tree = write_example_tree(tmp_path / "t", SUITE, ExampleSpec(models=("qwen3",), runs=("1", "2", "3")))
    result = CliRunner().invoke(cli, ["history", "guard", str(tree), "--history", str(tmp_path / "h"),
                                      "--runner-class", "h100", "--json", str(tmp_path / "g.json")])
    assert result.exit_code == 0, result.output
    written = json.loads((tmp_path / "g.json").read_text())
    assert written["block"] is True
    [finding] = written["findings"]
    assert (finding["workload"], finding["metric"], finding["kind"]) == ("qwen3/asr_en", "throughput_samples_per_s", "step")
    assert finding["text"].startswith(f"{finding['workload']} {finding['metric']}: step -")
    assert f"blocks the baseline move: {finding['text']}" in result.output
