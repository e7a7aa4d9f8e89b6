"""Concise progress of a gate run on stderr: what runs now, elapsed time, a rough ETA from earlier server cycles.

An A/B run with two looks may extend after the first look; until that is decided the ETA gives both
figures ("ETA ~3m47s, ~5m51s if the second look extends"), so the longer one is never a surprise.
"""
from __future__ import annotations

import sys
import time
from typing import Callable, TextIO


class Progress:
    def __init__(self, total_cycles: int, stream: TextIO | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.clock = clock
        self.start = clock()
        self.total = total_cycles
        self.done = 0
        self.durations: dict[str, list[float]] = {}  # model -> seconds per server cycle
        self.remaining: list[str] = []  # models of the cycles still to run
        self.possible: list[str] = []  # models of the cycles a second look may add (until it is decided)
        self.prior: dict[str, float] = {}  # model -> seconds per cycle in the previous gate run (gate-run.json)

    def say(self, message: str) -> None:
        elapsed = self.clock() - self.start
        eta = self._eta(self.remaining)
        tail = ""
        if eta is not None:
            tail = f", ETA ~{clock_text(eta)}"
            if self.possible:
                longest = self._eta(self.remaining + self.possible)
                tail += f", ~{clock_text(longest or eta)} if the second look extends"
        try:
            print(f"gate run [{self.done}/{self.total} cycles, {clock_text(elapsed)} elapsed{tail}] {message}",
                  file=self.stream, flush=True)
        except OSError:  # a terminal that hung up (SIGHUP): the stop sequence must go on without it
            pass

    def cycle_done(self, model: str, seconds: float) -> None:
        self.done += 1
        self.durations.setdefault(model, []).append(seconds)
        if model in self.remaining:
            self.remaining.remove(model)

    def _eta(self, remaining: list[str]) -> float | None:
        """Seconds left: each remaining cycle at its model's mean so far, else the previous run's, else the
        mean cycle so far. None until there is something to go on."""
        every = [d for ds in self.durations.values() for d in ds]
        if not remaining or not (every or self.prior):
            return None
        known = every or list(self.prior.values())
        overall = sum(known) / len(known)

        def guess(model: str) -> float:
            if model in self.durations:
                return sum(self.durations[model]) / len(self.durations[model])
            return self.prior.get(model, overall)
        return sum(guess(m) for m in remaining)


def clock_text(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}h{seconds // 60 % 60:02d}m" if seconds >= 3600 else f"{seconds // 60}m{seconds % 60:02d}s"
