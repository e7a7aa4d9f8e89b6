"""GPU noise proxy study (issue 11, item 6): A/A runs of a batched decoding workload, a fresh process per run.

    python benchmarks/gpu_noise.py --device cuda --runs 24 --budget-s 380 --out benchmarks/results   # GPU study
    python benchmarks/gpu_noise.py --device cpu --runs 3 --out /tmp/noise                            # CPU smoke
    python benchmarks/gpu_noise.py --reanalyse benchmarks/results/gpu_noise.json --out /tmp/noise     # no torch
    python benchmarks/gpu_noise.py --served --runs 5 --lease A --out /tmp/served     # gate run, Whisper-shaped
    python benchmarks/gpu_noise.py --served-combine A.json B.json --out /tmp/served  # between two leases

--served is the study where it matters (issue 23): `gate run` drives a Whisper-large-v3-shaped decoder behind
the stand-in server, eager and with CUDA graphs, batch 1 and 32, a fresh server per run (noise/served.py).

Each run is this script started again as a child process (`--child`), as the runbook starts a fresh server
per run: it builds a random-initialised decoder (fixed seed), serves the fixed request set once unscored
(warm-up) and once scored, and prints its figures as one JSON line. The parent runs them one after another,
stops launching when the next run would pass --budget-s, and rewrites <out>/gpu_noise.json (raw runs,
environment, summary) and <out>/gpu_noise.md (the table) after every run, so a cut-off study keeps its runs.
The parent needs only numpy and scipy; the child needs torch.

Exit codes: 0 study written; 1 fewer than 3 runs finished; 2 bad arguments or an unreadable --reanalyse file.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/ holds the `noise` package

from noise import report  # noqa: E402
from noise.config import preset  # noqa: E402

CHILD_MARK = "GPU_NOISE_RUN "
SCHEMA = "gpu-noise/1"
SMI_FIELDS = "temperature.gpu,clocks.sm,clocks.mem,power.draw,pstate"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="directory for gpu_noise.json and gpu_noise.md")
    parser.add_argument("--device", default="cuda", help="torch device of the runs (default cuda; cpu for the smoke)")
    parser.add_argument("--size", choices=["gpu", "tiny"], default=None,
                        help="workload preset (default: gpu on cuda, tiny on cpu)")
    parser.add_argument("--requests", type=int, default=None, help="override the preset's requests per pass")
    parser.add_argument("--runs", type=int, default=24, help="fresh processes to run (default 24)")
    parser.add_argument("--budget-s", type=float, default=None,
                        help="stop launching runs when the next one would end past this many seconds")
    parser.add_argument("--reanalyse", type=Path, default=None,
                        help="recompute summary and table from an existing gpu_noise.json (no runs, no torch)")
    parser.add_argument("--served", action="store_true",
                        help="gate run against a Whisper-shaped decoder server (needs torch, CUDA and the gate)")
    parser.add_argument("--lease", default="A", help="--served: the lease's label in the output names")
    parser.add_argument("--configs", default=None,
                        help="--served: comma-separated configs (default all: graphs-b32,eager-b32,graphs-b1,eager-b1)")
    parser.add_argument("--served-combine", nargs="+", type=Path, default=None, metavar="STUDY_JSON",
                        help="put two --served studies (two leases) side by side")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--config-json", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return args
    if args.out is None:
        parser.error("--out is required")
    if args.served or args.served_combine:
        return args
    if args.reanalyse is None and args.runs < report.MIN_RUNS:
        parser.error(f"--runs must be at least {report.MIN_RUNS}")
    if args.requests is not None and args.requests < 1:
        parser.error("--requests must be at least 1")
    return args


def run_child(args: argparse.Namespace) -> int:
    began = time.perf_counter()  # the restart cost counts the torch import too
    from noise import workload  # torch is imported only in the child
    from noise.config import WorkloadConfig

    cfg = WorkloadConfig(**json.loads(args.config_json))
    result = workload.measure_run(cfg, args.device, began)
    print(CHILD_MARK + json.dumps(result), flush=True)
    return 0


def nvidia_smi(fields: str) -> list[str] | None:
    """One GPU's fields from nvidia-smi, or None where there is none (CPU machines)."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    done = subprocess.run([smi, f"--query-gpu={fields}", "--format=csv,noheader,nounits", "-i", "0"],
                          capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        return None
    return [part.strip() for part in done.stdout.strip().splitlines()[0].split(",")]


def one_run(index: int, cfg_json: str, device: str, timeout_s: float) -> dict:
    command = [sys.executable, str(Path(__file__).resolve()), "--child", "--device", device,
               "--config-json", cfg_json]
    began = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"index": index, "ok": False, "wall_s": time.perf_counter() - began,
                "error": f"stopped at the budget after {timeout_s:.0f} s"}
    wall = time.perf_counter() - began
    line = next((ln for ln in done.stdout.splitlines() if ln.startswith(CHILD_MARK)), None)
    if done.returncode != 0 or line is None:
        return {"index": index, "ok": False, "wall_s": wall,
                "error": f"exit {done.returncode}: {done.stderr.strip()[-2000:]}"}
    run = {"index": index, "ok": True, "wall_s": wall} | json.loads(line[len(CHILD_MARK):])
    smi = nvidia_smi(SMI_FIELDS)
    if smi is not None:
        run["gpu_after"] = dict(zip(SMI_FIELDS.split(","), smi, strict=True))
    return run


