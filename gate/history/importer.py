"""Turn result trees (and, optionally, the verdict report of the same night) into history records.

Trees are read with the gate's own reader (gate.reading.results.read_tree), so anything `gate compare` can
read can be imported, in either layout. The night's time is the start `gate run` recorded in the
tree's gate-run.json (what was measured decides the night, so a rerun of the import with another
`--time` cannot make it a second night), else the time the caller gives, else the newest modification
time of its runs' commit.txt (written at the start of each run by runbook Step 4). Times are UTC.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping

from gate.formats import runlog
from gate.formats.config import Suite
from gate.formats.errors import InputError
from gate.formats.result_types import ResultTree
from gate.history.records import KINDS, Record, utc_time
from gate.reading.results import read_tree
from gate.reading.tree_fingerprint import fingerprint_of_tree

if TYPE_CHECKING:
    from gate.formats.report import Report

_SEVERITY = ("incomplete", "not_comparable", "fail", "warn", "pass")  # most severe first (gate.formats.verdict precedence)


def tree_time(tree: ResultTree) -> str:
    """ISO-8601 UTC time the tree was made: the start `gate run` recorded in its gate-run.json (an artifact
    download does not keep file times, and the two arms of an A/A pair must not share one), else its
    newest commit.txt, else the tree directory's own mtime."""
    started = _run_log_start(Path(tree.root))
    if started is not None:
        return started
    stamps = [Path(r.path, "commit.txt").stat().st_mtime for r in tree.runs if Path(r.path, "commit.txt").is_file()]
    stamp = max(stamps) if stamps else Path(tree.root).stat().st_mtime
    return _dt.datetime.fromtimestamp(stamp, _dt.timezone.utc).replace(microsecond=0).isoformat()


def _run_log_start(root: Path) -> str | None:
    """The start gate.formats.runlog read from the tree's log (it refuses a log that is not the runner's, naive
    times included), in UTC; None for a tree without one."""
    log = runlog.read(root)
    return None if log is None else log.started_utc.replace(microsecond=0).isoformat()


def env_digest(tree: ResultTree, suite: Suite) -> str:
    """Short digest of the tree's fingerprint (GPU, driver, packages, datasets, models)."""
    facts = json.dumps(fingerprint_of_tree(tree, suite).to_dict(), sort_keys=True, default=str)
    return hashlib.sha256(facts.encode()).hexdigest()[:16]


def workload_verdicts(report: Report) -> dict[str, str]:
    """workload -> its most severe row verdict, from a gate report (the caller reads it with the one strict
    report reader, gate.publish.untrusted.load_untrusted_report: a bad file is one line naming it, exit 2)."""
    verdicts: dict[str, str] = {}
    for row in report.rows:
        known = verdicts.get(row.workload)
        if known is None or _SEVERITY.index(row.verdict.value) < _SEVERITY.index(known):
            verdicts[row.workload] = row.verdict.value
    return verdicts


def records_from_tree(path: str | Path, suite: Suite, *, runner_class: str, kind: str = "nightly",
                      time: str | None = None, verdicts: Mapping[str, str] | None = None,
                      models: tuple[str, ...] | None = None,
                      warn: Callable[[str], None] | None = None) -> list[Record]:
    """One record per workload found in the tree (missing workloads have nothing to record). A workload stored
    as incomplete is passed to `warn` with the file and field that made it so (as every other command names it)."""
    if kind not in KINDS:
        raise InputError(f"kind {kind!r}: expected one of {', '.join(KINDS)}")
    tree = read_tree(path, suite, models=models)
    when = _run_log_start(Path(tree.root)) or (utc_time(time) if time else None) or tree_time(tree)
    commits = sorted({r.commit for r in tree.runs if r.commit})
    commit = commits[0] if len(commits) == 1 else (" | ".join(commits) or None)
    digest = env_digest(tree, suite)
    records = []
    for workload_id, runs in tree.workloads.items():
        workload = suite.workload(workload_id)
        values = {m.name: tuple(r.metrics.get(m.name) for r in runs) for m in workload.metrics
                  if m.kind in ("speed", "accuracy")}
        complete = tree.complete(workload_id)
        if not complete and warn is not None:
            problems = [p.line for r in runs for p in r.coverage.problems] or [
                f"{len(runs)} of {len(tree.runs)} planned runs found"]
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            warn(f"{workload_id}: stored as incomplete: {problems[0]}{more}")
        records.append(Record(time=when, kind=kind, commit=commit, workload=workload_id,
                              runs=tuple(r.run for r in runs), values=values,
                              verdict=(verdicts or {}).get(workload_id), env=digest,
                              complete=complete, runner_class=runner_class))
    return records
