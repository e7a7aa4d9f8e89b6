"""A second look extends only the undecided models: a tree whose gate-run.json says whisper got run4..run6
and qwen3 stopped after run3 is complete for both (qwen3 is never "missing" run4..run6), while a
second-look run that whisper's log promises but the tree lacks makes whisper incomplete."""
from __future__ import annotations

import json
import shutil

import pytest

from gate.examples import ExampleSpec, write_example_tree
from gate.formats import runlog
from gate.formats.config import load_suite
from gate.reading.tree_side import side_from_tree

SUITE = load_suite()


@pytest.fixture(scope="module")
def extended(tmp_path_factory):
    root = tmp_path_factory.mktemp("second-look")
    tree = write_example_tree(root, SUITE, ExampleSpec(models=("qwen3", "whisper")))
    side = tree.name
    for new, old in (("run4", "run1"), ("run5", "run2"), ("run6", "run3")):  # whisper's second look only
        (tree / new).mkdir()
        shutil.copytree(tree / old / "whisper", tree / new / "whisper")
        for name in ("commit.txt", "freeze.txt"):
            if (tree / old / name).is_file():
                shutil.copy(tree / old / name, tree / new / name)
    runs = {f"{side}/run{r}": "completed" for r in ("1", "2", "3", "4", "5", "6")}
    made = {side: {"qwen3": ["run1", "run2", "run3"], "whisper": [f"run{r}" for r in range(1, 7)]}}
    log = runlog.skeleton({side: "/checkouts/pr"}, runs, started="2026-11-02T03:00:00+00:00", status="completed",
                          scored_runs=made)
    (tree / runlog.FILE).write_text(json.dumps(log))
    return tree


def test_each_model_is_read_with_its_own_runs(extended):
    side = side_from_tree(extended, SUITE)
    qwen = side.workloads["qwen3/asr_en"]
    whisper = side.workloads["whisper/asr_en"]
    assert qwen.complete and qwen.runs == ("run1", "run2", "run3") and qwen.expected_runs == 3
    assert whisper.complete and len(whisper.runs) == 6 and whisper.expected_runs == 6


def test_a_promised_second_look_run_that_is_missing_is_incomplete(extended, tmp_path):
    tree = tmp_path / extended.name
    shutil.copytree(extended, tree)
    shutil.rmtree(tree / "run5" / "whisper")
    side = side_from_tree(tree, SUITE)
    assert side.workloads["qwen3/asr_en"].complete
    assert not side.workloads["whisper/asr_en"].complete
