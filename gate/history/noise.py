"""The nights' part of a baseline's speed calibration: the nightly job's own run-to-run spread.

A night's scored runs are one commit measured several times in one job: exactly what one arm of an A/A
pair is. So each night is pooled as one more arm into the within-job σ (gate.stats.performance.calibrate,
outlier rule included), beside the A/A pairs' arms: sums of squares and degrees of freedom added
(`pool_nights` keeps the two parts apart, so the pairs' part and the cross-job part are
never disturbed, and a recalibration from pairs keeps the nights').

What counts:
- records of kind "nightly" only (the trusted nightly job on main writes them) and the nightly's own
  tree tonight. Calibration arms are already A/A pairs; "accepted" records come from PR jobs, whose
  trees never set the noise a PR is judged against;
- complete workloads only, as for A/A pairs;
- each night once: a run whose values (content hash) were already seen is a repeat (a tree imported
  twice, a re-run job, tonight's tree already in the history) and its record is skipped;
- the newest NIGHTS_KEPT nights per workload.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from gate.formats.baseline_record import noise_record
from gate.formats.config import Suite
from gate.formats.errors import InputError
from gate.formats.noise_model import Calibration
from gate.history.records import Record
from gate.reading.baseline_file import load_document, read_baseline, side_from_document, write_document
from gate.stats.performance import calibrate, with_nights

# Why the newest 14 nights and not "every night since the last change point": a change point is a step in
# the nights' *level*, while the spread is taken about each night's own mean, so a step does not bias it
# and cutting at every step would throw degrees of freedom away for nothing. What does age is the noise
# itself (driver, kernels, co-tenants of the runner): two weeks is recent, and 14 nights × 2 df = 28 df per
# workload, which with 3 A/A pairs (12) passes the ~40 df the design asks for; beyond ~40 df the t quantile
# hardly moves (t.995: 2.70 at 40 df, 2.58 at infinity), so more nights would buy little and react slower.
NIGHTS_KEPT = 14
TRUSTED_KIND = "nightly"


@dataclass(frozen=True)
class NightsPool:
    """The nights' part of the calibration, and what was counted."""

    calibration: dict[str, dict[str, Calibration]]  # workload -> speed metric -> the nights' runs pooled
    used: dict[str, int] = field(default_factory=dict)  # workload -> nights pooled
    repeated: int = 0  # records skipped: their runs were already counted
    not_nightly: int = 0  # records of another kind (calibration, accepted): never a night
    incomplete: int = 0  # records of an incomplete workload


def run_digest(record: Record, index: int, metrics: Sequence[str]) -> str:
    """Content hash of one run of one workload: its speed values (as floats, so 98 and 98.0 agree)."""
    digest = hashlib.sha256(record.workload.encode())
    for name in metrics:
        values = record.values.get(name, ())
        value = values[index] if index < len(values) else None
        digest.update(f";{name}={None if value is None else repr(float(value))}".encode())
    return digest.hexdigest()


def pool(records: Sequence[Record], suite: Suite, *, workloads: Iterable[str] | None = None,
         kept: int = NIGHTS_KEPT) -> NightsPool:
    """Pool the newest `kept` trusted nights per workload; `records` oldest first (tonight's last)."""
    wanted = set(workloads) if workloads is not None else {w.id for w in suite.workloads}
    speed = {w.id: sorted(m.name for m in w.metrics if m.kind == "speed") for w in suite.workloads}
    seen: set[str] = set()
    nights: dict[str, list[Record]] = {}
    repeated = not_nightly = incomplete = 0
    for record in reversed(records):  # newest first: the window keeps the newest nights
        if record.workload not in wanted:
            continue
        if record.kind != TRUSTED_KIND:
            not_nightly += 1
            continue
        if not record.complete:
            incomplete += 1
            continue
        digests = {run_digest(record, i, speed[record.workload]) for i in range(len(record.runs))}
        if digests & seen or len(digests) < len(record.runs):  # counted already, or a run copied within the night
            repeated += 1
            continue
        seen |= digests
        if len(nights.setdefault(record.workload, [])) < kept:
            nights[record.workload].append(record)
    calibration: dict[str, dict[str, Calibration]] = {}
    for workload_id, chosen in nights.items():
        for metric in speed[workload_id]:
            arms = [([v for v in r.values.get(metric, ()) if v is not None], ()) for r in chosen]
            found = calibrate(arms)
            if found is not None:
                calibration.setdefault(workload_id, {})[metric] = found
    used = {w: max(c.groups for c in metrics.values()) for w, metrics in calibration.items()}
    return NightsPool(calibration=calibration, used=used, repeated=repeated, not_nightly=not_nightly,
                      incomplete=incomplete)


def write_calibration(baseline_path: Path, records: Sequence[Record], suite: Suite, *, history: str | None,
                      tonight: Sequence[str] = (), require: bool = True) -> tuple[NightsPool, dict]:
    """Pool the nights into the baseline's speed calibration (the A/A pairs' part kept); returns what was
    pooled and the speed entries written. `require`: no night at all is an error (else the nights' part
    is simply emptied and the pairs' part is what remains)."""
    side = read_baseline(baseline_path, suite)  # validates the file before anything is computed
    found = pool(records, suite, workloads=side.workloads)
    if require and not found.calibration:
        raise InputError("the history has no complete nightly runs for this baseline's workloads", path=baseline_path)
    source = {"history": history, "tonight": list(tonight), "kept": NIGHTS_KEPT, "used": found.used,
              "repeated": found.repeated, "not_nightly": found.not_nightly,
              "created": _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()}
    written = pool_nights(baseline_path, found.calibration, suite, source=source)
    return found, written


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


def describe_sigmas(written: dict[str, dict[str, Calibration]]) -> list[str]:
    """One line per workload: each speed metric's σ with its degrees of freedom split by source."""
    lines = []
    for workload_id, metrics in written.items():
        parts = [f"{m} σ={c.sigma:.2%} (df {c.df}: {c.pair_df} from {c.pairs} A/A pairs, {c.night_df} from "
                 f"{c.nights} nights)" for m, c in metrics.items()]
        lines.append(f"{workload_id}: " + ", ".join(parts))
    return lines
