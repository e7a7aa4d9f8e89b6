"""The A/A calibration of a baseline file: the noise floor estimated from same-commit pairs of trees
(`calibrate_baseline`), the nightly jobs' share pooled in (`pool_nights`), and the calibration carried
over when a baseline is replaced (`carry_calibration`). Only independent evidence counts: a tree
given twice or a copied run is refused (`check_independent`).
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import math
from dataclasses import replace
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from gate.formats import typedjson
from gate.formats.baseline_record import noise_record
from gate.formats.config import Suite
from gate.formats.errors import InputError
from gate.reading.baseline_file import load_document, side_from_document, write_document
from gate.reading.copies import copies, side_hashes
from gate.reading.side import MeasureSamples, Side
from gate.stats.overdispersion import Dispersion, from_arms
from gate.stats.performance import Calibration, calibrate, with_nights


def calibration_from_pairs(pairs: Sequence[tuple[Side, Side]], suite: Suite,
                           cross_job: Sequence[bool] | None = None) -> dict[str, dict[str, Calibration | Dispersion]]:
    """Per workload: speed metric -> Calibration, accuracy metric -> Dispersion, from same-commit pairs of sides
    (complete workloads only). `cross_job[k]`: pair k's two arms ran in different jobs."""
    cross_job = list(cross_job) if cross_job is not None else [False] * len(pairs)
    out: dict[str, dict[str, Calibration | Dispersion]] = {}
    for workload in suite.workloads:
        for metric in workload.metrics:
            usable = [(a.workloads[workload.id], b.workloads[workload.id], across)
                      for (a, b), across in zip(pairs, cross_job, strict=True)
                      if workload.id in a.workloads and workload.id in b.workloads
                      and a.workloads[workload.id].complete and b.workloads[workload.id].complete]
            entry: Calibration | Dispersion | None = None
            if metric.kind == "speed" and usable:
                entry = calibrate([([v for v in wa.values.get(metric.name, ()) if v is not None],
                                    [v for v in wb.values.get(metric.name, ()) if v is not None]) for wa, wb, _ in usable],
                                  cross_job=[across for _, _, across in usable])
            elif metric.kind == "accuracy" and metric.samples and usable:
                samples = [w.samples[metric.samples] for pair in usable for w in pair[:2] if metric.samples in w.samples]
                entry = from_arms(*_aligned(samples)) if samples else None
            if entry is not None:
                out.setdefault(workload.id, {})[metric.name] = entry
    return out


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
                       cross_job: Sequence[bool] | None = None) -> dict:
    """Write the calibration estimated from `pairs` into the baseline file; returns what was written."""
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


def pool_nights(baseline_path: str | Path, nights: Mapping[str, Mapping[str, Calibration]], suite: Suite, *,
                source: Mapping[str, Any]) -> dict[str, dict[str, Calibration]]:
    """Set the nights' part of the baseline's speed calibration to `nights` (workload -> metric -> what
    `calibrate` gives for the nights' runs), keeping the A/A pairs' part, the cross-job part and every
    accuracy entry as they are. A workload × metric absent from `nights` loses any earlier nights' part:
    the part is recomputed from the current window each time, never accumulated. Written atomically;
    `source` is kept as calibration_source.nights. Returns the speed entries now stored."""
    path = Path(baseline_path)
    document = load_document(path)
    side = side_from_document(document, path, suite, None)  # the file must be a valid baseline before it is rewritten
    stored = {w: dict(metrics) for w, metrics in document.calibration.items()}
    written: dict[str, dict[str, Calibration]] = {}
    for workload_id in side.workloads:
        metrics = dict(stored.get(workload_id) or {})
        for metric in suite.workload(workload_id).metrics:
            if metric.kind != "speed":
                continue
            old = side.calibration.get(workload_id, {}).get(metric.name)
            merged = with_nights(old if isinstance(old, Calibration) else None,
                                 nights.get(workload_id, {}).get(metric.name))
            if merged is None:
                metrics.pop(metric.name, None)
                continue
            metrics[metric.name] = noise_record(merged)
            written.setdefault(workload_id, {})[metric.name] = merged
        if metrics:
            stored[workload_id] = metrics
        else:
            stored.pop(workload_id, None)
    write_document(path, replace(document, calibration=stored,
                                 calibration_source=dict(document.calibration_source or {}, nights=dict(source))))
    return written


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
