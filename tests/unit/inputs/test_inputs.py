"""gate.formats.inputs: the strict reader refuses what could hang, exhaust memory, escape the tree or be misread."""
from __future__ import annotations

import json
import os
import threading

import pytest

from gate.formats import inputs
from gate.formats.inputs import Kind, Unreadable

SMALL = Kind("test file", 1024)


def _write(tmp_path, text, name="f.json"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_reads_strict_json(tmp_path):
    assert inputs.load_json(_write(tmp_path, '{"a": [1, 2.5, null, true]}'), SMALL) == {"a": [1, 2.5, None, True]}


@pytest.mark.parametrize("text, words", [
    ('{"a": 1, "a": 2}', "duplicate key 'a'"),
    ('{"a": NaN}', "NaN"),
    ('{"a": -Infinity}', "Infinity"),
    ('{"a": 1e999}', "out of range"),
    ('{"a": ' + "9" * 401 + "}", "401 digits"),
    ('{"a": ' + "9" * 5001 + "}", "5001 digits"),
    ('{"a": [1, 2', "truncated"),
    ("", "empty file"),
])
def test_refuses_what_is_not_strict_json(tmp_path, text, words):
    path = _write(tmp_path, text)
    with pytest.raises(Unreadable) as caught:
        inputs.load_json(path, Kind("x", 10_000))
    assert words in caught.value.reason and str(path) in str(caught.value)


@pytest.mark.parametrize("depth", [65, 5000, 100_000])
def test_nesting_is_bounded_without_recursion_errors(tmp_path, depth):
    path = _write(tmp_path, "[" * depth + "]" * depth)
    with pytest.raises(Unreadable, match="nested deeper than 64"):
        inputs.load_json(path, Kind("x", 1 << 20))
    assert inputs.load_json(_write(tmp_path, "[" * 64 + "]" * 64, "ok.json"), Kind("x", 1 << 20)) is not None


def test_not_utf8(tmp_path):
    path = tmp_path / "f.json"
    path.write_bytes(b'{"a": "\xff"}')
    with pytest.raises(Unreadable, match="not UTF-8"):
        inputs.load_json(path, SMALL)


def test_size_cap_is_checked_before_reading(tmp_path):
    path = tmp_path / "big.json"
    with open(path, "wb") as handle:
        handle.truncate(SMALL.max_bytes + 1)  # sparse
    with pytest.raises(Unreadable, match="1025 bytes; expected a test file of at most 1024 bytes"):
        inputs.read_bytes(path, SMALL)


def test_a_fifo_is_refused_at_once(tmp_path):
    fifo = tmp_path / "commit.txt"
    os.mkfifo(fifo)
    outcome = []

    def read():
        try:
            inputs.read_text(fifo, SMALL)
        except Unreadable as exc:
            outcome.append(exc.reason)

    worker = threading.Thread(target=read, daemon=True)
    worker.start()
    worker.join(5)
    assert not worker.is_alive(), "reading a FIFO blocked"
    assert outcome and "not a regular file (a FIFO)" in outcome[0]


def test_devices_and_directories_are_refused(tmp_path):
    link = tmp_path / "zero.json"
    link.symlink_to("/dev/zero")
    with pytest.raises(Unreadable, match="a character device"):
        inputs.read_bytes(link, SMALL)
    with pytest.raises(Unreadable, match="a directory"):
        inputs.read_bytes(tmp_path, SMALL)


def test_links_must_stay_inside_the_root(tmp_path):
    tree = tmp_path / "tree"
    tree.mkdir()
    outside = _write(tmp_path, '{"a": 1}', "secret.json")
    inside = _write(tree, '{"a": 2}', "real.json")
    (tree / "out.json").symlink_to(outside)
    (tree / "in.json").symlink_to(inside)
    with pytest.raises(Unreadable, match="a link that leaves the tree"):
        inputs.load_json(tree / "out.json", SMALL, root=tree)
    assert inputs.load_json(tree / "in.json", SMALL, root=tree) == {"a": 2}
    with pytest.raises(Unreadable, match="symbolic link"):
        inputs.load_json(tree / "in.json", SMALL, follow_links=False)


def test_missing_file(tmp_path):
    with pytest.raises(Unreadable, match="missing; expected a test file"):
        inputs.read_bytes(tmp_path / "nope.json", SMALL)
    assert not inputs.is_present(tmp_path / "nope.json")
    (tmp_path / "dangling").symlink_to(tmp_path / "nope.json")
    assert inputs.is_present(tmp_path / "dangling")


def test_jsonl_names_the_bad_line(tmp_path):
    rows = [json.dumps({"id": str(k)}) for k in range(5)]
    good = _write(tmp_path, "\n".join(rows) + "\n\n", "ok.jsonl")
    assert [n for n, _ in inputs.load_jsonl(good, Kind("x", 10_000))] == [1, 2, 3, 4, 5]
    rows[2] = '{"id": "2", "id": "3"}'
    bad = _write(tmp_path, "\n".join(rows), "bad.jsonl")
    with pytest.raises(Unreadable, match="line 3: duplicate key 'id'"):
        inputs.load_jsonl(bad, Kind("x", 10_000))


def test_yaml_duplicate_keys_and_merges(tmp_path):
    with pytest.raises(Unreadable, match="duplicate key 'a'"):
        inputs.load_yaml(_write(tmp_path, "a: 1\nb: 2\na: 3\n", "s.yaml"), SMALL)
    merged = inputs.load_yaml(_write(tmp_path, "base: &b {x: 1, y: 2}\nc:\n  <<: *b\n  y: 3\n", "m.yaml"), SMALL)
    assert merged["c"] == {"x": 1, "y": 3}  # an explicit override of a merged key is not a duplicate
