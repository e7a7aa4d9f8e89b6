"""CI smoke of benchmarks/verdict_power.py (issue 6): it runs end to end, its outputs are well-formed and
plausible, and the shortcuts it takes (baseline files instead of trees, a short bootstrap) do not change a verdict.
The full run is for people: `python benchmarks/verdict_power.py --replicates 400 --out benchmarks/results`.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "verdict_power.py"
sys.path.insert(0, str(ROOT / "benchmarks"))

from power import experiment, model, rules, scenarios  # noqa: E402


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    out = tmp_path_factory.mktemp("power")
    done = subprocess.run([sys.executable, str(SCRIPT), "--smoke", "--out", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return out, done


def test_smoke_writes_table_plot_and_counts(smoke):
    out, done = smoke
    table = (out / "verdict_power.md").read_text(encoding="utf-8")
    lines = table.strip().splitlines()
    assert lines[-1].startswith("Gate (calibrated), 54 gated rows, 30 A/A and 30 replicates per effect scenario: "
                              "false FAIL per no-op PR")
    header = next(line for line in lines if line.startswith("| Scenario |"))
    for column in ("gate (calibrated)", "gate (uncalibrated)", "oracle z (true sigma)", "maintainers 0.97/1.03",
                   "Welch t p<0.05", "asv 1.1 + stats", "CodSpeed 10%", "GAB 200%", "sglang CI x0.9/x1.1"):
        assert f"| {column} |" in header
    assert "Tree equivalence: 2/2 full result-tree comparisons gave identical rows" in table
    png = (out / "verdict_power.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    assert done.stdout.strip().splitlines()[-1] == lines[-1]


def test_smoke_counts_are_consistent_and_plausible(smoke):
    out, _ = smoke
    data = json.loads((out / "verdict_power.json").read_text(encoding="utf-8"))
    assert data["rows"] == 54
    by_key = {s["key"]: s["tallies"] for s in data["scenarios"]}
    assert set(by_key) == {"aa", "thr-3", "thr-10", "wer+0.15"}
    for tallies in by_key.values():
        for t in tallies.values():
            assert t["replicates"] == 30
            assert 0 <= t["target_fail"] <= t["target_warn_or_fail"] <= t["replicates"]
            assert 0 <= t["any_fail"] <= t["any_warn_or_fail"] <= t["replicates"]
    # The physical limit detects a 10% throughput drop at sigma 1%; a 2x ratio rule never does.
    assert by_key["thr-10"]["oracle"]["target_fail"] >= 27
    assert by_key["thr-10"]["gab"]["target_fail"] == 0
    assert by_key["thr-10"]["gate"]["target_fail"] >= 27
    # A no-op PR: the gate (family alpha 0.005 per family) almost never fails; the maintainers' 3% ratio over 54
    # rows (20-session sets at sigma 3%) fails most of them.
    assert by_key["aa"]["gate"]["any_fail"] <= 2
    assert by_key["aa"]["maintainers"]["any_fail"] >= 10
    # +0.15 pp diffuse WER: at least a WARN from the gate, always.
    assert by_key["wer+0.15"]["gate"]["target_warn_or_fail"] >= 27


def test_short_bootstrap_does_not_change_a_verdict():
    from gate.compare import Thresholds
    from gate.config import load_suite
    from power.gate_rule import GateJudge
    from power.judges import N_BOOT

    suite = load_suite()
    noise = model.NoiseModel()
    test_sets = experiment.draw_test_sets(5, model.DEFAULT_TRUTHS, noise)
    wer = next(s for s in scenarios.default_scenarios() if s.key == "wer+0.05")
    for rep in range(3):
        pair = experiment.simulate_pair(np.random.default_rng([5, rep]), model.DEFAULT_TRUTHS, noise, test_sets,
                                        wer, key=(5, rep))
        verdicts = []
        for n_boot in (N_BOOT, 2000):
            judge = GateJudge(key="g", label="g", suite=suite, truths=model.DEFAULT_TRUTHS, noise=noise,
                              test_sets=test_sets, calibration_pairs=3, thresholds=Thresholds(n_boot=n_boot))
            verdicts.append([(r.workload, r.metric, r.verdict, r.p_value) for r in judge.compare(pair).rows])
        assert verdicts[0] == verdicts[1]


def test_test_set_matches_the_true_corpus_rate():
    noise = model.NoiseModel()
    for truth in model.DEFAULT_TRUTHS:
        test_set = model.draw_test_set(np.random.default_rng(3), truth, noise)
        for metric, rate in truth.accuracy.items():
            realized = test_set.errors[metric].sum() / test_set.ref_len.sum()
            assert realized == pytest.approx(rate, abs=1 / test_set.ref_len.sum())


def test_diffuse_errors_add_the_requested_net_change():
    noise = model.NoiseModel()
    truth = model.truths_by_id()["qwen3/asr_en"]
    test_set = model.draw_test_set(np.random.default_rng(4), truth, noise)
    extra = scenarios.diffuse_errors(np.random.default_rng(5), test_set, "corpus_wer", 0.0015)
    assert extra.sum() == round(0.0015 * test_set.ref_len.sum())
    assert (extra < 0).sum() > 0  # churn: some utterances get better
    assert (test_set.errors["corpus_wer"] + extra >= 0).all()


ROW_SPEED = rules.Row("w", "throughput", "speed", higher_is_better=True, floor_rel=0.03)
ROW_LATENCY = rules.Row("w", "latency", "speed", higher_is_better=False, floor_rel=0.03)
ROW_WER = rules.Row("w", "corpus_wer", "accuracy", higher_is_better=False, floor_rel=None)


def test_ratio_rules_follow_the_direction():
    base = np.array([100.0, 100.0, 100.0])
    assert rules.ratio_rule(1.10)(ROW_SPEED, base, base * 0.89)
    assert not rules.ratio_rule(1.10)(ROW_SPEED, base, base * 0.92)
    assert not rules.ratio_rule(1.10)(ROW_LATENCY, base, base * 0.5)  # faster is not a regression
    assert rules.ratio_rule(2.0)(ROW_LATENCY, base, base * 2.01)


def test_maintainers_rule_uses_the_suite_tolerances():
    rule = rules.maintainers_rule(0.03, {"corpus_wer": 0.0002})
    base = np.array([100.0, 100.0, 100.0])
    assert rule(ROW_SPEED, base, base * 0.969) and not rule(ROW_SPEED, base, base * 0.971)
    assert rule(ROW_LATENCY, base, base * 1.031) and not rule(ROW_LATENCY, base, base * 1.029)
    wer = np.array([0.0120, 0.0120, 0.0120])
    assert rule(ROW_WER, wer, wer + 0.00021) and not rule(ROW_WER, wer, wer + 0.00019)


def test_asv_and_welch_on_three_runs():
    base = np.array([100.2, 99.5, 100.8])
    # asv: 3 + 3 runs cannot reach its Mann-Whitney threshold, so its 99% CI check decides; a 3% drop is far
    # below its factor 1.1 anyway, a 20% drop with tight runs is flagged.
    assert not rules.asv_rule(1.1)(ROW_SPEED, base, base * 0.97)
    assert rules.asv_rule(1.1)(ROW_SPEED, base, np.array([80.1, 80.0, 79.9]))
    welch = rules.welch_rule(0.05)
    rows = (ROW_SPEED, ROW_SPEED)
    flagged = welch(rows, np.stack([base, base]), np.stack([np.array([97.1, 96.5, 97.9]), np.array([101.0, 99.0, 100.5])]))
    assert flagged.tolist() == [True, False]  # statistics.md §4.6: Welch p = 0.0029 on the first row


def test_oracle_is_calibrated_on_null_pairs():
    # With the true SD, a one-sided z test at z = 2.33 false-alarms about 1% of the time per row.
    rng = np.random.default_rng(0)
    rule = rules.oracle_rule({("w", "throughput"): 0.01 * np.sqrt(2 / 3)}, {"speed": 2.326})
    hits = sum(rule(ROW_SPEED, np.exp(0.01 * rng.standard_normal(3)), np.exp(0.01 * rng.standard_normal(3)))
               for _ in range(4000))
    assert 20 <= hits <= 65


def _cells(line: str) -> int:
    return len(line.replace("\\|", "").strip().strip("|").split("|"))


def test_tables_have_as_many_cells_as_headers(smoke):
    out, _ = smoke
    for line in (out / "verdict_power.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("| Scenario |"):
            width = _cells(line)
        elif line.startswith("|"):
            assert _cells(line) == width, line


def test_alternatives_table_is_well_formed():
    from power.report import alternatives_table

    chosen = tuple(s for s in scenarios.default_scenarios() if s.key in ("aa", "thr-3"))
    results = experiment.Results(scenarios=chosen, judges=("gate",), alternatives=("alt",),
                                 labels={"gate": "gate (calibrated)", "alt": "gate, floor 2%"}, rows=54)
    for key in ("aa", "thr-3"):
        for judge in ("gate", "alt"):
            results.tally(key, judge).add({"fail": frozenset({("qwen3/asr_en", "throughput_samples_per_s")})},
                                          chosen[1].targets if key == "thr-3" else ())
    table = [line for line in alternatives_table(results).splitlines() if line.startswith("|")]
    assert len(table) == 4  # header, separator, two designs
    assert {_cells(line) for line in table} == {3}
    assert "| gate, floor 2% | 100.0 (" in table[-1]
