"""Render the PR comment for three synthetic cases: FAIL, incomplete and not comparable.

Usage: python scripts/render_comment_examples.py OUT
Writes OUT/fail.md, OUT/incomplete.md and OUT/not-comparable.md (and the trees under OUT/trees/), as
`gate compare --comment` writes them: the quick start's synthetic pair (`gate example`), then its candidate
with two planted coverage defects, then on another GPU.
scripts/screenshot_comments.sh turns them into the PNGs of docs/images/.
"""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from gate.cli import run
from gate.examples import CANDIDATE_COMMIT, ExampleSpec, write_example_baseline, write_example_pair, write_example_tree
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
    for tree in (base, regressed, incomplete):
        _env(tree, H200)
    _env(other_gpu, H100)
    codes = {}
    for name, cand in (("fail", regressed), ("incomplete", incomplete), ("not-comparable", other_gpu)):
        codes[name] = run(["compare", str(base), str(cand), "--calibration", str(calibration),
                           "--comment", str(out / f"{name}.md"), "--format", "none", "--no-cache"])
    print(" ".join(f"{name}: exit {code}" for name, code in codes.items()))
    return 0 if codes == {"fail": 1, "incomplete": 3, "not-comparable": 4} else 1

if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(Path(sys.argv[1])))
