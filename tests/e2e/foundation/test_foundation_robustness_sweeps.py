"""The slow tests of integration/foundation/test_foundation_robustness.py, kept out of the fast tier (tests/README.md)."""
from __future__ import annotations

import json
import shutil

import pytest

from tests.integration.foundation import test_foundation_robustness as fast_tier
from tests.integration.foundation.test_foundation_robustness import WRONG_VALUES, _leaf_paths, _set

# The fixtures these tests share with the fast tier's module (pytest finds them by these names).
ci_artifact, small_tree = fast_tier.ci_artifact, fast_tier.small_tree


@pytest.mark.parametrize("source, relative", [
    ("small_tree", "run1/qwen3/asr_en.json"),
    ("small_tree", "run1/moss_td/googletime/transcribe_diarize_results.json"),
    ("small_tree", "run1/moss_td/googletime/transcribe_diarize_speed_results.json"),
    ("ci_artifact", "pytest-of-runner/pytest-1/test_asr_seedtts0/asr_seedtts_en_results.json"),
    ("ci_artifact", "pytest-of-runner/pytest-1/test_multi_speaker0/moss_transcribe_diarize_googletime_results.json"),
])
@pytest.mark.slow  # type-mutation sweep over every field of every result file
def test_wrong_types_anywhere_never_raise(request, tmp_path, invoke, source, relative):
    source_tree = request.getfixturevalue(source)
    original = json.loads((source_tree / relative).read_text())
    paths = [p for p in _leaf_paths(original) if "per_repeat" not in p and "dependency_inventory" not in p]
    paths = paths[::max(1, len(paths) // 25)]  # about 25 slots per file keeps the test fast
    tree = tmp_path / "tree"
    shutil.copytree(source_tree, tree, ignore=shutil.ignore_patterns("*asr_results.json"))
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
