"""Process groups the gate starts: start in a new session, find members, stop TERM-then-KILL.

Every process the gate starts carries GATE_PROCESS_TAG=<random> in its environment, and its
children inherit it. Members are found by that tag (so a worker that started its own session is
still found) and leftovers of earlier gate processes by the records they wrote, never by process
name, so a stranger's process is never signalled.
"""
from __future__ import annotations

import os
import secrets
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

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


def start(argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], log: Path) -> Group:
    """Start argv in a new session with stdout+stderr appended to `log` (runbook: setsid ... > log 2>&1)."""
    tag = secrets.token_hex(8)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        proc = subprocess.Popen(list(argv), cwd=cwd, env={**env, TAG_VARIABLE: tag}, stdin=subprocess.DEVNULL,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    return Group(proc, tag)


def members(session: int, tag: str | None = None) -> list[int]:
    """Live (non-zombie) processes the gate started as `session`.

    With `tag`: every process carrying GATE_PROCESS_TAG=tag, in that session or not, so a worker that
    called setsid() itself is still found. Without: the processes of the session."""
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
            if fields[0] == "Z":
                continue
            if needle is None:
                if int(fields[3]) != session:
                    continue
            elif needle not in (entry / "environ").read_bytes().split(b"\0"):
                continue
        except (OSError, ValueError, IndexError):
            continue  # exited while we looked, or not ours to read
        found.append(int(entry.name))
    return found


def _signal_all(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def stop(group: Group, *, grace_s: float, kill_wait_s: float = 10.0, poll_s: float = 0.02) -> str:
    """TERM the whole group, KILL whatever is left after `grace_s`; return "term", "kill" or "gone".

    Members are re-read from /proc each poll, so a child that left the group's leader behind is
    still signalled. The leader is reaped so it does not linger as a zombie."""
    alive = _live(group)
    if not alive:
        return "gone"
    _signal_all(alive, signal.SIGTERM)
    if _wait_gone(group, grace_s, poll_s):
        return "term"
    _signal_all(_live(group), signal.SIGKILL)
    if _wait_gone(group, kill_wait_s, poll_s):
        return "kill"
    raise RuntimeError(f"process group {group.pgid} survived SIGKILL for {kill_wait_s:g} s: pids {_live(group)}")


def _live(group: Group) -> list[int]:
    group.proc.poll()  # reap the leader if it has exited
    return members(group.pgid, group.tag)


def _wait_gone(group: Group, timeout_s: float, poll_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while True:
        if not _live(group):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(poll_s)


def stop_recorded(session: int, tag: str, *, grace_s: float, poll_s: float = 0.05) -> int:
    """Stop a group started by an earlier gate process (known only from its record). Returns how many were found."""
    pids = members(session, tag)
    if not pids:
        return 0
    _signal_all(pids, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while members(session, tag) and time.monotonic() < deadline:
        time.sleep(poll_s)
    _signal_all(members(session, tag), signal.SIGKILL)
    deadline = time.monotonic() + 10.0
    while members(session, tag) and time.monotonic() < deadline:
        time.sleep(poll_s)
    return len(pids)
