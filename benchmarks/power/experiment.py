"""The replicate loop: simulate a pair per replicate and scenario, let every judge flag rows, count.

A judge is anything with `key`, `label` and `judge(pair, rows) -> {level: flagged rows}`; levels are "fail"
(blocks the PR) and, for the gate, "warn". Seeds are (seed, scenario index, replicate), so every judge sees the
identical pairs and a run is reproducible.
"""
from __future__ import annotations

import zlib
from collections import Counter
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping, Protocol

import numpy as np

from gate.config import Suite
from power.model import (DEFAULT_TRUTHS, NoiseModel, TestSet, WorkloadTruth, draw_test_set, simulate_arm, truths_by_id,
                         with_sigma)
from power.rules import Pair, Row, Rule, delta_statistic
from power.scenarios import HEADLINE_WORKLOAD, Scenario, default_scenarios

Flags = Mapping[str, frozenset[tuple[str, str]]]


class Judge(Protocol):
    key: str
    label: str

    def judge(self, pair: Pair, rows: tuple[Row, ...]) -> Flags: ...


@dataclass(frozen=True)
class RuleJudge:
    """A competing rule: it only ever fails. `workloads` limits it to those workloads' rows."""

    rule: Rule
    workloads: tuple[str, ...] | None = None
    alternative: bool = False

    @property
    def key(self) -> str:
        return self.rule.key

    @property
    def label(self) -> str:
        return self.rule.label

    def judge(self, pair: Pair, rows: tuple[Row, ...]) -> Flags:
        if self.workloads is not None:
            rows = tuple(r for r in rows if r.workload_id in self.workloads)
        return {"fail": self.rule.flags(pair, rows)}


def gated_rows(suite: Suite, truths: Iterable[WorkloadTruth] = DEFAULT_TRUTHS) -> tuple[Row, ...]:
    wanted = {t.workload_id for t in truths}
    return tuple(Row(workload_id=w.id, metric=m.name, kind=m.kind, higher_is_better=m.higher_is_better,
                     floor_rel=m.floor_rel)
                 for w in suite.workloads if w.id in wanted for m in w.metrics if m.gated)


def draw_test_sets(seed: int, truths: tuple[WorkloadTruth, ...], noise: NoiseModel) -> dict[str, TestSet]:
    """The benchmark's utterances, drawn once per experiment: a real test set is fixed, and the CI's absolute
    references were calibrated on it."""
    rng = np.random.default_rng([seed, 777_777])
    return {truth.workload_id: draw_test_set(rng, truth, noise) for truth in truths}


def simulate_pair(rng: np.random.Generator, truths: tuple[WorkloadTruth, ...], noise: NoiseModel,
                  test_sets: Mapping[str, TestSet], scenario: Scenario | None = None, key: tuple[int, ...] = ()) -> Pair:
    by_id = truths_by_id(truths)
    effects = scenario.make_effects(rng, test_sets) if scenario else {}
    base = {wid: simulate_arm(rng, truth, test_sets[wid], noise) for wid, truth in by_id.items()}
    cand = {wid: simulate_arm(rng, truth, test_sets[wid], noise, effects.get(wid)) for wid, truth in by_id.items()}
    return Pair(truths=by_id, test_sets=test_sets, base=base, cand=cand, key=key)


def scenario_truths(scenario: Scenario, truths: tuple[WorkloadTruth, ...] = DEFAULT_TRUTHS) -> tuple[WorkloadTruth, ...]:
    if scenario.sigma_override is None:
        return truths
    return with_sigma(truths, HEADLINE_WORKLOAD, scenario.sigma_override)


def true_null_sd(truths: tuple[WorkloadTruth, ...], noise: NoiseModel, test_sets: Mapping[str, TestSet],
                 rows: tuple[Row, ...], pairs: int, seed: int) -> dict[tuple[str, str], float]:
    """SD of each row's change statistic over `pairs` simulated A/A pairs: what the oracle knows."""
    rng = np.random.default_rng([seed, 999_999])
    deltas = {(r.workload_id, r.metric): [] for r in rows}
    for _ in range(pairs):
        pair = simulate_pair(rng, truths, noise, test_sets)
        for row in rows:
            deltas[(row.workload_id, row.metric)].append(delta_statistic(row, pair.runs(row, "base"), pair.runs(row, "cand")))
    return {key: float(np.std(values, ddof=1)) for key, values in deltas.items()}


