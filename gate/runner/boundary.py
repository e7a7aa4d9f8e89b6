"""Named step boundaries of a gate run, for tests that deliver a signal at each one (no timing luck).

The runner calls `reached(name)` between every two bookkeeping operations that matter for cleanup: each
write of gate-run.json and gate-processes.json, each spawn, each record of a spawned group. In production
nothing is installed and `reached` does nothing. A test installs a hook (`installed(hook)`) that sends
SIGINT/SIGTERM to the gate itself at the k-th boundary; the Python signal handler then runs right there,
so every window between two operations is tried once, by construction.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterator

Hook = Callable[[str], None]
_hook: Hook | None = None


def reached(name: str) -> None:
    if _hook is not None:
        _hook(name)


def install(hook: Hook | None) -> None:
    global _hook
    _hook = hook


@contextmanager
def hook_installed(hook: Hook) -> Iterator[None]:
    previous = _hook
    install(hook)
    try:
        yield
    finally:
        install(previous)
