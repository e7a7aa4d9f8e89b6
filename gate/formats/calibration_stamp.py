"""Where a measurement was made: GPU model, driver and package set, as one small stamp. Its one owner.

`gate run` writes <tree>/stamp.json after every complete run. The calibration workflow keeps the
stamp of the A/A pair it measured beside the baseline (<model>.calibration-stamp.json, a copy), and
`gate run --ab --calibration FILE` and `gate compare` (gate.judging.freshness) compare it with where the
candidate ran: a calibration measured on another GPU, driver or package set is stale, reported, and
not used for the look decisions or the outlier rule. The run log records both stamps with this type.

One writer (`write_stamp`: typedjson, atomically) and one reader (`read_stamp`: gate.formats.inputs, links
refused, then typedjson: every key present, no other key, each of its type and bound).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from gate.formats import atomic, inputs, typedjson
from gate.formats.errors import InputError

STAMP_NAME = "stamp.json"
CALIBRATION_STAMP_SUFFIX = ".calibration-stamp.json"


@dataclass(frozen=True)
class Stamp:
    gpu: str | None = field(metadata={"max": 200})  # GPU model name (NVML), None without a GPU
    driver: str | None = field(metadata={"max": 80})
    # of the sorted `pip freeze` lines of the measured checkout's venv
    packages_sha256: str | None = field(metadata={"pattern": "[0-9a-f]{64}"})

    def to_json(self) -> dict:
        return typedjson.to_json(self)


def packages_digest(freeze_text: str | None) -> str | None:
    if freeze_text is None:
        return None
    lines = sorted(line.strip() for line in freeze_text.splitlines() if line.strip())
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def calibration_stamp_path(baseline: Path) -> Path:
    """The stamp kept beside a baseline file: h100/qwen3.json -> h100/qwen3.calibration-stamp.json."""
    return baseline.with_name(baseline.stem + CALIBRATION_STAMP_SUFFIX)


def read_stamp(path: Path) -> Stamp:
    """A stamp file, read strictly (gate.formats.inputs: regular file, no link, size cap, strict JSON; then the typed
    model); anything else is one InputError line naming the file (exit 2)."""
    data = inputs.load_json(path, inputs.STAMP, follow_links=False)
    try:
        return typedjson.from_json(Stamp, data)
    except typedjson.SchemaMismatch as exc:
        raise InputError(f"{exc}; expected a calibration stamp {{gpu, driver, packages_sha256}} as `gate run` "
                         "writes it (stamp.json)", path=path) from None


def write_stamp(path: Path, stamp: Stamp) -> None:
    atomic.write_text(path, json.dumps(stamp.to_json(), indent=1) + "\n", what="stamp")


def stale_reasons(recorded: Stamp, current: Stamp) -> list[str]:
    """Why a calibration stamped `recorded` does not describe a measurement made at `current`."""
    reasons = []
    if recorded.gpu != current.gpu:
        reasons.append(f"GPU {recorded.gpu or 'none'} then, {current.gpu or 'none'} now")
    if recorded.driver != current.driver:
        reasons.append(f"driver {recorded.driver or 'none'} then, {current.driver or 'none'} now")
    if recorded.packages_sha256 and current.packages_sha256 and recorded.packages_sha256 != current.packages_sha256:
        reasons.append("a different package set (pip freeze) now")
    return reasons
