"""The duet on the GPU (issue 53): `gate run --design duet` beside today's design, on one machine, in one call.

1. Today's design's components on this machine: `benchmarks.noise.nested` on graphs-b32 (K fresh server starts ×
   P timed passes; σ_start, σ_pass, start and pass cost), written as nested-<machine>.json.
2. A duet A/A: `gate run --ab BASE TWIN --design duet` (two stand-in checkouts of one build, the GPU decoder with
   CUDA graphs at batch 32; whisper, asr_en and asr_zh), one look after --aa-sessions sessions.
3. A duet A/B of the −3% proxy build (decoder knob `slow` 0.0309) with the runner's look after K₁ sessions.
Then `gate compare` of each pair (the verdict), and the gate's sessions (asr_en throughput blocks, the session's
seconds from gate-duet.json) are added to nested-<machine>.json as its `duet` and `duet_ab` studies, so
`python -m benchmarks.noise.components` sets them beside the interleave at equal GPU time.

    python3 -m benchmarks.noise.duet_gpu --out $OUT --machine E                 # on the GPU machine
    python3 -m benchmarks.noise.duet_gpu --out /tmp/d --plumbing --machine P    # the harness alone, on a CPU
"""
from __future__ import annotations

import argparse
import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.noise import nested

REPO = Path(__file__).resolve().parents[2]
GATE = "import sys; from gate.cli import main; sys.argv = ['gate', *sys.argv[1:]]; main()"


def build(root: Path, utterances: int, slow: float, plumbing: bool) -> dict[str, Path]:
    sys.path.insert(0, str(REPO / "tests"))
    from standin.build import make_checkout, make_hf_hub, small_suite

    from gate.formats.config import load_suite
    counts = {"seedtts_en": utterances, "seedtts_zh": utterances, "movies800times": 4, "aishell4_long": 2,
              "googletime": 3}
    root.mkdir(parents=True, exist_ok=True)
    suite = small_suite(root / "suite.yaml", counts, startup_timeout_s=300, stop_grace_s=10, client_timeout_s=300)
    hub = make_hf_hub(root / "hf_hub", load_suite(suite))
    decoder = {"module_dir": str(REPO / "benchmarks" / "noise"), "batch": 32, "graphs": True}
    server = (lambda extra: {}) if plumbing else (lambda extra: {"decoder": {**decoder, **extra}})
    return {"suite": suite, "hub": hub,
            "base": make_checkout(root / "base", knobs={"counts": counts, "server": server({})}),
            "twin": make_checkout(root / "twin", knobs={"counts": counts, "server": server({})}),
            "slow": make_checkout(root / "slow", knobs={"counts": counts, "server": server({"slow": slow})})}


def gate_duet(work: dict[str, Path], out: Path, scratch: Path, name: str, cand: str, sessions: str, port: int, timeout_s: float,
              plumbing: bool) -> dict:
    results = scratch / name
    shutil.rmtree(results, ignore_errors=True)
    argv = [sys.executable, "-c", GATE, "run", "--ab", str(work["base"]), str(work[cand]), "--names", "base,pr",
            "--design", "duet", "--sessions", sessions, "--out", str(results), "--suite", str(work["suite"]),
            "--hf-hub", str(work["hub"]), "--port", str(port), "--lock-dir", str(scratch),
            "--no-dataset-fingerprints", "--models", "whisper", *(["--no-gpu"] if plumbing else [])]
    began = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _, stderr = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:  # SIGTERM: the gate stops both servers and keeps the sessions it completed
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=120)
        stderr += f"\n(harness: stopped by SIGTERM after {timeout_s:.0f} s)"
    code = proc.returncode
    record: dict = {"name": name, "command": " ".join(argv[3:]), "gate_run_exit": code,
                    "gate_run_wall_s": round(time.perf_counter() - began, 1), "stderr_tail": stderr[-3000:]}
    compare = subprocess.run([sys.executable, "-c", GATE, "compare", str(results / "base"), str(results / "pr"),
                              "--models", "whisper", "--suite", str(work["suite"])], capture_output=True, text=True)
    (out / f"compare-{name}.txt").write_text(compare.stdout[-12000:] + "\n--- stderr\n" + compare.stderr[-2000:])
    record["compare_exit"] = compare.returncode
    record["verdict_line"] = next((ln for ln in compare.stdout.splitlines() if ln.startswith("Verdict")), None)
    record["looks_line"] = next((ln for ln in compare.stdout.splitlines() if ln.startswith("Looks")), None)
    try:
        record["duet"] = json.loads((results / "pr" / "gate-duet.json").read_text())
    except (OSError, ValueError):
        record["duet"] = None
    record["sessions"] = sessions_of(results, record["duet"])
    return record


