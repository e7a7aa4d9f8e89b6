"""Load one side of a comparison from disk: a result tree directory or a baseline JSON file."""
from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from gate.formats.errors import InputError

if TYPE_CHECKING:
    from gate.formats.config import Suite
    from gate.reading.side import Side


def load_side(path: str | Path, suite: Suite, models: Sequence[str] | None = None) -> Side:
    """A result tree directory or a baseline JSON file."""
    from gate.reading.baseline_file import read_baseline
    from gate.reading.tree_side import side_from_tree  # here: require_present() stays free of scipy

    path = require_present(path)
    chosen = tuple(models) if models else None
    if path.is_dir():
        return side_from_tree(path, suite, models=chosen)
    return read_baseline(path, suite, models=chosen)  # a FIFO or device too: the strict reader says what it is


def require_present(path: str | Path) -> Path:
    """`path`, when anything exists there (a dangling link too); else the one-line usage error."""
    path = Path(path)
    if not os.path.lexists(path):
        raise InputError("no such file or directory; expected a result tree or a baseline JSON file", path=path)
    return path
