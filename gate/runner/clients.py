"""One benchmark client run: in its own process group, with a timeout, while the server is watched.

A client that outlives its timeout is stopped as a whole group. If the server dies while a client
runs, the client is stopped at once: the MOSS client would otherwise wait up to 600 s for a dead
server (reference §8.1), and a crashing server can keep answering for a while (§8.6).
"""
from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

from gate.errors import GateError
from gate.runner import procgroup
from gate.runner.plan import ClientStep
from gate.runner.server import log_tail

POLL_S = 0.05
STOP_GRACE_S = 5.0


class ClientFailed(GateError):
    exit_code = 3


@dataclass(frozen=True)
class ClientResult:
    exit_code: int
    seconds: float


def run_client(step: ClientStep, *, cwd: Path, env: Mapping[str, str], server_alive: Callable[[], bool],
               server_report: Callable[[], str], on_start: Callable[[procgroup.Group], None] = lambda g: None) -> ClientResult:
    """Run the client; raise ClientFailed when it times out, exits non-zero, writes no output, or the server dies."""
    step.log.unlink(missing_ok=True)
    start = time.monotonic()
    group = procgroup.start(step.argv, cwd=cwd, env=env, log=step.log)
    on_start(group)
    try:
        while group.proc.poll() is None:
            elapsed = time.monotonic() - start
            if not server_alive():
                procgroup.stop(group, grace_s=STOP_GRACE_S)
                raise ClientFailed(f"{step.workload.id}: the server died while the client ran "
                                   f"({elapsed:.1f} s in); " + server_report())
            if elapsed >= step.timeout_s:
                procgroup.stop(group, grace_s=STOP_GRACE_S)
                raise ClientFailed(f"{step.workload.id}: client timed out after {step.timeout_s:g} s and was stopped "
                                   f"(log {step.log}):\n{log_tail(step.log)}")
            try:
                group.proc.wait(timeout=POLL_S)  # returns at once when the client exits
            except subprocess.TimeoutExpired:
                pass
    finally:
        procgroup.stop(group, grace_s=STOP_GRACE_S)  # children it left behind
    seconds = time.monotonic() - start
    code = group.proc.returncode
    if not server_alive():  # the client's own error would hide the cause
        raise ClientFailed(f"{step.workload.id}: the server died while the client ran (client exit status {code}); "
                           + server_report())
    if code != 0:
        raise ClientFailed(f"{step.workload.id}: client exited with status {code} after {seconds:.1f} s "
                           f"(log {step.log}):\n{log_tail(step.log)}")
    if not step.output.exists():
        raise ClientFailed(f"{step.workload.id}: client exited 0 but wrote no {step.output} (log {step.log}):\n"
                           f"{log_tail(step.log)}")
    return ClientResult(code, seconds)
