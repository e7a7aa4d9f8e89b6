"""One rule for a copied run (issue 38): two scored runs whose measured values are all the same are one
measurement, not two, whether the copy is a hard link, a `cp -r` or a re-serialised file.

Every command applies it through this module: summarize and `side_from_tree` (compare, baseline create and
calibrate) within a tree, compare across its two trees, `baseline calibrate` across its A/A trees and the
trusted job across the uploaded sides. A run's content hash covers every workload's metric values in that
run (timings measured to the last bit never repeat across real runs); a run that measured nothing (it holds
only other models' results, or every request of it failed and only counts remain) has no hash and is never
compared: two runs of all-failed requests are two failures, said as such by coverage (exit 3), not a copy.
"""
from __future__ import annotations

import hashlib
from typing import Iterable, Mapping, Sequence

from gate.formats.errors import InputError
from gate.formats.result_types import ResultTree
from gate.reading.side import Side


def _digest(values: Iterable[tuple[str, str, float | None]]) -> str | None:
    digest = hashlib.sha256()
    measured = False
    for workload_id, name, value in sorted(values, key=lambda v: (v[0], v[1])):
        digest.update(f"{workload_id}:{name}={value!r};".encode())
        measured = measured or _is_measurement(value)
    return digest.hexdigest() if measured else None


def _is_measurement(value: float | None) -> bool:
    """A value that could not repeat by chance: not missing, and not a whole number (the counts a run of failed
    requests still writes, failed_requests and valid samples, are whole; a timing or rate is not)."""
    return value is not None and not float(value).is_integer()


def side_hashes(side: Side) -> dict[str, str]:
    """run -> content hash of the runs of `side` that measured anything."""
    per_run: dict[str, list] = {}
    for workload_id, w in side.workloads.items():
        for i, run in enumerate(w.runs):
            per_run.setdefault(run, []).extend(
                (workload_id, name, values[i] if i < len(values) else None) for name, values in w.values.items())
    return {run: d for run, values in per_run.items() if (d := _digest(values)) is not None}


def tree_hashes(tree: ResultTree) -> dict[str, str]:
    """The same hash as side_hashes, from a tree as read (without its per-sample files)."""
    per_run: dict[str, list] = {}
    for workload_id, runs in tree.workloads.items():
        for r in runs:
            per_run.setdefault(r.run, []).extend((workload_id, name, value) for name, value in r.metrics.items())
    return {run: d for run, values in per_run.items() if (d := _digest(values)) is not None}


def copies(labelled: Sequence[tuple[str, Mapping[str, str]]]) -> list[tuple[str, str, str]]:
    """(copy, original, hash) for every run whose hash an earlier run has; labels are "<where> <run>"."""
    seen: dict[str, str] = {}
    found = []
    for where, hashes in labelled:
        for run, digest in sorted(hashes.items()):
            label = f"{where} {run}".strip()
            if digest in seen:
                found.append((label, seen[digest], digest))
            else:
                seen[digest] = label
    return found


def refuse_copies(labelled: Sequence[tuple[str, Mapping[str, str]]], *, path: object) -> None:
    """One InputError line (exit 2) naming the first copied run and the run it copies."""
    for copy, original, digest in copies(labelled):
        raise InputError(f"{copy} measures exactly what {original} measures (same values, content hash "
                         f"{digest[:12]}): a copied run is not a measurement; remove it or measure it again", path=path)
