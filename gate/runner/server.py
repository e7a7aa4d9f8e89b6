"""The sglang-omni server of one model: port check, start in its own session, /health wait, stop.

Fail fast: while waiting for /health the gate waits on the server process between probes, so a
server that dies during start-up is reported at once (with the tail of server.log), not after the
start-up timeout. Probes back off (50 ms doubling to 2 s) so they do not flood server.log, and the
failure tail leaves out the access-log lines of the gate's own probes, to show the server's own last
words. A hang is bounded by the start-up timeout.
"""
from __future__ import annotations

import errno
import json
import re
import socket
import subprocess
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

import httpx

from gate.formats.errors import GateError
from gate.runner import outfiles, procgroup
from gate.runner.waits import Say, Ticker, quiet

HEALTH_POLL_S = 0.05  # first probe interval; doubled after every probe up to HEALTH_POLL_MAX_S
HEALTH_POLL_MAX_S = 0.25  # readiness is seen at most this late (the gate overhead per server cycle is budgeted at <= 1 s)
# Each /health probe is short: a server that accepts but never answers (docs/upstream.md §8.2) must not hang us.
PROBE_TIMEOUT = httpx.Timeout(1.0, connect=0.5)
LOG_TAIL_LINES = 20
# An access-log line of a GET /health probe (uvicorn: `INFO:  127.0.0.1:5 - "GET /health HTTP/1.1" 503 ...`).
_PROBE_LINE = re.compile(r'"GET /health(?:\?[^ "]*)? HTTP/[0-9.]+"')


class ServerFailed(GateError):
    """The server did not become healthy: it exited, hung, or its port was taken."""

    exit_code = 3


@dataclass
class Server:
    group: procgroup.Group
    port: int
    log: Path
    pid_file: Path
    argv: list[str] = field(default_factory=list)

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


def wait_port_free(port: int, *, timeout_s: float, poll_s: float = 0.1, say: Say = quiet) -> float:
    start = time.monotonic()
    ticker = Ticker(say, f"port {port} to be released", limit_s=timeout_s)
    while not port_free(port):
        ticker.tick()
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


def spawn(argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], port: int, log: Path, pid_file: Path,
          tag: str | None = None) -> Server:
    """Start the server like the runbook's setsid line (nothing recorded yet: see `record`)."""
    log.unlink(missing_ok=True)
    group = procgroup.start(argv, cwd=cwd, env=env, log=log, tag=tag)
    return Server(group, port, log, pid_file, list(argv))


def record_server(server: Server, write: Callable[[Path, str], None] = outfiles.write_output) -> None:
    """server.pid holds the pid (= process group, so `kill -- -$(cat server.pid)` works by hand) and
    server.gate.json the tag to find it again. OutputFailed if they cannot be written. `write`: the run's
    Writes.text, so that a failure here is the run's first failure (the message names server.pid)."""
    write(server.pid_file, f"{server.group.pgid}\n")
    doc = {"pid": server.group.pgid, "tag": server.group.tag, "port": server.port, "argv": server.argv}
    write(server.pid_file.with_name("server.gate.json"), json.dumps(doc, indent=1) + "\n")


def start_server(argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], port: int, log: Path, pid_file: Path,
          tag: str | None = None) -> Server:
    """spawn + record; a server whose record cannot be written is stopped before the error is raised."""
    server = spawn(argv, cwd=cwd, env=env, port=port, log=log, pid_file=pid_file, tag=tag)
    try:
        record_server(server)
    except BaseException:
        procgroup.stop(server.group, grace_s=5.0)
        raise
    return server


def wait_healthy(server: Server, *, timeout_s: float, poll_s: float = HEALTH_POLL_S,
                 max_poll_s: float = HEALTH_POLL_MAX_S, say: Say = quiet) -> float:
    """Probe GET /health until 200, waiting on the server process in between; return seconds to ready."""
    start = time.monotonic()
    url = f"http://127.0.0.1:{server.port}/health"
    ticker = Ticker(say, f"the server to answer GET {url} with 200", limit_s=timeout_s)
    interval = poll_s
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
            left = timeout_s - (time.monotonic() - start)
            if left <= 0:
                raise ServerFailed(f"server not healthy after {timeout_s:g} s (GET {url} never returned 200; "
                                   f"log {server.log}):\n{log_tail(server.log)}")
            ticker.tick()
            try:
                server.group.proc.wait(timeout=min(interval, left))  # returns at once if the server exits
            except subprocess.TimeoutExpired:
                pass
            interval = min(interval * 2, max_poll_s)


def stop_server(server: Server, *, grace_s: float, hurry: Callable[[], bool] = lambda: False) -> str:
    return procgroup.stop(server.group, grace_s=grace_s, hurry=hurry)


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
    """The last lines of a log, leaving out the access-log lines of the gate's own /health probes."""
    hidden = 0
    try:
        with open(path, errors="replace") as handle:
            tail: deque[str] = deque(maxlen=lines)
            for line in handle:
                if _PROBE_LINE.search(line):
                    hidden += 1
                else:
                    tail.append(line)
    except OSError:
        return "  (no server.log)"
    text = "".join("  | " + line for line in tail).rstrip("\n") or "  (the log is empty)"
    return text + (f"\n  ({hidden} access-log line(s) of the gate's /health probes left out)" if hidden else "")
