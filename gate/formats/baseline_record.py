"""The baseline file's shape as frozen dataclasses: what `gate.formats.typedjson` writes and strictly reads back.

The records mirror the JSON one to one (field order is key order), so the file has one writer
(`typedjson.to_json`) and one reader (`typedjson.from_json`, which refuses a missing or unknown
key, a wrong type, a non-finite number and a count below zero). What a type cannot say (the
per-utterance arrays' shapes, a metric's plausible range, sigma's range, the nights' part of a
calibration being a part) gate.reading.baseline_file checks after decoding.

`upgrade` reads a schema_version 1 file written before every key was written (older writers left
out empty or zero fields); it fills exactly the defaults the earlier hand-written reader used.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any, Mapping

from gate.formats.noise_model import SIGMA_FLOOR, Calibration, Dispersion

MAX_UTTERANCES = 100_000  # per measure; the largest workload has 2020
MAX_RUNS = 64
MAX_LINE = 10_000  # characters of a problem or note (one line naming a file and a field)
_COUNTS = {"items": {"min": 0}}


@dataclass(frozen=True)
class SourceRecord:
    path: str | None = field(metadata={"max": 4096})
    commit: str | None
    runs: tuple[str, ...] = field(metadata={"max_items": MAX_RUNS})


@dataclass(frozen=True)
class FingerprintRecord:
    gpu: str | None
    driver: str | None
    packages: Mapping[str, str] | None = field(metadata={"max_items": 10_000})
    workloads: Mapping[str, Mapping[str, str | bool | int | float | None]]  # bool, float: client settings


@dataclass(frozen=True)
class SamplesRecord:
    ids: tuple[str, ...] = field(metadata={"max_items": MAX_UTTERANCES})
    ref_len: tuple[int, ...] = field(metadata={"max_items": MAX_UTTERANCES, **_COUNTS})
    errors: tuple[tuple[int, ...], ...] = field(
        metadata={"max_items": MAX_RUNS, "items": {"max_items": MAX_UTTERANCES, **_COUNTS}})
    invalid: tuple[tuple[int, ...], ...] = field(
        metadata={"max_items": MAX_RUNS, "items": {"max_items": MAX_UTTERANCES, **_COUNTS}})
    texts: Mapping[str, tuple[str, str]] = field(metadata={"max_items": MAX_UTTERANCES})


@dataclass(frozen=True)
class WorkloadRecord:
    runs: tuple[str, ...] = field(metadata={"max_items": MAX_RUNS})
    complete: bool
    problems: tuple[str, ...] = field(metadata={"items": {"max": MAX_LINE}})
    metrics: Mapping[str, tuple[float | None, ...]] = field(metadata={"items": {"max_items": MAX_RUNS}})
    samples: Mapping[str, SamplesRecord]
    sample_notes: tuple[str, ...] = field(metadata={"items": {"max": MAX_LINE}})
    evaluated: tuple[int | None, ...] = field(metadata={"max_items": MAX_RUNS, **_COUNTS})
    run_complete: tuple[bool, ...] = field(metadata={"max_items": MAX_RUNS})
    expected_runs: int = field(metadata={"min": 0})  # 0: not recorded (the runs stored are all there are)


@dataclass(frozen=True)
class SpeedNoiseRecord:
    """gate.formats.noise_model.Calibration, field for field."""

    sigma: float
    df: int = field(metadata={"min": 0})
    groups: int = field(metadata={"min": 0})
    delta_sd: float | None = field(metadata={"min": 0})
    delta_df: int | None = field(metadata={"min": 0})
    within_pairs: int = field(metadata={"min": 0})
    cross_pairs: int = field(metadata={"min": 0})
    cross_diffs: int = field(metadata={"min": 0})
    cross_sum_sq: float = field(metadata={"min": 0})
    cross_sum_h: float = field(metadata={"min": 0})
    set_aside: int = field(metadata={"min": 0})
    nights: int = field(metadata={"min": 0})
    night_df: int = field(metadata={"min": 0})
    night_sum_sq: float = field(metadata={"min": 0})
    night_set_aside: int = field(metadata={"min": 0})

    def value(self) -> Calibration:
        return Calibration(**{f.name: getattr(self, f.name) for f in fields(self)})

    @classmethod
    def of(cls, calibration: Calibration) -> "SpeedNoiseRecord":
        record = cls(**{f.name: getattr(calibration, f.name) for f in fields(cls)})
        # A metric constant across the A/A runs measures σ 0, which the reader refuses: written as the floor
        # (the calibrate command says so), so nothing writes a baseline that compare then refuses.
        return replace(record, sigma=max(record.sigma, SIGMA_FLOOR))


@dataclass(frozen=True)
class AccuracyNoiseRecord:
    """gate.stats.overdispersion.Dispersion, with phi and identical written for reviewers."""

    ss_total: float = field(metadata={"min": 0})
    ss_units: float = field(metadata={"min": 0})
    df: int = field(metadata={"min": 0})
    arms: int = field(metadata={"min": 1})
    phi: float
    identical: bool
    comoving: tuple[str, ...] = field(metadata={"max_items": MAX_UTTERANCES})
    # the co-moving group's own spread (issue 36); 0 in a record written before it was kept
    group_ss: float = field(default=0.0, metadata={"min": 0})
    group_df: int = field(default=0, metadata={"min": 0})

    def value(self) -> Dispersion:
        return Dispersion(ss_total=self.ss_total, ss_units=self.ss_units, df=self.df, arms=self.arms,
                          comoving=self.comoving, group_ss=self.group_ss, group_df=self.group_df)

    @classmethod
    def of(cls, dispersion: Dispersion) -> "AccuracyNoiseRecord":
        return cls(ss_total=dispersion.ss_total, ss_units=dispersion.ss_units, df=dispersion.df, arms=dispersion.arms,
                   phi=dispersion.phi, identical=dispersion.identical, comoving=dispersion.comoving,
                   group_ss=dispersion.group_ss, group_df=dispersion.group_df)


NoiseRecord = SpeedNoiseRecord | AccuracyNoiseRecord


def noise_record(noise: Calibration | Dispersion) -> NoiseRecord:
    return SpeedNoiseRecord.of(noise) if isinstance(noise, Calibration) else AccuracyNoiseRecord.of(noise)


@dataclass(frozen=True)
class BaselineDocument:
    schema_version: int
    kind: str
    suite: str
    created: str
    source: SourceRecord
    missing: tuple[str, ...]
    fingerprint: FingerprintRecord
    workloads: Mapping[str, WorkloadRecord]
    calibration: Mapping[str, Mapping[str, NoiseRecord]]
    calibration_source: Mapping[str, Any] | None


# Keys an older schema_version 1 writer could leave out, with the value the earlier reader gave them.
_WORKLOAD_DEFAULTS: dict[str, Any] = {"samples": {}, "sample_notes": [], "evaluated": [], "run_complete": [],
                                      "expected_runs": 0}
_SPEED_DEFAULTS: dict[str, Any] = {"delta_sd": None, "delta_df": None, "within_pairs": 0, "cross_pairs": 0,
                                   "cross_diffs": 0, "cross_sum_sq": 0.0, "cross_sum_h": 0.0, "set_aside": 0,
                                   "nights": 0, "night_df": 0, "night_sum_sq": 0.0, "night_set_aside": 0}
_ACCURACY_DEFAULTS: dict[str, Any] = {"comoving": [], "group_ss": 0.0, "group_df": 0}
_SAMPLES_DEFAULTS: dict[str, Any] = {"invalid": [], "texts": {}}
_TOP_DEFAULTS: dict[str, Any] = {"missing": [], "fingerprint": {}, "calibration_source": None}
_FINGERPRINT_DEFAULTS: dict[str, Any] = {"gpu": None, "driver": None, "packages": None, "workloads": {}}


def _upgrade_workload(w: dict) -> dict:
    out = {**_WORKLOAD_DEFAULTS, **w}
    if isinstance(out["samples"], dict):
        out["samples"] = {m: ({**_SAMPLES_DEFAULTS, **s} if isinstance(s, dict) else s) for m, s in out["samples"].items()}
    return out


def _upgrade_noise(entry: Any) -> Any:
    if isinstance(entry, dict) and "sigma" in entry:
        return {**_SPEED_DEFAULTS, **entry}
    if isinstance(entry, dict) and "ss_total" in entry:
        return {**_ACCURACY_DEFAULTS, **entry}
    return entry


def upgrade(data: dict) -> dict:
    """A schema_version 1 document with the keys older writers left out filled in (a copy; nothing else
    changes, and a value present of the wrong type is left for the strict reader to refuse)."""
    out = {**_TOP_DEFAULTS, **data}
    if isinstance(out["fingerprint"], dict):
        out["fingerprint"] = {**_FINGERPRINT_DEFAULTS, **out["fingerprint"]}
    if isinstance(out.get("source"), dict):
        out["source"] = {"path": None, "commit": None, "runs": [], **out["source"]}
    if isinstance(out.get("workloads"), dict):
        out["workloads"] = {k: (_upgrade_workload(w) if isinstance(w, dict) else w) for k, w in out["workloads"].items()}
    if isinstance(out.get("calibration"), dict):
        out["calibration"] = {
            k: ({m: _upgrade_noise(e) for m, e in ms.items()} if isinstance(ms, dict) else ms)
            for k, ms in out["calibration"].items()}
    return out
