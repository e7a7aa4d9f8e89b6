"""`gate example` (README's first command): the pair it writes, the calibrated baseline file, a second run and an
interrupted one. One file, because its tests share one `gate example` run (the session fixture `example_out`,
about 11 s of CPU): with `--dist loadfile` each file of them on another xdist worker ran it once more.

The pair: both trees share utterances and the candidate plants one regression. The baseline file is calibrated
from synthetic A/A pairs: compared against it, the planted regression still FAILs (now with p-values) and every
noise-only row passes. A second run rewrites the same folder; an interrupted run leaves nothing behind."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from gate import cli as cli_module
from gate.examples import AA_PAIRS, BASELINE_COMMIT
from gate.examples.folder import MARKER
from gate.formats.noise_model import Calibration, Dispersion
from gate.reading.baseline_file import read_baseline
from gate.reading.results import read_tree
from gate.reading.sample_cache import CACHE_DIR
from gate.reading.samples import read_run_samples


@pytest.mark.slow  # the packaged `gate example` (~11 s CPU; the fuzz seeds run it on a small suite)
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


@pytest.mark.slow  # the packaged `gate example` (~11 s CPU; the fuzz seeds run it on a small suite)
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


PLANTED = "qwen3/asr_en"


@pytest.mark.slow  # the calibrated `gate example` (A/A pairs generated and judged)
def test_example_baseline_file_is_calibrated_from_aa_pairs(example_out, suite):
    out, result = example_out
    assert result.exit_code == 0, result.stderr
    assert (f"next: gate compare {out / 'baseline'} {out / 'candidate'} --calibration {out / 'baseline.json'}"
            in result.stdout)
    assert f"  or: gate compare {out / 'baseline.json'} {out / 'candidate'}" in result.stdout
    side = read_baseline(out / "baseline.json", suite)
    assert side.commit == BASELINE_COMMIT and len(side.workloads) == len(suite.workloads)
    speed = [m.name for w in suite.workloads for m in w.metrics if m.kind == "speed"]
    calibrated = [m for metrics in side.calibration.values() for m, cal in metrics.items() if isinstance(cal, Calibration)]
    assert sorted(calibrated) == sorted(speed)
    # the A/A pairs also give each accuracy row its dispersion record (same-commit churn), so accuracy can FAIL
    assert any(isinstance(cal, Dispersion) for metrics in side.calibration.values() for cal in metrics.values())
    for metrics in side.calibration.values():
        for cal in metrics.values():
            if not isinstance(cal, Calibration):
                continue
            assert cal.df == 4 * AA_PAIRS  # 3 + 3 runs per pair
            # the generator's run-to-run noise is 1% (ExampleSpec.speed_sigma); p95 and streaming figures spread more
            assert 0.004 < cal.sigma < 0.03
    assert not (out / "aa").exists()  # the A/A trees are removed once calibrated
    assert "A/A" in (out / "README.txt").read_text(encoding="utf-8")


@pytest.mark.slow  # the calibrated `gate example` (A/A pairs generated and judged)
def test_planted_regression_fails_and_noise_passes_against_the_calibrated_baseline(example_out, invoke, tmp_path):
    out, _ = example_out
    report_path = tmp_path / "report.json"
    result = invoke("compare", out / "baseline.json", out / "candidate", "--json", report_path)
    assert result.exit_code == 1, result.output
    report = json.loads(report_path.read_text(encoding="utf-8"))
    assert report["baseline"]["calibrated"] is True
    failed = {(r["workload"], r["metric"]) for r in report["rows"] if r["verdict"] == "fail"}
    # WER (40 extra errors) FAILs. The 6% slowdown is judged across jobs (a baseline file is another job):
    # its SE carries the spread of the 3 cross-job A/A pairs, and both gated speed rows, p < 0.01, WARN: across
    # jobs a whole job running slower looks the same as a regression (gate.judging.speed_rows.speed_blockers); gate
    # run's A/B in one job is the one that blocks on speed.
    assert failed == {(PLANTED, "corpus_wer")}
    slow = [r for r in report["rows"] if r["workload"] == PLANTED and r["family"] == "speed"]
    assert len(slow) == 2 and all(r["p_value"] < 0.01 and "across jobs" in r["method"] for r in slow)
    assert {r["metric"]: r["verdict"] for r in slow} == {"throughput_samples_per_s": "warn", "latency_p95_s": "warn"}
    assert all("across_jobs" in r["cannot_fail"] for r in slow)
    others = [r for r in report["rows"] if r["workload"] != PLANTED]
    assert others and all(r["verdict"] == "pass" for r in others)
    speed = [r for r in report["rows"] if r["kind"] == "speed"]
    assert all(r["p_value"] is not None and not r["method"].startswith("uncalibrated") for r in speed)
    # The terminal shows the failing rows and not the passing ones.
    assert "uncalibrated" not in result.stdout and "Worse beyond noise and above the floors: qwen3/asr_en" in result.stdout
    assert "whisper/asr_en" not in result.stdout.split("Why:")[0]


@pytest.mark.slow  # the calibrated `gate example` (A/A pairs generated and judged)
def test_the_ab_comparison_a_pr_gets_fails_the_slowdown_too(example_out, invoke, tmp_path):
    """In one job (two trees, the calibration lent by the baseline file) the 6% slowdown FAILs on both gated
    speed rows, beside the WER regression; mean latency and RTF are shown, not gated."""
    out, _ = example_out
    report_path = tmp_path / "report.json"
    result = invoke("compare", out / "baseline", out / "candidate", "--calibration", out / "baseline.json",
                    "--json", report_path)
    assert result.exit_code == 1, result.output
    report = json.loads(report_path.read_text(encoding="utf-8"))
    failed = {(r["workload"], r["metric"]) for r in report["rows"] if r["verdict"] == "fail"}
    assert failed == {(PLANTED, "corpus_wer"), (PLANTED, "throughput_samples_per_s"), (PLANTED, "latency_p95_s")}
    assert all(r["verdict"] == "pass" for r in report["rows"] if r["workload"] != PLANTED)


# Last: the second run rewrites example_out's folder (same files; its sample cache goes with the old folder).
def _digests(root: Path) -> dict[str, str]:
    """File -> content hash; baseline.json without its creation times (the only part that may differ)."""
    out = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file() and CACHE_DIR not in p.parts):
        data = path.read_bytes()
        if path.name == "baseline.json":
            doc = json.loads(data)
            doc.pop("created", None)
            doc.get("calibration_source", {}).pop("created", None)
            data = json.dumps(doc, sort_keys=True).encode()
        out[str(path.relative_to(root))] = hashlib.sha256(data).hexdigest()
    return out


@pytest.mark.slow  # runs `gate example` a second time
def test_second_run_rewrites_the_same_folder(example_out, invoke):
    out, first = example_out
    assert first.exit_code == 0
    before = _digests(out)
    again = invoke("example", out)
    assert again.exit_code == 0, again.stderr
    assert _digests(out) == before
    assert (out / MARKER).is_file()
    assert sorted(p.name for p in out.parent.iterdir() if p.name.startswith(".")) == []  # no staging left
    readme = (out / "README.txt").read_text()
    assert f"gate compare {out / 'baseline.json'} {out / 'candidate'}" in readme  # the final path, not staging
    assert json.loads((out / "baseline.json").read_text())["source"]["path"] == str(out / "baseline")


@pytest.mark.slow  # `gate example` twice per interruption
@pytest.mark.parametrize("interrupt, code", [(KeyboardInterrupt, 130), (RuntimeError("boom"), 70)])
def test_interrupted_run_leaves_the_old_folder(tmp_path, monkeypatch, capsys, interrupt, code):
    out = tmp_path / "out"
    out.mkdir()
    (out / MARKER).write_text("earlier\n")
    (out / "old.txt").write_text("previous example\n")

    def stop(*args, **kwargs):
        raise interrupt
    monkeypatch.setattr("gate.examples.write_example_baseline", stop)  # imported by the command when it runs
    assert cli_module.run(["example", str(out)]) == code
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no half-written sibling
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "old.txt"]
    assert capsys.readouterr().err.strip().count("\n") == 0  # one line (click prints a newline after ^C)
