"""Load one side of a comparison from disk: a result tree directory or a baseline JSON file."""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

from gate.baseline import read_baseline, side_from_tree
from gate.config import Suite
from gate.errors import InputError
from gate.side import Side


def load_side(path: str | Path, suite: Suite, models: Sequence[str] | None = None) -> Side:
    """A result tree directory or a baseline JSON file."""
    path = Path(path)
    chosen = tuple(models) if models else None
    if path.is_dir():
        return side_from_tree(path, suite, models=chosen)
    if path.is_file():
        return read_baseline(path, suite, models=chosen)
    raise InputError("no such file or directory; expected a result tree or a baseline JSON file", path=path)
