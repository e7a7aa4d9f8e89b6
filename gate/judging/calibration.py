"""The A/A calibration of a baseline file: the noise floor estimated from same-commit pairs of trees
(`calibrate_baseline`, which keeps the nightly jobs' share gate.history.noise pooled in), and the calibration
carried over when a baseline is replaced (`carry_calibration`). Only independent evidence counts: a tree
given twice or a copied run is refused (`check_independent`).
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import math
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from gate.formats import components as components_format
from gate.formats import duet_log, runlog, typedjson
from gate.formats.baseline_record import noise_record
from gate.formats.config import Suite
from gate.formats.errors import InputError
from gate.formats.noise_model import FEWEST_RUNS, Calibration, Dispersion
from gate.judging import duet
from gate.judging.speed_rows import runs_of_model
from gate.reading.baseline_file import load_document, side_from_document, write_document
from gate.reading.copies import copies, side_hashes
from gate.reading.side import MeasureSamples, Side, WorkloadSide
from gate.stats.nested import pooled_estimate
from gate.stats.overdispersion import from_arms
from gate.stats.performance import calibrate, with_nights
from gate.stats.slowmode import find_slow_starts


def calibration_from_pairs(pairs: Sequence[tuple[Side, Side]], suite: Suite,
                           cross_job: Sequence[bool] | None = None) -> dict[str, dict[str, Calibration | Dispersion]]:
    """Per workload: speed metric -> Calibration, accuracy metric -> Dispersion, from same-commit pairs of sides
    (complete workloads only). `cross_job[k]`: pair k's two arms ran in different jobs."""
    cross_job = list(cross_job) if cross_job is not None else [False] * len(pairs)
    # each in-job pair's slow-mode server starts, set aside from every speed metric of the model (as the A/B's are)
    slow = [{} if across else _slow_starts(a, b, suite) for (a, b), across in zip(pairs, cross_job, strict=True)]
    out: dict[str, dict[str, Calibration | Dispersion]] = {}
    for workload in suite.workloads:
        for metric in workload.metrics:
            usable = [(a.workloads[workload.id], b.workloads[workload.id], across, slow[k].get(workload.model, ((), ())))
                      for k, ((a, b), across) in enumerate(zip(pairs, cross_job, strict=True))
                      if workload.id in a.workloads and workload.id in b.workloads
                      and a.workloads[workload.id].complete and b.workloads[workload.id].complete]
            entry: Calibration | Dispersion | None = None
            if metric.kind == "speed" and usable:
                entry = calibrate([(_values(wa, metric.name, aside[0]), _values(wb, metric.name, aside[1]))
                                   for wa, wb, _, aside in usable],
                                  cross_job=[across for _, _, across, _ in usable])
            elif metric.kind == "accuracy" and metric.samples and usable:
                samples = [w.samples[metric.samples] for pair in usable for w in pair[:2] if metric.samples in w.samples]
                entry = from_arms(*_aligned(samples)) if samples else None
            if entry is not None:
                out.setdefault(workload.id, {})[metric.name] = entry
    return out


