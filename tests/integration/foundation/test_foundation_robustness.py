"""No traceback on damaged trees: every JSON value of each result file swapped for a wrong type, in turn.

Each damaged tree goes through `gate summarize` (table and runbook formats alternately); the command must end with a
documented exit code (0, 2 or 3) and, on 2, one stderr line per problem, never an exception.
"""
from __future__ import annotations

import pytest

from gate.examples import ExampleSpec, write_example_ci_artifacts, write_example_tree

WRONG_VALUES = (None, "text", -1, [], {}, True, 1.5)


def _leaf_paths(node, prefix=()):
    """Paths to every value of a JSON document, lists cut to their first two items (enough to hit each schema slot)."""
    yield prefix
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _leaf_paths(value, prefix + (key,))
    elif isinstance(node, list):
        for index, value in enumerate(node[:2]):
            yield from _leaf_paths(value, prefix + (index,))


def _set(doc, path, value):
    if not path:
        return value
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return doc


@pytest.fixture(scope="module")
def small_tree(tmp_path_factory, suite):
    return write_example_tree(tmp_path_factory.mktemp("small") / "tree", suite,
                              ExampleSpec(models=("qwen3", "moss_td"), runs=("1",)))


@pytest.fixture(scope="module")
def ci_artifact(tmp_path_factory, suite):
    return write_example_ci_artifacts(tmp_path_factory.mktemp("ci") / "artifact", suite, attempts=1)
