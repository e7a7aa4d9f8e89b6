from __future__ import annotations

from pathlib import Path

import pytest

from gate.history.store import HistoryStore
from tests.helpers.nights import synthetic_records


@pytest.fixture
def history_dir(tmp_path) -> Path:
    root = tmp_path / "history"
    HistoryStore(root).append(synthetic_records())
    return root
