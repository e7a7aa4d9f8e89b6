"""Builders for the verdict tests: synthetic trees (gate.examples) and in-memory sides (numpy only)."""
from __future__ import annotations

from pathlib import Path

import pytest

from gate.examples import ExampleSpec, write_example_tree
from gate.formats.config import load_suite
from tests.helpers import memory_sides


@pytest.fixture(scope="session")
def suite():
    return load_suite()


@pytest.fixture(scope="session")
def make_tree(tmp_path_factory, suite):
    """make_tree(name, **spec) -> a qwen3-only synthetic tree (cached per name for the session)."""
    made: dict[str, Path] = {}

    def build(name: str, **spec) -> Path:
        if name not in made:
            spec.setdefault("models", ("qwen3",))
            made[name] = write_example_tree(tmp_path_factory.mktemp(name), suite, ExampleSpec(**spec))
        return made[name]

    return build


@pytest.fixture(scope="session")
def sides():
    """The in-memory builders (tests/helpers/memory_sides.py), as a fixture."""
    return memory_sides


@pytest.fixture(scope="session")
def golden():
    """golden(name, text): `text` must equal tests/fixtures/golden/<name>. With GATE_UPDATE_GOLDEN=1 the file is
    rewritten instead (review the diff before committing it): `GATE_UPDATE_GOLDEN=1 pytest tests/integration/verdict`."""
    import os

    folder = Path(__file__).resolve().parents[1] / "fixtures" / "golden"

    def check(name: str, text: str) -> None:
        path = folder / name
        if os.environ.get("GATE_UPDATE_GOLDEN") == "1":
            path.write_text(text, encoding="utf-8")
            return
        assert text == path.read_text(encoding="utf-8"), (
            f"{name}: the rendering changed; review it and regenerate with GATE_UPDATE_GOLDEN=1")
    return check
