"""Where the noise lives (issue 37): K server starts × P timed passes per start, and the duet prototype.

Runs on the GPU machine with the standard library alone (torch only inside the stand-in server). Per
configuration (CUDA graphs or eager, batch 32 or 1) it builds a stand-in checkout whose server decodes every
transcription with the Whisper-large-v3-shaped decoder (asr_decoder.py), then, K times: starts the server,
waits for /health, runs the stand-in SeedTTS client with `--warmup --repeats P` (one unscored warm-up pass,
P timed passes, `per_repeat` in its result file, as upstream's client does), and stops the server. The
start cost (spawn to healthy) and the pass cost (client wall / (P + 1)) are recorded with each start.

Duet (the prototype): two servers of the same build resident on the one GPU (different ports), each warmed
once, then short blocks (one full pass each) alternate A B B A …; a session's comparison is the mean of its
paired block differences ln A − ln B. Sessions are repeated with fresh servers so the between-session spread,
start effects included, is measured rather than assumed.

    python -m benchmarks.noise.nested --out $OUT --machine A --budget-s 400 --duet-s 130   # on the GPU machine
    python -m benchmarks.noise.nested --out /tmp/n --no-decoder --budget-s 30 --duet-s 10  # plumbing, no GPU

The JSON (<out>/nested-<machine>.json) is rewritten after every start, so a cut-off call keeps its runs;
benchmarks/noise/components.py analyses it (numpy/scipy, anywhere).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MODULE_DIR = Path(__file__).resolve().parent
SCHEMA = "gpu-noise-nested/1"
# name -> (batch slots, CUDA graphs, utterances per pass): every pass of a configuration does the same work;
# the sizes keep one pass near 2-3 s on an H200 (rates from benchmarks/noise/results/served-A.md).
CONFIGS = {
    "graphs-b32": (32, True, 192),
    "eager-b32": (32, False, 96),
    "graphs-b1": (1, True, 16),
    "eager-b1": (1, False, 4),
}
# Budget weight per configuration: graphs-b32 is how sglang serves ASR, so it gets the most starts.
WEIGHT = {"graphs-b32": 2.0, "eager-b32": 1.0, "graphs-b1": 1.0, "eager-b1": 1.0}
CLIENT = "benchmarks.eval.benchmark_asr_seedtts"


def build(work: Path, name: str, count: int, decoder: dict | None) -> tuple[Path, Path]:
    """A stand-in checkout (no git: the study needs none) and a model directory with a config.json."""
    sys.path.insert(0, str(REPO / "tests"))
    from standin.build import make_checkout

    dest = work / name
    shutil.rmtree(dest, ignore_errors=True)
    knobs: dict = {"counts": {"seedtts_en": count, "seedtts_zh": count}}
    if decoder is not None:
        knobs["server"] = {"decoder": decoder}
    checkout = make_checkout(dest / "checkout", knobs=knobs, git=False)
    model = dest / "model"
    model.mkdir(parents=True, exist_ok=True)
    (model / "config.json").write_text('{"standin": true}')
    return checkout, model


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """One `sgl-omni serve` process group; ready_s is spawn to the first healthy /health."""

    def __init__(self, checkout: Path, model: Path, log: Path) -> None:
        self.port = free_port()
        self.log = log.open("w")
        self.began = time.perf_counter()
        self.proc = subprocess.Popen([str(checkout / ".venv" / "bin" / "sgl-omni"), "serve", "--model-path", str(model),
                                      "--port", str(self.port)], stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self.ready_s: float | None = None

    def wait_healthy(self, timeout_s: float = 300.0) -> float:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited {self.proc.returncode} before it was healthy")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2) as reply:
                    if reply.status == 200:
                        self.ready_s = time.perf_counter() - self.began
                        return self.ready_s
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.05)
        raise RuntimeError(f"server not healthy after {timeout_s:.0f} s")

    def stop(self) -> float:
        began = time.perf_counter()
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)
        except ProcessLookupError:
            pass
        self.log.close()
        return time.perf_counter() - began


def client(checkout: Path, port: int, out: Path, repeats: int, warmup: bool, timeout_s: float = 600.0) -> dict:
    """The stand-in SeedTTS client against one server; returns per_repeat figures and the client's wall time."""
    argv = [str(checkout / ".venv" / "bin" / "python"), "-m", CLIENT, "--lang", "en", "--port", str(port),
            "--concurrencies", "32", "--repeats", str(repeats), "--output", str(out)]
    if warmup:
        argv.append("--warmup")
    began = time.perf_counter()
    done = subprocess.run(argv, cwd=checkout, capture_output=True, text=True, timeout=timeout_s)
    wall = time.perf_counter() - began
    if done.returncode != 0:
        raise RuntimeError(f"client exit {done.returncode}: {done.stderr[-500:]}")
    result = json.loads(out.read_text())["results"][0]
    passes = [{"throughput": r["throughput_samples_per_s"], "p95_s": r["latency_p95_s"], "wall_s": r["wall_clock_s"],
               "skipped": r["skipped"]} for r in result["per_repeat"]]
    return {"client_wall_s": wall, "passes": passes}


