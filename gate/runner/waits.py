"""Say what the gate waits for: a wait longer than a few seconds prints a line now and then.

Every wait loop of the runner calls `Ticker.tick()` once per poll; the ticker prints
"waiting for <what> (<elapsed> of at most <limit>)" after `first_s`, then every `every_s`.
"""
from __future__ import annotations

import time
from typing import Callable

Say = Callable[[str], None]


def quiet(line: str) -> None:
    """A `say` that prints nothing (library use, tests)."""


class Ticker:
    def __init__(self, say: Say, what: str, *, limit_s: float | None = None, first_s: float = 5.0,
                 every_s: float = 30.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.say = say
        self.what = what
        self.limit_s = limit_s
        self.clock = clock
        self.start = clock()
        self.next_at = first_s
        self.every_s = every_s
        self.detail: Callable[[], str] | None = None  # extra words, e.g. a client's progress

    def tick(self) -> None:
        elapsed = self.clock() - self.start
        if elapsed < self.next_at:
            return
        self.next_at = elapsed + self.every_s
        limit = f" of at most {self.limit_s:g} s" if self.limit_s is not None else ""
        extra = self.detail() if self.detail else ""
        self.say(f"waiting for {self.what} ({elapsed:.0f} s{limit}){': ' + extra if extra else ''}")
