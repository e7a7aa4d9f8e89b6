"""Two looks in one A/B job (issue 11): the plan mechanics with an explicit, scripted decision function
(a TEST DOUBLE of gate.judging.look_rule), the outlier rule, the budget, and the record in gate-run.json."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from gate.judging.outliers import find_outlier
from gate.runner.plan import Arm, run_order

# Replaces the real decider (compare + gate.judging.look_rule) inside the `gate run` process with a script:
# {model: [first action, pooled action]}. Every call is logged with the runs the candidate tree held then.
SCRIPTED_DECIDER = """
import json, types
from pathlib import Path
import gate.judging.look_decider as _looks
_SCRIPT = json.loads(Path({script!r}).read_text())
_CALLS = Path({calls!r})

class _Scripted:
    def __init__(self, base, candidate):
        self.candidate = Path(candidate)
    def _decide(self, look, model, action):
        runs = sorted(p.name for p in self.candidate.iterdir() if p.name.startswith("run") and p.name != "runwarm")
        with _CALLS.open("a") as f:
            f.write(json.dumps({{"look": look, "model": model, "runs": runs}}) + "\\n")
        return types.SimpleNamespace(action=action, reasons=(f"scripted {{look}} look: {{action}}",), causes=())
    def first(self, model):
        return self._decide("first", model, _SCRIPT[model][0])
    def pooled(self, model):
        return self._decide("pooled", model, _SCRIPT[model][1])

