"""A re-measured run sits where it ran (issue 49): `gate run` re-measures a run with a fresh server after the runs
before it (at a look's end for a slow-mode start), so under drift its position is that place in the job, read from the
run log's server starts, not its slot in the interleave; and the drift terms' start test takes one layout per PR."""
from __future__ import annotations

import json

import numpy as np

from gate.formats import runlog
from gate.formats.config import load_suite
from gate.judging.speed_rows import runs_of_model
from gate.reading.side import JobOrder, Side, WorkloadSide
from gate.reading.tree_side import job_order
from gate.stats.drift import _start_ms, arm_positions, detrended_sd, interleave_positions

SIDES = {"base": "/checkouts/base", "candidate": "/checkouts/pr"}
T = "2026-12-07T10:00:00.000+00:00"
INTERLEAVE = [("base", 1), ("candidate", 1), ("candidate", 2), ("base", 2), ("base", 3), ("candidate", 3)]
SECOND = [("candidate", 4), ("base", 4), ("base", 5), ("candidate", 5), ("candidate", 6), ("base", 6)]


def _start(side: str, run: object, model: str = "qwen3") -> dict:
    return {"step": "server-start", "side": side, "run": str(run), "model": model, "command": None, "start": T,
            "end": T, "seconds": 1.0, "status": "ok", "exit_status": None, "message": None}


def _log(starts: list[tuple[str, object]], runs: int = 6, remeasured: tuple = ()) -> dict:
    doc = runlog.skeleton(SIDES, {f"{s}/run{r}": "completed" for s in SIDES for r in ["warm", *range(1, runs + 1)]},
                          started=T, status="completed",
                          scored_runs={s: {"qwen3": [f"run{r}" for r in range(1, runs + 1)]} for s in SIDES})
    doc["steps"] = [_start(s, r) for s, r in [("base", "warm"), ("candidate", "warm"), *starts]]
    doc["plan"] = {"first_look": [], "possible_extension": [], "decider": "decide / decide_pooled",
                   "one_look_because": None, "max_runs_per_model": 14, "outlier_rule": "rule"}
    doc["looks"] = {}
    doc["remeasured"] = [{"side": s, "run": f"run{r}", "model": "qwen3", "why": "slow", "original": "outliers"}
                         for s, r in remeasured]
    return doc


def test_without_a_remeasure_the_server_starts_are_the_interleave():
    places = runlog.server_starts(runlog.decode(_log(INTERLEAVE + SECOND), "gate-run.json"), "qwen3")
    assert places is not None
    for arm, side in enumerate(SIDES):
        assert [places[(side, f"run{r}")] for r in range(1, 7)] == list(interleave_positions(6, arm))


def test_a_slow_start_remeasured_at_the_first_looks_end_sits_there_and_the_second_look_after_it():
    log = runlog.decode(_log(INTERLEAVE + [("base", 2)] + SECOND, remeasured=(("base", 2),)), "gate-run.json")
    places = runlog.server_starts(log, "qwen3")
    assert places is not None
    assert places[("base", "run2")] == 6  # after B3, the first look's last run (its slot's was 3)
    assert [places[(s, f"run{r}")] for s, r in SECOND] == list(range(7, 13))  # one later each
    assert places[("base", "run1")] == 0 and places[("candidate", "run3")] == 5


def test_a_log_that_does_not_start_every_scored_run_places_none():
    assert runlog.server_starts(runlog.decode(_log(INTERLEAVE[:5] + SECOND), "gate-run.json"), "qwen3") is None
    assert runlog.server_starts(runlog.decode(_log(INTERLEAVE + SECOND), "gate-run.json"), "whisper") is None


def test_a_tree_reads_its_own_sides_places(tmp_path):
    doc = _log(INTERLEAVE + [("candidate", 1)], runs=3, remeasured=(("candidate", 1),))
    for side in SIDES:
        (tmp_path / side).mkdir()
        (tmp_path / side / runlog.FILE).write_text(json.dumps(doc), encoding="utf-8")
    base, cand = (job_order(tmp_path / side, ["qwen3/asr_en", "qwen3/asr_zh"]) for side in SIDES)
    assert base is not None and cand is not None
    assert (base.arm, cand.arm, base.job) == (0, 1, cand.job)
    assert dict(base.at["qwen3"]) == {"run1": 0, "run2": 3, "run3": 4}
    assert dict(cand.at["qwen3"]) == {"run1": 6, "run2": 2, "run3": 5}
    (tmp_path / "hand").mkdir()
    assert job_order(tmp_path / "hand", ["qwen3/asr_en"]) is None  # a tree made by hand: no log


