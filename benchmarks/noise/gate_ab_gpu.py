"""`gate run --ab` end to end on the GPU stand-in at today's design (issue 37): an A/B of a −3% proxy build and an A/A.

Both sides are stand-in checkouts whose server decodes every transcription with the Whisper-large-v3-shaped
decoder (CUDA graphs, batch 32, benchmarks/noise/asr_decoder.py); the candidate of the A/B carries the decoder
knob `slow` (each decode step sleeps that share of its own time: 0.0309 is about −3% throughput with the same
kernels, as in the duet A/B). One model (whisper: asr_en and asr_zh), the suite's own design: a fresh server per
run, the client's warm-up pass and one timed pass, warm A, warm B, 3+3 interleaved, then the second look.
GPU mode (NVML, telemetry, GPU-free waits). Then `gate compare` gives the verdict.

    python3 -m benchmarks.noise.gate_ab_gpu --out $OUT --utterances 128    # on the GPU machine

Needs the gate's runtime packages (click, jinja2, pyyaml, httpx, nvidia-ml-py, ...) and torch. Writes
<out>/gate-ab-gpu.json (verdicts, cycle counts, looks, wall times) and the compare reports as text.
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
GATE = "import sys; from gate.cli import main; sys.argv = ['gate', *sys.argv[1:]]; main()"


def cycles(tree: Path) -> dict:
    """Server starts and scored runs of one side, from its gate-run.json."""
    log = json.loads((tree / "gate-run.json").read_text())
    starts = [s for s in log["steps"] if s["step"] == "server-ready" and s.get("model")]
    return {"status": log.get("status"), "runs": log.get("runs"), "server_starts": len(starts),
            "looks": log.get("looks")}


def one(work: Path, out: Path, name: str, slow: float, utterances: int, port: int, timeout_s: float,
        plumbing: bool = False) -> dict:
    sys.path.insert(0, str(REPO / "tests"))
    from standin.build import make_checkout, make_hf_hub, small_suite

    from gate.formats.config import load_suite
    root = work / name
    if root.exists():  # the harness's own scratch from an earlier call on this machine
        shutil.rmtree(root)
    root.mkdir(parents=True)
    counts = {"seedtts_en": utterances, "seedtts_zh": utterances, "movies800times": 4, "aishell4_long": 2,
              "googletime": 3}
    suite = small_suite(root / "suite.yaml", counts, client_timeout_s=300)
    hub = make_hf_hub(root / "hf_hub", load_suite(suite))
    decoder = {"module_dir": str(REPO / "benchmarks" / "noise"), "batch": 32, "graphs": True}
    knobs_b = {"decoder": {**decoder, "slow": slow} if slow else decoder}
    base = make_checkout(root / "base", knobs={"counts": counts, "server": {} if plumbing else {"decoder": decoder}})
    pr = make_checkout(root / "pr", knobs={"counts": counts, "server": {} if plumbing else knobs_b})
    began = time.perf_counter()
    run = subprocess.run([sys.executable, "-c", GATE, "run", "--ab", str(base), str(pr), "--names", "base,pr",
                          "--out", str(root / "results"), "--suite", str(suite), "--hf-hub", str(hub),
                          "--port", str(port), "--lock-dir", str(root), "--no-dataset-fingerprints",
                          "--models", "whisper", *(["--no-gpu"] if plumbing else [])], capture_output=True, text=True, timeout=timeout_s)
    wall = time.perf_counter() - began
    (out / f"gate-run-{name}.txt").write_text(run.stderr[-6000:])
    record: dict = {"name": name, "slow": slow, "utterances": utterances, "gate_run_exit": run.returncode,
                    "gate_run_wall_s": round(wall, 1)}
    if run.returncode != 0:
        record["error"] = run.stderr[-1500:]
        return record
    record["base"] = cycles(root / "results" / "base")
    record["pr"] = cycles(root / "results" / "pr")
    report = subprocess.run([sys.executable, "-c", GATE, "compare", str(root / "results" / "base"),
                             str(root / "results" / "pr"), "--models", "whisper", "--suite", str(suite)],
                            capture_output=True, text=True)
    (out / f"compare-{name}.txt").write_text(report.stdout[-8000:] + "\n--- stderr\n" + report.stderr[-2000:])
    record["compare_exit"] = report.returncode
    record["verdict_lines"] = [line for line in report.stdout.splitlines()
                               if any(k in line for k in ("FAIL", "PASS", "WARN", "Looks:", "Verdict", "verdict"))][:20]
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--work", type=Path, default=Path("/tmp/gate-ab-gpu"))
    parser.add_argument("--utterances", type=int, default=128, help="asr_en and asr_zh utterances a pass")
    parser.add_argument("--slow", type=float, default=0.0309)
    parser.add_argument("--only", default="ab,aa", help="which of ab, aa, in order")
    parser.add_argument("--plumbing", action="store_true", help="no decoder, --no-gpu: the harness alone, on a CPU")
    parser.add_argument("--timeout-s", type=float, default=420.0, help="one gate run's limit")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    args.work.mkdir(parents=True, exist_ok=True)
    result: dict = {"schema": "gate-ab-gpu/1", "command": "python3 -m benchmarks.noise.gate_ab_gpu "
                    + " ".join(sys.argv[1:] if argv is None else argv), "runs": []}
    path = args.out / "gate-ab-gpu.json"
    for index, which in enumerate(c for c in args.only.split(",") if c):
        slow = args.slow if which == "ab" else 0.0
        try:
            rec = one(args.work, args.out, which, slow, args.utterances, 18751 + index, args.timeout_s,
                      args.plumbing)
        except subprocess.TimeoutExpired as exc:
            rec = {"name": which, "slow": slow, "error": f"timeout after {exc.timeout} s"}
        result["runs"].append(rec)
        path.write_text(json.dumps(result, indent=1) + "\n")
        print(json.dumps({k: v for k, v in rec.items() if k not in ("error",)})[:1500], flush=True)
        if "error" in rec:
            print(rec["error"], flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
