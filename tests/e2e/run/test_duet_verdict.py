"""`gate run --ab --design duet` on the stand-in judges a 6% slower build FAIL (issue 53); its A/A twin PASSes in
test_duet_aa_twin.py. Apart from test_duet.py, and from each other, because they mostly wait on the stand-in's requests:
each in its own file (xdist --dist loadfile), other workers' tests run beside them."""
from __future__ import annotations

import pytest

from tests.helpers.duet_pairs import judged_duet


@pytest.mark.slow
@pytest.mark.long  # 100–160 s on the stand-in's 1 s requests, ~15 s of CPU
def test_a_6pct_slower_build_fails(bench, tmp_path):
    judged_duet(bench, tmp_path, 0.94, "fail")
