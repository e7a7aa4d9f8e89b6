"""Shared fixtures for the foundation tests: the packaged suite and generated, schema-exact result trees.

Trees come from gate.examples (the same writer the README's first command uses); each fixture is
session-scoped because writing a tree takes about a second.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from gate.cli import cli
from gate.examples import ExampleSpec, write_example_tree
from gate.formats.config import load_suite
from tests.helpers.foundation_defects import DEFECTS_A, DEFECTS_B


@pytest.fixture(scope="session")
def suite():
    return load_suite()


@pytest.fixture(scope="session")
def complete_tree(tmp_path_factory, suite) -> Path:
    return write_example_tree(tmp_path_factory.mktemp("complete") / "tree", suite)


@pytest.fixture(scope="session")
def qwen3_tree(tmp_path_factory, suite) -> Path:
    return write_example_tree(tmp_path_factory.mktemp("qwen3") / "tree", suite, ExampleSpec(models=("qwen3",)))


@pytest.fixture(scope="session")
def defects_a_tree(tmp_path_factory, suite) -> Path:
    return write_example_tree(tmp_path_factory.mktemp("defects_a") / "tree", suite,
                              ExampleSpec(runs=("warm", "1", "2", "3"), defects=DEFECTS_A))


@pytest.fixture(scope="session")
def defects_b_tree(tmp_path_factory, suite) -> Path:
    return write_example_tree(tmp_path_factory.mktemp("defects_b") / "tree", suite,
                              ExampleSpec(models=("qwen3", "moss_td"), runs=("1", "2"), defects=DEFECTS_B))


@pytest.fixture(scope="session")
def example_out(tmp_path_factory) -> tuple[Path, object]:
    """`gate example OUT` run once through the real CLI: (OUT, click Result)."""
    out = tmp_path_factory.mktemp("example") / "out"
    return out, CliRunner().invoke(cli, ["example", str(out)], catch_exceptions=False)


@pytest.fixture
def invoke():
    """Run the real `gate` group; returns click's Result (stdout and stderr kept apart)."""
    def run(*args: str):
        return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    return run
