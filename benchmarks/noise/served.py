"""The served noise study: `gate run` drives a Whisper-large-v3-shaped decoder behind the stand-in server.

Per configuration (eager or CUDA graphs, batch 1 or 32) a stand-in checkout is built whose server decodes
every transcription on the GPU (asr_decoder.py, knob `decoder`), and `gate run --runs warm,1..N --models
whisper` measures it exactly as it measures sglang-omni: a fresh server per run, the SeedTTS client at
concurrency 32 with its warm-up pass, telemetry (GPU clocks, throttle reasons, host load, CPU steal) per run.
The figures come from the result tree gate run wrote. Each lease's study is one JSON; `combine` puts two
leases side by side (the between-lease effect).

    python benchmarks/gpu_noise.py --served --runs 5 --out $OUT --lease A          # on the GPU machine
    python benchmarks/gpu_noise.py --served-combine A.json B.json --out results   # anywhere (numpy, scipy)
"""
from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from . import analysis

REPO = Path(__file__).resolve().parents[2]
SCHEMA = "gpu-noise-served/1"
# name -> (batch slots, CUDA graphs, utterances per workload): batch 1 gets fewer utterances so an eager run
# stays within ~20 s; every run of a configuration does the same work.
CONFIGS = {
    "graphs-b32": (32, True, 192),
    "eager-b32": (32, False, 192),
    "graphs-b1": (1, True, 16),
    "eager-b1": (1, False, 16),
}
WORKLOADS = ("asr_en", "asr_zh")
GATE_EXTRA: list[str] = []  # e.g. ["--no-gpu"] to try the study's plumbing on a machine without a GPU
GATE_RUN = "import sys\nfrom gate.cli import main\nsys.argv = ['gate', 'run', *sys.argv[1:]]\nmain()\n"


def build(dest: Path, batch: int, graphs: bool, count: int) -> None:
    sys.path.insert(0, str(REPO / "tests"))
    from standin.build import SMALL_COUNTS, make_checkout, make_hf_hub, small_suite

    from gate.formats.config import load_suite
    counts = {**SMALL_COUNTS, "seedtts_en": count, "seedtts_zh": count}
    knobs = {"counts": counts, "server": {"decoder": {"module_dir": str(Path(__file__).resolve().parent),
                                                      "batch": batch, "graphs": graphs}}}
    make_checkout(dest / "checkout", knobs=knobs)
    small_suite(dest / "suite.yaml", counts, startup_timeout_s=600, stop_grace_s=10, client_timeout_s=900)
    make_hf_hub(dest / "hf_hub", load_suite(dest / "suite.yaml"))


def run_config(work: Path, name: str, runs: int, port: int, timeout_s: float = 300) -> dict:
    batch, graphs, count = CONFIGS[name]
    dest = work / name
    shutil.rmtree(dest, ignore_errors=True)  # a study re-run into the same --out starts from a fresh stand-in
    build(dest, batch, graphs, count)
    run_names = ["warm", *[str(i) for i in range(1, runs + 1)]]
    command = [sys.executable, "-c", GATE_RUN, "--checkout", str(dest / "checkout"), "--out", str(dest / "results"),
               "--suite", str(dest / "suite.yaml"), "--hf-hub", str(dest / "hf_hub"), "--port", str(port),
               "--lock-dir", str(dest), "--no-dataset-fingerprints", "--models", "whisper",
               "--runs", ",".join(run_names), *GATE_EXTRA]
    began = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        _, stderr = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:  # SIGTERM: the gate stops its server and keeps the runs it completed
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=120)
        stderr += f"\n(study: stopped by SIGTERM at its {timeout_s:.0f} s share of the budget)"
    done = subprocess.CompletedProcess(command, proc.returncode, "", stderr)
    record: dict = {"name": name, "batch": batch, "graphs": graphs, "utterances": count, "exit": done.returncode,
                    "wall_s": round(time.perf_counter() - began, 1), "stderr_tail": done.stderr[-3000:], "runs": []}
    tree = dest / "results" / "main"
    for run in run_names:
        record["runs"].append(read_run(tree / f"run{run}", run))
    return record


