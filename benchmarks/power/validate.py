"""The simulator against the real path: the same simulated PRs, judged by `gate.judging.compare.compare`.

Every scenario can be validated (issue 49: the whole matrix). For each validated PR the simulated numbers become
`Side`s (per-run metric values and per-utterance error arrays, as a result tree gives them), the A/A calibration
goes through `gate.judging.calibration.calibration_from_pairs` (the code `gate baseline calibrate` runs), and each
model is compared on its own, as CI does: first look with `looks.thresholds_for(Look.FIRST)` and `look_rule.decide`,
then, for extended models, the pooled 6+6 with `Look.POOLED` and `look_rule.decide_pooled`; a cross-job scenario is
one compare at the family α against a baseline-kind side. Every gated row's verdict is compared with the
simulator's, and so is each look's re-measure: the run the runner's own functions pick at the look's end
(gate.judging.outliers.slow_starts_to_remeasure, then find_outlier against the calibration's σ, as `gate run` loads
it) against the slot the simulator re-measured. Any difference is counted and listed.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from gate.formats.config import load_suite
from gate.formats.report import CalibrationCheck
from gate.judging import look_rule
from gate.judging.calibration import calibration_from_pairs
from gate.judging.compare import compare
from gate.judging.judge import one_look_thresholds
from gate.judging.outliers import calibration_sigma, find_outlier, slow_starts_to_remeasure, speed_directions
from gate.reading.comparability import Fingerprint
from gate.reading.side import JobOrder, MeasureSamples, Side, WorkloadSide
from gate.stats import looks
from gate.stats.performance import calibrate, with_nights

from . import simulate
from .matrix import scenarios as matrix_scenarios
from .matrix import unseen_hosts
from .noise import MODELS, WORKLOADS, draw_test_sets
from .noise import scenarios as committed_scenarios

_CODES = {"pass": 0, "warn": 1, "fail": 2}


def check(keys, n: int, seed: int, rules: simulate.Rules) -> dict:
    suite = load_suite()
    test_sets = draw_test_sets(seed)
    out = {"prs": 0, "rows": 0, "mismatches": [], "scenarios": [], "looks": 0, "arm_looks": 0, "remeasured": 0}
    for scenario in committed_scenarios() + matrix_scenarios() + unseen_hosts():
        if scenario.key not in keys:
            continue
        rng = np.random.default_rng([seed, 99, len(out["scenarios"])])
        chunk = simulate.draw_chunk(rng, scenario, test_sets, n, rules.pairs)
        outcome = simulate.judge(chunk, test_sets, rules)
        out["scenarios"].append(scenario.key)
        for pr in range(n):
            out["prs"] += 1
            for model in MODELS:
                rows, mismatches, looked = _judge_one(suite, chunk, outcome, test_sets, pr, model, scenario)
                out["rows"] += rows
                out["looks"] += looked
                if "pooled" in outcome.slots:  # two looks: each arm's re-measure checked at both (_remeasures)
                    out["arm_looks"] += 4
                    out["remeasured"] += int((outcome.slots["pooled"][model][pr] == 2 * simulate.RUNS).any(-1).sum())
                out["mismatches"] += [f"{scenario.key} PR {pr}: {m}" for m in mismatches]
    return out


def describe(result: dict) -> str:
    shown = "".join(f"\n- {m}" for m in result["mismatches"][:10])
    return (f"Validation against gate.judging.compare.compare: {result['prs']} shared simulated PRs "
            f"({', '.join(result['scenarios'])}), {result['looks']} per-model compares, {result['rows']} gated row "
            f"verdicts, the runner's re-measure choice at {result['arm_looks']} arm looks "
            f"({result['remeasured']} arms re-measured); {len(result['mismatches'])} differ.{shown}")


def _judge_one(suite, chunk, outcome, test_sets, pr: int, model: str, scenario):
    workloads = [w for w in WORKLOADS if w.model == model]
    cross = scenario.design == "cross-job"
    pairs = chunk.cal_speed[workloads[0].workload_id]["throughput"].shape[1]
    calibration = (calibration_from_pairs(_aa_sides(suite, chunk, test_sets, pr, workloads), suite,
                                          cross_job=[cross] * pairs) if pairs else {})
    if chunk.cal_nights is not None:
        _pool_nights(calibration, suite, chunk, pr, workloads)
    check = (CalibrationCheck(source="calibration.json", models=(model,), status="stale", reasons=("simulated",))
             if scenario.noise.stale_known else None)
    mismatches, rows, looked = [], 0, 0
    if cross or scenario.design == "runbook":  # one look: a stored baseline, or two hand-made trees of one job
        slots = outcome.slots[model][pr]
        report = compare(*_sides(suite, chunk, test_sets, pr, workloads, slots, cross), suite, models=(model,),
                         calibration=calibration, thresholds=one_look_thresholds(not cross), cross_job=cross,
                         calibration_check=check, run_order=False)
        rows, mism = _diff(report, outcome.rows_first, pr)
        return rows, mism, 1
    first = compare(*_sides(suite, chunk, test_sets, pr, workloads, outcome.slots["first"][model][pr], False), suite,
                    models=(model,), calibration=calibration, thresholds=looks.thresholds_for(looks.Look.FIRST),
                    cross_job=False, calibration_check=check)
    rows, mismatches = _diff(first, outcome.rows_first, pr)
    mismatches += _remeasures(suite, chunk, outcome, pr, model, workloads, None if check else calibration)
    looked = 1
    action = look_rule.decide(first, model).action
    extended = bool(outcome.extended[pr, MODELS.index(model)])
    if (action == "extend") != extended:
        mismatches.append(f"{model}: decide() says {action}, the simulator {'extended' if extended else 'did not'}")
    if action == "extend":
        pooled = compare(*_sides(suite, chunk, test_sets, pr, workloads, outcome.slots["pooled"][model][pr], False),
                         suite, models=(model,), calibration=calibration,
                         thresholds=looks.thresholds_for(looks.Look.POOLED), cross_job=False, calibration_check=check)
        more, mism = _diff(pooled, outcome.rows_pooled, pr)
        rows, mismatches, looked = rows + more, mismatches + mism, 2
        look_rule.decide_pooled(pooled, model)
    return rows, mismatches, looked


def _remeasures(suite, chunk, outcome, pr: int, model: str, workloads, calibration: dict | None) -> list[str]:
    """Each look's re-measure by the runner's own functions, at the look's end in the runner's order there (its slow
    starts, then the outlier rule, once per arm), against the slot the simulator re-measured (slot 2·RUNS)."""
    out = []
    sigma, directions = calibration_sigma(calibration or None), speed_directions(suite, model)
    spare = 2 * simulate.RUNS
    before = np.tile(np.arange(simulate.RUNS), (2, 1))
    done = np.zeros(2, bool)
    for look, after in (("first", outcome.slots["first"][model][pr]), ("pooled", outcome.slots["pooled"][model][pr])):
        if look == "pooled":
            before = np.concatenate([outcome.slots["first"][model][pr], np.tile(np.arange(simulate.RUNS, spare), (2, 1))], 1)
        arms = {side: {f"run{i + 1}": _speed_run(chunk, pr, arm, slot, workloads) for i, slot in enumerate(before[arm])}
                for arm, side in enumerate(("base", "candidate"))}
        slow = slow_starts_to_remeasure(arms, suite, model)
        for arm, side in enumerate(("base", "candidate")):
            found = slow[side] if side in slow else find_outlier(arms[side], sigma, directions)
            want = before[arm].copy()
            if found is not None and not done[arm]:
                want[int(found.run[3:]) - 1] = spare
            done[arm] |= (want == spare).any()
            if not np.array_equal(want, after[arm]):
                out.append(f"{model} {side} {look} look: the runner re-measures slots {want.tolist()}, the simulator "
                           f"{after[arm].tolist()}")
    return out


def _speed_run(chunk, pr: int, arm: int, slot: int, workloads) -> dict:
    """One run's speed values as gate.judging.outliers.speed_values reads them from a tree (_side's metrics)."""
    out = {}
    for truth in workloads:
        speed = chunk.speed[truth.workload_id]
        p95 = float(np.exp(speed["latency_p95_s"][pr, arm, slot]))
        out[(truth.workload_id, truth.throughput_metric)] = float(np.exp(speed["throughput"][pr, arm, slot]))
        for metric in ("latency_p95_s", "latency_mean_s", "rtf_mean"):
            out[(truth.workload_id, metric)] = p95
    return out


def _diff(report, expected: dict, pr: int) -> tuple[int, list[str]]:
    rows, out = 0, []
    for row in report.rows:
        if row.family is None:
            continue
        key = (row.workload, "throughput" if row.metric.startswith("throughput") else row.metric)
        if key not in expected:
            continue
        rows += 1
        got, want = _CODES[row.verdict.value], int(expected[key][pr])
        if got != want:
            out.append(f"{row.workload} {row.metric}: compare {row.verdict.value}, simulator "
                       f"{[k for k, v in _CODES.items() if v == want][0]} (p {row.p_value})")
    return rows, out


def _pool_nights(calibration: dict, suite, chunk, pr: int, workloads) -> None:
    """The nights' part of σ as the nightly writes it (gate.history.noise.pool: `calibrate` over one arm a night,
    then gate.stats.performance.with_nights), for every speed metric of the model's workloads."""
    for truth in workloads:
        workload = next(w for w in suite.workloads if w.id == truth.workload_id)
        for metric in workload.metrics:
            if metric.kind != "speed":
                continue
            drawn = chunk.cal_nights[truth.workload_id]["throughput" if metric.name == truth.throughput_metric
                                                        else "latency_p95_s"][pr]
            nights = calibrate([([float(v) for v in np.exp(night)], ()) for night in drawn])
            entry = calibration.setdefault(truth.workload_id, {}).get(metric.name)
            merged = with_nights(entry, nights)
            if merged is not None:
                calibration[truth.workload_id][metric.name] = merged


