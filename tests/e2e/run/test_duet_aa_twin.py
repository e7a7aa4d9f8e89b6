"""`gate run --ab --design duet` on the stand-in PASSes an A/A twin (issue 53), the other half of
test_duet_verdict.py's 6%-slower FAIL, in a file of its own so that the two run on two xdist workers."""
from __future__ import annotations

import pytest

from tests.helpers.duet_pairs import judged_duet


@pytest.mark.slow
@pytest.mark.long  # 100–160 s on the stand-in's 1 s requests, ~15 s of CPU
def test_its_aa_twin_passes(bench, tmp_path):
    judged_duet(bench, tmp_path, 1.0, "pass")
