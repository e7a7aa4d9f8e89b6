"""A run folder copied as a new measurement, for tests that need one more run of a tree (a second look, a
planned run4): gate.reading.copies refuses a plain copy, so the copy's speed figures are nudged by one part
in a million, as a real re-measure would differ."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

_NUDGE = 1 + 1e-6


def copy_run(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    for path in sorted(Path(dst).rglob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if _nudge(data):
            path.write_text(json.dumps(data, indent=1), encoding="utf-8")
    return Path(dst)


def _nudge(data) -> bool:
    if not isinstance(data, dict):
        return False
    results = data.get("results")
    if isinstance(results, list) and results and isinstance(results[0], dict):  # SeedTTS
        stat = results[0].get("throughput_samples_per_s")
        if isinstance(stat, dict) and isinstance(stat.get("mean"), float):
            for key in ("mean", "min", "max"):
                if isinstance(stat.get(key), float):
                    stat[key] *= _NUDGE
            return True
    speed = data.get("speed")
    if isinstance(speed, dict) and isinstance(speed.get("throughput_qps"), float):  # MOSS speed file
        speed["throughput_qps"] *= _NUDGE
        return True
    return False
