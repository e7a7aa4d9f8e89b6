"""The trusted report job (`gate post --trees`) puts the looks it RECOMPUTED from the trees into the report,
never the uploaded gate-run.json's; it drops a stale calibration from the recomputed plan as `gate run --ab`
drops it (else its first look could differ from the job's and refuse honest trees); and it reports a
calibration measured on another GPU as stale."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from gate.cli import cli
from gate.examples import CANDIDATE_COMMIT, ExampleSpec, write_example_tree
from gate.formats import runlog
from gate.formats.config import load_suite
from gate.formats.reasons import CannotFail
from gate.publish.posting import judge_uploaded, render_section

SUITE = load_suite()
STARTED = "2026-11-02T03:00:00.000+00:00"
MODEL = ("whisper",)
H200 = {"schema_version": 1, "gpu": {"name": "NVIDIA H200", "driver_version": "580.65.06"}}
H100_STAMP = {"gpu": "NVIDIA H100 80GB HBM3", "driver": "550.54.15", "packages_sha256": None}
H200_STAMP = {"gpu": "NVIDIA H200", "driver": "580.65.06", "packages_sha256": None}


def upload(root: Path, candidate: ExampleSpec, *, runs=("warm", "1", "2", "3"), env=None, log_extra=None) -> Path:
    """The artifact of one model's A/B job: base/ and candidate/, each with the gate-run.json of its runs."""
    for side, spec in (("base", ExampleSpec(models=MODEL, seed=3, runs=runs)), ("candidate", candidate)):
        tree = write_example_tree(root / side, SUITE, spec)
        log = {**runlog.skeleton({"base": "/checkouts/base", "candidate": "/checkouts/pr"},
                                 {f"{side}/run{r}": "completed" for r in runs}, started=STARTED, status="completed"),
               **(log_extra or {})}
        (tree / "gate-run.json").write_text(json.dumps(log), encoding="utf-8")
        for run in runs:
            if env is not None:
                (tree / f"run{run}" / "env.json").write_text(json.dumps(env), encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def calibration(tmp_path_factory):
    """whisper's baseline file on the baseline branch, calibrated from three A/A pairs (same-job sigma)."""
    root = tmp_path_factory.mktemp("store")
    trees = [write_example_tree(root / f"aa{k}", SUITE, ExampleSpec(models=MODEL, seed=60 + k)) for k in range(6)]
    path = root / "h200" / "whisper.json"
    path.parent.mkdir()
    for args in (["baseline", "create", trees[0], "--out", path], ["baseline", "calibrate", *trees, "--baseline", path]):
        result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
        assert result.exit_code == 0, result.output
    return path


@pytest.fixture(scope="module")
def slower(tmp_path_factory):
    """3+3 runs, the candidate 2% slower: a first look extends it with the calibration, passes it without."""
    spec = ExampleSpec(models=MODEL, seed=4, commit=CANDIDATE_COMMIT, speed_factor={"whisper/asr_en": 0.98})
    return upload(tmp_path_factory.mktemp("slower"), spec, env=H200)


def stamped(calibration: Path, tmp_path: Path, stamp: dict) -> Path:
    path = tmp_path / "h200" / calibration.name
    path.parent.mkdir()
    path.write_bytes(calibration.read_bytes())
    (path.parent / "whisper.calibration-stamp.json").write_text(json.dumps(stamp), encoding="utf-8")
    return path


def test_the_report_carries_the_recomputed_looks_never_the_uploaded_ones(tmp_path):
    forged = {"plan": {"first_look": [], "possible_extension": [], "decider": "decide / decide_pooled",
                       "one_look_because": None, "max_runs_per_model": 6, "outlier_rule": "forged"},
              "sides": {"base": "", "candidate": ""},
              "looks": {"whisper": {"first": {"action": "pass", "reasons": ["forged: all good"]}, "extended": False,
                                    "why_extended": [], "pooled": None, "final": "pass"}},
              "scored_runs": {s: {"whisper": [f"run{r}" for r in range(1, 7)]} for s in ("base", "candidate")}}
    # 8 utterances gained an error: p <= 0.05 at about two thirds of the floor, so the first look extends.
    spec = ExampleSpec(models=MODEL, seed=1, commit=CANDIDATE_COMMIT, runs=("warm", *"123456"),
                       extra_errors={"whisper/asr_en": 8})
    trees = upload(tmp_path / "trees", spec, runs=("warm", *"123456"), log_extra=forged)
    report = judge_uploaded(trees, "whisper", SUITE, baseline=None, calibration=None)
    (looks,) = report.looks
    assert looks.source == "recomputed" and looks.final == "pass"
    first, pooled = looks.looks
    assert (first.name, first.action, first.base_runs, first.candidate_runs) == ("first", "extend", 3, 3)
    workload, metric = first.reasons[0].split(": ", 1)[0].split()  # the row that asked for the second look
    assert (workload, metric) == ("whisper/asr_en", "corpus_wer") and first.reasons[0].split(": ", 1)[1].startswith("p = ")
    assert "of its floor" in first.reasons[0]
    assert (pooled.name, pooled.action, pooled.base_runs, pooled.candidate_runs) == ("pooled", "pass", 6, 6)
    section = render_section(report)
    line = next(line for line in section.splitlines() if line.startswith("- whisper: first look 3+3 → "))
    assert "3+3 → extend (" in line and line.endswith(f"→ pooled 6+6: PASS ({pooled.reasons[0]}) · recomputed from the trees")
    assert len(pooled.reasons) == 1 and pooled.reasons[0].startswith("whisper: no FAIL")
    assert "forged" not in section


def test_against_a_stored_baseline_a_stale_calibration_cannot_fail(calibration, slower, tmp_path):
    report = judge_uploaded(slower, "whisper", SUITE, baseline=stamped(calibration, tmp_path, H100_STAMP), calibration=None)
    assert report.looks == ()  # not an A/B: no plan was recomputed
    (check,) = report.calibration_checks
    assert (check.source, check.status, check.blocks_fail) == ("whisper.json", "stale", True)
    gated = [r for r in report.rows if r.family == "speed"]
    assert gated and all(r.verdict.value != "fail" for r in gated)
    gpu = f"GPU {H100_STAMP['gpu']} then, {H200['gpu']['name']} now"
    assert check.reasons[0] == gpu and all(CannotFail.CALIBRATION_STALE in r.cannot_fail for r in gated)
