"""The second half of the fuzz catalogue (its invariants: test_fuzz.py): a file of its own, so that xdist
(--dist loadfile) runs it on the other worker."""
from __future__ import annotations

import pytest

from tests.e2e.fuzz.test_fuzz import run_cases


@pytest.mark.slow
def test_fuzz_second_half(seeds, tmp_path):
    run_cases(seeds, tmp_path, half=1)
