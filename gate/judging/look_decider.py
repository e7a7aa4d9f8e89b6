"""The real look decisions of `gate run --ab` (gate.runner.looks.Decider): the one judge, asked on the two trees
as they are on disk. `gate run` hands `tree_decider` to the runner, which never imports the judge itself."""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

from gate.formats.config import Suite
from gate.formats.errors import GateError

if TYPE_CHECKING:  # the judge and the statistics load when a look is decided: a one-look run never needs them
    from gate.judging.look_rule import LookDecision


class _JudgeDecider:
    """Look decisions by the one judge (gate.judging.judge), on the two trees as they are on disk when asked (at the
    first look they hold run1..run3; at the second, run1..run6)."""

    def __init__(self, suite: Suite, base: Path, candidate: Path, calibration: Path | None) -> None:
        from gate.judging import judge

        self._judge = judge
        self._request = judge.Request(base=base, candidate=candidate, suite=suite, calibration=calibration)

    def first(self, model: str) -> LookDecision:
        from gate.stats.looks import Look

        return self._judge.decide_look(self._judge_request(model), model, Look.FIRST)

    def pooled(self, model: str) -> LookDecision:
        from gate.stats.looks import Look

        return self._judge.decide_look(self._judge_request(model), model, Look.POOLED)

    def _judge_request(self, model: str):
        return dataclasses.replace(self._request, models=(model,))


def decisions_missing() -> str | None:
    """Why the real decision functions cannot be used here (checked before any run), or None."""
    # The judge and what it imports only when it scores (jiwer): on the H200 a missing jiwer surfaced only
    # after the first look's GPU cycles, as exit 70.
    try:
        import gate.judging.judge  # noqa: F401
        import gate.reading.samples  # noqa: F401
    except ImportError as exc:
        return f"two looks need the gate's judge, which needs {exc.name or exc}"
    return None


def tree_decider(suite: Suite, base: Path, candidate: Path, calibration: Path | None) -> _JudgeDecider:
    """The real decider: the one judge. Imported lazily, so that a one-look `gate run` never needs the
    statistics libraries."""
    if (missing := decisions_missing()) is not None:
        raise GateError(f"{missing}; run with --one-look")
    return _JudgeDecider(suite, base, candidate, calibration)
