#!/usr/bin/env bash
# `gate run` on a real GPU with the stand-in sglang-omni (tests/standin, a test double that really holds
# GPU memory through torch): gpu-marked tests, one end-to-end run whose server groups must release the
# memory (GPU-free waits) with telemetry, the GPU-busy case, and the overhead benchmark.
# Needs: python3 with torch (CUDA), pynvml, httpx, click, jinja2, pyyaml, pytest. No network.
# Usage (repo root): bash benchmarks/gpu_e2e.sh [OUT_DIR]
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
OUT="${1:-${OUT:-/tmp/gate-gpu-e2e}}"
rm -rf "$OUT/work"; mkdir -p "$OUT/work"
status=0
gate() { python3 -c "import sys; from gate.cli import main; sys.argv = ['gate', 'run', *sys.argv[1:]]; main()" "$@"; }

echo "== nvidia-smi"; nvidia-smi --query-gpu=index,name,uuid,memory.used,memory.total --format=csv || true

echo "== gpu-marked tests"
python3 -m pytest -q -m gpu tests/e2e/run -p no:cacheprovider || status=1

echo "== gate run end to end on the GPU (stand-in servers hold 4 GiB each)"
python3 tests/standin/build.py "$OUT/work/bench" --knobs '{"server": {"gpu_mib": 4096}}' >/dev/null
W="$OUT/work/bench"
gate --checkout "$W/checkout" --out "$W/results" --suite "$W/suite.yaml" --hf-hub "$W/hf_hub" --port 18741 \
     --lock-dir "$W" --no-dataset-fingerprints --runs warm,1 || status=1
python3 - "$W/results/main" <<'PY' || status=1
import json, sys
from pathlib import Path
tree = Path(sys.argv[1])
log = json.loads((tree / "gate-run.json").read_text())
print("gate-run status:", log["status"], log["runs"])
for s in log["steps"]:
    if s["step"] in ("server-ready", "server-stop", "gpu-free") and s["model"]:
        print(f"  run{s['run']:5} {s['model']:8} {s['step']:12} {s['seconds']:7.3f} s  {s['message'] or ''}")
for run in ("runwarm", "run1"):
    t = json.loads((tree / run / "telemetry.json").read_text())
    print(run, "telemetry summary:", json.dumps(t["summary"]))
    assert t["available"] and t["summary"]["samples"] > 0, "no telemetry samples"
    assert t["summary"]["memory_used_mib_max"] >= 4096, "the stand-in did not hold GPU memory"
env = json.loads((tree / "run1" / "env.json").read_text())
print("server.log of run1/qwen3:\n" + (tree / "run1/qwen3/server.log").read_text()[-600:])
print("env.json gpu:", json.dumps(env["gpu"]), "cpu_set:", env["cpu_set"])
assert env["gpu"]["uuid"].startswith("GPU-")
assert log["status"] == "completed"
PY

echo "== a GPU already in use by another process: bounded wait, clear message"
python3 - "$W" <<'PY' || status=1
import subprocess, sys, re
from pathlib import Path
W = Path(sys.argv[1])
holder = subprocess.Popen([sys.executable, "-c", "import torch, time; x = torch.ones(3 * 2**30, dtype=torch.uint8, "
                           "device='cuda'); torch.cuda.synchronize(); print('held', flush=True); time.sleep(120)"],
                          stdout=subprocess.PIPE, text=True)
assert holder.stdout.readline().strip() == "held"
text = (W / "suite.yaml").read_text()
(W / "busy.yaml").write_text(re.sub(r"gpu_free_timeout_s: \d+", "gpu_free_timeout_s: 3", text))
code = "import sys; from gate.cli import main; sys.argv = ['gate', 'run', *sys.argv[1:]]; main()"
done = subprocess.run([sys.executable, "-c", code, "--checkout", str(W / "checkout"), "--out", str(W / "busy"),
                       "--suite", str(W / "busy.yaml"), "--hf-hub", str(W / "hf_hub"), "--port", "18742",
                       "--lock-dir", str(W), "--no-dataset-fingerprints", "--runs", "1", "--models", "qwen3"],
                      capture_output=True, text=True)
holder.kill(); holder.wait()
print("exit", done.returncode, "|", done.stderr.strip().splitlines()[-1])
assert done.returncode == 3 and "still has" in done.stderr and "processes on it" in done.stderr
PY

echo "== two looks on the GPU, the gate's own decider: every qwen3 utterance loses a word, 6 of 30 of whisper's, none of fun's"
python3 - "$OUT/work/looks" <<'PY' || status=1
import json, subprocess, sys
from pathlib import Path
sys.path.insert(0, "tests")
from standin.build import make_checkout, make_hf_hub, small_suite
from gate.formats.config import load_suite
W = Path(sys.argv[1]); W.mkdir(parents=True)
counts = {"seedtts_en": 30, "seedtts_zh": 5, "movies800times": 4, "aishell4_long": 2, "googletime": 3}
suite = small_suite(W / "suite.yaml", counts)
hub = make_hf_hub(W / "hf_hub", load_suite(suite))
base = make_checkout(W / "main", knobs={"counts": counts, "server": {"gpu_mib": 2048}})
pr = make_checkout(W / "pr", knobs={"counts": counts, "server": {"gpu_mib": 2048, "drop_word": {"qwen3": 1.0, "whisper": 0.4}}})
gate = "import sys; from gate.cli import main; sys.argv = ['gate', *sys.argv[1:]]; main()"
run = subprocess.run([sys.executable, "-c", gate, "run", "--ab", str(base), str(pr), "--names", "base,pr",
                      "--out", str(W / "results"), "--suite", str(suite), "--hf-hub", str(hub), "--port", "18743",
                      "--lock-dir", str(W), "--no-dataset-fingerprints", "--models", "qwen3,whisper,fun"],
                     capture_output=True, text=True)
print("\n".join(run.stderr.splitlines()[-12:]))
looks = json.loads((W / "results/pr/gate-run.json").read_text())["looks"]
for model, look in looks.items():
    print(f"gate-run.json looks[{model}]:", json.dumps(look))
report = subprocess.run([sys.executable, "-c", gate, "compare", str(W / "results/base"), str(W / "results/pr"),
                         "--models", "qwen3,whisper,fun", "--suite", str(suite)], capture_output=True, text=True)
print(report.stdout[-2500:], report.stderr[-2000:], f"gate compare exit {report.returncode}", sep="\n")
assert run.returncode == 0, run.stderr[-2000:]
assert report.returncode == 1 and "Looks: whisper: first look 3+3 → extend" in report.stdout
assert looks["qwen3"]["first"]["action"] == "fail" and not looks["qwen3"]["extended"]
assert looks["whisper"]["extended"] and looks["whisper"]["final"] in ("pass", "fail")
assert looks["fun"]["first"]["action"] == "pass" and not looks["fun"]["extended"]
PY

echo "== overhead benchmark (GPU mode)"
python3 benchmarks/bench_run_overhead.py --deaths 5 --json-out "$OUT/bench_run_overhead.json" || status=1
echo "== done, status $status"
exit $status