def one_start(checkout: Path, model: Path, scratch: Path, index: int, passes: int) -> dict:
    record: dict = {"start": index}
    server = Server(checkout, model, scratch / f"server{index}.log")
    try:
        record["ready_s"] = server.wait_healthy()
        record |= client(checkout, server.port, scratch / f"client{index}.json", passes, warmup=True)
    except (RuntimeError, OSError, ValueError, KeyError, subprocess.TimeoutExpired) as exc:
        record["error"] = f"{type(exc).__name__}: {exc}"
    finally:
        record["stop_s"] = server.stop()
    return record


def components(config: dict, work: Path, passes: int, budget_s: float, max_starts: int, decoder_dir: Path | None,
               save) -> None:
    """Fills `config` (already in the study, so every save keeps the starts so far)."""
    name = config["name"]
    batch, graphs, count = CONFIGS[name]
    decoder = None if decoder_dir is None else {"module_dir": str(decoder_dir), "batch": batch, "graphs": graphs}
    checkout, model = build(work, name, count, decoder)
    config.update(batch=batch, graphs=graphs, utterances=count, passes_per_start=passes, starts=[])
    began, slowest = time.perf_counter(), 0.0
    for index in range(1, max_starts + 1):
        left = budget_s - (time.perf_counter() - began)
        if index > 2 and left < 1.1 * slowest:  # two starts at least: one start has no between-start spread
            break
        t0 = time.perf_counter()
        config["starts"].append(one_start(checkout, model, work / name, index, passes))
        slowest = max(slowest, time.perf_counter() - t0)
        config["starts"][-1]["wall_s"] = round(time.perf_counter() - t0, 3)
        save()
        print(f"{name} start {index}: {json.dumps(config['starts'][-1])}", flush=True)
        if "error" in config["starts"][-1] and index >= 2 and "error" in config["starts"][-2]:
            break


def duet(record: dict, work: Path, budget_s: float, max_sessions: int, pairs: int, decoder_dir: Path | None,
         save, slow_b: float = 0.0) -> None:
    """Duet sessions on graphs-b32: both servers resident, ABBA-ordered one-pass blocks (fills `record`).
    slow_b 0 is an A/A session; slow_b > 0 makes B the slower build (asr_decoder's `slow`)."""
    batch, graphs, count = CONFIGS["graphs-b32"]
    decoder = None if decoder_dir is None else {"module_dir": str(decoder_dir), "batch": batch, "graphs": graphs}
    name = "duet" if slow_b == 0 else "duet-ab"
    checkout, model = build(work, name, count, decoder)
    checkout_b = checkout
    if slow_b > 0:
        checkout_b, _ = build(work / "b", name, count, None if decoder is None else {**decoder, "slow": slow_b})
    record.update(config="graphs-b32", utterances=count, pairs_per_session=pairs, slow_b=slow_b, sessions=[])
    began, slowest = time.perf_counter(), 0.0
    for index in range(1, max_sessions + 1):
        left = budget_s - (time.perf_counter() - began)
        if index > 2 and left < 1.1 * slowest:
            break
        t0 = time.perf_counter()
        session: dict = {"session": index, "blocks": []}
        servers = [Server(c, model, work / name / f"s{index}{side}.log")
                   for side, c in zip("AB", (checkout, checkout_b), strict=True)]
        try:
            session["ready_s"] = [s.wait_healthy() for s in servers]
            for side, server in zip("AB", servers, strict=True):  # one unscored pass each, as the runbook's warm-up
                client(checkout, server.port, work / name / f"warm{side}.json", 1, warmup=False)
            for block in range(2 * pairs):
                side = "ABBA"[block % 4]
                got = client(checkout, servers["AB".index(side)].port, work / name / "block.json", 1, warmup=False)
                session["blocks"].append({"side": side, **got["passes"][0]})
        except (RuntimeError, OSError, ValueError, KeyError, subprocess.TimeoutExpired) as exc:
            session["error"] = f"{type(exc).__name__}: {exc}"
        finally:
            session["stop_s"] = [s.stop() for s in servers]
        session["wall_s"] = round(time.perf_counter() - t0, 3)
        slowest = max(slowest, session["wall_s"])
        record["sessions"].append(session)
        save()
        print(f"{name} session {index}: {json.dumps(session)[:400]}", flush=True)


