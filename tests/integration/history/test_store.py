from __future__ import annotations

import dataclasses
import errno
import json
import os
import subprocess

import pytest
from click.testing import CliRunner

from gate.cli import cli
from gate.formats.errors import GateError, InputError
from gate.history.store import HistoryStore
from tests.helpers.nights import NIGHTS, synthetic_records


def _files(root):
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_append_then_read_round_trips_and_files_split_by_month(tmp_path):
    store = HistoryStore(tmp_path / "h")
    records = synthetic_records()
    assert store.append(records) == NIGHTS
    files = sorted(p.relative_to(tmp_path / "h").as_posix() for p in (tmp_path / "h").rglob("*.jsonl"))
    assert files == ["h100/2026-09.jsonl", "h100/2026-10.jsonl"]
    assert (tmp_path / "h" / ".gitattributes").read_text() == "*.jsonl merge=union\n"
    read = store.read()
    assert read.records == tuple(sorted(records, key=lambda r: r.time)) and read.skipped == ()
    first = json.loads((tmp_path / "h" / "h100" / "2026-09.jsonl").read_text().splitlines()[0])
    assert first["workload"] == "qwen3/asr_en" and first["values"]["throughput_samples_per_s"][0] == pytest.approx(
        records[0].values["throughput_samples_per_s"][0])


def test_appending_the_same_nights_again_writes_nothing(tmp_path):
    store = HistoryStore(tmp_path / "h")
    store.append(synthetic_records())
    before = _files(tmp_path / "h")
    assert store.append(synthetic_records()) == 0
    assert _files(tmp_path / "h") == before


def test_the_same_night_under_another_time_or_spelling_is_one_record(tmp_path):
    """A rerun with the current time, or '…Z' against '+08:00' for one instant: the store does not change."""
    once, twice = HistoryStore(tmp_path / "once"), HistoryStore(tmp_path / "twice")
    records = synthetic_records(nights=3)
    once.append(records)
    twice.append(records)
    later = [dataclasses.replace(r, time=r.time.replace("02:00:00", "23:59:00")) for r in records]
    spelled = [dataclasses.replace(r, time=r.time.replace("T02:00:00+00:00", "T10:00:00+08:00")) for r in records]
    zulu = [dataclasses.replace(r, time=r.time.replace("+00:00", "Z")) for r in records]
    assert twice.append(later) == 0 and twice.append(spelled) == 0 and twice.append(zulu) == 0
    assert _files(tmp_path / "once") == _files(tmp_path / "twice")


def test_a_rerun_of_a_night_replaces_it(tmp_path):
    store = HistoryStore(tmp_path / "h")
    records = synthetic_records(nights=2)
    store.append(records)
    rerun = dataclasses.replace(records[1], time=records[1].time.replace("02:00", "05:00"),
                                values={**records[1].values, "corpus_wer": (0.02, 0.02, 0.02)})
    assert store.append([rerun]) == 1
    stored = store.read().records
    assert len(stored) == 2 and stored[1].values["corpus_wer"] == (0.02, 0.02, 0.02)


def test_times_in_other_offsets_are_stored_in_utc(tmp_path):
    store = HistoryStore(tmp_path / "h")
    record = dataclasses.replace(synthetic_records(nights=1)[0], time="2026-09-01T10:00:00+08:00")
    store.append([record])
    assert store.read().records[0].time == "2026-09-01T02:00:00+00:00"


def test_runner_classes_are_kept_apart(tmp_path):
    store = HistoryStore(tmp_path / "h")
    store.append(synthetic_records(runner_class="h100") + synthetic_records(runner_class="a100", seed=3))
    assert store.read(runner_class="a100").runner_classes() == ("a100",)
    assert len(store.read().records) == 2 * NIGHTS