def _sides(suite, chunk, test_sets, pr: int, workloads, slots: np.ndarray, cross: bool) -> tuple[Side, Side]:
    """The PR's two sides in these slots; in one job each holds where its runs sat (the run log's order as
    gate.reading.tree_side.job_order reads it: the drawer's, `simulate.slot_positions`)."""
    sides = []
    placed = simulate.slot_positions(slots[None], 1)[0]  # (2 arms, runs)
    model = workloads[0].model
    for arm, (kind, label) in enumerate((("baseline" if cross else "tree", "base"), ("tree", "cand"))):
        used = slots[arm]
        side = _side(suite, kind, label, {
            w.workload_id: (chunk.speed[w.workload_id], {m: chunk.errors[w.workload_id][m] for _, m, _ in w.measures})
            for w in workloads}, test_sets, lambda a: a[pr, arm, used], len(used))  # noqa: B023  # called before the loop moves on
        order = JobOrder(job="simulated", arm=arm, at={model: {f"run{i + 1}": int(p) for i, p in enumerate(placed[arm])}})
        sides.append(side if cross else replace(side, order=order))
    return sides[0], sides[1]


def _aa_sides(suite, chunk, test_sets, pr: int, workloads) -> list[tuple[Side, Side]]:
    first = chunk.cal_speed[workloads[0].workload_id]["throughput"]
    out = []
    for k in range(first.shape[1]):
        arms = []
        for arm in range(2):
            arms.append(_side(suite, "tree", f"aa{k}{arm}", {
                w.workload_id: (chunk.cal_speed[w.workload_id], {m: chunk.cal_errors[w.workload_id][m]
                                                                 for _, m, _ in w.measures}) for w in workloads},
                test_sets, lambda a, k=k, arm=arm: a[pr, k, arm], first.shape[-1]))
        out.append((arms[0], arms[1]))
    return out


