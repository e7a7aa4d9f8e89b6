"""Server lifecycle against the stand-in server: fail-fast start-up, bounded hangs, group kill, port checks."""
from __future__ import annotations

import socket
import time

import pytest

from gate.runner import procgroup, server


def _start(bench, knobs: dict, name: str = "s"):
    bench.knobs({"server": knobs})
    snapshot = next(bench.hf_hub.glob("models--Qwen--*/snapshots/*"))
    argv = [str(bench.checkout / ".venv/bin/sgl-omni"), "serve", "--model-path", str(snapshot),
            "--model-name", "Qwen/Qwen3-ASR-1.7B", "--port", str(bench.port)]
    env = {**bench.env(), "SGLANG_OMNI_STRICT_PORT": "1"}
    d = bench.root / name
    d.mkdir()
    return server.start_server(argv, cwd=bench.checkout, env=env, port=bench.port, log=d / "server.log", pid_file=d / "server.pid")


def test_healthy_server_starts_and_its_group_stops(bench):
    srv = _start(bench, {})
    assert server.wait_healthy(srv, timeout_s=10) < 10
    assert srv.pid_file.read_text().strip() == str(srv.group.pgid)
    assert not server.port_free(bench.port)
    assert server.stop_server(srv, grace_s=2) == "term"
    assert procgroup.members(srv.group.pgid) == []
    assert server.port_free(bench.port)


def test_death_during_startup_is_reported_within_two_seconds(bench):
    srv = _start(bench, {"crash_at_start": True, "crash_delay_s": 0.5})
    began = time.monotonic()
    with pytest.raises(server.ServerFailed) as info:
        server.wait_healthy(srv, timeout_s=30)
    exited_after = time.monotonic() - began
    message = str(info.value)
    assert "server died during start-up" in message and "stand-in crash at start" in message  # log tail
    assert exited_after < 0.5 + 2.0


def test_a_server_that_never_becomes_healthy_is_bounded(bench):
    srv = _start(bench, {"never_healthy": True})
    began = time.monotonic()
    with pytest.raises(server.ServerFailed, match=r"not healthy after 0.8 s"):
        server.wait_healthy(srv, timeout_s=0.8)
    assert time.monotonic() - began < 3
    server.stop_server(srv, grace_s=1)


def test_child_left_behind_ignoring_term_is_killed_with_the_group(bench):
    srv = _start(bench, {"leave_child": True, "ignore_term": True})
    server.wait_healthy(srv, timeout_s=10)
    assert len(procgroup.members(srv.group.pgid, srv.group.tag)) >= 2
    assert server.stop_server(srv, grace_s=0.5) == "kill"
    assert procgroup.members(srv.group.pgid) == [] and bench.leftovers() == []
    assert server.port_free(bench.port), "the child held the listening socket until it was killed"


def test_child_that_started_its_own_session_is_still_stopped(bench):
    srv = _start(bench, {"leave_child": True, "child_setsid": True})
    server.wait_healthy(srv, timeout_s=10)
    tagged = procgroup.members(srv.group.pgid, srv.group.tag)
    assert len(tagged) >= 2 and len(procgroup.members(srv.group.pgid)) < len(tagged)  # one left the session
    assert server.stop_server(srv, grace_s=0.5) == "kill"
    assert bench.leftovers() == []


def test_leftovers_of_an_earlier_gate_are_stopped_by_record_not_by_name(bench):
    tree = bench.out / "main"
    (tree / "run1").mkdir(parents=True)
    srv = _start(bench, {"leave_child": True}, name="unused")
    # An earlier gate process wrote these records, then died without stopping its server.
    (tree / "run1" / "qwen3").mkdir()
    for name in ("server.pid", "server.gate.json"):
        (tree / "run1" / "qwen3" / name).write_bytes((srv.pid_file.parent / name).read_bytes())
    server.wait_healthy(srv, timeout_s=10)
    stopped = server.stop_leftovers(tree, grace_s=1)
    assert len(stopped) == 1 and "group" in stopped[0]
    assert bench.leftovers() == []
    srv.group.proc.wait()


def test_recorded_session_without_our_tag_is_left_alone(bench):
    srv = _start(bench, {})
    server.wait_healthy(srv, timeout_s=10)
    assert procgroup.stop_recorded(srv.group.pgid, "not-the-tag", grace_s=0.2) == 0
    assert srv.alive
    server.stop_server(srv, grace_s=2)


def test_port_free_sees_a_listener():
    with socket.socket() as s:
        s.bind(("0.0.0.0", 0))
        s.listen()
        port = s.getsockname()[1]
        assert not server.port_free(port)
        with pytest.raises(server.ServerFailed, match=f"port {port} is in use"):
            server.wait_port_free(port, timeout_s=0.3)
    assert server.port_free(port)


def test_health_probes_back_off_and_stay_out_of_the_failure_tail(bench):
    last_words = "[standin] CUDA graph capture has not finished"  # the server's own log line
    srv = _start(bench, {"never_healthy": True, "access_log": True, "log_line": last_words})
    with pytest.raises(server.ServerFailed) as info:
        server.wait_healthy(srv, timeout_s=3)
    server.stop_server(srv, grace_s=1)
    probes = srv.log.read_text().count('"GET /health HTTP/1.1" 503')
    assert 3 <= probes <= 16, f"{probes} probes in 3 s (the 0.25 s cap makes ~14; a fixed 50 ms poll ~60)"
    message = str(info.value)
    assert last_words in message and "GET /health HTTP" not in message
    assert f"({probes} access-log line(s) of " in message and "/health probes left out)" in message  # counted

