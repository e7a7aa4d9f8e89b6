"""Issue 23 item 4: `gate post --trees` on the trees `gate run --ab --models qwen3,whisper` leaves, where
whisper's first look extended (run4..run6) and qwen3's stopped at 3+3. Each model's plan is recomputed and
checked on its own runs: the honest pair is accepted for both, and a deleted or extra run of either is refused."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gate.examples import CANDIDATE_COMMIT, ExampleSpec, write_example_tree
from gate.examples.spec import BASELINE_COMMIT
from gate.formats import runlog
from gate.formats.config import load_suite
from gate.publish.posting import judge_uploaded
from gate.publish.untrusted import UntrustedInputError, check_consistency
from tests.helpers.runs import copy_run

SUITE = load_suite()
pytestmark = pytest.mark.slow  # real example trees and judges (multimodel), real git (store)
SIX = ("warm", *"123456")


def _side(root: Path, side: str) -> Path:
    """One side holding whisper in warm+6 runs and qwen3 in warm+3, with the run log a two-model job writes."""
    candidate = side == "candidate"
    commit = CANDIDATE_COMMIT if candidate else BASELINE_COMMIT
    whisper = ExampleSpec(models=("whisper",), seed=1 if candidate else 3, commit=commit, runs=SIX,
                          extra_errors={"whisper/asr_en": 8} if candidate else {})
    qwen3 = ExampleSpec(models=("qwen3",), seed=11 if candidate else 13, commit=commit)
    tree = write_example_tree(root / side, SUITE, whisper)
    other = write_example_tree(root / f"{side}-qwen3", SUITE, qwen3)
    for run in ("warm", "1", "2", "3"):
        shutil.copytree(other / f"run{run}" / "qwen3", tree / f"run{run}" / "qwen3")
    shutil.rmtree(other)
    log = runlog.skeleton({"base": "/checkouts/base", "candidate": "/checkouts/pr"},
                          {f"{side}/run{r}": "completed" for r in SIX}, started="2026-11-02T03:00:00+00:00",
                          status="completed")
    (tree / "gate-run.json").write_text(json.dumps(log), encoding="utf-8")
    return tree


@pytest.fixture(scope="module")
def honest(tmp_path_factory):
    root = tmp_path_factory.mktemp("two-models")
    for side in ("base", "candidate"):
        _side(root, side)
    return root


@pytest.fixture
def copy(honest, tmp_path):
    return shutil.copytree(honest, tmp_path / "trees")


def test_the_honest_two_model_pair_is_accepted_for_each_model(honest):
    whisper = judge_uploaded(honest, "whisper", SUITE, baseline=None, calibration=None)
    qwen3 = judge_uploaded(honest, "qwen3", SUITE, baseline=None, calibration=None)
    assert [look.action for look in whisper.looks[0].looks] == ["extend", "pass"]
    assert len(qwen3.looks[0].looks) == 1 and qwen3.looks[0].looks[0].action != "extend"
    for model in ("whisper", "qwen3"):
        check_consistency(honest, SUITE, model, head_sha=CANDIDATE_COMMIT, base_sha=BASELINE_COMMIT, ab=True)


@pytest.mark.parametrize("model, edit", [
    ("whisper", lambda t: shutil.rmtree(t / "candidate" / "run5" / "whisper")),  # a deleted run of the extended model
    ("whisper", lambda t: shutil.rmtree(t / "base" / "run6")),
    ("qwen3", lambda t: copy_run(t / "candidate" / "run1" / "qwen3", t / "candidate" / "run4" / "qwen3")),
    ("qwen3", lambda t: shutil.rmtree(t / "base" / "run2" / "qwen3")),  # a deleted run of the model that stopped
])
def test_a_deleted_or_extra_run_of_either_model_is_refused(copy, model, edit):
    edit(copy)
    with pytest.raises(UntrustedInputError, match=model):
        judge_uploaded(copy, model, SUITE, baseline=None, calibration=None)