_looks.tree_decider = lambda suite, base, candidate, calibration: _Scripted(base, candidate)
_looks.decisions_missing = lambda: None
"""


def _scripted(bench, script: dict) -> str:
    (bench.root / "script.json").write_text(json.dumps(script))
    return SCRIPTED_DECIDER.format(script=str(bench.root / "script.json"), calls=str(bench.root / "calls.jsonl"))


def _calls(bench) -> list[dict]:
    return [json.loads(line) for line in (bench.root / "calls.jsonl").read_text().splitlines()]


def test_extension_continues_the_interleave():
    a, b = Arm("A", Path("/a"), Path("/a/py")), Arm("B", Path("/b"), Path("/b/py"))
    order = [(s.name, r) for s, r in run_order(("warm", "1", "2", "3", "4", "5", "6"), (a, b), "warm")]
    assert order[2:8] == [("A", "1"), ("B", "1"), ("B", "2"), ("A", "2"), ("A", "3"), ("B", "3")]
    assert order[8:] == [("B", "4"), ("A", "4"), ("A", "5"), ("B", "5"), ("B", "6"), ("A", "6")]


def test_outlier_rule_is_the_judges_max_of_5_sigma_and_3_percent():
    """The runner re-measures by the rule compare sets runs aside with (gate.stats.outliers: plain median)."""
    row = ("qwen3/asr_en", "throughput_samples_per_s")
    arm = {"run1": {row: 100.0}, "run2": {row: 101.0}, "run3": {row: 97.5}}
    tiny = lambda w, m: 0.001  # noqa: E731  a calibrated σ: 5σ = 0.5%, so the 3% decides
    assert find_outlier(arm, tiny) is None  # 2.5% from the median: within 3%
    arm["run3"] = {row: 111.1}
    found = find_outlier(arm, tiny)
    assert found.run == "run3" and round(found.deviation, 3) == 0.1 and found.threshold == 0.03
    assert find_outlier(arm, sigma=lambda w, m: 0.03) is None  # 5 sigma = 15% > 10%
    assert find_outlier(arm) is None  # no calibration: the arm's own σ (three runs, 10% apart) calls nothing wild
    arm["run3"] = {row: 90.0}  # worse, in the one workload the arm holds: it stays (issue 36: both arms alike)
    assert find_outlier(arm, tiny) is None
    assert find_outlier({"run1": {row: 100.0}, "run2": {row: 50.0}}) is None  # two runs: no median to trust


@pytest.mark.slow
def test_two_looks_extend_only_the_undecided_model_and_record_both_looks(bench, tmp_path, monkeypatch):
    from tests.standin.build import SMALL_COUNTS, make_checkout
    candidate = make_checkout(tmp_path / "candidate", knobs={"counts": SMALL_COUNTS})
    prelude = _scripted(bench, {"qwen3": ["fail", None], "whisper": ["extend", "pass"]})
    done = bench.run("--ab", str(bench.checkout), str(candidate), "--names", "base,pr", "--models", "qwen3,whisper",
                     "--no-remeasure", checkout=False, timeout=240, python_prelude=prelude)
    assert done.returncode == 0, done.stderr
    calls = _calls(bench)
    assert [(c["look"], c["model"]) for c in calls] == [("first", "qwen3"), ("first", "whisper"), ("pooled", "whisper")]
    assert calls[0]["runs"] == ["run1", "run2", "run3"]  # the first look sees only the first 3+3 runs
    assert calls[2]["runs"] == ["run1", "run2", "run3", "run4", "run5", "run6"]
    log = json.loads((bench.out / "pr" / "gate-run.json").read_text())
    assert log["looks"]["qwen3"]["first"]["action"] == "fail" and not log["looks"]["qwen3"]["extended"]
    assert log["looks"]["whisper"]["why_extended"] == ["scripted first look: extend"]
    assert log["looks"]["whisper"]["pooled"]["action"] == "pass" and log["looks"]["whisper"]["final"] == "pass"
    assert log["plan"]["possible_extension"] == ["pr/run4", "base/run4", "base/run5", "pr/run5", "pr/run6", "base/run6"]
    assert log["scored_runs"]["base"] == {"qwen3": ["run1", "run2", "run3"],
                                          "whisper": ["run1", "run2", "run3", "run4", "run5", "run6"]}
    order = list(dict.fromkeys(f"{s['side']}/run{s['run']}" for s in log["steps"] if s["step"] == "server-start"))
    assert order[-6:] == ["pr/run4", "base/run4", "base/run5", "pr/run5", "pr/run6", "base/run6"]
    for side in ("base", "pr"):  # decided models stop after the first look
        assert not (bench.out / side / "run4" / "qwen3").exists() and (bench.out / side / "run6" / "whisper").is_dir()
    assert "qwen3: fail (two-look" in done.stderr and "whisper: pass (two-look" in done.stderr
    # The one judge recomputes the first look from the trees (the real compare; the same script as the runner's
    # decision, a TEST DOUBLE of gate.judging.look_rule) and checks the run count, for the trusted job and by hand alike.
    from types import SimpleNamespace

    from gate.judging import judge
    from gate.judging import look_rule as rule
    seen = []

    def decide(report, model):
        seen.append({row.workload for row in report.rows})
        return SimpleNamespace(action={"qwen3": "fail", "whisper": "extend"}[model],
                               reasons=(f"scripted first look: {'fail' if model == 'qwen3' else 'extend'}",))
    monkeypatch.setattr(rule, "decide", decide)
    monkeypatch.setattr(rule, "decide_pooled", lambda report, model: SimpleNamespace(
        action="pass", reasons=("scripted pooled look: pass",)))
    base, pr = bench.out / "base", bench.out / "pr"
    request = judge.Request(base=base, candidate=pr, suite=bench.suite)
    assert all(judge.first_look(request, m).problems == () for m in ("qwen3", "whisper"))
    assert seen[0] == {"qwen3/asr_en", "qwen3/asr_zh"}
    # `gate compare` of the two trees shows both looks as the judge recomputed them, one line per model.
    from click.testing import CliRunner

    from gate.cli import cli
    out = tmp_path / "report.json"
    shown = CliRunner().invoke(cli, ["compare", str(base), str(pr), "--suite", str(bench.suite_path), "--json", str(out)],
                               catch_exceptions=False)
    looks = {m["model"]: m for m in json.loads(out.read_text())["looks"]}
    assert [(m["final"], m["source"]) for m in looks.values()] == [("fail", "recomputed"), ("pass", "recomputed")]
    assert [(look["name"], look["action"], look["base_runs"], look["candidate_runs"]) for look in looks["qwen3"]["looks"]] \
        == [("first", "fail", 3, 3)]
    assert [(look["name"], look["action"], look["base_runs"], look["candidate_runs"]) for look in looks["whisper"]["looks"]] \
        == [("first", "extend", 3, 3), ("pooled", "pass", 6, 6)]
    from gate.render.cells import fmt_looks
    recomputed = {m.model: m for m in judge.judge(request).looks}  # the typed looks, as `gate compare` printed them
    assert [look.reasons for look in recomputed["whisper"].looks] == [("scripted first look: extend",),
                                                                     ("scripted pooled look: pass",)]
    assert all(m.source == "recomputed" for m in recomputed.values())
    assert f"Looks: {fmt_looks(recomputed['qwen3'])}\n" in shown.stdout and "3+3 → FAIL (scripted" in shown.stdout
    assert f"Looks: {fmt_looks(recomputed['whisper'])}\n" in shown.stdout and "6+6: PASS (scripted" in shown.stdout
    import shutil
    shutil.rmtree(pr / "run6" / "whisper")  # a tree that stopped early
    [problem] = judge.first_look(request, "whisper").problems
    five, six = (", ".join(f"run{k}" for k in range(1, n + 1)) for n in (5, 6))
    assert problem.startswith("candidate: whisper ") and f"has scored runs {five};" in problem
    assert problem.endswith(f" (extend) asks for {six}")
    models = "qwen3,whisper"
    assert f"next: gate compare {base} {pr} --models {models} --suite {bench.suite_path}" in done.stderr


@pytest.mark.slow
def test_budget_stops_the_extension(bench, tmp_path):
    from tests.standin.build import SMALL_COUNTS, make_checkout
    candidate = make_checkout(tmp_path / "candidate", knobs={"counts": SMALL_COUNTS})
    prelude = _scripted(bench, {"qwen3": ["extend", "pass"]})
    done = bench.run("--ab", str(bench.checkout), str(candidate), "--models", "qwen3", "--no-remeasure",
                     "--max-runs", "10", checkout=False, timeout=120, python_prelude=prelude)
    assert done.returncode == 0, done.stderr
    log = json.loads((bench.out / "candidate" / "gate-run.json").read_text())
    assert log["looks"]["qwen3"]["final"] == "undecided" and "--max-runs 10: 6 made" in log["looks"]["qwen3"]["not_extended"]
    assert not (bench.out / "base" / "run4").exists()


@pytest.mark.slow
@pytest.mark.timed
def test_a_slow_run_is_remeasured_once_and_set_aside(bench, tmp_path):
    from tests.standin.build import SMALL_COUNTS, make_checkout
    # every request takes 0.2 s (steady throughput); the 4th server start of the candidate (its run3) is 4x slower
    candidate = make_checkout(tmp_path / "candidate", knobs={
        "counts": SMALL_COUNTS, "server": {"request_delay_s": 0.2, "slow_request_s": 0.6, "on_call": 4}})
    bench.knobs({"server": {"request_delay_s": 0.2}})
    calibration = tmp_path / "store" / "h100" / "qwen3.json"  # measured on an H100: stale here
    calibration.parent.mkdir(parents=True)
    calibration.write_text("{}")
    gpu = "NVIDIA H100 80GB HBM3"
    (calibration.parent / "qwen3.calibration-stamp.json").write_text(json.dumps(
        {"gpu": gpu, "driver": "550.54.15", "packages_sha256": None}))
    done = bench.run("--ab", str(bench.checkout), str(candidate), "--models", "qwen3", "--one-look",
                     "--calibration", str(calibration), checkout=False, timeout=180)
    assert done.returncode == 0, done.stderr
    assert f"calibration {calibration} is stale (GPU {gpu} then, none now" in done.stderr
    log = json.loads((bench.out / "candidate" / "gate-run.json").read_text())
    mine = [r for r in log["remeasured"] if r["side"] == "candidate"]
    assert [(r["run"], r["model"]) for r in mine] == [("run3", "qwen3")], log["remeasured"]
    assert "a slow-mode server start" in mine[0]["why"]  # 4x slower in every workload: not the outlier rule's run
    kept = bench.out / "candidate" / "outliers" / "run3" / "qwen3" / "asr_en.json"
    again = bench.out / "candidate" / "run3" / "qwen3" / "asr_en.json"
    slow = json.loads(kept.read_text())["results"][0]["throughput_samples_per_s"]["mean"]
    fresh = json.loads(again.read_text())["results"][0]["throughput_samples_per_s"]["mean"]
    assert fresh > 1.5 * slow
    line = next(line for line in done.stderr.splitlines() if "re-measured outlier runs: " in line)
    assert "candidate/run3 qwen3" in line  # (the base arm may have had a re-measure of its own on a loaded machine)
    assert log["scored_runs"]["candidate"]["qwen3"] == ["run1", "run2", "run3"]
    assert log["calibration"]["used"] is False and log["calibration"]["stale"][0].startswith("GPU NVIDIA H100")
    stamp = json.loads((bench.out / "candidate" / "stamp.json").read_text())
    assert stamp["gpu"] is None and len(stamp["packages_sha256"]) == 64
    # the real decider's input: the one judge's report on the two trees as they are on disk
    from gate.judging import judge
    report = judge.judge(judge.Request(base=bench.out / "base", candidate=bench.out / "candidate", suite=bench.suite,
                                       models=("qwen3",)))
    assert {row.workload for row in report.rows} == {"qwen3/asr_en", "qwen3/asr_zh"}


@pytest.mark.slow
def test_real_decider_fails_the_regressed_model_extends_the_undecided_and_stops_the_rest(bench, tmp_path):
    """The done-when of the two-look plan with the gate's own compare and gate.stats.looks (no script): the
    candidate drops a word on every qwen3 utterance (FAIL at the first look), on a share of whisper's (first
    look undecided: extended, then decided on 6+6) and on none of fun's (PASS at the first look: stops). Accuracy
    decides every look here: speed rows are shown but not gated, so the test shares the cores with others (the
    speed-decided looks: test_an_uncalibrated_ab_of_a_slower_build_fails)."""
    from tests.standin.build import make_checkout, make_hf_hub, small_suite
    # 31 utterances: above the few-session rule's 30 units (gate.judging.few_sessions), as SeedTTS's real sets are
    counts = {"seedtts_en": 31, "seedtts_zh": 5, "movies800times": 4, "aishell4_long": 2, "googletime": 3}
    bench.suite_path = small_suite(tmp_path / "suite30.yaml", counts, startup_timeout_s=2, stop_grace_s=0.5,
                                   client_timeout_s=20, speed_gated=False)
    bench.hf_hub = make_hf_hub(tmp_path / "hub30", bench.suite)
    (bench.checkout / "standin-knobs.json").write_text(json.dumps({"counts": counts}))
    candidate = make_checkout(tmp_path / "candidate", knobs={
        "counts": counts, "server": {"drop_word": {"qwen3": 1.0, "whisper": 0.4}}})  # whisper: 6 of 30
    done = bench.run("--ab", str(bench.checkout), str(candidate), "--names", "base,pr",
                     "--models", "qwen3,whisper,fun", "--no-remeasure", checkout=False, timeout=300)
    assert done.returncode == 0, done.stderr
    looks = json.loads((bench.out / "pr" / "gate-run.json").read_text())["looks"]
    assert looks["qwen3"]["first"]["action"] == "fail" and not looks["qwen3"]["extended"]
    assert looks["whisper"]["first"]["action"] == "extend" and looks["whisper"]["extended"]
    assert any("whisper/asr_en corpus_wer" in why for why in looks["whisper"]["why_extended"])
    assert looks["whisper"]["pooled"]["action"] == looks["whisper"]["final"] == "pass"  # 6 of 30: p 1/64 > Holm α₂
    fun = looks["fun"]  # unchanged: it passes at the first look and stops
    assert fun["first"]["action"] == fun["final"] == "pass" and not fun["extended"]
    for side in ("base", "pr"):
        assert (bench.out / side / "run6" / "whisper").is_dir()
        assert not (bench.out / side / "run4" / "qwen3").exists()
        assert not (bench.out / side / "run4" / "fun").exists()
    # The report shows both looks, and the trusted side's recomputation (the real decide) accepts the trees.
    from click.testing import CliRunner

    from gate.cli import cli
    from gate.judging import judge
    base, pr = bench.out / "base", bench.out / "pr"
    shown = CliRunner().invoke(cli, ["compare", str(base), str(pr), "--suite", str(bench.suite_path)],
                               catch_exceptions=False)
    from gate.render.cells import fmt_looks
    request = judge.Request(base=base, candidate=pr, suite=bench.suite)
    recomputed = {m.model: m for m in judge.judge(request).looks}
    assert shown.exit_code == 1 and all(f"Looks: {fmt_looks(m)}\n" in shown.stdout for m in recomputed.values())
    assert [(look.name, look.action) for look in recomputed["qwen3"].looks] == [("first", "fail")]
    assert [(look.name, look.action) for look in recomputed["whisper"].looks] == [("first", "extend"), ("pooled", "pass")]
    assert "qwen3: first look 3+3 → FAIL" in shown.stdout and "→ pooled 6+6: PASS" in shown.stdout
    assert "fun: first look 3+3 → PASS" in shown.stdout
    whisper = next(m for m in judge.judge(request).looks if m.model == "whisper")
    assert any("whisper/asr_en corpus_wer" in why for why in whisper.looks[0].reasons)
    assert all(judge.first_look(request, m).problems == () for m in ("qwen3", "whisper", "fun"))


def _uncalibrated_ab_of_a_slower_build(bench, tmp_path, server: dict):
    """Issue 21: an interleaved A/B carries its own estimate of run-to-run noise, so a build 6% slower FAILs
    without any calibration file (before, such an A/B could WARN at most)."""
    from gate.judging import judge
    from tests.standin.build import SMALL_COUNTS, make_checkout
    delay = 0.5  # seconds per request: throughput is set by it (long enough that start-up jitter is small)
    bench.knobs({"server": {"request_delay_s": delay, **server}})
    candidate = make_checkout(tmp_path / "candidate", knobs={"counts": SMALL_COUNTS,
                                                             "server": {"request_delay_s": delay / 0.94, **server}})
    done = bench.run("--ab", str(bench.checkout), str(candidate), "--names", "base,pr", "--models", "qwen3",
                     "--no-remeasure", checkout=False, timeout=300)
    assert done.returncode == 0, done.stderr
    report = judge.judge(judge.Request(base=bench.out / "base", candidate=bench.out / "pr", suite=bench.suite))
    throughput = [r for r in report.rows if r.metric == "throughput_samples_per_s"]
    print([(r.workload, r.verdict.value, f"{r.worse_rel:.3f}", f"σ {r.sigma:.3%}", r.method) for r in throughput])
    assert throughput and all(r.verdict.value == "fail" for r in throughput), [(r.workload, r.verdict, r.notes)
                                                                              for r in throughput]
    assert all(r.worse_rel is not None and 0.03 < r.worse_rel < 0.10 for r in throughput)
    # Every candidate run has every workload slower alike: at 3+3 that cannot be told from starts in the host's slow
    # mode (gate.stats.slowmode), so the first look extends and the pooled look on all runs FAILs (issue 36).
    first, *pooled = report.looks[0].looks
    assert first.action == "extend" and [look.action for look in pooled] == ["fail"] and not report.calibration_checks


@pytest.mark.slow
@pytest.mark.timed
def test_an_uncalibrated_ab_of_a_slower_build_fails(bench, tmp_path):
    _uncalibrated_ab_of_a_slower_build(bench, tmp_path, {})


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.timed
def test_an_uncalibrated_ab_of_a_slower_build_fails_on_the_gpu(bench, tmp_path):
    """The same with the real GPU: NVML waits, telemetry, and stand-in servers that hold GPU memory."""
    pytest.importorskip("torch")
    try:
        from gate.runner.gpu import NvmlGpu
        if not NvmlGpu().devices():
            pytest.skip("NVML sees no GPU")
    except Exception as exc:  # GateError when NVML is missing
        pytest.skip(f"no NVIDIA GPU/pynvml here: {exc}")
    from tests.standin.build import small_suite
    bench.no_gpu = False  # servers that import torch and take GPU memory need more than the CPU suite's 2 s to start
    bench.suite_path = small_suite(tmp_path / "gpu-suite.yaml", startup_timeout_s=90, stop_grace_s=3, client_timeout_s=120)
    _uncalibrated_ab_of_a_slower_build(bench, tmp_path, {"gpu_mib": 2048})


def test_a_row_the_looks_could_not_judge_is_undecided_never_a_pass():
    """Issue 39: every row NOT COMPARABLE (e.g. a side's result files and env.json name different GPUs) must not read
    as "pass — no gated row near a regression" at the first look, nor at the pooled one."""
    from types import SimpleNamespace

    from gate.judging import look_rule as rule

    def row(verdict, metric):
        return SimpleNamespace(model="qwen3", workload="qwen3/asr_en", metric=metric, verdict=verdict, family=None,
                               p_value=None, blind=False, unstable=False, mde=None,
                               notes=(), differs=("gpu",))
    report = SimpleNamespace(rows=[row("not comparable", "throughput_samples_per_s"), row("pass", "corpus_wer")])
    first = rule.decide(report, "qwen3")
    assert first.action == "undecided" and "not comparable" in first.reasons[0]
    assert rule.decide_pooled(report, "qwen3").action == "undecided"
    failing = SimpleNamespace(rows=[*report.rows, row("fail", "latency_p95_s")])
    assert rule.decide(failing, "qwen3").action == "fail"  # a FAIL found elsewhere still stops the model as FAIL
