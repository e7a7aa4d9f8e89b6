"""One benchmark client run: in its own process group, with a timeout, while the server is watched.

A client that outlives its timeout is stopped as a whole group. If the server dies while a client
runs, the client is stopped at once: the MOSS client would otherwise wait up to 600 s for a dead
server (docs/upstream.md §8.1), and a crashing server can keep answering for a while (docs/upstream.md §8.6).
While it runs, its progress is read from its own log (tqdm's "N/M [" counter) and printed now and then.
"""
from __future__ import annotations

import contextlib
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, ContextManager, Mapping

from gate.formats.errors import GateError
from gate.runner import boundary, procgroup
from gate.runner.plan import ClientStep
from gate.runner.server import log_tail
from gate.runner.waits import Say, Ticker, quiet

POLL_S = 0.05
STOP_GRACE_S = 5.0
PROGRESS_EVERY_S = 60.0
_TQDM_COUNT = re.compile(r"(\d+)/(\d+) \[")  # tqdm: " 45%|####    | 450/1000 [00:12<00:15, 36.5it/s]"
_TAIL_BYTES = 8192


def progress(log: Path) -> tuple[int, int] | None:
    """(done, total) from the last progress counter in the client's log, or None when it printed none."""
    try:
        with open(log, "rb") as handle:
            handle.seek(0, 2)
            size = handle.tell()
            handle.seek(max(0, size - _TAIL_BYTES))
            tail = handle.read().decode(errors="replace")
    except OSError:
        return None
    found = _TQDM_COUNT.findall(tail)
    if not found:
        return None
    done, total = (int(v) for v in found[-1])
    return (done, total) if total > 0 else None


def describe_progress(log: Path, elapsed_s: float | None = None) -> str:
    got = progress(log)
    if got is None:
        return "no progress line from the client yet"
    done, total = got
    left = ""
    if elapsed_s and 0 < done < total:
        left = f", ~{elapsed_s * (total - done) / done:.0f} s left at this pace"
    return f"{done}/{total} requests ({100 * done / total:.0f}%{left})"


class ClientFailed(GateError):
    exit_code = 3


@dataclass(frozen=True)
class ClientResult:
    exit_code: int
    seconds: float


def _stop(group: procgroup.Group) -> str:
    return procgroup.stop(group, grace_s=STOP_GRACE_S)


def run_client(step: ClientStep, *, cwd: Path, env: Mapping[str, str], server_alive: Callable[[], bool],
               server_report: Callable[[], str], on_start: Callable[[procgroup.Group], None] = lambda g: None,
               tag: str | None = None, stop_group: Callable[[procgroup.Group], str] = _stop,
               shield: Callable[[], ContextManager[None]] = contextlib.nullcontext,
               before_start: Callable[[], None] = lambda: None,
               say: Say = quiet, progress_every_s: float = PROGRESS_EVERY_S) -> ClientResult:
    """Run the client; raise ClientFailed when it times out, exits non-zero, writes no output, or the server dies.

    `before_start`, the spawn and `on_start` run inside `shield()` (the runner's defers signals), and the
    `try` that stops the group is entered before it: no moment exists where the client runs unguarded.
    `stop_group` stops the client's group on every way out (the runner's makes it signal-safe)."""
    step.log.unlink(missing_ok=True)
    start = time.monotonic()
    group: procgroup.Group | None = None
    try:
        with shield():
            before_start()
            group = procgroup.start(step.argv, cwd=cwd, env=env, log=step.log, tag=tag)
            boundary.reached("client spawned")
            on_start(group)
        ticker = Ticker(say, f"client {step.workload.id}", limit_s=step.timeout_s,
                        first_s=min(5.0, progress_every_s), every_s=progress_every_s)
        ticker.detail = lambda: describe_progress(step.log, time.monotonic() - start)
        while group.proc.poll() is None:
            elapsed = time.monotonic() - start
            if not server_alive():
                stop_group(group)
                raise ClientFailed(f"{step.workload.id}: the server died while the client ran "
                                   f"({elapsed:.1f} s in); " + server_report())
            if elapsed >= step.timeout_s:
                stop_group(group)
                raise ClientFailed(f"{step.workload.id}: client timed out after {step.timeout_s:g} s and was stopped "
                                   f"(log {step.log}):\n{log_tail(step.log)}")
            ticker.tick()
            try:
                group.proc.wait(timeout=POLL_S)  # returns at once when the client exits
            except subprocess.TimeoutExpired:
                pass
    finally:
        if group is not None:
            stop_group(group)  # children it left behind
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
