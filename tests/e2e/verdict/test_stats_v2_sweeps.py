"""The slow tests of integration/verdict/test_stats_v2.py, kept out of the fast tier (tests/README.md)."""
from __future__ import annotations

import pytest

from gate.stats.speed import ADVISED_PAIRS
from tests.integration.verdict.test_stats_v2 import QWEN_EN, invoke


@pytest.mark.slow  # generates and calibrates several trees
def test_cross_job_pairs_are_recorded_and_let_a_stored_baseline_fail(make_tree, tmp_path):
    import json

    out = tmp_path / "b.json"
    assert invoke("baseline", "create", make_tree("base"), "--out", out).exit_code == 0
    trees = [make_tree(f"x{k}", seed=40 + k) for k in range(2 * ADVISED_PAIRS)]
    args = [x for k in range(ADVISED_PAIRS) for x in ("--cross-job", trees[2 * k], trees[2 * k + 1])]
    result = invoke("baseline", "calibrate", *args, "--baseline", out)
    assert result.exit_code == 0, result.output
    assert f"({0} within one job, {ADVISED_PAIRS} across jobs)" in result.stdout
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["calibration_source"]["cross_job_pairs"] == ADVISED_PAIRS
    assert data["calibration"][QWEN_EN]["throughput_samples_per_s"]["cross_pairs"] == ADVISED_PAIRS
    assert "identical" in data["calibration"][QWEN_EN]["corpus_wer"]
