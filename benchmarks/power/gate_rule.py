"""The gate as a judge, through the same code path as `gate compare BASELINE CANDIDATE`.

Each simulated arm becomes a baseline-format file (gate.baseline.write_baseline: per-run metric values and
per-utterance error counts), the calibrated variant gets its A/A calibration written into the baseline file by
gate.baseline.calibrate_baseline from freshly simulated same-commit pairs, and both files are read back with
gate.compare.load_side and judged by gate.compare.compare. Nothing of the gate's rules is re-implemented here.
Trees would give the same verdicts (checked by `verify_tree_equivalence`), but writing and re-scoring
thousands of utterances with jiwer per replicate would make a full run take hours.
"""
from __future__ import annotations

import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Mapping

import numpy as np

from gate.baseline import MeasureSamples, Side, WorkloadSide, calibrate_baseline, write_baseline
from gate.comparability import Fingerprint
from gate.compare import Thresholds, compare
from gate.sides import load_side
from gate.verdict import Verdict
from gate.config import Suite
from power.model import RUNS, ArmRuns, NoiseModel, TestSet, WorkloadTruth, simulate_arm, truths_by_id
from power.rules import Pair, Row

RUN_NAMES = tuple(f"run{r + 1}" for r in range(RUNS))
# Identical on both sides: the simulated pairs are always comparable (comparability is not under test).
FINGERPRINT = Fingerprint(gpu="SIMULATED GPU", driver="0.0", packages={"simulation": "1"})
# Count and info metrics the simulation does not model: constant, fully covered values.
CONSTANT_METRICS = {"speaker_timestamp_der": 0.2, "speaker_timestamp_der_skipped_parse_error": 0.0,
                    "failed_requests": 0.0}


def side_of(suite: Suite, truths: Mapping[str, WorkloadTruth], test_sets: Mapping[str, TestSet],
            arms: Mapping[str, ArmRuns], *, commit: str, path: str, with_samples: bool = True) -> Side:
    """An in-memory Side holding one simulated arm per workload (3 complete runs each)."""
    workloads = {}
    for wid, arm in arms.items():
        workload = suite.workload(wid)
        test_set = test_sets[wid]
        n = truths[wid].n
        values: dict[str, tuple[float | None, ...]] = {}
        samples: dict[str, MeasureSamples] = {}
        for metric in workload.metrics:
            if metric.kind == "speed":
                values[metric.name] = tuple(float(v) for v in arm.speed[metric.name])
            elif metric.kind == "accuracy" and metric.name not in arm.errors:  # speed-only (A/A calibration) arm
                values[metric.name] = (None,) * RUNS
            elif metric.kind == "accuracy":
                values[metric.name] = tuple(float(v) for v in arm.rates(metric.name, test_set.ref_len))
                if with_samples and metric.samples:
                    samples[metric.samples] = MeasureSamples(
                        measure=metric.samples, ids=_ids(wid, n), ref_len=test_set.ref_len,
                        errors=arm.errors[metric.name], valid=np.ones((RUNS, n), bool))
            elif metric.kind == "count":
                values[metric.name] = (float(n),) * RUNS
            else:
                values[metric.name] = (CONSTANT_METRICS.get(metric.name, 0.0),) * RUNS
        workloads[wid] = WorkloadSide(workload_id=wid, runs=RUN_NAMES, values=values, complete=True, problems=(),
                                      samples=samples, evaluated=(n,) * RUNS)
    return Side(kind="baseline", path=path, suite=suite.name, commit=commit, runs=RUN_NAMES, workloads=workloads,
                missing=(), fingerprint=FINGERPRINT)


_IDS: dict[tuple[str, int], tuple[str, ...]] = {}


def _ids(workload_id: str, n: int) -> tuple[str, ...]:
    key = (workload_id, n)
    if key not in _IDS:
        _IDS[key] = tuple(f"{workload_id.replace('/', '-')}-{i:05d}" for i in range(n))
    return _IDS[key]


