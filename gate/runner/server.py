"""The sglang-omni server of one model: port check, start in its own session, /health wait, stop.

Fail fast: while waiting for /health the server process is watched every poll, so a server that
dies during start-up is reported within a poll interval (with the tail of server.log), not after
the start-up timeout. A hang is bounded by the suite's startup_timeout_s.
"""
from __future__ import annotations

import errno
import json
import socket
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import httpx

from gate.errors import GateError
from gate.runner import procgroup

HEALTH_POLL_S = 0.05
# Each /health probe is short: a server that accepts but never answers (runbook §8.2) must not hang us.
PROBE_TIMEOUT = httpx.Timeout(1.0, connect=0.5)
LOG_TAIL_LINES = 20


class ServerFailed(GateError):
    """The server did not become healthy: it exited, hung, or its port was taken."""

    exit_code = 3


@dataclass
class Server:
    group: procgroup.Group
    port: int
    log: Path
    pid_file: Path

    @property
    def alive(self) -> bool:
        return not self.group.leader_exited()

    def exit_report(self) -> str:
        code = self.group.proc.poll()
        return f"server exited with status {code} (log {self.log}):\n{log_tail(self.log)}"


def port_free(port: int, host: str = "0.0.0.0") -> bool:
    """Can a server bind the port now? SO_REUSEADDR as uvicorn sets it, so sockets of a stopped server
    in TIME_WAIT do not count as busy; a live listener does."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            if exc.errno in (errno.EADDRINUSE, errno.EACCES):
                return False
            raise
    return True


def wait_port_free(port: int, *, timeout_s: float, poll_s: float = 0.1) -> float:
    start = time.monotonic()
    while not port_free(port):
        if time.monotonic() - start >= timeout_s:
            who = " and something answers GET /health there" if _answers_health(port) else ""
            raise ServerFailed(f"port {port} is in use{who} (waited {timeout_s:g} s); stop whatever listens "
                               f"on it or pass --port")
        time.sleep(poll_s)
    return time.monotonic() - start


def _answers_health(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/health", timeout=httpx.Timeout(0.3)).status_code < 600
    except httpx.HTTPError:
        return False


def start(argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], port: int, log: Path, pid_file: Path) -> Server:
    """Start the server like the runbook's setsid line and record it: server.pid holds the pid (= process
    group, so `kill -- -$(cat server.pid)` works by hand) and server.gate.json the tag to find it again."""
    log.unlink(missing_ok=True)
    group = procgroup.start(argv, cwd=cwd, env=env, log=log)
    pid_file.write_text(f"{group.pgid}\n")
    record = {"pid": group.pgid, "tag": group.tag, "port": port, "argv": list(argv)}
    pid_file.with_name("server.gate.json").write_text(json.dumps(record, indent=1) + "\n")
    return Server(group, port, log, pid_file)


def wait_healthy(server: Server, *, timeout_s: float, poll_s: float = HEALTH_POLL_S) -> float:
    """Poll GET /health until 200 while watching the process; return seconds to ready."""
    start = time.monotonic()
    url = f"http://127.0.0.1:{server.port}/health"
    with httpx.Client(timeout=PROBE_TIMEOUT) as client:
        while True:
            if not server.alive:
                raise ServerFailed(f"server died during start-up after {time.monotonic() - start:.1f} s; "
                                   + server.exit_report())
            try:
                if client.get(url).status_code == 200 and server.alive:
                    return time.monotonic() - start
            except httpx.HTTPError:
                pass
            if time.monotonic() - start >= timeout_s:
                raise ServerFailed(f"server not healthy after {timeout_s:g} s (GET {url} never returned 200; "
                                   f"log {server.log}):\n{log_tail(server.log)}")
            time.sleep(poll_s)


def stop(server: Server, *, grace_s: float) -> str:
    return procgroup.stop(server.group, grace_s=grace_s)


def stop_leftovers(tree: Path, *, grace_s: float) -> list[str]:
    """Stop servers that earlier gate runs started under `tree` and that still run (their records say
    which session and tag). Returns one line per group stopped."""
    stopped = []
    for record_path in sorted(tree.glob("run*/*/server.gate.json")):
        try:
            record = json.loads(record_path.read_text())
            session, tag = int(record["pid"]), str(record["tag"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        count = procgroup.stop_recorded(session, tag, grace_s=grace_s)
        if count:
            stopped.append(f"stopped {count} leftover process(es) of {record_path.parent} (group {session})")
    return stopped


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        with open(path, errors="replace") as handle:
            tail = deque(handle, maxlen=lines)
    except OSError:
        return "  (no server.log)"
    return "".join("  | " + line for line in tail).rstrip("\n") or "  (server.log is empty)"
