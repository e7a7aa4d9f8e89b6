from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from conftest import NIGHTS, synthetic_records

from gate.cli import cli
from gate.errors import InputError
from gate.history.store import HistoryStore


def test_append_then_read_round_trips_and_files_split_by_month(tmp_path):
    store = HistoryStore(tmp_path / "h")
    records = synthetic_records()
    assert store.append(records) == NIGHTS
    files = sorted(p.relative_to(tmp_path / "h").as_posix() for p in (tmp_path / "h").rglob("*.jsonl"))
    assert files == ["h100/2026-09.jsonl", "h100/2026-10.jsonl"]
    assert (tmp_path / "h" / ".gitattributes").read_text() == "*.jsonl merge=union\n"
    read = store.read()
    assert read.records == tuple(sorted(records, key=lambda r: r.time))
    first = json.loads((tmp_path / "h" / "h100" / "2026-09.jsonl").read_text().splitlines()[0])
    assert first["workload"] == "qwen3/asr_en" and first["values"]["throughput_samples_per_s"][0] == pytest.approx(
        records[0].values["throughput_samples_per_s"][0])


def test_appending_the_same_nights_again_writes_nothing(tmp_path):
    store = HistoryStore(tmp_path / "h")
    store.append(synthetic_records())
    before = {p: p.read_text() for p in (tmp_path / "h").rglob("*.jsonl")}
    assert store.append(synthetic_records()) == 0
    assert {p: p.read_text() for p in (tmp_path / "h").rglob("*.jsonl")} == before


def test_runner_classes_are_kept_apart(tmp_path):
    store = HistoryStore(tmp_path / "h")
    store.append(synthetic_records(runner_class="h100") + synthetic_records(runner_class="a100", seed=3))
    assert store.read(runner_class="a100").runner_classes() == ("a100",)
    assert len(store.read().records) == 2 * NIGHTS


@pytest.mark.parametrize("line, words", [
    ("{not json", "line 2 is not valid JSON"),
    ('{"v": 1, "time": "2026-09-01T02:00:00+00:00", "kind": "nightly", "workload": "w", "runs": ["run1"], '
     '"values": {"m": [1, 2]}}', "values.m must list one number"),
    ('{"v": 1, "time": "yesterday", "kind": "nightly", "workload": "w", "runs": [], "values": {}}', "time is 'yesterday'"),
    ('{"v": 2}', "not a schema_version 1 record"),
])
def test_a_bad_line_is_one_line_naming_the_file(tmp_path, line, words):
    store = HistoryStore(tmp_path / "h")
    store.append(synthetic_records(nights=1))
    path = next((tmp_path / "h").rglob("*.jsonl"))
    path.write_text(path.read_text() + line + "\n")
    with pytest.raises(InputError) as caught:
        store.read()
    assert str(path) in str(caught.value) and words in str(caught.value)
    result = CliRunner().invoke(cli, ["history", "--history", str(tmp_path / "h")])
    assert result.exit_code == 2 and result.output.count("\n") == 1 and words in result.output


def test_missing_history_is_exit_2_with_one_line(tmp_path):
    result = CliRunner().invoke(cli, ["history", "--history", str(tmp_path / "nothing")])
    assert result.exit_code == 2
    assert "no such history directory" in result.output and "Traceback" not in result.output
