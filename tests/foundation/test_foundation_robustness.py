"""No traceback on damaged trees: every JSON value of each result file swapped for a wrong type, in turn.

Each damaged tree goes through `gate summarize` (table and runbook formats alternately); the command must end with a
documented exit code (0, 2 or 3) and, on 2, one stderr line per problem, never an exception.
"""
from __future__ import annotations

import json
import shutil

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


@pytest.mark.parametrize("source, relative", [
    ("small_tree", "run1/qwen3/asr_en.json"),
    ("small_tree", "run1/moss_td/googletime/transcribe_diarize_results.json"),
    ("small_tree", "run1/moss_td/googletime/transcribe_diarize_speed_results.json"),
    ("ci_artifact", "pytest-of-runner/pytest-1/test_asr_seedtts0/asr_seedtts_en_results.json"),
    ("ci_artifact", "pytest-of-runner/pytest-1/test_multi_speaker0/moss_transcribe_diarize_googletime_results.json"),
])
@pytest.mark.slow  # type-mutation sweep over every field of every result file
def test_wrong_types_anywhere_never_raise(request, tmp_path, invoke, source, relative):
    small_tree = request.getfixturevalue(source)
    original = json.loads((small_tree / relative).read_text())
    paths = [p for p in _leaf_paths(original) if "per_repeat" not in p and "dependency_inventory" not in p]
    paths = paths[::max(1, len(paths) // 25)]  # about 25 slots per file keeps the test fast
    tree = tmp_path / "tree"
    shutil.copytree(small_tree, tree, ignore=shutil.ignore_patterns("*asr_results.json"))
    models = "qwen3" if "qwen3" in relative or "seedtts" in relative else "moss_td"
    checked = 0
    for index, path in enumerate(paths):
        value = WRONG_VALUES[index % len(WRONG_VALUES)]
        damaged = _set(json.loads(json.dumps(original)), path, value)
        (tree / relative).write_text(json.dumps(damaged))
        fmt = ("table", "runbook")[index % 2]
        result = invoke("summarize", tree, "--format", fmt, "--models", models)
        assert result.exit_code in (0, 2, 3), (path, value, fmt, result.stdout, result.stderr)
        if result.stderr:
            assert result.stderr.startswith("gate: error: ") and "Traceback" not in result.stderr
        checked += 1
    assert checked >= 20
