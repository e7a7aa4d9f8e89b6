"""Is an A/A calibration from where the candidate was measured? (issue 11: calibrations expire.)

The calibration workflow keeps the stamp of the A/A pair it measured beside the calibration file
(<model>.calibration-stamp.json: GPU name, driver, digest of `pip freeze`; gate.formats.calibration_stamp). The
"current" stamp is built from the candidate tree's own records, the way `gate run` builds it: each
scored run's env.json (GPU name and driver) and freeze.txt (digest). A difference makes the
calibration stale (the report says why; speed rows compared across jobs name it). A missing stamp,
or a candidate without env.json, is unknown, not stale. A malformed stamp is an InputError (exit 2).

`calibration_for_plan` answers a different question for the trusted report job: which calibration
did `gate run --ab` use for its look decisions? The runner checks the stamp once, against the base
side's first run (the warm run), and drops a stale calibration; the recomputed plan must do the same.

`left_out`: where a comparison leaves a stale calibration out (`compare`, and the power benchmark's simulator).
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from gate.formats import inputs
from gate.formats.calibration_stamp import Stamp, calibration_stamp_path, packages_digest, read_stamp, stale_reasons
from gate.formats.config import Suite
from gate.formats.report import MAX_ID, MAX_TEXT, CalibrationCheck, Freshness, clip
from gate.reading.results import planned_runs, read_env


def check_calibration(calibration_file: Path, candidate: Path, suite: Suite,
                      models: Sequence[str]) -> CalibrationCheck:
    """The stamp beside `calibration_file` against the candidate tree's runs of `models`."""
    calibration_file, candidate = Path(calibration_file), Path(candidate)
    source, chosen = clip(calibration_file.name, MAX_ID), tuple(models)
    stamp_path = calibration_stamp_path(calibration_file)
    if not inputs.is_present(stamp_path):
        return CalibrationCheck(source, chosen, Freshness.UNKNOWN,
                                (f"no {clip(stamp_path.name, MAX_ID)} beside it: where it was measured is unknown",))
    recorded = read_stamp(stamp_path)
    if not candidate.is_dir():
        return CalibrationCheck(source, chosen, Freshness.UNKNOWN, ("the candidate is not a result tree: no env.json to compare",))
    current = tree_stamp(candidate, planned_runs(candidate, suite, chosen or None))
    if current is None:
        return CalibrationCheck(source, chosen, Freshness.UNKNOWN, ("the candidate's runs have no env.json: where they ran is unknown",))
    reasons = stale_reasons(recorded, current)
    return CalibrationCheck(source, chosen, Freshness.STALE if reasons else Freshness.FRESH, tuple(clip(r, MAX_TEXT) for r in reasons))


def calibration_for_plan(calibration_file: Path | None, base: Path, suite: Suite) -> Path | None:
    """The calibration `gate run --ab` used for its look decisions: the file, unless its stamp is stale
    against the base tree's first run (the warm run, where the runner checks it); None then."""
    if calibration_file is None:
        return None
    stamp_path = calibration_stamp_path(Path(calibration_file))
    current = run_stamp(Path(base) / f"run{suite.warm_run}", Path(base))
    if not inputs.is_present(stamp_path) or current is None:
        return calibration_file  # the runner uses a calibration whose origin is unknown
    return None if stale_reasons(read_stamp(stamp_path), current) else calibration_file


def run_stamp(run_dir: Path, root: Path) -> Stamp | None:
    """The stamp `gate run` writes for one run, from its env.json and freeze.txt; None without an env.json
    (a run not made by `gate run`: where it ran is unknown)."""
    env_path = run_dir / "env.json"
    if not inputs.is_present(env_path):
        return None
    env, problem = read_env(env_path, root)
    gpu: str | None
    driver: str | None
    if problem or env is None:  # a broken record never matches a stamp
        gpu = driver = f"unreadable env.json in {run_dir.name}"
    else:
        facts = env.get("gpu")
        facts = facts if isinstance(facts, dict) else {}
        gpu, driver = facts.get("name"), facts.get("driver_version")
    freeze = None
    if inputs.is_present(run_dir / "freeze.txt"):
        try:
            freeze = inputs.read_text(run_dir / "freeze.txt", inputs.FREEZE, root=root)
        except inputs.Unreadable:
            pass  # the reader has already made that run incomplete; its package set is unknown
    return Stamp(gpu=gpu, driver=driver, packages_sha256=packages_digest(freeze))


def tree_stamp(tree: Path, runs: Iterable[str]) -> Stamp | None:
    """One stamp for the runs of a tree (facts that differ between runs join as 'a | b', which never matches)."""
    stamps = [s for s in (run_stamp(tree / run, tree) for run in runs if (tree / run).is_dir()) if s is not None]
    if not stamps:
        return None
    return Stamp(gpu=_join(s.gpu for s in stamps), driver=_join(s.driver for s in stamps),
                 packages_sha256=_join(s.packages_sha256 for s in stamps))


def _join(values: Iterable[str | None]) -> str | None:
    distinct = list(dict.fromkeys(v for v in values if v is not None))
    return " | ".join(distinct) if distinct else None


def left_out(stale: np.ndarray | bool, cross_job: bool) -> np.ndarray:
    """Where a calibration known stale is not used at all (B comparisons at once; compare with B = 1): in one job, as
    `gate run` drops it for its looks, the rows judge by what the job itself measured. Across jobs it is kept and
    named on every speed row."""
    return np.asarray(np.asarray(stale, dtype=bool) & (not cross_job))
