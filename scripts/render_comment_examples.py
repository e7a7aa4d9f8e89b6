"""Render the PR comment for four synthetic cases: FAIL, WARN, incomplete and not comparable.

Usage: python scripts/render_comment_examples.py OUT
Writes OUT/fail.md, OUT/warn.md, OUT/incomplete.md and OUT/not-comparable.md (and the trees under OUT/trees/), as
`gate compare --comment` writes them: the quick start's synthetic pair (`gate example`), then a candidate with one
hallucinated utterance and one workload 4% slower (WARN: a newly catastrophic utterance; slower beyond the noise
but short of a FAIL), then the quick start's candidate with two planted coverage defects, then on another GPU.
scripts/screenshot_comments.sh turns them into the PNGs of docs/images/.
"""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from gate.cli import run
from gate.examples import CANDIDATE_COMMIT, ExampleSpec, write_example_baseline, write_example_pair, write_example_tree
from gate.examples.dataset import utterance_ids
from gate.formats.config import load_suite

H200 = {"name": "NVIDIA H200", "driver_version": "580.95.05"}
H100 = {"name": "NVIDIA H100 80GB HBM3", "driver_version": "580.95.05"}


def _env(tree: Path, gpu: dict) -> None:
    """env.json in every run, as `gate run` writes it (the facts comparability reads)."""
    for run_dir in tree.glob("run*"):
        doc = {"schema_version": 1, "gate_version": "synthetic", "gpu": gpu, "datasets": {}, "models": {}}
        (run_dir / "env.json").write_text(json.dumps(doc), encoding="utf-8")


def main(out: Path) -> int:
    """The quick start's pair (FAIL, judged with its calibrated baseline file) and two variants of its candidate."""
    suite = load_suite()
    trees = out / "trees"
    shutil.rmtree(trees, ignore_errors=True)
    base, regressed = write_example_pair(trees, suite)
    calibration = write_example_baseline(trees, suite)
    incomplete = write_example_tree(trees / "incomplete", suite, ExampleSpec(
        seed=1, commit=CANDIDATE_COMMIT, defects={"qwen3/asr_zh": "evaluated_ne_total", "moss_td/googletime": "missing_file"}))
    other_gpu = shutil.copytree(regressed, trees / "other-gpu")
    warned = write_example_tree(trees / "warn", suite, ExampleSpec(
        seed=2, commit=CANDIDATE_COMMIT, hallucinate={"qwen3/asr_en": utterance_ids(suite.workload("qwen3/asr_en"))[17]},
        speed_factor={"whisper/asr_zh": 0.96}))
    for tree in (base, regressed, incomplete, warned):
        _env(tree, H200)
    _env(other_gpu, H100)
    codes = {}
    for name, cand in (("fail", regressed), ("warn", warned), ("incomplete", incomplete), ("not-comparable", other_gpu)):
        codes[name] = run(["compare", str(base), str(cand), "--calibration", str(calibration), "--comment",
                           str(out / f"{name}.md"), "--json", str(out / f"{name}.json"), "--format", "none", "--no-cache"])
    verdicts = {name: json.loads((out / f"{name}.json").read_text(encoding="utf-8"))["verdict"] for name in codes}
    print(" ".join(f"{name}: {verdicts[name]}, exit {code}" for name, code in codes.items()))
    expected = {"fail": "fail", "warn": "warn", "incomplete": "incomplete", "not-comparable": "not_comparable"}
    return 0 if verdicts == expected else 1

if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(Path(sys.argv[1])))