@dataclass
class GateJudge:
    """`gate compare` on the pair. calibration_pairs = 0: no calibration (the uncalibrated fallback)."""

    key: str
    label: str
    suite: Suite
    truths: tuple[WorkloadTruth, ...]
    noise: NoiseModel
    test_sets: Mapping[str, TestSet]
    calibration_pairs: int
    models: tuple[str, ...] | None = None  # None: every model (a run-asr-all PR)
    thresholds: Thresholds = field(default_factory=Thresholds)
    seed: int = 0
    alternative: bool = False  # a design alternative (second table), not the shipped gate

    def judge(self, pair: Pair, rows: tuple[Row, ...]) -> Mapping[str, frozenset[tuple[str, str]]]:
        comparison = self.compare(pair)
        fail = frozenset((r.workload, r.metric) for r in comparison.rows if r.verdict is Verdict.FAIL)
        warn = frozenset((r.workload, r.metric) for r in comparison.rows if r.verdict is Verdict.WARN)
        unexpected = {r.verdict for r in comparison.rows} - {Verdict.FAIL, Verdict.WARN, Verdict.PASS}
        if unexpected:  # the simulation is complete and comparable: anything else is a harness bug
            raise RuntimeError(f"{self.key}: unexpected verdicts {sorted(unexpected)}")
        return {"fail": fail, "warn": warn}

    def compare(self, pair: Pair):
        by_id = truths_by_id(self.truths)
        wanted = {w.id for w in self.suite.workloads_for(self.models)}
        base_arms = {w: a for w, a in pair.base.items() if w in wanted}
        cand_arms = {w: a for w, a in pair.cand.items() if w in wanted}
        with tempfile.TemporaryDirectory(prefix="verdict-power-") as tmp:
            base_path, cand_path = Path(tmp) / "baseline.json", Path(tmp) / "candidate.json"
            write_baseline(side_of(self.suite, by_id, pair.test_sets, base_arms, commit="base", path=str(base_path)),
                           base_path)
            write_baseline(side_of(self.suite, by_id, pair.test_sets, cand_arms, commit="cand", path=str(cand_path)),
                           cand_path)
            if self.calibration_pairs:
                calibrate_baseline(base_path, self._aa_sides(pair.key, tuple(base_arms)), self.suite)
            base = load_side(base_path, self.suite, self.models)
            cand = load_side(cand_path, self.suite, self.models)
            return compare(base, cand, self.suite, models=self.models, seed=self.seed, thresholds=self.thresholds)

    def _aa_sides(self, key: tuple[int, ...], wanted: tuple[str, ...]) -> list[tuple[Side, Side]]:
        """Fresh same-commit pairs from the same noise model: what the nightly A/A job would have measured.
        Seeded by the pair, so every gate variant judging this pair is calibrated on the same A/A data."""
        cache_key = (key, self.calibration_pairs, wanted, self.truths)
        if _AA_CACHE.get("key") == cache_key:
            return _AA_CACHE["sides"]
        rng = np.random.default_rng([self.seed, 424_242, *key])
        by_id = truths_by_id(self.truths)
        pairs = []
        for _ in range(self.calibration_pairs):
            sides = []
            for arm_name in ("a", "b"):
                arms = {w: simulate_arm(rng, by_id[w], self.test_sets[w], self.noise, speed_only=True) for w in wanted}
                sides.append(side_of(self.suite, by_id, self.test_sets, arms, commit="aa", path=f"aa-{arm_name}",
                                     with_samples=False))
            pairs.append((sides[0], sides[1]))
        _AA_CACHE.update(key=cache_key, sides=pairs)
        return pairs


_AA_CACHE: dict = {}  # the last pair's A/A sides (one entry: judges of one pair run back to back)


def with_floor(suite: Suite, floor_rel: float) -> Suite:
    """The suite with every speed metric's floor set to `floor_rel` (a design alternative, not the shipped gate)."""
    workloads = tuple(replace(w, metrics=tuple(replace(m, floor_rel=floor_rel) if m.kind == "speed" else m
                                               for m in w.metrics)) for w in suite.workloads)
    return replace(suite, workloads=workloads)


@dataclass(frozen=True)
class Equivalence:
    seed: int
    scenario: str
    rows: int
    identical: bool  # every row: same verdict, same p-value, same delta
    verdict: str
    differences: tuple[str, ...]


def verify_tree_equivalence(root: Path, suite: Suite, seeds: tuple[int, ...], *,
                            models: tuple[str, ...] = ("qwen3", "moss_td")) -> list[Equivalence]:
    """Full result trees (gate.examples, re-scored with jiwer by gate.samples) judged as trees and as the
    baseline files written from them must give the same rows: the file path the benchmark uses is the
    tree path minus the re-scoring. Two designs per seed: A/A and a regression (-6% throughput, +40 errors)."""
    from gate.examples import ExampleSpec, write_example_tree

    out = []
    cal = fixed_calibration(suite)
    for seed in seeds:
        base_tree = write_example_tree(root / f"s{seed}" / "base", suite, ExampleSpec(seed=10 * seed, models=models))
        for name, spec in (("aa", ExampleSpec(seed=10 * seed + 1, models=models)),
                           ("regression", ExampleSpec(seed=10 * seed + 2, models=models,
                                                      speed_factor={"qwen3/asr_en": 0.94},
                                                      extra_errors={"qwen3/asr_en": 40}))):
            cand_tree = write_example_tree(root / f"s{seed}" / name, suite, spec)
            by_tree = compare(load_side(base_tree, suite), load_side(cand_tree, suite), suite, calibration=cal,
                              seed=seed)
            files = []
            for tree in (base_tree, cand_tree):
                path = root / f"s{seed}" / f"{tree.name}.json"
                write_baseline(load_side(tree, suite), path)
                files.append(load_side(path, suite))
            by_file = compare(files[0], files[1], suite, calibration=cal, seed=seed)
            diffs = tuple(_row_differences(by_tree.rows, by_file.rows))
            out.append(Equivalence(seed=seed, scenario=name, rows=len(by_tree.rows), identical=not diffs,
                                   verdict=by_tree.verdict, differences=diffs))
    return out


def fixed_calibration(suite: Suite, sigma: float = 0.01, df: int = 40):
    """A fixed calibration for every speed row (the equivalence check is about the data path, not sigma)."""
    from gate.stats.performance import Calibration

    cal = Calibration(sigma=sigma, df=df, groups=df // 2)
    return {w.id: {m.name: cal for m in w.metrics if m.kind == "speed"} for w in suite.workloads}


def _row_differences(tree_rows, file_rows) -> list[str]:
    diffs = []
    by_key = {(r.workload, r.metric): r for r in file_rows}
    for row in tree_rows:
        other = by_key.get((row.workload, row.metric))
        if other is None:
            diffs.append(f"{row.workload} {row.metric}: missing from the file comparison")
            continue
        for attr in ("verdict", "p_value", "delta_abs"):
            a, b = getattr(row, attr), getattr(other, attr)
            same = a == b or (a is not None and b is not None and abs(a - b) <= 1e-12 * max(1.0, abs(a)))
            if not same:
                diffs.append(f"{row.workload} {row.metric} {attr}: tree {a!r}, file {b!r}")
    return diffs
