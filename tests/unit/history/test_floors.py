"""The history reports a step only at the verdict's own floors, read from gate.stats.thresholds (no copy)."""
from __future__ import annotations

import dataclasses
import math

from gate.formats.config import load_suite
from gate.history import analysis
from gate.history.analysis import detector_for, tracked
from gate.stats.thresholds import Thresholds


def test_every_tracked_metric_uses_the_verdicts_floor() -> None:
    suite, verdict = load_suite(), Thresholds()
    seen_small = seen_large = False
    for workload in suite.workloads:
        for metric in filter(tracked, workload.metrics):
            detector, log = detector_for(metric, workload)
            if metric.kind == "speed":
                assert log and detector.magnitude == math.log1p(metric.floor_rel)
                continue
            small = workload.expected_samples <= verdict.small_set_size
            seen_small, seen_large = seen_small or small, seen_large or not small
            assert not log
            assert detector.magnitude == (verdict.small_set_floor_abs if small else verdict.quality_floor_abs)
    assert seen_small and seen_large  # the shipped suite has both kinds of accuracy set


def test_a_changed_floor_moves_the_history_with_it(monkeypatch) -> None:
    suite = load_suite()
    workload = next(w for w in suite.workloads if w.expected_samples > Thresholds().small_set_size)
    metric = next(m for m in workload.metrics if m.kind == "accuracy")
    monkeypatch.setattr(analysis, "VERDICT_FLOORS", dataclasses.replace(Thresholds(), quality_floor_abs=0.0042))
    assert detector_for(metric, workload)[0].magnitude == 0.0042
