"""Where a measurement was made: GPU model, driver and package set, as one small stamp.

`gate run` writes <tree>/stamp.json after every complete run. The calibration workflow keeps the
stamp of the A/A pair it measured beside the baseline (<model>.calibration-stamp.json), and
`gate run --ab --calibration FILE` compares it with where it runs now: a calibration measured on
another GPU, driver or package set is stale, reported, and not used for the look decisions or the
outlier rule.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from gate import inputs, schema
from gate.errors import InputError
from gate.schema import OBJECT, STRING, Check, optional

STAMP_NAME = "stamp.json"
CALIBRATION_STAMP_SUFFIX = ".calibration-stamp.json"


@dataclass(frozen=True)
class Stamp:
    gpu: str | None  # GPU model name (NVML), None without a GPU
    driver: str | None
    packages_sha256: str | None  # of the sorted `pip freeze` lines of the measured checkout's venv

    def to_json(self) -> dict:
        return asdict(self)


def packages_digest(freeze_text: str | None) -> str | None:
    if freeze_text is None:
        return None
    lines = sorted(line.strip() for line in freeze_text.splitlines() if line.strip())
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def calibration_stamp_path(baseline: Path) -> Path:
    """The stamp kept beside a baseline file: h100/qwen3.json -> h100/qwen3.calibration-stamp.json."""
    return baseline.with_name(baseline.stem + CALIBRATION_STAMP_SUFFIX)


def read_stamp(path: Path) -> Stamp:
    """A stamp file, read strictly (gate.inputs: regular file, size cap, strict JSON); anything else is one
    InputError line naming the file (exit 2)."""
    data = inputs.load_json(path, inputs.STAMP)
    try:
        OBJECT(data, "top level")
        return Stamp(gpu=schema.get(data, "gpu", optional(STRING)), driver=schema.get(data, "driver", optional(STRING)),
                     packages_sha256=schema.get(data, "packages_sha256", optional(_SHA256)))
    except schema.SchemaError as exc:
        raise InputError(f"{exc}; expected a calibration stamp {{gpu, driver, packages_sha256}} as `gate run` "
                         "writes it (stamp.json)", path=path) from None


def write_stamp(path: Path, stamp: Stamp) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(stamp.to_json(), indent=1) + "\n")
    tmp.replace(path)


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


_SHA256 = Check("64 lowercase hex digits (sha256)", lambda v: isinstance(v, str) and bool(re.fullmatch("[0-9a-f]{64}", v)))
