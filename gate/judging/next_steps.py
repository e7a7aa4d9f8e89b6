"""The one step that would make an undecided row decisive (issue 39): a row that can WARN at most, or is blind,
says which command a maintainer runs next; the report keeps its code (Row.next_step), gate.render.reasons its words."""
from __future__ import annotations

from gate.formats.verdict import Verdict
from gate.judging.draft import Draft

MORE_RUNS = "more_runs"
CALIBRATE = "calibrate"
AB_RUN = "ab_run"
MORE_SESSIONS = "more_sessions"  # a duet's unit of independence is the session, not the run (gate.judging.duet)

def for_accuracy(cross_job: bool) -> str:
    """An accuracy row without churn evidence: more runs of each side give it (3 a side at least), or a calibration
    of the stored baseline when the sides ran in different jobs."""
    return CALIBRATE if cross_job else MORE_RUNS


def for_speed(cross_job: bool, duet: bool = False) -> str:
    """A speed row across jobs WARNs at most whatever its calibration (gate.judging.speed_rows.speed_blockers): only one job
    decides. In one job, more runs give σ more degrees of freedom and the test more power; in a duet, more sessions
    (its df is sessions − 1)."""
    if cross_job:
        return AB_RUN
    return MORE_SESSIONS if duet else MORE_RUNS


def assign(row: Draft, cross_job: bool, duet: bool = False) -> None:
    """Name the step on a gated row that did not FAIL and could not decide: it can WARN at most, or is blind."""
    if row.verdict in (Verdict.FAIL, Verdict.INCOMPLETE, Verdict.NOT_COMPARABLE) or row.next_step is not None:
        return
    if row.metric.kind == "speed":
        if not row.metric.gated or not (row.blockers or row.blind or row.family is None):
            return
        row.next_step = for_speed(cross_job, duet)
    elif row.blind:
        row.next_step = for_accuracy(cross_job)
    else:
        return
