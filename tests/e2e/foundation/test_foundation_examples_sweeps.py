"""The slow tests of integration/foundation/test_foundation_examples.py, kept out of the fast tier (tests/README.md)."""
from __future__ import annotations

import numpy as np
import pytest

from gate.reading.results import read_tree
from gate.reading.samples import read_run_samples


@pytest.mark.slow  # the packaged `gate example` (~25 s CPU; the fuzz seeds run it on a small suite)
def test_pair_shares_utterances_and_plants_one_regression(example_out, suite):
    out, _ = example_out
    baseline, candidate = out / "baseline", out / "candidate"
    assert (out / "README.txt").is_file()
    workload = suite.workload("qwen3/asr_en")
    b = read_run_samples(baseline / "run1", workload)["wer"]
    c = read_run_samples(candidate / "run1", workload)["wer"]
    assert b.ids == c.ids and np.array_equal(b.ref_len, c.ref_len)
    shared = set(b.texts) & set(c.texts)  # the same references on both sides
    assert shared and all(b.texts[u][0] == c.texts[u][0] for u in shared)
    assert 30 <= int(c.errors.sum() - b.errors.sum()) <= 50  # 40 extra errors, give or take flips
    tb, tc = read_tree(baseline, suite, models=("qwen3",)), read_tree(candidate, suite, models=("qwen3",))

    def mean(tree, workload_id, metric):
        return np.mean([r.metrics[metric] for r in tree.workloads[workload_id]])

    assert mean(tc, "qwen3/asr_en", "throughput_samples_per_s") / mean(tb, "qwen3/asr_en", "throughput_samples_per_s") == \
        pytest.approx(0.94, abs=0.025)
    assert mean(tc, "qwen3/asr_zh", "throughput_samples_per_s") / mean(tb, "qwen3/asr_zh", "throughput_samples_per_s") == \
        pytest.approx(1.0, abs=0.025)
    zh = suite.workload("qwen3/asr_zh")
    assert abs(int(read_run_samples(candidate / "run1", zh)["wer"].errors.sum())
               - int(read_run_samples(baseline / "run1", zh)["wer"].errors.sum())) <= 12  # flips only


@pytest.mark.slow  # the packaged `gate example` (~25 s CPU; the fuzz seeds run it on a small suite)
def test_example_command_writes_the_pair(example_out, invoke):
    out, result = example_out
    assert result.exit_code == 0, result.stderr
    assert "SYNTHETIC" in result.stdout and "gate compare" in result.stdout
    assert (out / "baseline" / "run3" / "qwen3" / "asr_en.json").is_file()
    foreign = out.parent / "foreign"
    (foreign / "keep").mkdir(parents=True)
    refused = invoke("example", foreign)
    assert refused.exit_code == 2
    assert refused.stderr.count("\n") == 1 and refused.stderr.startswith(f"gate: error: {foreign}: ")
    assert "not written by `gate example`" in refused.stderr
    assert [p.name for p in foreign.iterdir()] == ["keep"]
    (out.parent / "a-file").write_text("x")
    onto_file = invoke("example", out.parent / "a-file")
    assert onto_file.exit_code == 2 and onto_file.stderr.count("\n") == 1