def _slow_starts(a: Side, b: Side, suite: Suite) -> dict[str, tuple[tuple[int, ...], tuple[int, ...]]]:
    """Per model, the runs (indices, per arm) of one in-job A/A pair that are slow-mode server starts, found as the
    A/B finds its own (speed_rows.model_slow_starts: on the throughput of the model's workloads together, after the
    job's position terms), but with the pair's two arms one sample (gate.stats.slowmode.find_slow_starts,
    `one_commit`). A slow start left in made σ 3.3-3.6% on a σ 1% host with 20% of starts 8% slow, and the A/B,
    judged on its fast mode, is measured against it. Only where every workload has the same runs on each arm."""
    out: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {}
    for model in suite.models:
        metrics = [m.name for w in suite.workloads_for((model,)) for m in w.metrics
                   if m.kind == "speed" and m.gated and m.higher_is_better]
        if not metrics:
            continue
        arms, at = runs_of_model(a, b, suite, model, metrics[0])
        if (arms.shape[0] < 4 or arms.shape[0] % 2 or np.isnan(arms).any()
                or (at[0::2] != at[0]).any() or (at[1::2] != at[1]).any()):
            continue
        found = find_slow_starts(arms, at, higher_is_better=True, one_commit=True)[0]
        # a run's position in the interleave is 2·(its index) or one more (gate.stats.drift.interleave_positions)
        out[model] = tuple(tuple(int(at[arm, j]) // 2 for j in np.flatnonzero(found[arm])) for arm in range(2))  # type: ignore[assignment]
    return out


def _values(side: WorkloadSide, metric: str, set_aside: Sequence[int]) -> list[float]:
    """The metric's values of one A/A arm, the runs in `set_aside` (slow-mode starts) NaN: absent, in their place."""
    return [math.nan if i in set_aside else v for i, v in enumerate(side.values.get(metric, ())) if v is not None]


def components_from_pairs(pairs: Sequence[tuple[Side, Side]], suite: Suite) -> dict[str, components_format.Stored]:
    """Per model, σ_start and σ_pass (gate.stats.nested) of its throughput from A/A arms whose complete runs each
    carry P > 1 timed passes; each arm (side) is K starts × P passes. A model with several workloads is planned
    by its noisiest one (the largest σ of a one-pass run). {} when no arm has passes (the runbook's P = 1)."""
    out: dict[str, components_format.Stored] = {}
    for model in suite.models:
        best: components_format.Stored | None = None
        pass_cost = 0.0
        for workload in suite.workloads_for((model,)):
            for metric in (m for m in workload.metrics if m.kind == "speed" and m.higher_is_better):
                arms = [_pass_arm(side.workloads[workload.id], metric.name)
                        for pair in pairs for side in pair if workload.id in side.workloads]
                if not arms or any(arm is None for arm in arms):
                    continue
                found = pooled_estimate([arm for arm in arms if arm is not None])
                if found is None:
                    continue
                sigma_start, sigma_pass, df_start, df_pass, passes = found
                values = [v for arm in arms if arm is not None for start in arm for v in start]
                # A throughput pass of n samples takes n / throughput seconds of the server's time.
                pass_cost += workload.expected_samples * float(np.mean([1.0 / v for v in values]))
                entry = components_format.Stored(sigma_start, sigma_pass, df_start, df_pass, passes, 0.0, None,
                                                 workload.id, metric.name)
                if best is None or (sigma_start ** 2 + sigma_pass ** 2 > best.sigma_start ** 2 + best.sigma_pass ** 2):
                    best = entry
                break  # one throughput figure a workload
        if best is not None:
            out[model] = replace(best, pass_cost_s=pass_cost,
                                 start_cost_s=_start_cost(pairs, model, best.passes * pass_cost))
    return out


def duet_components_from_pairs(pairs: Sequence[tuple[Side, Side]], suite: Suite,
                               say: Callable[[str], None] = lambda _: None) -> dict[str, components_format.StoredDuet]:
    """Per model, the duet's components from duet A/A pairs (both trees carry gate-duet.json, issue 53): σ of a
    session's mean paired log-difference of throughput and the block pairs' spread within a session (the judge's own
    session facts, gate.judging.duet), pooled over the pairs by their sessions' df, and a session's GPU seconds (the
    median over the record's completed sessions, the model's share by its blocks' time). A model is planned by its
    noisiest workload; one with fewer than 3 sessions stores nothing (`say` says so). {} without a duet pair."""
    logs = [(a, b, log) for a, b in pairs if duet_log.read(a.path) is not None and (log := duet_log.read(b.path))]
    out: dict[str, components_format.StoredDuet] = {}
    ran = {m for _, _, log in logs for s in log.sessions for m in s.models}
    for model in (m for m in suite.models if m in ran):
        best = _noisiest(logs, suite, model)
        sessions = best[0].sessions if best else sum(len(duet.layout_of(log).for_model(model)) for _, _, log in logs)
        if best is None or sessions < FEWEST_RUNS:
            say(f"{model}: {sessions} duet session(s) with a complete block pair; the duet's components need at "
                f"least {FEWEST_RUNS}: none stored")
            continue
        cost = _session_cost(model, [log for _, _, log in logs])
        if cost is None:
            continue
        facts, workload_id, metric_name = best
        out[model] = components_format.StoredDuet(
            round(facts.session_sd, 6), cost, None if math.isnan(facts.block_sd) else round(facts.block_sd, 6),
            facts.sessions, workload_id, metric_name)
    return out


def _noisiest(logs: Sequence[tuple[Side, Side, duet_log.DuetLog]], suite: Suite,
              model: str) -> tuple[duet.SessionFacts, str, str] | None:
    """The session facts of the model's workload whose throughput has the largest session σ, with its id and metric."""
    best: tuple[duet.SessionFacts, str, str] | None = None
    for workload in suite.workloads_for((model,)):
        metric = next((m for m in workload.metrics if m.kind == "speed" and m.higher_is_better), None)
        if metric is None:
            continue
        found = [duet.session_facts(a.workloads[workload.id], b.workloads[workload.id], metric.name,
                                    duet.layout_of(log).for_model(model))
                 for a, b, log in logs if workload.id in a.workloads and workload.id in b.workloads]
        facts = _pooled([f for f in found if f is not None])
        if facts is not None and (best is None or facts.session_sd > best[0].session_sd):
            best = (facts, workload.id, metric.name)
    return best


def _pooled(found: Sequence[duet.SessionFacts]) -> duet.SessionFacts | None:
    """Several duet A/A pairs: each pair's sessions about their own mean, the σ's pooled by df."""
    if len(found) <= 1:
        return found[0] if found else None
    df = sum(f.df for f in found)
    sd = math.sqrt(sum(f.df * f.session_sd ** 2 for f in found) / df)
    blocks = [f for f in found if not math.isnan(f.block_sd)]
    block_sd = math.sqrt(sum(f.df * f.block_sd ** 2 for f in blocks) / sum(f.df for f in blocks)) if blocks else math.nan
    k = sum(f.sessions for f in found)
    return duet.SessionFacts(difference=0.0, se=sd / math.sqrt(k), df=df, sessions=k, session_sd=sd, block_sd=block_sd,
                             means=tuple(m for f in found for m in f.means))


def _session_cost(model: str, logs: Sequence[duet_log.DuetLog]) -> float | None:
    """A session's GPU seconds for `model`: the median completed session's time times the model's share of its
    blocks' time (a session of one model: all of it); None when no session recorded its time."""
    costs = []
    for log in logs:
        for s in log.completed():
            if model not in s.models or s.seconds is None:
                continue
            total = sum(b.seconds for b in s.blocks)
            own = sum(b.seconds for b in s.blocks if b.model == model)
            costs.append(s.seconds * (own / total if total > 0 else 1.0 / len(s.models)))
    cost = float(np.median(costs)) if costs else 0.0
    return round(cost, 3) if cost > 0 else None


_CYCLE_STEPS = ("server-start", "server-ready", "client", "server-stop")


def _start_cost(pairs: Sequence[tuple[Side, Side]], model: str, passes_s: float) -> float | None:
    """GPU seconds of a server start beyond its timed passes (load, warm-up pass, stop): the median cycle of
    `model` in the trees' gate-run.json (a cycle's ok steps summed) less the passes' own time; None when no tree
    has a log (a tree made by hand) or the difference is not positive. A/B trees share one log: counted once."""
    cycles: dict[tuple[str, str, str | None, str | None], float] = {}
    failed: set[tuple[str, str, str | None, str | None]] = set()
    for side in (s for pair in pairs for s in pair):
        log = runlog.read(side.path)
        if log is None:
            continue
        for step in log.steps:
            if step.model != model or step.step not in _CYCLE_STEPS:
                continue
            key = (log.started, ",".join(sorted(log.sides)), step.side, step.run)
            if step.status != "ok" or step.seconds is None:
                failed.add(key)
            else:
                cycles[key] = cycles.get(key, 0.0) + step.seconds
    kept = [seconds - passes_s for key, seconds in cycles.items() if key not in failed]
    cost = float(np.median(kept)) if kept else 0.0
    return round(cost, 3) if cost > 0 else None


def _pass_arm(side: WorkloadSide, metric: str) -> list[tuple[float, ...]] | None:
    """One arm's starts × passes of `metric`, its complete runs only; None when a complete run has no passes."""
    per_run = side.passes.get(metric)
    if not per_run:
        return None
    starts = [per_run[i] for i in side.complete_runs() if i < len(per_run)]
    return starts if starts and all(len(s) > 1 for s in starts) else None


def _aligned(samples: Sequence[MeasureSamples]) -> tuple[list[np.ndarray], list[str]]:
    """The arms' error counts over the utterances valid in every run of every arm, columns in one order (the
    first arm's), with their ids: co-moving utterances are found across arms (overdispersion.comoving)."""
    valid: list[dict[str, bool]] = []
    for s in samples:
        ok = np.asarray(np.asarray(s.valid, dtype=bool).all(axis=0))
        valid.append({i: bool(ok[k]) for k, i in enumerate(s.ids)})
    ids = [i for i in samples[0].ids if all(v.get(i, False) for v in valid)]
    arms = []
    for s in samples:
        column = {i: k for k, i in enumerate(s.ids)}
        arms.append(s.errors[:, [column[i] for i in ids]])
    return arms, ids


def check_independent(pairs: Sequence[tuple[Side, Side]]) -> None:
    """Refuse A/A evidence that is not new evidence: a tree given twice, or a run copied from another
    (gate.reading.copies, the rule every command applies; one clear InputError naming both)."""
    trees: dict[tuple[str, ...], str] = {}
    labelled = []
    for a, b in pairs:
        for side in (a, b):
            hashes = side_hashes(side)
            key = tuple(sorted(hashes.values()))
            if key and key in trees:
                raise InputError(f"calibration: this tree repeats {trees[key]} (same content hash "
                                 f"{hashlib.sha256(''.join(key).encode()).hexdigest()[:12]}); each A/A pair must be "
                                 "new, independent runs", path=side.path)
            trees[key] = side.path
            labelled.append((side.path, hashes))
    for copy, original, digest in copies(labelled):
        raise InputError(f"calibration: {copy} is byte-identical to {original} (content hash {digest[:12]}); copied "
                         "runs are not independent measurements", path=copy.rsplit(" ", 1)[0])


def calibrate_baseline(baseline_path: str | Path, pairs: Sequence[tuple[Side, Side]], suite: Suite,
                       cross_job: Sequence[bool] | None = None, say: Callable[[str], None] = lambda _: None) -> dict:
    """Write the calibration estimated from `pairs` into the baseline file; returns what was written. `say`: the
    notes of a duet A/A too short to store the duet's components."""
    path = Path(baseline_path)
    cross_job = list(cross_job) if cross_job is not None else [False] * len(pairs)
    for a, b in pairs:
        if a.commit and b.commit and a.commit != b.commit:
            raise InputError(f"an A/A pair must be one commit twice; {a.path} is {a.commit}, {b.path} is {b.commit}",
                             path=b.path)
    check_independent(pairs)
    document = load_document(path)
    stored = side_from_document(document, path, suite, None)  # the file must be a valid baseline before it is rewritten
    calibration = calibration_from_pairs(pairs, suite, cross_job)
    if not any(isinstance(c, Calibration) for metrics in calibration.values() for c in metrics.values()):
        raise InputError("no complete speed values in the A/A pairs; nothing to calibrate", path=pairs[0][0].path)
    calibration = _keep_nights(calibration, stored.calibration)
    nights = (document.calibration_source or {}).get("nights")
    source: dict[str, Any] = {
        "pairs": [[a.path, b.path] for a, b in pairs],
        "independent_pairs": len(pairs),
        "within_job_pairs": sum(1 for c in cross_job if not c),
        "cross_job_pairs": sum(1 for c in cross_job if c),
        "commits": sorted({s.commit for pair in pairs for s in pair if s.commit}),
        "created": _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat(),
    }
    if nights is not None:
        source["nights"] = nights
    measured = components_from_pairs(pairs, suite)
    entries: dict[str, dict[str, Any]] = {m: components_format.record(c) for m, c in measured.items()}
    for model, found in duet_components_from_pairs(pairs, suite, say).items():
        entries.setdefault(model, {})[components_format.DUET_KEY] = components_format.duet_record(found)
    if entries:  # only runs with passes or duet trees carry them: a one-pass calibration writes what it wrote before
        source[components_format.STORED_KEY] = entries
    records = {w: {m: noise_record(c) for m, c in metrics.items()} for w, metrics in calibration.items()}
    # Never in place: a kill or a full disk during the write leaves the previous baseline valid.
    write_document(path, replace(document, calibration=records, calibration_source=source))
    return typedjson.to_json(records)


def _keep_nights(calibration: dict[str, dict[str, Calibration | Dispersion]],
                 stored: Mapping[str, Mapping[str, Calibration | Dispersion]]) -> dict[str, dict[str, Calibration | Dispersion]]:
    """New A/A pairs replace the pairs' part of each speed entry; the nights' part already pooled in stays."""
    out = {w: dict(metrics) for w, metrics in calibration.items()}
    for workload_id, metrics in stored.items():
        for metric, old in metrics.items():
            if not isinstance(old, Calibration) or not old.night_df:
                continue
            new = out.get(workload_id, {}).get(metric)
            nights = _nights_part(old)
            merged = with_nights(new if isinstance(new, Calibration) else None, nights)
            if merged is not None:
                out.setdefault(workload_id, {})[metric] = merged
    return out


def _nights_part(calibration: Calibration) -> Calibration:
    """The nights' part of a stored entry, in the form `calibrate` gives it (one arm per night)."""
    return Calibration(sigma=math.sqrt(calibration.night_sum_sq / calibration.night_df), df=calibration.night_df,
                       groups=max(calibration.nights, 1), set_aside=calibration.night_set_aside)


def with_calibration(side: Side, calibration: Mapping[str, Mapping[str, Calibration | Dispersion]]) -> Side:
    return replace(side, calibration=calibration)


def carry_calibration(side: Side, earlier: str | Path, suite: Suite, *,
                      models: tuple[str, ...] | None = None) -> tuple[Side, dict]:
    """`side` with the calibration of an earlier baseline file (a nightly refresh must not lose the noise
    floor), and the calibration_source to record: the earlier one's, plus where it was carried from."""
    document = load_document(Path(earlier))
    old = side_from_document(document, Path(earlier), suite, models)  # validated once; the same bytes give the source
    source = dict(document.calibration_source or {}, carried_from=str(earlier))
    return with_calibration(side, old.calibration), source
