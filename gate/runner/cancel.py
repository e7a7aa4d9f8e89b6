"""SIGINT/SIGTERM/SIGHUP/SIGQUIT for `gate run`: the first signal cancels, but never in the middle of a stop; a second one hurries.

The first signal raises Cancelled in the main thread, unless a stop sequence is running (inside
`shielded()`): then the stop finishes (TERM -> grace -> KILL -> wait for the group) and Cancelled
is raised when it is done. A second signal never raises; it sets `hurry`, which a stop in progress
polls to skip the rest of its grace and KILL the group at once. SIGHUP (a dropped SSH session, a closed
tmux pane) and SIGQUIT (Ctrl-\\) are handled like SIGTERM: their default action would end the gate at once
and leave the server, its workers and the clients running in their own process groups.
"""
from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Callable, Iterator

# The signals that cancel a gate run; each exits 128 + its number (README "Exit codes").
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


class Cancelled(BaseException):
    """SIGINT/SIGTERM/SIGHUP/SIGQUIT. A BaseException so that no `except Exception` swallows it on the way out."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


class Cancellation:
    """The signal state of one gate run. Only the main thread touches it (signal handlers run there)."""

    def __init__(self, say: Callable[[str], None] | None = None) -> None:
        self.signum: int | None = None
        self.raised = False
        self.hurry = False
        self._shield_depth = 0
        self._say = say or (lambda line: None)

    def handle(self, signum: int, frame=None) -> None:
        name = signal.Signals(signum).name
        if self.signum is not None:
            self.hurry = True
            self._say(f"{name} again: killing what is left at once (no grace)")
            return
        self.signum = signum
        if self._shield_depth:
            self._say(f"{name}: finishing the stop in progress, then exiting (send it again to KILL at once)")
            return
        self._say(f"{name}: stopping the server and client (TERM, grace, KILL); send it again to KILL at once")
        self.raised = True
        raise Cancelled(signum)

    @contextmanager
    def shielded(self, *, raise_after: bool = True) -> Iterator[None]:
        """A stop sequence: a first signal waits until it is done, then cancels (at the end of the block,
        or, with raise_after=False, where the caller calls raise_pending() once it has logged the stop)."""
        self._shield_depth += 1
        try:
            yield
        finally:
            self._shield_depth -= 1
        if raise_after:
            self.raise_pending()

    def raise_pending(self) -> None:
        if self.signum is not None and not self.raised and not self._shield_depth:
            self.raised = True
            raise Cancelled(self.signum)

    def hurried(self) -> bool:
        return self.hurry


@contextmanager
def installed(cancellation: Cancellation) -> Iterator[Cancellation]:
    """Route SIGNALS to `cancellation` while the block runs (main thread only; elsewhere a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        yield cancellation
        return
    previous = {s: signal.signal(s, cancellation.handle) for s in SIGNALS}
    try:
        yield cancellation
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
