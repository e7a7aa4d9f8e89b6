"""What `gate run` is asked to do (RunRequest), what it did (RunOutcome) and how a run fails (RunFailed):
the types the runner's parts share."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from gate.formats.config import Suite
from gate.formats.errors import GateError
from gate.runner import clients
from gate.runner.looks import LookPlan
from gate.runner.plan import Arm, RunStep, Setup, plan_run, run_order

PORT_WAIT_S = 30.0  # a port held by a live listener: wait this long (it may be shutting down), then fail

@dataclass(frozen=True)
class RunRequest:
    suite: Suite
    sides: tuple[Arm, ...]  # one, or two for A/B (base first)
    setup: Setup
    runs: tuple[str, ...]
    models: tuple[str, ...]
    gpu_index: int | None = None  # None: the single visible GPU
    resume: bool = False
    lock_dir: Path = Path("/tmp")
    lock_wait_s: float = 0.0
    fingerprints: bool = True
    port_wait_s: float = PORT_WAIT_S
    venv_check: bool = True
    argv: tuple[str, ...] = ()
    progress_every_s: float = clients.PROGRESS_EVERY_S
    looks: LookPlan | None = None  # A/B: outlier re-measure and, with a decider, a second look

    def steps(self) -> tuple[RunStep, ...]:
        return tuple(plan_run(self.suite, self.setup, side, run, self.models)
                     for side, run in run_order(self.runs, self.sides, self.suite.warm_run))

    def extension_steps(self, models: tuple[str, ...]) -> tuple[RunStep, ...]:
        """The second look's runs for `models`, continuing the interleave of the first look."""
        if self.looks is None or not models:
            return ()
        extension = self.looks.extension
        order = run_order((*self.runs, *extension), self.sides, self.suite.warm_run)
        return tuple(plan_run(self.suite, self.setup, side, run, models) for side, run in order if run in extension)


class RunFailed(GateError):
    """A run could not be completed (server died or hung, client failed, coverage incomplete)."""

    exit_code = 3


@dataclass
class RunOutcome:
    completed: list[str] = field(default_factory=list)  # "main/run1", ...
    skipped: list[str] = field(default_factory=list)
    decisions: dict[str, str] = field(default_factory=dict)  # model -> pass/fail (two looks), "extend" never final
    remeasured: list[str] = field(default_factory=list)  # "base/run3 qwen3"