def write(out: Path, study: dict) -> None:
    runs = study["runs"]
    finished = [r for r in runs if r.get("ok")]
    if finished:
        study["environment"] = finished[0]["environment"] | study["environment"]
    study["summary"] = report.summarise(runs) if len(finished) >= report.MIN_RUNS else None
    out.mkdir(parents=True, exist_ok=True)
    (out / "gpu_noise.json").write_text(json.dumps(study, indent=1) + "\n", encoding="utf-8")
    if study["summary"] is not None:
        (out / "gpu_noise.md").write_text(report.markdown(study), encoding="utf-8")


def measure(args: argparse.Namespace) -> int:
    size = args.size or ("tiny" if args.device == "cpu" else "gpu")
    cfg = preset(size, requests=args.requests)
    cfg_json = json.dumps(cfg)
    environment = {"python": platform.python_version(), "host_cpus": os.cpu_count(), "size": size}
    smi = nvidia_smi("name,driver_version")
    if smi is not None:
        environment.update(nvidia_smi_name=smi[0], driver=smi[1])
    study = {"schema": SCHEMA, "command": "python benchmarks/gpu_noise.py " + shlex.join(sys.argv[1:]),
             "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "config": cfg,
             "environment": environment, "runs": []}
    began = time.perf_counter()
    slowest = 0.0
    for index in range(1, args.runs + 1):
        left = None if args.budget_s is None else args.budget_s - (time.perf_counter() - began)
        if left is not None and left < 1.2 * slowest:
            print(f"budget: stopping after {index - 1} runs ({left:.0f} s left, slowest run {slowest:.0f} s)")
            break
        run = one_run(index, cfg_json, args.device, timeout_s=left if left is not None else 3600.0)
        slowest = max(slowest, run["wall_s"])
        study["runs"].append(run)
        print(_progress(run), flush=True)
        write(args.out, study)
        if not any(r.get("ok") for r in study["runs"][-2:]):
            print("gpu_noise: two runs in a row failed; stopping", file=sys.stderr)
            break
    finished = sum(1 for r in study["runs"] if r.get("ok"))
    if finished < report.MIN_RUNS:
        print(f"gpu_noise: only {finished} runs finished, need {report.MIN_RUNS}; see {args.out / 'gpu_noise.json'}",
              file=sys.stderr)
        return 1
    print((args.out / "gpu_noise.md").read_text(encoding="utf-8"))
    return 0


def reanalyse(args: argparse.Namespace) -> int:
    try:
        study = json.loads(args.reanalyse.read_text(encoding="utf-8"))
        if study.get("schema") != SCHEMA or not isinstance(study.get("runs"), list):
            raise ValueError(f"expected a {SCHEMA} study with a list of runs")
        write(args.out, study)
    except (OSError, ValueError, KeyError, TypeError) as err:
        print(f"gpu_noise: {args.reanalyse}: {err}", file=sys.stderr)
        return 2
    if study["summary"] is None:
        print(f"gpu_noise: {args.reanalyse}: fewer than {report.MIN_RUNS} finished runs", file=sys.stderr)
        return 1
    print((args.out / "gpu_noise.md").read_text(encoding="utf-8"))
    return 0


def _progress(run: dict) -> str:
    if not run["ok"]:
        return f"run {run['index']}: FAILED ({run['error'].splitlines()[-1] if run['error'] else 'no message'})"
    s = run["scored"]
    return (f"run {run['index']}: {s['throughput_rps']:.2f} req/s, p95 {s['p95_latency_s']:.4f} s, "
            f"warm-up {run['warmup']['throughput_rps']:.2f} req/s, setup {run['setup_s']:.1f} s, "
            f"wall {run['wall_s']:.1f} s")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child:
        return run_child(args)
    if args.reanalyse is not None:
        return reanalyse(args)
    if args.served or args.served_combine:
        from noise import served
        if args.served_combine:
            print(served.combine(args.served_combine, args.out))
            return 0
        configs = [c.strip() for c in (args.configs or ",".join(served.CONFIGS)).split(",") if c.strip()]
        unknown = [c for c in configs if c not in served.CONFIGS]
        if unknown:
            print(f"gpu_noise: --configs: unknown {unknown}; known {list(served.CONFIGS)}", file=sys.stderr)
            return 2
        study = served.measure(args.out, args.runs, args.lease, configs, budget_s=args.budget_s or 3600.0)
        print((args.out / f"served-{args.lease}.md").read_text(encoding="utf-8"))
        return 0 if all(c["exit"] == 0 for c in study["configs"]) else 1
    return measure(args)


if __name__ == "__main__":
    sys.exit(main())
