"""A signal at every step boundary of a server cycle and a client run leaves nothing behind (issue 23, item 1).

No timing luck: a hook (gate.runner.boundary) sends SIGINT or SIGTERM to `gate run` itself at the k-th
boundary, where the Python handler then runs. A first run records every boundary; the sweep signals
at each one in turn and checks the exit status (130/143), that no process of the test and no listener
on the port is left, that the process ledger is empty, that no temporary file is left, and what
gate-run.json says.
"""
from __future__ import annotations

import json
import signal

import pytest

from gate.runner import server

_PRELUDE = """import os, signal
from gate.runner import boundary
_seen = []
def _hook(name):
    _seen.append(name)
    with open({record!r}, "a") as f:
        f.write(name + "\\n")
    if len(_seen) == {k}:
        os.kill(os.getpid(), {sig})
boundary.install(_hook)
"""
RUN = ("--models", "qwen3", "--runs", "1")


def _boundaries(bench) -> list[str]:
    """The boundaries of a run that finds the state a sweep run finds (an earlier run's ledger and log)."""
    record = bench.root / "boundaries.txt"
    for _ in range(2):
        record.unlink(missing_ok=True)
        done = bench.run(*RUN, python_prelude=_PRELUDE.format(record=str(record), k=-1, sig=0))
        assert done.returncode == 0, done.stderr
    names = record.read_text().splitlines()
    for expected in ("server spawned", "client spawned", "server stop begins", "wrote server.pid",
                     "wrote gate-processes.json", "wrote gate-run.json"):
        assert expected in names, f"no boundary {expected!r} in {names}"
    return names


def _signal_at(bench, k: int, sig: int, names: list[str]) -> None:
    """Run afresh, deliver `sig` at boundary k (1-based) and check that nothing is left behind."""
    record = bench.root / f"boundaries-{k}.txt"
    done = bench.run(*RUN, python_prelude=_PRELUDE.format(record=str(record), k=k, sig=int(sig)))
    where = f"signal {signal.Signals(sig).name} at boundary {k} ({names[k - 1]!r})"
    assert record.read_text().splitlines()[:k] == names[:k], f"{where}: the run took another path to it"
    assert done.returncode == 128 + sig, f"{where}: exit {done.returncode}\n{done.stderr}"
    assert bench.leftovers() == [], f"{where}: processes left"
    assert server.port_free(bench.port), f"{where}: port {bench.port} still taken"
    ledger = json.loads((bench.out / "gate-processes.json").read_text())
    assert ledger["processes"] == [], f"{where}: ledger not empty: {ledger}"
    assert not [p for p in bench.out.rglob("*.tmp")], f"{where}: temporary files left"
    log = bench.run_log()
    if k < len(names):  # a signal after the last log write cannot be logged any more
        assert log["status"] == "interrupted" and log["exit_code"] == 128 + sig, f"{where}: {log['status']}"
        work_done = len(names) - names[::-1].index("wrote telemetry.json")  # the run's last file
        allowed = ("interrupted", "pending") if k <= work_done else ("interrupted", "completed")
        assert log["runs"]["main/run1"] in allowed, f"{where}: {log['runs']}"
    stops = [s for s in log["steps"] if s["step"] == "server-stop"]
    assert all(s["status"] == "ok" and s["end"] for s in stops), f"{where}: {stops}"
    assert "Traceback" not in done.stderr, f"{where}:\n{done.stderr}"
    # the next run starts clean and completes
    (bench.out / "main" / "gate-run.json").unlink()


@pytest.mark.slow  # a `gate run` process per signal window
def test_a_signal_in_the_spawn_windows_leaves_nothing(bench):
    """The windows the issue found: just after the server's and a client's spawn, and as the stop begins."""
    names = _boundaries(bench)
    for name, sig in (("server spawned", signal.SIGTERM), ("client spawned", signal.SIGINT),
                      ("server stop begins", signal.SIGTERM)):
        _signal_at(bench, names.index(name) + 1, sig, names)


@pytest.mark.slow
def test_a_signal_at_every_boundary_leaves_nothing(bench):
    names = _boundaries(bench)
    assert len(names) >= 30, names
    for k in range(1, len(names) + 1):
        _signal_at(bench, k, signal.SIGINT if k % 2 else signal.SIGTERM, names)


@pytest.mark.slow
def test_a_hangup_or_quit_at_every_boundary_leaves_nothing(bench):
    """SIGHUP (a dropped SSH session, a closed tmux pane) and SIGQUIT are SIGTERM's equals (issue 38): at every
    boundary, alternating, nothing is left and the exit is 129/131."""
    names = _boundaries(bench)
    assert len(names) >= 20, names
    for k in range(1, len(names) + 1):
        _signal_at(bench, k, signal.SIGHUP if k % 2 else signal.SIGQUIT, names)
