"""Refresh a baseline's A/A calibration from the history: run-to-run σ of each speed metric since its last change point.

The within-night SD of ln(value) over a night's scored runs is the quantity `gate baseline calibrate`
estimates from A/A pairs (same commit, same protocol), pooled over many more nights. Only the history
(written by trusted jobs) feeds it; the baseline file keeps everything else and records the source.
"""
from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path
from typing import Sequence

from gate.baseline import read_baseline
from gate.config import Suite
from gate.errors import InputError
from gate.history.analysis import Noise
from gate.stats.performance import Calibration


def calibration_from_noise(noises: Sequence[Noise]) -> dict[str, dict[str, Calibration]]:
    out: dict[str, dict[str, Calibration]] = {}
    for n in noises:
        if n.log and n.run_sigma is not None and n.run_df > 0:
            out.setdefault(n.workload, {})[n.metric] = Calibration(sigma=n.run_sigma, df=n.run_df, groups=n.nights)
    return out


def write_calibration(baseline_path: Path, noises: Sequence[Noise], suite: Suite, *, history: str) -> dict:
    """Replace the calibration of the baseline's workloads with the history's; returns what was written."""
    side = read_baseline(baseline_path, suite)  # validates the file before it is rewritten
    calibration = {w: m for w, m in calibration_from_noise(noises).items() if w in side.workloads}
    if not calibration:
        raise InputError("the history has no run-to-run values for this baseline's workloads", path=baseline_path)
    data = json.loads(Path(baseline_path).read_text(encoding="utf-8"))
    data["calibration"] = {w: {m: c.to_dict() for m, c in metrics.items()} for w, metrics in calibration.items()}
    data["calibration_source"] = {
        "history": history,
        "nights": {w: max(c.groups for c in metrics.values()) for w, metrics in calibration.items()},
        "created": _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat(),
    }
    try:
        Path(baseline_path).write_text(json.dumps(data, separators=(",", ":"), ensure_ascii=False) + "\n",
                                       encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write the baseline ({exc.strerror})", path=baseline_path) from None
    return data["calibration"]
