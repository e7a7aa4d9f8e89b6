"""The quick start's trees (`gate example`'s pair and calibrated baseline.json, ~12 s of CPU) built once per test
session and copied: several modules on several xdist workers need them, and each built its own.

The first worker to ask builds them under the session's shared temporary folder (the parent of the workers' own),
holding a lock file while it does; the others wait on the lock and copy. A caller gets its own copy to edit.
"""
from __future__ import annotations

import fcntl
import os
import shutil
from pathlib import Path

from gate.examples import write_example_baseline, write_example_pair
from gate.formats.config import load_suite


def _shared_root(tmp_path_factory) -> Path:
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def quick_start_trees(tmp_path_factory, dest: Path) -> Path:
    """dest/baseline, dest/candidate and dest/baseline.json, as `gate example dest` leaves them, except that the
    paths README.txt and baseline.json name are the shared original's; returns dest."""
    shared = _shared_root(tmp_path_factory)
    built = shared / "quick-start-trees"
    with open(shared / "quick-start-trees.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (built / "baseline.json").is_file():
            shutil.rmtree(built, ignore_errors=True)  # a build interrupted part way
            suite = load_suite()
            write_example_pair(built, suite)
            write_example_baseline(built, suite)
    shutil.copytree(built, dest)
    return dest
