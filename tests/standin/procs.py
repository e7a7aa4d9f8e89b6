"""Processes and ports of stand-in runs (test double helpers): a free port for a server, every live process
that carries a run's marker in its environment (what the gate started for that run), and the workers a
stand-in server left behind with a cleared environment (named in its server.log)."""
from __future__ import annotations

import os
import random
import socket
from pathlib import Path


def free_port() -> int:
    """A free port below Linux's ephemeral range (32768+), so no outgoing connection of a concurrent process
    can take it between this check and the server's bind."""
    for _ in range(200):
        port = random.randint(20000, 32000)
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("0.0.0.0", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port in 20000-32000")


def our_processes(marker: str) -> list[int]:
    """Live processes whose environment carries this test's marker: anything the gate started for it."""
    found = []
    needle = f"STANDIN_TEST_MARKER={marker}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            stat = (entry / "stat").read_text()
            if stat[stat.rindex(")") + 2] == "Z":
                continue
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except (OSError, ValueError):
            continue
    return found


ESCAPED_CHILD_LINE = "left a child process behind: pid "  # standin_server.py prints it (knob leave_child)


def escaped_children(server_log: Path) -> list[int]:
    """Pids of the workers this stand-in server left behind (knob leave_child), from its log."""
    text = server_log.read_text(errors="replace")
    return [int(part.split()[0]) for part in text.split(ESCAPED_CHILD_LINE)[1:]]


def alive(pid: int) -> bool:
    """The process exists and is not a zombie (a zombie holds no memory, port or GPU)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"
