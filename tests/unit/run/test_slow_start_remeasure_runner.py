"""The runner re-measures slow-mode starts at a look's end, in both arms alike (issue 36; gate.runner.twolooks)."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from gate.formats.config import load_suite
from gate.runner import twolooks
from gate.runner.plan import Arm

THR = "throughput_samples_per_s"


class _Log:
    def __init__(self, scored):
        self._scored, self.done = scored, []

    def scored_runs(self, side, model):
        return tuple(self._scored[side])

    def remeasured(self, side, model):
        return any(s == side for s, _ in self.done)

    def runs_of_model(self, model):
        return sum(len(v) for v in self._scored.values()) + len(self.done)


def _looks(monkeypatch, values, scored, max_runs=14):
    sides = (Arm("A", Path("/a"), Path("/a/py")), Arm("B", Path("/b"), Path("/b/py")))
    request = SimpleNamespace(sides=sides, suite=load_suite(), setup=SimpleNamespace(out=Path("/out")))
    looks = twolooks.Looks.__new__(twolooks.Looks)
    looks.request, looks.suite = request, request.suite
    looks.plan = SimpleNamespace(max_runs=max_runs)
    looks.log = _Log(scored)
    monkeypatch.setattr(twolooks, "speed_values", lambda run_dir, suite, model: values[run_dir.parent.name][run_dir.name])
    monkeypatch.setattr(twolooks, "contention", lambda run_dir: "")
    monkeypatch.setattr(looks, "_remeasure", lambda side, run, model, why, outcome: looks.log.done.append((side.name, run)))
    return looks


def _run(en, zh):
    return {("qwen3/asr_en", THR): en, ("qwen3/asr_zh", THR): zh}


def _arms(slow_a=(), slow_b=(), runs=3):
    out = {}
    for name, slow in (("A", slow_a), ("B", slow_b)):
        out[name] = {f"run{i}": _run(100 * (0.92 if i in slow else 1) * (1 + 0.001 * i * (-1) ** i),
                                     50 * (0.92 if i in slow else 1) * (1 - 0.001 * i)) for i in range(1, runs + 1)}
    return out


def test_each_arms_slow_start_is_re_measured_at_the_looks_end(monkeypatch):
    values = _arms(slow_a=(2,), slow_b=(3, 5), runs=6)
    looks = _looks(monkeypatch, values, {name: list(v) for name, v in values.items()})
    looks._slow_starts("qwen3", None)
    assert sorted(side for side, _ in looks.log.done) == ["A", "B"]
    assert ("A", "2") in looks.log.done


def test_nothing_before_a_look_ends_or_without_a_slow_start(monkeypatch):
    values = _arms(slow_b=(2,))
    looks = _looks(monkeypatch, values, {"A": ["run1", "run2", "run3"], "B": ["run1", "run2"]})
    looks._slow_starts("qwen3", None)
    assert looks.log.done == []  # 3 + 2 runs: not a look's end
    looks = _looks(monkeypatch, _arms(), {"A": ["run1", "run2", "run3"], "B": ["run1", "run2", "run3"]})
    looks._slow_starts("qwen3", None)
    assert looks.log.done == []


def test_the_budget_holds(monkeypatch):
    values = _arms(slow_b=(2,))
    looks = _looks(monkeypatch, values, {name: list(v) for name, v in values.items()}, max_runs=6)
    steps = []
    monkeypatch.setattr(looks, "_budgeted_remeasure", lambda *a: steps.append(a[1]))
    looks._slow_starts("qwen3", None)
    assert steps == ["run2"]  # asked; _budgeted_remeasure is what refuses past --max-runs
