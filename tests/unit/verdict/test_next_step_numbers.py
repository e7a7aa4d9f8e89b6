"""The step that would decide a row numbers further runs after those the sides have (issue 39)."""
from __future__ import annotations

from gate.formats.report import NextStep
from gate.render.reasons import NEXT_STEP, next_step


def test_more_runs_follow_the_runs_the_sides_have():
    assert "score runs 4, 5 and 6 on both sides" in next_step(NextStep.MORE_RUNS, 3)
    assert "RUN=4, 5 and 6" in next_step(NextStep.MORE_RUNS, 2)
    after_six = next_step(NextStep.MORE_RUNS, 6)
    assert "score runs 7, 8 and 9 on both sides" in after_six and "RUN=7, 8 and 9" in after_six


def test_other_steps_do_not_depend_on_the_runs():
    for step in (NextStep.CALIBRATE, NextStep.AB_RUN):
        assert next_step(step, 3) == next_step(step, 6) == NEXT_STEP[step]
