"""gate-duet.json's owner (gate.formats.duet_log): what the runner writes reads back the same; anything else is one
InputError line naming the file."""
from __future__ import annotations

import dataclasses
import json

import pytest

from gate.formats import duet_log
from gate.formats.errors import InputError
from gate.formats.runlog import WriterBug
from gate.judging.duet import read_layout
from tests.helpers import duet_records


def test_a_record_reads_back_as_written(tmp_path):
    log = duet_records.record(4, pairs=2, discarded={3: "6"})
    duet_records.write(tmp_path, log)
    assert duet_log.read(tmp_path) == log
    # the judge pairs the kept runs by session: session 3's second pair (run6) was discarded
    assert read_layout(tmp_path).for_model("qwen3") == (("run1", "run2"), ("run3", "run4"), ("run5",), ("run7", "run8"))


def test_no_record_is_an_interleaved_tree(tmp_path):
    assert duet_log.read(tmp_path) is None and read_layout(tmp_path) is None


def _doc() -> dict:
    return json.loads(duet_log.dumps(duet_records.record(3)))


@pytest.mark.parametrize("garble", [
    lambda d: d.pop("pairs_per_session"),
    lambda d: d.update(schema="gate-duet/9"),
    lambda d: d["sessions"][0].update(status="done"),
    lambda d: d["sessions"][1].update(session=1),  # numbered twice
    lambda d: d["sessions"][0]["discarded"].append({"run": "7", "why": []}),  # not a pair of session 1
    lambda d: d["sessions"][0]["blocks"][0].update(seconds=-1),
    lambda d: d.update(first_sessions=9, max_sessions=5),
])
def test_a_garbled_record_is_one_line_naming_the_file(tmp_path, garble):
    doc = _doc()
    garble(doc)
    (tmp_path / duet_log.FILE).write_text(json.dumps(doc))
    with pytest.raises(InputError) as info:
        duet_log.read(tmp_path)
    assert duet_log.FILE in str(info.value) and "\n" not in str(info.value)


def test_a_torn_record_is_one_line(tmp_path):
    (tmp_path / duet_log.FILE).write_text(duet_log.dumps(duet_records.record(3))[:200])
    with pytest.raises(InputError) as info:
        read_layout(tmp_path)
    assert duet_log.FILE in str(info.value) and "\n" not in str(info.value)


def test_the_writer_refuses_a_record_its_readers_would(tmp_path):
    log = duet_records.record(2)
    with pytest.raises(WriterBug):
        duet_log.dumps(dataclasses.replace(log, sessions=(log.sessions[0], log.sessions[0])))
