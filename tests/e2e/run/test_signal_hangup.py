"""SIGHUP and SIGQUIT at the even step boundaries of a server cycle and a client run leave nothing behind (issue 38);
the SIGINT / SIGTERM sweep of the odd ones is test_signal_windows.py, apart so that the two run on two xdist workers."""
from __future__ import annotations

import signal

import pytest

from tests.helpers.signal_sweep import boundaries, signal_at


@pytest.mark.slow
def test_a_hangup_or_quit_at_every_even_boundary_leaves_nothing(bench):
    """SIGHUP (a dropped SSH session, a closed tmux pane) and SIGQUIT are SIGTERM's equals (issue 38): at boundaries
    2, 4, 6, …, in turn, nothing is left and the exit is 129/131 (test_signal_windows.py takes the odd ones)."""
    names = boundaries(bench)
    assert len(names) >= 20, names
    for k in range(2, len(names) + 1, 2):
        signal_at(bench, k, signal.SIGHUP if k % 4 == 2 else signal.SIGQUIT, names)