@dataclass
class Tally:
    """Counts of one judge on one scenario."""

    replicates: int = 0
    any_fail: int = 0  # any gated row failed (a false FAIL on a no-op PR)
    any_warn_or_fail: int = 0
    target_fail: int = 0  # a target row failed (detection)
    target_warn_or_fail: int = 0
    rows_fail: int = 0  # failed rows, summed over replicates (per-row false alarm rate on A/A)
    fail_rows: Counter = field(default_factory=Counter)  # "workload metric" -> replicates it failed in
    warn_rows: Counter = field(default_factory=Counter)  # ... it warned in

    def add(self, flags: Flags, targets: tuple[tuple[str, str], ...]) -> None:
        fail = flags.get("fail", frozenset())
        warn = flags.get("warn", frozenset())
        flagged = fail | warn
        self.fail_rows.update(" ".join(row) for row in fail)
        self.warn_rows.update(" ".join(row) for row in warn)
        self.replicates += 1
        self.any_fail += bool(fail)
        self.any_warn_or_fail += bool(flagged)
        self.target_fail += any(t in fail for t in targets)
        self.target_warn_or_fail += any(t in flagged for t in targets)
        self.rows_fail += len(fail)

    def merge(self, other: "Tally") -> None:
        for name in ("replicates", "any_fail", "any_warn_or_fail", "target_fail", "target_warn_or_fail", "rows_fail"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.fail_rows.update(other.fail_rows)
        self.warn_rows.update(other.warn_rows)


@dataclass
class Results:
    scenarios: tuple[Scenario, ...]
    judges: tuple[str, ...]  # main-table judges, in column order
    alternatives: tuple[str, ...]  # design alternatives of the gate (second table), run on a few scenarios
    labels: Mapping[str, str]
    tallies: dict[tuple[str, str], Tally] = field(default_factory=dict)  # (scenario key, judge key)
    rows: int = 0

    def tally(self, scenario: str, judge: str) -> Tally:
        return self.tallies.setdefault((scenario, judge), Tally())

    def has(self, scenario: str, judge: str) -> bool:
        return (scenario, judge) in self.tallies


class JudgeFactory(Protocol):
    """Builds the judges of one scenario (the oracle's SD and the gate's calibration depend on its sigma).
    Must be picklable: scenarios run in worker processes."""

    def __call__(self, scenario: Scenario, truths: tuple[WorkloadTruth, ...],
                 test_sets: Mapping[str, TestSet]) -> tuple[Judge, ...]: ...


def run_scenario(scenario_key: str, factory: JudgeFactory, rows: tuple[Row, ...], replicates: range, seed: int,
                 noise: NoiseModel) -> tuple[str, list[tuple[str, str, bool, Tally]]]:
    """Replicates `replicates` of one scenario; returns (scenario key, [(judge key, label, alternative, tally)])."""
    scenario = next(s for s in default_scenarios() if s.key == scenario_key)
    test_sets = draw_test_sets(seed, DEFAULT_TRUTHS, noise)
    truths = scenario_truths(scenario)
    judges = factory(scenario, truths, test_sets)
    tallies = {judge.key: Tally() for judge in judges}
    for rep in replicates:
        key = (zlib.crc32(scenario.key.encode()), rep)
        pair = simulate_pair(np.random.default_rng([seed, *key]), truths, noise, test_sets, scenario, key)
        for judge in judges:
            tallies[judge.key].add(judge.judge(pair, rows), scenario.targets)
    return scenario.key, [(j.key, j.label, getattr(j, "alternative", False), tallies[j.key]) for j in judges]


CHUNK = 200  # replicates per task, so that a scenario with many replicates spreads over the workers


def run(scenarios: tuple[Scenario, ...], factory: JudgeFactory, rows: tuple[Row, ...], replicates: Mapping[str, int],
        seed: int, noise: NoiseModel, jobs: int = 1, progress: Callable[[str], None] = lambda _: None) -> Results:
    """Every scenario (`replicates[key]` pairs each), in `jobs` worker processes. Seeds are (seed, scenario key,
    replicate): a scenario's pairs do not depend on which other scenarios run, and every judge sees the same
    pairs."""
    keys = [s.key for s in scenarios]
    tasks = [(key, range(start, min(start + CHUNK, replicates[key])))
             for key in keys for start in range(0, replicates[key], CHUNK)]
    outputs: dict[str, list] = {key: [] for key in keys}
    if jobs <= 1:
        for key, reps in tasks:
            outputs[key].append(run_scenario(key, factory, rows, reps, seed, noise)[1])
            progress(f"{key}: replicates {reps.start}-{reps.stop - 1}")
    else:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            futures = {pool.submit(run_scenario, key, factory, rows, reps, seed, noise): reps for key, reps in tasks}
            for future in as_completed(futures):
                key, output = future.result()
                outputs[key].append(output)
                reps = futures[future]
                progress(f"{key}: replicates {reps.start}-{reps.stop - 1}")
    judges: dict[str, bool] = {}
    labels: dict[str, str] = {}
    for key in keys:
        for judge, label, alternative, _ in outputs[key][0]:
            judges.setdefault(judge, alternative)
            labels[judge] = label
    results = Results(scenarios=scenarios, judges=tuple(j for j, alt in judges.items() if not alt),
                      alternatives=tuple(j for j, alt in judges.items() if alt), labels=labels, rows=len(rows))
    for key in keys:
        for chunk in outputs[key]:
            for judge, _, _, tally in chunk:
                results.tally(key, judge).merge(tally)
    return results
