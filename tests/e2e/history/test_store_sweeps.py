"""The slow tests of integration/history/test_store.py, kept out of the fast tier (tests/README.md)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gate.history.store import HistoryStore
from tests.helpers.nights import NIGHTS


@pytest.mark.slow
def test_concurrent_imports_leave_one_copy_of_each_record(tmp_path):
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from tests.integration.history.test_store import _import_many; "
            "_import_many(sys.argv[2], int(sys.argv[3]))")
    here = str(Path(__file__).resolve().parents[3])  # the repository root, where the tests package lives
    for round_ in range(10):
        root = tmp_path / f"h{round_}"
        procs = [subprocess.Popen([sys.executable, "-c", code, here, str(root), str(NIGHTS)]) for _ in range(2)]
        assert [p.wait(timeout=120) for p in procs] == [0, 0]
        history = HistoryStore(root).read()
        assert len(history.records) == NIGHTS and history.skipped == (), round_
        lines = [line for p in root.rglob("*.jsonl") for line in p.read_text().splitlines()]
        assert len(lines) == NIGHTS