def machine() -> dict:
    def read(argv: list[str]) -> str | None:
        try:
            return subprocess.run(argv, capture_output=True, text=True, timeout=30).stdout.strip() or None
        except (OSError, subprocess.TimeoutExpired):
            return None

    def text(path: str) -> str | None:
        try:
            return Path(path).read_text().strip()
        except OSError:
            return None
    return {"hostname": socket.gethostname(), "boot_id": text("/proc/sys/kernel/random/boot_id"),
            "machine_id": text("/etc/machine-id"), "cpus": os.cpu_count(),
            "gpu": read(["nvidia-smi", "--query-gpu=name,uuid,pci.bus_id,driver_version,clocks.max.sm,memory.total",
                         "--format=csv,noheader"])}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--machine", default="A", help="label of this machine in the output's name")
    parser.add_argument("--configs", default=",".join(CONFIGS))
    parser.add_argument("--passes", type=int, default=4, help="timed passes per server start (client --repeats)")
    parser.add_argument("--max-starts", type=int, default=12)
    parser.add_argument("--budget-s", type=float, default=400.0, help="seconds for all configurations together")
    parser.add_argument("--duet-s", type=float, default=0.0, help="seconds for duet sessions (0: none)")
    parser.add_argument("--duet-ab-s", type=float, default=0.0,
                        help="seconds for duet sessions against a slower B build (0: none)")
    parser.add_argument("--slow", type=float, default=0.0309, help="the B build's slow factor (0.0309: about -3%%)")
    parser.add_argument("--duet-pairs", type=int, default=4, help="A/B block pairs per duet session")
    parser.add_argument("--no-decoder", action="store_true", help="no GPU decoder: the stand-in answers at once")
    args = parser.parse_args(argv)
    configs = [c for c in args.configs.split(",") if c]
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown or args.passes < 2:
        print(f"nested: unknown configs {unknown} or --passes < 2", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(os.environ.get("NESTED_WORK", "/tmp/nested-work"))
    decoder_dir = None if args.no_decoder else MODULE_DIR
    study: dict = {"schema": SCHEMA, "machine_label": args.machine, "machine": machine(),
                   "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                   "command": "python -m benchmarks.noise.nested " + " ".join(sys.argv[1:] if argv is None else argv),
                   "configs": [], "duet": None, "duet_ab": None}
    path = args.out / f"nested-{args.machine}.json"

    def save() -> None:
        path.write_text(json.dumps(study, indent=1) + "\n")

    began = time.perf_counter()
    for index, name in enumerate(configs):
        left = args.budget_s - (time.perf_counter() - began)
        share = left * WEIGHT[name] / sum(WEIGHT[c] for c in configs[index:])
        study["configs"].append({"name": name, "starts": []})
        components(study["configs"][-1], work, args.passes, share, args.max_starts, decoder_dir, save)
        save()
    if args.duet_s > 0:
        study["duet"] = {}
        duet(study["duet"], work, args.duet_s, args.max_starts, args.duet_pairs, decoder_dir, save)
    if args.duet_ab_s > 0:
        study["duet_ab"] = {}
        duet(study["duet_ab"], work, args.duet_ab_s, args.max_starts, args.duet_pairs, decoder_dir, save, args.slow)
    study["wall_s"] = round(time.perf_counter() - began, 1)
    save()
    print(f"nested: wrote {path} in {study['wall_s']} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