def _side(name: str, values: np.ndarray, order: JobOrder | None) -> Side:
    suite = load_suite()
    runs = tuple(f"run{i + 1}" for i in range(values.shape[-1]))
    workloads = {}
    for k, workload in enumerate(suite.workloads_for(("qwen3",))):
        speed = {m.name: tuple(float(v) for v in values[k]) for m in workload.metrics if m.kind == "speed"}
        workloads[workload.id] = WorkloadSide(workload_id=workload.id, runs=runs, values=speed, complete=True, problems=(),
                                              samples={}, run_complete=(True,) * len(runs), expected_runs=len(runs))
    return Side(kind="tree", path=name, suite=suite.name, commit=None, runs=runs, workloads=workloads, missing=(),
                fingerprint=None, order=order)  # type: ignore[arg-type]


def test_runs_of_model_places_a_remeasured_run_where_the_log_says():
    suite = load_suite()
    metric = next(m.name for m in suite.workloads_for(("qwen3",))[0].metrics if m.kind == "speed")
    values = np.exp(0.01 * np.arange(6).reshape(2, 3))
    at = {"base": {"run1": 0, "run2": 3, "run3": 4}, "cand": {"run1": 6, "run2": 2, "run3": 5}}
    base = _side("base", values, JobOrder(job=T, arm=0, at={"qwen3": at["base"]}))
    cand = _side("cand", values, JobOrder(job=T, arm=1, at={"qwen3": at["cand"]}))
    _, placed = runs_of_model(base, cand, suite, "qwen3", metric)
    assert placed.tolist() == [[0, 3, 4], [6, 2, 5]] * 2  # the candidate's run1 re-measured after B3
    _, base_only = runs_of_model(base, None, suite, "qwen3", metric, partner=cand)
    assert base_only.tolist() == [[0, 3, 4]] * 2
    for other in (_side("cand", values, None), _side("cand", values, JobOrder(job="another", arm=1, at={"qwen3": at["cand"]}))):
        _, slots = runs_of_model(base, other, suite, "qwen3", metric)  # no log, or another job's: the interleave
        assert np.array_equal(slots, arm_positions(4, 3))


def _layouts(rng, batch: int, arms: int) -> np.ndarray:
    """(batch, arms, 6) positions: the interleave's 6 slots, in some PRs an arm's run re-measured in the spare slot
    (the simulator's drawer: 12 for the baseline, 13 for the candidate), each PR its own."""
    order = np.array([[0, 3, 4, 7, 8, 11, 12], [1, 2, 5, 6, 9, 10, 13]], dtype=float)
    out = np.empty((batch, arms, 6))
    for b in range(batch):
        slots = np.tile(np.arange(6), (2, 1))
        for arm in range(2):
            if rng.random() < 0.6:
                slots[arm, rng.integers(0, 6)] = 6
        out[b] = np.tile(np.stack([order[a][slots[a]] for a in range(2)]), (arms // 2, 1))
    return out


def test_the_starts_test_on_a_batch_of_layouts_equals_each_layout_alone():
    rng = np.random.default_rng(11)
    y = 0.01 * rng.standard_normal((40, 4, 6)) + 0.005 * _layouts(rng, 40, 4)
    y[rng.random(y.shape) < 0.05] = np.nan
    kept = rng.random(y.shape) < 0.9
    pos = _layouts(rng, 40, 4)
    ms, df = _start_ms(y, kept, pos)
    alone = [_start_ms(y[b], kept[b], pos[b]) for b in range(40)]
    assert np.allclose(ms, [a[0] for a in alone], rtol=1e-12, atol=0) and np.array_equal(df, [a[1] for a in alone])
    assert (df > 0).all()  # per-PR layouts are tested, not given df 0
    one, one_df = _start_ms(y, kept, pos[0])  # one layout for all: as before
    assert np.array_equal(one_df, [_start_ms(y[b], kept[b], pos[0])[1] for b in range(40)])


def test_detrended_sd_on_per_pr_positions_equals_each_pr_alone():
    rng = np.random.default_rng(5)
    pos = _layouts(rng, 30, 4)
    shared = 0.008 * rng.standard_normal((30, 1, 6))
    y = 0.006 * rng.standard_normal((30, 4, 6)) + shared - 0.005 * pos
    batch = detrended_sd(y, pos, shared_starts=True)
    for b in range(30):
        alone = detrended_sd(y[b], pos[b], shared_starts=True)
        for got, want in zip(batch, alone, strict=True):
            assert np.allclose(got[b], want, rtol=1e-12, atol=1e-15)
