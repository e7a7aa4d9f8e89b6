"""Two trees the runbook wrote by hand (issue 39): 3 scored runs a side, no calibration, no run log. Each side's
same-commit runs are A/A evidence for transcript churn, so `gate compare` alone can FAIL an accuracy regression,
and a row that cannot decide names the step that would make it decisive."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from gate.cli import cli
from gate.examples import BASELINE_COMMIT, CANDIDATE_COMMIT
from gate.judging import next_steps

QWEN_EN = "qwen3/asr_en"
RUNBOOK_RUNS = ("warm", "1", "2", "3")  # the runbook's layout: an unscored warm run, then three scored ones
NOISY = 0.04  # run-to-run σ of speed: 3 + 3 runs cannot decide a 6% change, so only the accuracy row can FAIL


def _compare(tmp_path, base, cand, *extra):
    out = tmp_path / f"{base.name}-{cand.name}.json"
    result = CliRunner().invoke(cli, ["compare", str(base), str(cand), "--json", str(out), *map(str, extra)],
                                catch_exceptions=False)
    return result, {(r["workload"], r["metric"]): r for r in json.loads(out.read_text())["rows"]}


@pytest.fixture(scope="module")
def runbook_pair(make_tree):
    main_a = make_tree("rb_main_a", seed=0, commit=BASELINE_COMMIT, runs=RUNBOOK_RUNS, speed_sigma=NOISY)
    main_b = make_tree("rb_main_b", seed=2, commit=BASELINE_COMMIT, runs=RUNBOOK_RUNS, speed_sigma=NOISY)
    # +20 utterances one word worse: +0.15 pp on qwen3/asr_en; throughput 6% lower
    regress = make_tree("rb_pr_regress", seed=1, commit=CANDIDATE_COMMIT, runs=RUNBOOK_RUNS, speed_sigma=NOISY,
                        speed_factor={QWEN_EN: 0.94}, extra_errors={QWEN_EN: 20})
    return main_a, main_b, regress


def test_a_runbook_pair_with_a_planted_regression_fails_on_its_own_runs(runbook_pair, tmp_path):
    main_a, _, regress = runbook_pair
    result, rows = _compare(tmp_path, main_a, regress)
    assert result.exit_code == 1, result.output
    wer = rows[(QWEN_EN, "corpus_wer")]
    assert wer["verdict"] == "fail"
    assert 0.0013 < wer["delta_abs"] < 0.0017
    assert wer["next_step"] is None
    thr = rows[(QWEN_EN, "throughput_samples_per_s")]
    assert thr["verdict"] != "fail" and thr["blind"]
    assert thr["next_step"] == next_steps.MORE_RUNS  # the row says which step would decide it


def test_its_aa_twin_does_not_fail(runbook_pair, tmp_path):
    main_a, main_b, _ = runbook_pair
    result, rows = _compare(tmp_path, main_a, main_b)
    assert result.exit_code == 0, result.output
    assert all(r["verdict"] != "fail" for r in rows.values())


def test_against_a_stored_baseline_speed_rows_name_the_in_job_ab(runbook_pair, tmp_path):
    main_a, _, regress = runbook_pair
    stored = tmp_path / "main_a.json"
    assert CliRunner().invoke(cli, ["baseline", "create", str(main_a), "--out", str(stored)]).exit_code == 0
    result, rows = _compare(tmp_path, stored, regress)
    assert result.exit_code == 1  # the accuracy row still FAILs: each side's runs are its own A/A evidence
    assert rows[(QWEN_EN, "corpus_wer")]["verdict"] == "fail"
    thr = rows[(QWEN_EN, "throughput_samples_per_s")]
    assert thr["verdict"] == "warn" and thr["next_step"] == next_steps.AB_RUN


def test_swapped_runbook_trees_are_not_judged_by_their_files_times(make_tree, tmp_path):
    """Files' own times are no sign (issue 51: interleaved runbook trees overlap, a copy resets them): with no
    checkout that knows both commits, the gate says it cannot tell the order, either way round."""
    import os
    import time

    def measured(tree, hours_ago):
        when = time.time() - hours_ago * 3600
        for path in tree.rglob("*"):
            if path.is_file():
                os.utime(path, (when, when))
        return tree

    main = measured(make_tree("rb_swap_main", seed=0, commit=BASELINE_COMMIT, runs=RUNBOOK_RUNS), 6)
    pr = measured(make_tree("rb_swap_pr", seed=1, commit=CANDIDATE_COMMIT, runs=RUNBOOK_RUNS), 2)
    for order in ((pr, main), (main, pr)):
        result = CliRunner().invoke(cli, ["compare", *map(str, order), "--format", "none"], catch_exceptions=False)
        assert "arguments may be swapped" not in result.stderr
        assert "gate: note: which tree is the base cannot be told" in result.stderr


def test_an_incomplete_side_publishes_no_absolute_path(runbook_pair, tmp_path):
    import shutil

    main_a, main_b, _ = runbook_pair
    partial = tmp_path / "partial"
    shutil.copytree(main_b, partial)
    (partial / "run2" / "qwen3" / "asr_zh.json").unlink()
    comment = tmp_path / "comment.md"
    result, rows = _compare(tmp_path, main_a, partial, "--comment", comment)
    assert result.exit_code == 3
    published = comment.read_text() + (tmp_path / f"{main_a.name}-{partial.name}.json").read_text()
    assert str(tmp_path) not in published and "partial/run2/qwen3/asr_zh.json" in published