def read_run(run_dir: Path, run: str) -> dict:
    out: dict = {"run": run}
    for workload in WORKLOADS:
        try:
            doc = json.loads((run_dir / "whisper" / f"{workload}.json").read_text())
            summary = doc.get("summary", doc)
            agg = summary["results"][0] if "results" in summary else summary
            out[workload] = {key: _mean(agg.get(key)) for key in
                             ("throughput_samples_per_s", "latency_p95_s", "latency_p99_s", "latency_mean_s",
                              "wall_clock_s")}
        except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:
            out[workload] = {"error": f"{type(exc).__name__}: {exc}"}
    try:
        out["telemetry"] = json.loads((run_dir / "telemetry.json").read_text())["summary"]
    except (OSError, ValueError, KeyError):
        out["telemetry"] = None
    try:
        log = (run_dir / "whisper" / "server.log").read_text()
        out["decoder_ready"] = next((ln for ln in log.splitlines() if "decoder batch=" in ln), None)
    except OSError:
        out["decoder_ready"] = None
    return out


def _mean(value):
    return value.get("mean") if isinstance(value, dict) else value


def measure(out: Path, runs: int, lease: str, configs: list[str], port: int = 18800, budget_s: float = 3600) -> dict:
    """Each config gets an equal share of what is left of the budget; past it, the gate is sent SIGTERM."""
    work = out / "work"
    study: dict = {"schema": SCHEMA, "lease": lease, "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                   "command": "python benchmarks/gpu_noise.py " + " ".join(sys.argv[1:]), "host_cpus": os.cpu_count(),
                   "gpu": _smi("name,driver_version,clocks.max.sm,clocks.applications.graphics"), "configs": []}
    began = time.perf_counter()
    for index, name in enumerate(configs):
        share = max(60.0, (budget_s - (time.perf_counter() - began)) / (len(configs) - index))
        study["configs"].append(run_config(work, name, runs, port + index, timeout_s=share))
        study["summary"] = summarise(study)
        (out / f"served-{lease}.json").write_text(json.dumps(study, indent=1) + "\n")
        print(f"{name}: exit {study['configs'][-1]['exit']}, {study['configs'][-1]['wall_s']} s", flush=True)
    (out / f"served-{lease}.md").write_text(markdown(study))
    return study


