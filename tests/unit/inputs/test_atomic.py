"""gate.formats.atomic: a failed or interrupted write leaves the previous file intact and no temporary file."""
from __future__ import annotations

import errno
import os

import pytest

from gate.formats import atomic
from gate.formats.errors import OutputError


def test_writes_and_replaces(tmp_path):
    path = tmp_path / "sub" / "out.json"
    atomic.write_text(path, "one\n")
    path.chmod(0o640)
    atomic.write_text(path, "two\n")
    assert path.read_text() == "two\n" and (path.stat().st_mode & 0o777) == 0o640
    assert sorted(p.name for p in path.parent.iterdir()) == ["out.json"]


def test_a_full_disk_leaves_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "baseline.json"
    path.write_text("old\n")
    real_write = os.write

    def full(fd, data):  # fault injection: the disk fills after the first 4 bytes
        if len(data) > 4:
            real_write(fd, bytes(data[:4]))
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", full)
    with pytest.raises(OutputError) as caught:
        atomic.write_text(path, "new content that does not fit\n", what="baseline")
    monkeypatch.undo()
    assert caught.value.path == str(path) and str(caught.value).startswith(f"{path}: cannot write the baseline ")
    assert "(no space left on device); " in str(caught.value) and str(caught.value).endswith("file is unchanged")
    assert path.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["baseline.json"]
