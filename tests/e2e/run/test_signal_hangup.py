"""SIGHUP and SIGQUIT at every step boundary of a server cycle and a client run leave nothing behind (issue 38); the
SIGINT / SIGTERM sweep is test_signal_windows.py, apart so that the two sweeps run on two xdist workers."""
from __future__ import annotations

import signal

import pytest

from tests.helpers.signal_sweep import boundaries, signal_at


@pytest.mark.slow
def test_a_hangup_or_quit_at_every_boundary_leaves_nothing(bench):
    """SIGHUP (a dropped SSH session, a closed tmux pane) and SIGQUIT are SIGTERM's equals (issue 38): at every
    boundary, alternating, nothing is left and the exit is 129/131."""
    names = boundaries(bench)
    assert len(names) >= 20, names
    for k in range(1, len(names) + 1):
        signal_at(bench, k, signal.SIGHUP if k % 2 else signal.SIGQUIT, names)