def sessions_of(results: Path, duet: dict | None) -> list[dict]:
    """The gate's sessions in nested.py's duet shape: blocks in order with asr_en throughput (A = base, B = pr)."""
    if not duet:
        return []
    out = []
    for s in duet["sessions"]:
        if s.get("status") != "completed":
            continue
        blocks = []
        for b in s["blocks"]:
            try:
                doc = json.loads((results / b["side"] / b["run"] / "whisper" / "asr_en.json").read_text())
                agg = doc["summary"]["results"][0] if "summary" in doc else doc["results"][0]
                value = agg["throughput_samples_per_s"]
                value = value.get("mean") if isinstance(value, dict) else value
            except (OSError, ValueError, KeyError, IndexError, TypeError):
                continue
            blocks.append({"side": "A" if b["side"] == "base" else "B", "run": b["run"], "throughput": float(value),
                           "wall_s": b["seconds"]})
        out.append({"session": s["session"], "blocks": blocks, "wall_s": s.get("seconds", 0.0)})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--machine", default="E")
    parser.add_argument("--utterances", type=int, default=96, help="asr_en and asr_zh utterances a block")
    parser.add_argument("--slow", type=float, default=0.0309)
    parser.add_argument("--nested-s", type=float, default=90.0, help="seconds for today's design's components")
    parser.add_argument("--aa-sessions", default="8,8")
    parser.add_argument("--ab-sessions", default="4,8")
    parser.add_argument("--timeout-s", type=float, default=240.0, help="each gate run's limit")
    parser.add_argument("--work", type=Path, default=Path("/tmp/duet-gpu-work"), help="checkouts and result trees")
    parser.add_argument("--plumbing", action="store_true", help="no decoder, --no-gpu: the harness alone, on a CPU")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    work = args.work
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    path = args.out / f"nested-{args.machine}.json"
    if args.nested_s > 0:
        nested.main(["--out", str(args.out), "--machine", args.machine, "--configs", "graphs-b32", "--budget-s",
                     str(args.nested_s), "--max-starts", "40", *(["--no-decoder"] if args.plumbing else [])])
    study = json.loads(path.read_text()) if path.exists() else {"schema": nested.SCHEMA, "machine_label": args.machine,
                                                                 "machine": nested.machine(), "configs": []}
    built = build(work / "checkouts", args.utterances, args.slow, args.plumbing)
    result: dict = {"schema": "duet-gpu/1", "machine": args.machine, "command": "python3 -m benchmarks.noise.duet_gpu "
                    + " ".join(sys.argv[1:] if argv is None else argv), "runs": []}
    for index, (name, cand, sessions) in enumerate((("aa", "twin", args.aa_sessions), ("ab", "slow", args.ab_sessions))):
        rec = gate_duet(built, args.out, work, name, cand, sessions, 18770 + 10 * index, args.timeout_s, args.plumbing)
        result["runs"].append(rec)
        study["duet" if name == "aa" else "duet_ab"] = {"config": "graphs-b32", "utterances": args.utterances,
                                                        "pairs_per_session": 1, "slow_b": 0.0 if name == "aa" else args.slow,
                                                        "sessions": rec["sessions"], "source": "gate run --design duet"}
        path.write_text(json.dumps(study, indent=1) + "\n")
        (args.out / f"duet-gpu-{args.machine}.json").write_text(json.dumps(result, indent=1) + "\n")
        print(json.dumps({k: rec[k] for k in ("name", "gate_run_exit", "gate_run_wall_s", "compare_exit",
                                              "verdict_line", "looks_line")}), flush=True)
        if rec["gate_run_exit"] not in (0,):
            print(rec["stderr_tail"][-1500:], flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