def test_a_file_without_its_final_newline_is_not_appended_onto(tmp_path):
    store = HistoryStore(tmp_path / "h")
    records = synthetic_records(nights=3)
    store.append(records[:2])
    path = next((tmp_path / "h").rglob("*.jsonl"))
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    assert store.append(records[2:]) == 1
    text = path.read_text()
    assert text.endswith("\n") and len(text.splitlines()) == 3
    assert len(store.read().records) == 3 and store.read().skipped == ()


def test_a_torn_last_line_is_named_skipped_kept_and_repaired(tmp_path, capsys):
    store = HistoryStore(tmp_path / "h")
    records = synthetic_records(nights=3)
    store.append(records[:2])
    path = next((tmp_path / "h").rglob("*.jsonl"))
    torn = records[2].line()[:57]
    path.write_text(path.read_text() + torn)  # a crash in the middle of an old-style append
    history = store.read()
    assert len(history.records) == 2 and [s.line for s in history.skipped] == [3]
    assert f"{path}:3: not valid JSON" in capsys.readouterr().err
    assert store.append(records[2:]) == 1  # the nightly still stores the night
    assert len(store.read(warn=None).records) == 3
    assert torn in path.read_text().splitlines()  # never deleted by a writer
    result = CliRunner().invoke(cli, ["history", "repair", "--history", str(tmp_path / "h")])
    assert result.exit_code == 0 and f"{path}:4:" in result.output, result.output
    assert path.with_name(path.name + ".rejected").read_text() == torn + "\n"
    assert store.read().skipped == () and len(store.read().records) == 3


@pytest.mark.parametrize("line, words", [
    ("{not json", "not valid JSON"),
    ('{"v": 1, "time": "2026-09-01T02:00:00+00:00", "kind": "nightly", "commit": null, "workload": "q/w", '
     '"runs": ["run1"], "values": {"corpus_wer": [0.1, 0.2]}, "verdict": null, "env": null, "complete": true}',
     "2 values for 1 runs"),
    ('{"v": 1, "time": "yesterday", "kind": "nightly", "commit": null, "workload": "q/w", "runs": [], '
     '"values": {}, "verdict": null, "env": null, "complete": true}', "$.time"),
    ('{"v": 2}', "schema_version 2 is not supported"),
    ('{"v": true}', "$.v: expected an integer"),
    ('{"v": 1, "v": 1}', "duplicate key"),
])
def test_a_bad_line_is_named_with_file_and_line_and_skipped(tmp_path, line, words):
    store = HistoryStore(tmp_path / "h")
    store.append(synthetic_records(nights=1))
    path = next((tmp_path / "h").rglob("*.jsonl"))
    path.write_text(path.read_text() + line + "\n")
    history = store.read(warn=None)
    assert len(history.records) == 1
    [skipped] = history.skipped
    assert skipped.line == 2 and words in skipped.reason, skipped.reason
    result = CliRunner().invoke(cli, ["history", "--history", str(tmp_path / "h")])
    assert result.exit_code == 0 and f"{path}:2: " in result.stderr and words in result.stderr
    assert "Traceback" not in result.output


def test_a_fifo_as_a_month_file_is_named_not_waited_on(tmp_path):
    store = HistoryStore(tmp_path / "h")
    store.append(synthetic_records(nights=1))
    fifo = tmp_path / "h" / "h100" / "2026-10.jsonl"
    os.mkfifo(fifo)
    history = store.read(warn=None)
    assert len(history.records) == 1 and "not a regular file (a FIFO)" in history.skipped[0].reason
    # another night (its own commit): the same measurement at another time is skipped as already stored
    later = dataclasses.replace(synthetic_records(nights=1)[0], time="2026-10-05T02:00:00+00:00", commit="f" * 40)
    with pytest.raises(InputError, match="must be a regular file to be written"):
        store.append([later])


def test_a_link_to_dev_zero_is_refused_without_reading(tmp_path):
    store = HistoryStore(tmp_path / "h")
    store.append(synthetic_records(nights=1))
    (tmp_path / "h" / "h100" / "2026-11.jsonl").symlink_to("/dev/zero")
    history = store.read(warn=None)
    assert len(history.records) == 1 and "link that leaves the tree" in history.skipped[0].reason