def _side(suite, kind: str, label: str, data: dict, test_sets, pick, n_runs: int) -> Side:
    runs = tuple(f"run{i + 1}" for i in range(n_runs))
    workloads = {}
    for workload_id, (speed, errors) in data.items():
        truth = next(w for w in WORKLOADS if w.workload_id == workload_id)
        ts = test_sets[workload_id]
        thr, p95 = np.exp(pick(speed["throughput"])), np.exp(pick(speed["latency_p95_s"]))
        values = {truth.throughput_metric: tuple(float(v) for v in thr),
                  "latency_p95_s": tuple(float(v) for v in p95),
                  "latency_mean_s": tuple(float(v) for v in p95), "rtf_mean": tuple(float(v) for v in p95)}
        samples = {}
        for metric, measure, _ in truth.measures:
            e = np.asarray(pick(errors[measure]), dtype=np.int64)
            values[metric] = tuple(float(x) for x in e.sum(axis=1) / ts.ref_len.sum())
            samples[measure] = MeasureSamples(measure=measure, ids=tuple(f"u{i}" for i in range(e.shape[1])),
                                              ref_len=ts.ref_len.astype(np.int64), errors=e,
                                              valid=np.ones_like(e, dtype=bool))
        workloads[workload_id] = WorkloadSide(workload_id=workload_id, runs=runs, values=values, complete=True,
                                              problems=(), samples=samples, run_complete=(True,) * n_runs,
                                              expected_runs=n_runs)
    return Side(kind=kind, path=f"<{label}>", suite=suite.name, commit="same", runs=runs, workloads=workloads,
                missing=(), fingerprint=Fingerprint())
