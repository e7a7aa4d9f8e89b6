"""Signal `gate run` at its k-th step boundary and check that nothing is left behind (tests/e2e/run/test_signal_*.py).

No timing luck: a hook (gate.runner.boundary) sends the signal to `gate run` itself at the k-th boundary, where the
Python handler then runs."""
from __future__ import annotations

import json
import signal

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


def boundaries(bench) -> list[str]:
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


def signal_at(bench, k: int, sig: int, names: list[str]) -> None:
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
