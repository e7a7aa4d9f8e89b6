"""A signal at each step boundary of a server cycle and a client run leaves nothing behind (issue 23, item 1).

No timing luck: a hook (gate.runner.boundary) sends SIGINT or SIGTERM to `gate run` itself at the k-th
boundary, where the Python handler then runs. A first run records every boundary; the sweep signals
at each one in turn and checks the exit status (130/143), that no process of the test and no listener
on the port is left, that the process ledger is empty, that no temporary file is left, and what
gate-run.json says.
"""
from __future__ import annotations

import signal

import pytest

from tests.helpers.signal_sweep import boundaries, signal_at


@pytest.mark.slow  # a `gate run` process per signal window
def test_a_signal_in_the_spawn_windows_leaves_nothing(bench):
    """The windows the issue found: just after the server's and a client's spawn, and as the stop begins."""
    names = boundaries(bench)
    for name, sig in (("server spawned", signal.SIGTERM), ("client spawned", signal.SIGINT),
                      ("server stop begins", signal.SIGTERM)):
        signal_at(bench, names.index(name) + 1, sig, names)


@pytest.mark.slow
def test_a_signal_at_every_odd_boundary_leaves_nothing(bench):
    """SIGINT and SIGTERM in turn at boundaries 1, 3, 5, …; test_signal_hangup.py sends SIGHUP and SIGQUIT at the even
    ones. gate.runner.cancel handles the four alike, so each boundary takes one signal and each signal a quarter."""
    names = boundaries(bench)
    assert len(names) >= 30, names
    for k in range(1, len(names) + 1, 2):
        signal_at(bench, k, signal.SIGINT if k % 4 == 1 else signal.SIGTERM, names)
