"""The slow tests of integration/github/test_gh_looks.py, kept out of the fast tier (tests/README.md)."""
from __future__ import annotations

import pytest

from gate.judging import judge as gate_judge
from gate.publish.posting import judge_uploaded
from gate.publish.untrusted import UntrustedInputError
from tests.integration.github import test_gh_looks as fast_tier
from tests.integration.github.test_gh_looks import H100_STAMP, H200_STAMP, SUITE, stamped

# The fixtures these tests share with the fast tier's module (pytest finds them by these names).
calibration, slower = fast_tier.calibration, fast_tier.slower


@pytest.mark.slow  # calibrates and judges two-look trees
def test_a_stale_calibration_is_left_out_of_the_recomputed_plan_as_the_runner_leaves_it_out(calibration, slower,
                                                                                          tmp_path):
    """Measured on an H100 while the trees ran on an H200: the calibration is left out, the first look judges by
    the A/B's own 3+3 runs, which cannot see a change the size of the floor (blind), so the plan asks for the
    second look and trees without it are refused, as the runner would have extended them."""
    stale = stamped(calibration, tmp_path, H100_STAMP)
    first = gate_judge.first_look(gate_judge.Request(base=slower / "base", candidate=slower / "candidate", suite=SUITE,
                                                     calibration=stale,
                                                     design=gate_judge.Design.TWO_LOOKS), "whisper")
    assert first.decision.action == "extend"
    with pytest.raises(UntrustedInputError, match=r"the first look \(extend\) asks for run1, run2, run3, run4"):
        judge_uploaded(slower, "whisper", SUITE, baseline=None, calibration=stale)


@pytest.mark.slow  # calibrates and judges two-look trees
def test_a_fresh_calibration_is_used_and_then_the_same_trees_lack_the_second_look(calibration, slower, tmp_path):
    with pytest.raises(UntrustedInputError, match=r"the first look \(extend\) asks for run1, run2, run3, run4, run5, run6"):
        judge_uploaded(slower, "whisper", SUITE, baseline=None, calibration=stamped(calibration, tmp_path, H200_STAMP))
