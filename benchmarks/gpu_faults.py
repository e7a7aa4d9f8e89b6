"""Every fault knob of the stand-in sglang-omni (tests/standin, a test double), on a real GPU: the exit,
the one message, and what is left behind (processes, the port, GPU memory).

Each case builds a fresh stand-in checkout whose servers (and a left-behind worker, where the knob asks
for one) really hold `--gpu-mib` of GPU memory through torch, runs `gate run` in GPU mode (NVML, the GPU
lock, GPU-free waits), delivers a signal where the case says so, and then checks:
  - the exit code is the documented one (docs/reference.md, `gate run` exit codes) and stderr's last line says why;
  - no process of the case is alive (found by a marker in the environment, as tests/e2e/run does);
  - the port answers nothing and the GPU has no compute process and its memory is back to where it was.

    python3 benchmarks/gpu_faults.py --out /tmp/faults            # on the GPU machine
    python3 benchmarks/gpu_faults.py --no-gpu --cases crash_at_start,fail_every   # CPU smoke
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from standin.build import SMALL_COUNTS, make_checkout, make_hf_hub, small_suite  # noqa: E402
from standin.procs import alive, escaped_children, free_port, our_processes  # noqa: E402

from gate.formats.config import load_suite  # noqa: E402

GATE_RUN = "import sys\nfrom gate.cli import main\nsys.argv = ['gate', 'run', *sys.argv[1:]]\nmain()\n"


@dataclass(frozen=True)
class Case:
    name: str
    knobs: dict
    exit: int  # documented: 0 complete, 2 bad input/preflight, 3 a run failed, 130/143 interrupted
    says: str  # a phrase the gate's stderr must contain
    signal_on: str = ""  # deliver SIGINT/SIGTERM once this text appears in a client log
    signal: int = 0
    args: tuple[str, ...] = ()
    take_port: bool = False
    suite: dict = field(default_factory=dict)


CASES = (
    Case("healthy", {}, 0, "complete"),
    Case("crash_at_start", {"server": {"crash_at_start": True}}, 3, "stand-in crash at start"),
    Case("never_healthy", {"server": {"never_healthy": True}}, 3, "not healthy", suite={"startup_timeout_s": 15}),
    Case("crash_after_requests", {"server": {"crash_after_requests": 3}}, 3, "the server died"),
    Case("port_taken", {}, 2, "is in use", take_port=True),
    Case("leave_child", {"server": {"leave_child": True}}, 0, "complete"),
    Case("leave_child_setsid", {"server": {"leave_child": True, "child_setsid": True}}, 0, "complete"),
    Case("child_clear_env", {"server": {"leave_child": True, "child_clear_env": True}}, 0, "escaped"),
    Case("child_clear_env_slow_exit", {"server": {"leave_child": True, "child_clear_env": True, "exit_linger_s": 1.5}},
         0, "escaped"),
    Case("ignore_term", {"server": {"ignore_term": True}}, 0, "complete"),
    Case("fail_every", {"server": {"fail_every": 4}}, 3, "coverage"),
    Case("all_fail", {"server": {"fail_every": 1}}, 3, "requests failed"),
    Case("client_exit_code", {"client": {"exit_code": 7}}, 3, "exited with status 7"),
    Case("client_no_file", {"client": {"no_file": True}}, 3, "wrote no"),
    Case("client_hang", {"client": {"hang": True}}, 3, "timed out", suite={"client_timeout_s": 8}),
    Case("sigint_mid_client", {"client": {"hang": True}}, 130, "interrupted by SIGINT",
         signal_on="hang", signal=signal.SIGINT),
    Case("sigterm_mid_client", {"server": {"ignore_term": True}, "client": {"hang": True}}, 143,
         "interrupted by SIGTERM", signal_on="hang", signal=signal.SIGTERM),
)


def _gpu_state() -> dict:
    """Used GPU memory (MiB) and compute processes, from nvidia-smi; {} without a GPU."""
    def query(args: list[str]) -> list[str]:
        try:
            done = subprocess.run(["nvidia-smi", *args, "--format=csv,noheader,nounits"], capture_output=True,
                                  text=True, timeout=20)
        except (OSError, subprocess.TimeoutExpired):
            return []
        return [line.strip() for line in done.stdout.splitlines() if line.strip()] if done.returncode == 0 else []
    used = query(["--query-gpu=memory.used"])
    if not used:
        return {}
    return {"memory_used_mib": int(used[0].split(",")[0]), "compute_apps": query(["--query-compute-apps=pid,used_memory"])}


def _port_answers(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _client_logs_say(out: Path, text: str) -> bool:
    return any(text in p.read_text(errors="replace") for p in out.glob("main/run*/*/*.client.log"))


def _escaped_children_alive(out: Path) -> list[int]:
    """Workers the stand-in left behind with a cleared environment (no marker to find them by): the
    server log names their pid; alive (not a zombie) means the gate let one escape."""
    return [pid for log in out.glob("main/run*/*/server.log") for pid in escaped_children(log) if alive(pid)]


def run_case(case: Case, work: Path, hub: Path, gpu_mib: int, no_gpu: bool, case_timeout_s: float = 120) -> dict:
    root = work / case.name
    counts = dict(SMALL_COUNTS)
    knobs = {"counts": counts, **case.knobs}
    if gpu_mib and not no_gpu:
        knobs["server"] = {**knobs.get("server", {}), "gpu_mib": gpu_mib}
    checkout = make_checkout(root / "sglang-omni", knobs=knobs)
    suite = small_suite(root / "suite.yaml", **{"startup_timeout_s": 60, "stop_grace_s": 3, "client_timeout_s": 60,
                                                 **case.suite})
    port, marker = free_port(), uuid.uuid4().hex
    args = ["--checkout", str(checkout), "--out", str(root / "results"), "--suite", str(suite), "--hf-hub", str(hub),
            "--port", str(port), "--lock-dir", str(root), "--no-dataset-fingerprints", "--port-wait", "0.5",
            "--models", "qwen3", "--runs", "1", *(["--no-gpu"] if no_gpu else []), *case.args]
    env = {**os.environ, "STANDIN_TEST_MARKER": marker, "PYTHONPATH": str(REPO)}
    blocker = None
    if case.take_port:
        blocker = socket.socket()
        blocker.bind(("0.0.0.0", port))
        blocker.listen()
    began = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-c", GATE_RUN, *args], cwd=REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    signalled = None
    if case.signal:
        deadline = time.monotonic() + case_timeout_s / 2
        while proc.poll() is None and time.monotonic() < deadline and not _client_logs_say(root / "results",
                                                                                             case.signal_on):
            time.sleep(0.1)
        if proc.poll() is None:
            proc.send_signal(case.signal)
            signalled = round(time.monotonic() - began, 2)
    try:
        _, stderr = proc.communicate(timeout=case_timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, stderr = proc.communicate()
        stderr += f"\n(benchmark: gate run did not end in {case_timeout_s} s and was killed)"
    wall = round(time.monotonic() - began, 2)
    if blocker is not None:
        blocker.close()
    time.sleep(0.5)  # a process that was about to exit has exited; nothing the gate owns may remain after this
    left = our_processes(marker) + _escaped_children_alive(root / "results")
    gpu_after = _gpu_state()
    for pid in left:  # never leave a stray on the machine, but count it first
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    said = [line for line in lines if line.startswith(("gate: ", "gate run: error"))]  # the gate's own message
    return {"case": case.name, "knobs": case.knobs, "expected_exit": case.exit, "exit": proc.returncode,
            "says": case.says, "said": case.says.lower() in stderr.lower(), "message": (said or lines or [""])[-1],
            "signal_after_s": signalled, "wall_s": wall, "leftover_pids": left,
            "port_answers": _port_answers(port) and not case.take_port, "gpu_after": gpu_after}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=None, help="folder for gpu_faults.json and gpu_faults.md")
    parser.add_argument("--gpu-mib", type=int, default=2048, help="GPU memory each stand-in server holds")
    parser.add_argument("--no-gpu", action="store_true", help="CPU smoke: gate run --no-gpu, no GPU memory held")
    parser.add_argument("--case-timeout-s", type=float, default=120, help="kill a case's gate run after this")
    parser.add_argument("--cases", default="", help="comma-separated case names (default: all)")
    args = parser.parse_args()
    chosen = [c for c in CASES if not args.cases or c.name in args.cases.split(",")]
    before = _gpu_state()
    rows = []
    with tempfile.TemporaryDirectory(prefix="gate-faults-") as tmp:
        work = Path(tmp)
        suite = small_suite(work / "hub-suite.yaml")
        hub = make_hf_hub(work / "hf_hub", load_suite(suite))
        for case in chosen:
            row = run_case(case, work, hub, args.gpu_mib, args.no_gpu, args.case_timeout_s)
            gpu = row["gpu_after"]
            row["gpu_released"] = (not gpu) or (not gpu["compute_apps"] and
                                                gpu["memory_used_mib"] <= before.get("memory_used_mib", 0) + 64)
            row["ok"] = (row["exit"] == row["expected_exit"] and row["said"] and not row["leftover_pids"]
                         and not row["port_answers"] and row["gpu_released"])
            rows.append(row)
            if args.out:  # row by row, so a run cut short still leaves what it measured
                args.out.mkdir(parents=True, exist_ok=True)
                (args.out / "gpu_faults.json").write_text(json.dumps({"before": before, "rows": rows}, indent=1) + "\n")
            print(f"{row['case']:22} exit {row['exit']:>3} (want {row['expected_exit']:>3})  "
                  f"{'ok ' if row['ok'] else 'BAD'} left {len(row['leftover_pids'])}  "
                  f"gpu {gpu.get('memory_used_mib', '-')} MiB  {row['wall_s']:6.1f} s  | {row['message'][:110]}",
                  flush=True)
    table = ["| case | exit (documented) | says | leftovers | port | GPU after (MiB, apps) | wall s | message |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        gpu = r["gpu_after"]
        gpu_cell = f"{gpu['memory_used_mib']}, {len(gpu['compute_apps'])}" if gpu else "no GPU"
        table.append(f"| {r['case']} | {r['exit']} ({r['expected_exit']}) | {'yes' if r['said'] else 'NO'} | "
                     f"{len(r['leftover_pids'])} | {'answers' if r['port_answers'] else 'free'} | {gpu_cell} | "
                     f"{r['wall_s']} | {r['message'][:120].replace('|', '/')} |")
    summary = f"{sum(r['ok'] for r in rows)} of {len(rows)} cases as documented; GPU before: {before or 'no GPU'}"
    print(summary)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "gpu_faults.md").write_text("\n".join([f"`{' '.join(sys.argv)}`", "", *table, "", summary]) + "\n")
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
