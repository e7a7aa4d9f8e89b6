"""Process groups the gate starts: start in a new session, find members, stop TERM-then-KILL.

Every process the gate starts carries GATE_PROCESS_TAG=<random> in its environment, and its
children inherit it. Members are found by that tag (so a worker that started its own session is
still found) and leftovers of earlier gate processes by the records they wrote, never by process
name, so a stranger's process is never signalled. A descendant that both left the session and
cleared its environment cannot be found that way; the gate makes itself a child subreaper so such
a process is re-parented to the gate when its parent dies, and `escaped()` finds it there.
"""
from __future__ import annotations

import ctypes
import os
import secrets
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

from gate.runner.waits import Say, Ticker, quiet

TAG_VARIABLE = "GATE_PROCESS_TAG"
_PROC = Path("/proc")


@dataclass
class Group:
    """A process started in its own session; its pid is also its process-group and session id."""

    proc: subprocess.Popen
    tag: str

    @property
    def pgid(self) -> int:
        return self.proc.pid

    def leader_exited(self) -> bool:
        return self.proc.poll() is not None


def new_tag() -> str:
    return secrets.token_hex(8)


def start(argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], log: Path, tag: str | None = None) -> Group:
    """Start argv in a new session with stdout+stderr appended to `log` (runbook: setsid ... > log 2>&1).
    Pass `tag` when it was recorded before the start (the ledger), so a kill between start and record loses nothing."""
    tag = tag or new_tag()
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        proc = subprocess.Popen(list(argv), cwd=cwd, env={**env, TAG_VARIABLE: tag}, stdin=subprocess.DEVNULL,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    return Group(proc, tag)


def members(session: int, tag: str | None = None) -> list[int]:
    """Live (non-zombie) processes the gate started as `session`.

    With `tag`: every process of the session and every process carrying GATE_PROCESS_TAG=tag, so a
    worker that called setsid() itself is still found. Without: the processes of the session."""
    found = []
    needle = f"{TAG_VARIABLE}={tag}".encode() if tag else None
    me = os.getpid()
    for entry in _PROC.iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            stat = (entry / "stat").read_text()
            # Fields after the ")" that closes the command name: state ppid pgrp session ...
            fields = stat[stat.rindex(")") + 2:].split()
            if fields[0] == "Z" and not _threads_left(entry):
                continue
            in_session = session > 0 and int(fields[3]) == session
            if needle is None:
                if not in_session:
                    continue
            elif not in_session and needle not in (entry / "environ").read_bytes().split(b"\0"):
                continue  # (a process of the session counts even while it exits and its environ is gone)
        except (OSError, ValueError, IndexError):
            continue  # exited while we looked, or not ours to read
        found.append(int(entry.name))
    return found


def _threads_left(entry: Path) -> bool:
    """A process whose main thread has exited reads "Z" while its other threads still run (a CUDA process
    tearing down its context does this for a second or more). It still holds its GPU memory, and its
    children are re-parented to the gate only once the last thread is gone: it is not gone yet."""
    try:
        return sum(1 for _ in (entry / "task").iterdir()) > 1
    except OSError:
        return False


def _signal_all(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def stop(group: Group, *, grace_s: float, kill_wait_s: float = 10.0, poll_s: float = 0.02,
         hurry: Callable[[], bool] = lambda: False, say: Say = quiet, what: str = "the process group") -> str:
    """TERM the whole group, KILL whatever is left after `grace_s` (at once when `hurry()` turns true);
    return "term", "kill" or "gone".

    Members are re-read from /proc each poll, so a child that left the group's leader behind is
    still signalled. The leader is reaped so it does not linger as a zombie."""
    alive = _live(group)
    if not alive:
        return "gone"
    _signal_all(alive, signal.SIGTERM)
    ticker = Ticker(say, f"{what} to exit after SIGTERM (then SIGKILL)", limit_s=grace_s)
    if _wait_gone(lambda: _live(group), grace_s, poll_s, hurry, ticker):
        return "term"
    _signal_all(_live(group), signal.SIGKILL)
    if _wait_gone(lambda: _live(group), kill_wait_s, poll_s):
        return "kill"
    raise RuntimeError(f"process group {group.pgid} survived SIGKILL for {kill_wait_s:g} s: pids {_live(group)}")


def _live(group: Group) -> list[int]:
    group.proc.poll()  # reap the leader if it has exited
    return members(group.pgid, group.tag)


def _wait_gone(live: Callable[[], list[int]], timeout_s: float, poll_s: float,
               hurry: Callable[[], bool] = lambda: False, ticker: Ticker | None = None) -> bool:
    deadline = time.monotonic() + timeout_s
    while True:
        if not live():
            return True
        if time.monotonic() >= deadline or hurry():
            return False
        if ticker is not None:
            ticker.tick()
        time.sleep(poll_s)


def stop_recorded(session: int | None, tag: str, *, grace_s: float, poll_s: float = 0.05,
                  hurry: Callable[[], bool] = lambda: False) -> int:
    """Stop a group started by an earlier gate process, known only from its record. Found by the tag
    alone: the recorded session id may belong to a stranger by now (pid reuse). Returns how many were found."""
    pids = members(0, tag)
    if not pids:
        return 0
    _signal_all(pids, signal.SIGTERM)
    if not _wait_gone(lambda: members(0, tag), grace_s, poll_s, hurry):
        _signal_all(members(0, tag), signal.SIGKILL)
        _wait_gone(lambda: members(0, tag), 10.0, poll_s)
    return len(pids)


_PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Make this process the child subreaper of its descendants (Linux); False where that is not possible."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def escaped(known: set[int]) -> list[tuple[int, str]]:
    """Live children of this process that it did not start itself: descendants re-parented to the gate
    (a subreaper) after their parent died. Zombies among them are reaped. Returns (pid, command line)."""
    me = os.getpid()
    found = []
    for entry in _PROC.iterdir():
        if not entry.name.isdigit() or int(entry.name) in known:
            continue
        try:
            stat = (entry / "stat").read_text()
            fields = stat[stat.rindex(")") + 2:].split()
            if int(fields[1]) != me:
                continue
            if fields[0] == "Z":
                os.waitpid(int(entry.name), os.WNOHANG)
                continue
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except (OSError, ValueError, IndexError, ChildProcessError):
            continue
        found.append((int(entry.name), cmdline[:200]))
    return found


def kill(pids: list[int]) -> None:
    _signal_all(pids, signal.SIGKILL)
    for pid in pids:
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass
