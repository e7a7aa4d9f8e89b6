"""A full disk under --out mid-client (issue 23, item 2): exit 3 once everything is stopped, one line naming
the path and the errno, nothing running, no temporary file left; gate-run.json records the failure, or,
when it cannot be written at all, the next --resume redoes the run.

Two ways to fill the disk: an injected ENOSPC at every fsync of the gate (any machine), and a real tmpfs
filled to the last byte (root with mount rights only; skipped elsewhere).
"""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from gate.runner import server

# From the moment the first client runs, every fsync of the gate fails as on a full disk.
_ENOSPC = """import errno, os
from gate.runner import boundary
_full = []
_real_fsync = os.fsync
def _fsync(fd):
    if _full:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    return _real_fsync(fd)
os.fsync = _fsync
def _hook(name):
    if name == "client spawned":
        _full.append(1)
boundary.install(_hook)
"""

# From the moment the first client runs, the file system of --out is filled to the last byte.
_FILL = """import os
from gate.runner import boundary
def _hook(name):
    if name == "client spawned" and not os.path.exists({filler!r}):
        with open({filler!r}, "wb") as f:
            try:
                while True:
                    f.write(b"x" * 65536)
                    f.flush()
            except OSError:
                pass
boundary.install(_hook)
"""
RUN = ("--models", "qwen3", "--runs", "1")


def _error_line(stderr: str) -> str:
    errors = [line for line in stderr.splitlines() if line.startswith("gate: ")]
    assert len(errors) == 1, stderr
    assert stderr.rstrip().endswith(errors[0]), f"the error is not one line:\n{stderr}"
    return errors[0]


def _nothing_left(bench) -> None:
    assert bench.leftovers() == [], "processes left"
    assert server.port_free(bench.port), "port still taken"
    assert not [p for p in bench.out.rglob("*.tmp")], "temporary files left"


def test_enospc_mid_client_exits_3_after_the_stop_and_resume_redoes_the_run(bench):
    done = bench.run(*RUN, python_prelude=_ENOSPC)
    assert done.returncode == 3, done.stderr
    line = _error_line(done.stderr)
    assert line.startswith("gate: error: cannot write ") and "(ENOSPC: No space left on device)" in line, line
    assert str(bench.out) in line
    _nothing_left(bench)
    assert "stopping the server" not in done.stderr or "Traceback" not in done.stderr
    log = bench.run_log()  # written before the disk filled: the run is still "running" there
    assert log["runs"]["main/run1"] == "running"

    again = bench.run(*RUN, "--resume")
    assert again.returncode == 0, again.stderr
    assert "main/run1: complete already" not in again.stderr  # redone, not kept
    assert bench.run_log()["runs"] == {"main/run1": "completed"}
    kept = json.loads((bench.out / "main" / "attempts" / "gate-run.1.json").read_text())
    assert kept["runs"]["main/run1"] == "running"
    _nothing_left(bench)


def test_a_write_that_fails_once_is_recorded_in_gate_run_json(bench):
    """The disk fills while the client runs and is freed as the server stops: the log says why the run failed."""
    prelude = _ENOSPC.replace('    if name == "client spawned":\n        _full.append(1)',
                              '    if name == "client spawned":\n        _full.append(1)\n'
                              '    if name == "server stop begins":\n        _full.clear()')
    done = bench.run(*RUN, python_prelude=prelude)
    assert done.returncode == 3, done.stderr
    line = _error_line(done.stderr)
    log = bench.run_log()
    assert log["status"] == "failed" and log["exit_code"] == 3
    assert "ENOSPC" in log["message"] and log["output_error"].startswith("cannot write ")
    assert line == f"gate: error: {log['message']}"
    assert log["runs"]["main/run1"] == "failed"
    _nothing_left(bench)


@pytest.fixture
def tiny_tmpfs(tmp_path):
    mount = tmp_path / "tmpfs"
    mount.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)],
                                           capture_output=True).returncode != 0:
        pytest.skip("mounting a tmpfs needs root and mount rights")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_tmpfs_mid_client_exits_3_with_nothing_running(bench, tiny_tmpfs):
    bench.out = tiny_tmpfs / "results"
    filler = tiny_tmpfs / "filler"
    done = bench.run(*RUN, python_prelude=_FILL.format(filler=str(filler)))
    assert done.returncode == 3, done.stderr
    line = _error_line(done.stderr)
    assert "ENOSPC" in line and str(tiny_tmpfs) in line, line
    _nothing_left(bench)
    filler.unlink()
    again = bench.run(*RUN, "--resume")
    assert again.returncode == 0, again.stderr
    assert bench.run_log()["runs"] == {"main/run1": "completed"}
    _nothing_left(bench)


# Only the writes of one file fail as on a full disk (its temporary file is written, the rename refused);
# with `when`, only a write whose text contains it.
_ONE_FILE = """import errno, os
_real_replace = os.replace
def _replace(src, dst, *args, **kwargs):
    if str(dst).endswith({name!r}) and {when!r} in open(src).read():
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(dst))
    return _real_replace(src, dst, *args, **kwargs)
os.replace = _replace
"""


def test_a_full_disk_at_the_final_log_write_exits_3_naming_gate_run_json(bench):
    """Issue 38: the last gate-run.json write (status completed) failed and the gate said "completed", exit 0."""
    done = bench.run(*RUN, python_prelude=_ONE_FILE.format(name="gate-run.json", when='"status": "completed"'))
    assert done.returncode == 3, done.stderr
    line = _error_line(done.stderr)
    assert "gate-run.json" in line and "ENOSPC" in line, line
    assert "gate run: completed" not in done.stderr
    assert bench.run_log()["status"] == "running"  # the last write that could be made; --resume redoes the run
    _nothing_left(bench)


# The disk fills as server.pid is written: that write and every later one fail.
_FULL_FROM = """import errno, os
_real_replace = os.replace
_full = []
def _replace(src, dst, *args, **kwargs):
    if str(dst).endswith({name!r}):
        _full.append(1)
    if _full:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(dst))
    return _real_replace(src, dst, *args, **kwargs)
os.replace = _replace
"""


def test_a_failing_server_pid_write_is_named_as_the_cause(bench):
    """Issue 38: when the disk filled at server.pid, the message named gate-run.json (the next write)."""
    done = bench.run(*RUN, python_prelude=_FULL_FROM.format(name="server.pid"))
    assert done.returncode == 3, done.stderr
    line = _error_line(done.stderr)
    assert "server.pid" in line and "ENOSPC" in line, line
    assert line.split("ENOSPC")[0].count("gate-run.json") == 0, line
    _nothing_left(bench)