def _smi(fields: str) -> str | None:
    try:
        done = subprocess.run(["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader"], capture_output=True,
                              text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None


def scored(config: dict, workload: str, key: str = "throughput_samples_per_s") -> list[float]:
    values = []
    for run in config["runs"]:
        if run["run"] == "warm":
            continue
        value = run.get(workload, {}).get(key)
        if isinstance(value, (int, float)) and value > 0:
            values.append(float(value))
    return values


def figures(values: list[float]) -> dict | None:
    """σ of ln(value) (≈ relative SD), its 95% CI, the run-1 effect and the worst run's distance from the median."""
    if len(values) < 3:
        return None
    y = np.log(values)
    sigma = analysis.sigma_with_ci(y)
    first = analysis.first_run_effect(y)
    return {"n": len(values), "mean": float(np.mean(values)), "sigma_pct": 100 * sigma.sd,
            "sigma_ci_pct": [100 * sigma.ci_low, 100 * sigma.ci_high],
            "run1_effect_pct": first.percent, "run1_p": first.p_two_sided,
            "max_dev_from_median_pct": float(100 * np.max(np.abs(np.expm1(y - np.median(y)))))}


def summarise(study: dict) -> dict:
    summary: dict = {}
    for config in study["configs"]:
        for workload in WORKLOADS:
            key = f"{config['name']}/{workload}"
            summary[key] = {"throughput": figures(scored(config, workload)),
                            "p95_latency": figures(scored(config, workload, "latency_p95_s"))}
        tele = [r["telemetry"] for r in config["runs"] if r.get("telemetry")]
        summary[config["name"]] = {"telemetry": _telemetry_range(tele)}
    return summary


def _telemetry_range(summaries: list[dict]) -> dict:
    def span(key: str):
        v = [s[key] for s in summaries if isinstance(s.get(key), (int, float))]
        return [min(v), max(v)] if v else None
    return {key: span(key) for key in ("sm_clock_mhz_min", "sm_clock_mhz_mean", "throttled_share", "temperature_c_max",
                                       "power_w_mean", "load1_max", "cpu_steal_share")}


def _cell(fig: dict | None, key: str = "sigma_pct") -> str:
    if fig is None:
        return "n/a"
    if key == "sigma_pct":
        low, high = fig["sigma_ci_pct"]
        return f"{fig['sigma_pct']:.2f}% [{low:.2f}, {high:.2f}]"
    return f"{fig[key]:+.2f}%" if key == "run1_effect_pct" else f"{fig[key]:.2f}%"


def markdown(study: dict) -> str:
    lines = [f"# Served noise study, lease {study['lease']} ({study['started']}, {study['gpu']})", "",
             f"`{study['command']}`", "",
             "| config / workload | runs | mean req/s | σ throughput [95% CI] | run-1 effect | worst run vs median "
             "| σ p95 latency |", "|---|---|---|---|---|---|---|"]
    for key, fig in study["summary"].items():
        if "/" not in key:
            continue
        t, p = fig["throughput"], fig["p95_latency"]
        mean = f"{t['mean']:.2f}" if t else "n/a"
        lines.append(f"| {key} | {t['n'] if t else 0} | {mean} | {_cell(t)} | {_cell(t, 'run1_effect_pct')} | "
                     f"{_cell(t, 'max_dev_from_median_pct')} | {_cell(p)} |")
    lines += ["", "| config | SM clock min (MHz) | throttled share | load1 max | CPU steal share |", "|---|---|---|---|---|"]
    for config in study["configs"]:
        tele = study["summary"][config["name"]]["telemetry"]
        lines.append(f"| {config['name']} | {tele['sm_clock_mhz_min']} | {tele['throttled_share']} | "
                     f"{tele['load1_max']} | {tele['cpu_steal_share']} |")
    return "\n".join(lines) + "\n"


def combine(paths: list[Path], out: Path) -> str:
    """Leases side by side: per config and workload, the first two leases that measured it, each lease's mean
    and σ, their difference and its t against σ (a config measured on one lease only is left out)."""
    studies = [json.loads(p.read_text()) for p in paths]
    lines = ["# Between leases", "", "| config / workload | first lease: mean req/s (σ) | second lease: mean req/s (σ) "
             "| second − first | t (Welch) |", "|---|---|---|---|---|"]
    configs: dict[str, list[tuple[str, dict]]] = {}
    for study in studies:
        for c in study["configs"]:
            configs.setdefault(c["name"], []).append((study["lease"], c))
    for name, found in configs.items():
        if len(found) < 2:
            continue
        for workload in WORKLOADS:
            logs = [np.log(scored(c, workload)) for _, c in found[:2]]
            if min(len(v) for v in logs) < 2:
                continue
            cells = [f"{lease}: {math.exp(v.mean()):.2f} ({100 * v.std(ddof=1):.2f}%)"
                     for (lease, _), v in zip(found[:2], logs, strict=True)]
            diff = logs[1].mean() - logs[0].mean()
            se = math.sqrt(sum(v.var(ddof=1) / v.size for v in logs))
            lines.append(f"| {name}/{workload} | " + " | ".join(cells) + f" | {100 * math.expm1(diff):+.2f}% | "
                         f"{diff / se if se else float('nan'):+.2f} |")
    text = "\n".join(lines) + "\n"
    out.mkdir(parents=True, exist_ok=True)
    (out / "served-between-leases.md").write_text(text)
    return text
