"""Fingerprints and their diff: what makes rows NOT COMPARABLE, and what is only shown."""
from __future__ import annotations

import json
import shutil

from gate.formats.verdict import Verdict
from gate.judging.compare import compare
from gate.reading.comparability import (
    DATASET,
    DRIVER,
    FREEZE,
    GPU,
    MODEL,
    Fingerprint,
    blocking_kinds,
    diff,
)
from gate.reading.results import read_tree
from gate.reading.side_loader import load_side
from gate.reading.tree_fingerprint import fingerprint_of_tree, parse_freeze

NOT_COMPARABLE = Verdict.NOT_COMPARABLE


def test_parse_freeze_normalizes_names_and_skips_the_code_under_test():
    packages = parse_freeze([
        "# comment", "Torch==2.11.0", "flashinfer_python==0.6.14", "-e git+https://x/sglang-omni@abc#egg=sglang_omni",
        "sglang-omni @ file:///work/sglang-omni", "zhon[extra]==2.1.1", "", "--index-url x",
    ])
    assert packages == {"torch": "2.11.0", "flashinfer-python": "0.6.14", "sglang-omni": "file:///work/sglang-omni",
                        "zhon": "2.1.1"}


def test_diff_blocks_known_differences_and_only_shows_unknown_ones():
    base = Fingerprint(gpu="NVIDIA H200", driver="570.86", packages={"torch": "2.11.0"},
                       workloads={"qwen3/asr_en": {"model_revision": "aaa", "dataset_revision": None}})
    cand = Fingerprint(gpu="NVIDIA H100", driver=None, packages={"torch": "2.11.0", "numpy": "2.3.4"},
                       workloads={"qwen3/asr_en": {"model_revision": "bbb", "dataset_revision": "r1"}})
    found = diff(base, cand, ["qwen3/asr_en"])
    by_item = {(d.kind, d.item): d for d in found}
    assert by_item[(GPU, "gpu name")].known
    assert not by_item[(DRIVER, "driver version")].known  # null on one side: shown, never blocking
    assert by_item[(FREEZE, "numpy")].baseline == "(absent)"
    assert by_item[(MODEL, "model_revision")].known
    assert not by_item[(DATASET, "dataset_revision")].known
    assert blocking_kinds(found, "qwen3/asr_en", ()) == (GPU, FREEZE, MODEL)
    assert blocking_kinds(found, "qwen3/asr_zh", ()) == (GPU, FREEZE)  # model facts are per workload
    assert blocking_kinds(found, "qwen3/asr_en", (GPU, FREEZE, MODEL)) == ()


def test_env_json_gpu_difference_makes_every_row_not_comparable(suite, make_tree, tmp_path):
    base, cand = tmp_path / "base", tmp_path / "cand"
    shutil.copytree(make_tree("base"), base)  # copies: the session's shared tree stays untouched
    shutil.copytree(make_tree("base"), cand)
    for tree, name in ((base, "NVIDIA H200"), (cand, "NVIDIA H100 80GB HBM3")):
        for run in sorted(tree.glob("run*")):
            (run / "env.json").write_text(json.dumps({"schema_version": 1, "gpu": {"name": name, "driver_version": "570.86.15"},
                                                      "models": {"qwen3": {"model_id": "Qwen/Qwen3-ASR-1.7B",
                                                                           "revision": "7278e1e"}}}), encoding="utf-8")
    fp = fingerprint_of_tree(read_tree(cand, suite), suite)
    assert fp.gpu == "NVIDIA H100 80GB HBM3" and fp.driver == "570.86.15"
    result = compare(load_side(base, suite), load_side(cand, suite), suite)
    assert result.verdict == NOT_COMPARABLE and {r.verdict for r in result.rows} == {NOT_COMPARABLE}
    assert [d.item for d in result.environment_diff] == ["gpu name"]
    assert compare(load_side(base, suite), load_side(cand, suite), suite, allow_diff=(GPU,)).verdict != NOT_COMPARABLE
