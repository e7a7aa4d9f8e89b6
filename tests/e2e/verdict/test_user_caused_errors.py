"""Errors a user causes are one `gate: error:` line with a documented exit, never the internal error's 70
(issue 38): a non-UTF-8 path, an output under a folder that cannot be entered, a base dependency missing."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

from tests.helpers.unprivileged import as_a_user

GATE = "import sys\nfrom gate.cli import main\nsys.argv = ['gate', *sys.argv[1:]]\nmain()\n"


def _gate(*args, prefix=(), cwd=None, prelude=""):
    return subprocess.run([*prefix, sys.executable, "-c", prelude + GATE, *map(os.fsdecode, args)], cwd=cwd,
                          capture_output=True, timeout=120)


def _one_error(stderr: bytes) -> str:
    text = stderr.decode("utf-8")  # escaped: never the raw bytes of a path
    lines = [line for line in text.splitlines() if line.startswith("gate: ")]
    assert len(lines) == 1 and text.rstrip().endswith(lines[0]), text
    assert "internal error" not in text and "Traceback" not in text, text
    return lines[0]


def test_a_tree_under_a_non_utf8_path_is_read_and_written_escaped(make_tree, tmp_path):
    tree = tmp_path.joinpath(os.fsdecode(b"r\xffsults")) / "candidate"
    shutil.copytree(make_tree("plain"), tree)
    done = _gate("baseline", "create", tree, "--out", tmp_path / "b.json")
    assert done.returncode == 0, done.stderr
    stored = (tmp_path / "b.json").read_bytes()
    stored.decode("utf-8")  # valid UTF-8: the path is escaped, not written raw
    assert b"\xff" not in stored
    json.loads(stored)
    other = tmp_path.joinpath(os.fsdecode(b"c\xfe"))
    shutil.copytree(make_tree("seed11", seed=11), other)  # another measurement (a copy is refused as one)
    done = _gate("compare", other, tree, "--json", tmp_path / "report.json")
    assert done.returncode in (0, 1, 3, 4), done.stderr
    assert "internal error" not in done.stderr.decode("utf-8")
    written = (tmp_path / "report.json").read_bytes()
    assert b"\xff" not in written and b"\xfe" not in written
    json.loads(written.decode("utf-8"))


def test_a_json_output_under_a_folder_that_cannot_be_entered_is_exit_2(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0)
    try:
        probe = ("from gate.formats import atomic\nfrom gate.formats.errors import OutputError\n"
                 f"try:\n    atomic.write_text({str(locked / 'sub' / 'report.json')!r}, '{{}}', what='report')\n"
                 "except OutputError as exc:\n    print(exc)\n")
        done = subprocess.run([*as_a_user(), sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    finally:
        locked.chmod(0o755)
    assert done.returncode == 0, done.stderr  # an OutputError (exit 2 in the CLI), not a PermissionError
    assert "report.json" in done.stdout and "nothing was written" in done.stdout


def test_compare_json_under_a_folder_that_cannot_be_entered_is_one_line(make_tree, tmp_path):
    tree = make_tree("plain")
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0)
    try:
        done = _gate("summarize", tree, "--json", locked / "sub" / "report.json", prefix=as_a_user())
    finally:
        locked.chmod(0o755)
    assert done.returncode == 2, done.stderr
    assert "report.json" in _one_error(done.stderr)


def test_jiwer_missing_gives_the_pip_line(make_tree):
    tree = make_tree("plain")
    done = _gate("summarize", tree, prelude="import sys\nsys.modules['jiwer'] = None\n")
    assert done.returncode == 2, done.stderr
    line = _one_error(done.stderr)
    assert "needs jiwer" in line and "pip install 'jiwer'" in line, line
