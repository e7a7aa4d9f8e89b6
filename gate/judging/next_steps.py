"""The one step that would make an undecided row decisive (issue 39): a row that can WARN at most, or is blind,
says which command a maintainer runs next, and the report keeps its code (Row.next_step)."""
from __future__ import annotations

from gate.formats.verdict import Verdict
from gate.judging.draft import Draft

MORE_RUNS = "more_runs"
CALIBRATE = "calibrate"
AB_RUN = "ab_run"

TEXT = {
    CALIBRATE: "measure the baseline's commit twice more (an A/A pair), store the noise with `gate baseline calibrate "
               "A B --baseline FILE` and compare with `--calibration FILE`",
    AB_RUN: "run `gate run --ab BASE_CHECKOUT CANDIDATE_CHECKOUT`: one job, interleaved, and runs 4-6 are added "
            "where the first look is undecided",
}


def text(step: str, runs: int) -> str:
    """The step in words. More runs are numbered after those the sides have (`runs`, the larger side's): the
    runbook's 3 make them runs 4-6, a pooled 6+6 of `gate run --ab` runs 7-9."""
    if step != MORE_RUNS:
        return TEXT[step]
    first = max(runs, 3) + 1
    numbers = f"{first}, {first + 1} and {first + 2}"
    return (f"score runs {numbers} on both sides with the runbook's own commands (its Step 4 with RUN={numbers}, "
            "then the model blocks), then compare again")


def runs_of(row: Draft) -> int:
    """The scored runs of the row's larger side: what further runs are numbered after."""
    return max(len(row.baseline.values), len(row.candidate.values))


def for_accuracy(cross_job: bool) -> str:
    """An accuracy row without churn evidence: more runs of each side give it (3 a side at least), or a calibration
    of the stored baseline when the sides ran in different jobs."""
    return CALIBRATE if cross_job else MORE_RUNS


def for_speed(cross_job: bool) -> str:
    """A speed row across jobs WARNs at most whatever its calibration (gate.stats.speed.ACROSS_JOBS): only one job
    decides. In one job, more runs give σ more degrees of freedom and the test more power."""
    return AB_RUN if cross_job else MORE_RUNS


def assign(row: Draft, cross_job: bool) -> None:
    """Name the step on a gated row that did not FAIL and could not decide: it can WARN at most, or is blind."""
    if row.verdict in (Verdict.FAIL, Verdict.INCOMPLETE, Verdict.NOT_COMPARABLE) or row.next_step is not None:
        return
    if row.metric.kind == "speed":
        if not row.metric.gated or not (row.fail_blockers or row.blind or row.family is None):
            return
        row.next_step = for_speed(cross_job)
    elif row.blind:
        row.next_step = for_accuracy(cross_job)
    else:
        return
    row.notes.append(f"to decide: {text(row.next_step, runs_of(row))}")