def test_missing_history_is_exit_2_with_one_line(tmp_path):
    result = CliRunner().invoke(cli, ["history", "--history", str(tmp_path / "nothing")])
    assert result.exit_code == 2
    assert "no such history directory" in result.output and "Traceback" not in result.output


def test_a_full_disk_during_import_leaves_the_file_as_it_was(tmp_path, monkeypatch):
    store = HistoryStore(tmp_path / "h")
    records = synthetic_records(nights=3)
    store.append(records[:2])
    before = _files(tmp_path / "h")
    real_write = os.write

    def full(fd, data):  # fault injection: the disk fills after 100 bytes of the new file
        if len(data) > 100:
            real_write(fd, bytes(data[:100]))
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", full)
    with pytest.raises(GateError, match="no space left on device"):
        store.append(records[2:])
    monkeypatch.undo()
    assert _files(tmp_path / "h") == before  # no .tmp file left either
    assert store.append(records[2:]) == 1 and len(store.read().records) == 3  # a retry with space works


@pytest.fixture
def small_tmpfs(tmp_path):
    mount = tmp_path / "tmpfs"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48k", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root); the fault-injection test covers ENOSPC")
    yield mount
    subprocess.run(["umount", str(mount)], check=False)


def test_a_really_full_tmpfs_never_corrupts_the_store(small_tmpfs, tmp_path):
    root = small_tmpfs / "h"
    HistoryStore(root).append(synthetic_records(nights=20))
    before = _files(root)
    filler = small_tmpfs / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:  # fill the rest of the file system
        while os.write(fd, b"x" * 512):
            pass
    except OSError as exc:
        assert exc.errno == errno.ENOSPC
    finally:
        os.close(fd)
    with pytest.raises(GateError, match="no space left on device"):
        HistoryStore(root).append(synthetic_records(nights=30)[20:])
    assert _files(root) == before and HistoryStore(root).read().skipped == ()
    filler.unlink()
    assert HistoryStore(root).append(synthetic_records(nights=30)[20:]) == 10


def _import_many(root: str, n: int) -> None:
    HistoryStore(root).append(synthetic_records(nights=n))


@pytest.mark.parametrize("name, change", [
    ("throughput 1e-300", lambda d: d["values"].update(throughput_samples_per_s=[1e-300] * 3)),
    ("throughput 5e8", lambda d: d["values"].update(throughput_samples_per_s=[5e8] * 3)),
    ("WER 5e-324", lambda d: d["values"].update(corpus_wer=[5e-324] * 3)),
    ("a night of year 1", lambda d: d.update(time="0001-09-28T02:00:00+00:00")),
    ("a night in 2099", lambda d: d.update(time="2099-09-28T02:00:00+00:00")),
    ("a January night in the September file", lambda d: d.update(time="2026-01-28T02:00:00+00:00")),
    ("an unknown workload", lambda d: d.update(workload="qwen3/asr_xx")),
])
def test_the_history_refuses_what_the_tree_reader_refuses(tmp_path, name, change):
    """Issue 38: values and nights a result tree could not hold were taken without a word."""
    from tests.helpers.nights import synthetic_records

    root = tmp_path / "h"
    HistoryStore(root).append(synthetic_records(nights=3), warn=None)
    path = root / "h100" / "2026-09.jsonl"
    data = json.loads(path.read_text().splitlines()[0])
    data["time"] = "2026-09-28T02:00:00+00:00"
    change(data)
    path.write_text(path.read_text() + json.dumps(data) + "\n")
    history = HistoryStore(root).read(warn=None)
    assert len(history.records) == 3, name
    [skipped] = history.skipped
    assert skipped.path == str(path) and skipped.line == 4, (name, skipped)
