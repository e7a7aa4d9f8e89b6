"""Checks before the GPU is touched; every problem is one line, and all of them are reported at once.

The dataset check is the runbook's Step 3 check run in the checkout's own Python with the Step 4
environment (HF_HUB_OFFLINE=1), only for the datasets the selected workloads need. The port is checked
later, after the gate's own leftovers are stopped. The MOSS dataset
fingerprints are recorded as Step 3 does (`load_dataset(...)._fingerprint`), best effort.
"""
from __future__ import annotations

import json
import os
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from gate.formats.config import Suite, Workload
from gate.formats.errors import GateError
from gate.runner.gpu import GpuInfo, GpuProvider, cpu_set
from gate.runner.plan import Arm, RunStep

DATASET_CHECK_TIMEOUT_S = 1800


class PreflightFailed(GateError):
    """One or more preflight checks failed; the message has one line per problem."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("preflight failed:\n  " + "\n  ".join(problems))
        self.problems = tuple(problems)


@dataclass(frozen=True)
class SideFacts:
    python_version: str | None
    datasets: Mapping[str, Mapping[str, Any]]  # dataset id -> {revision, loaded_fingerprint, remote_head, count...}


@dataclass(frozen=True)
class Preflight:
    gpu: GpuInfo | None
    cpu_set: str | None
    sides: Mapping[str, SideFacts] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


# Runs inside the checkout's python: the runbook's Step 3 loader calls, one dataset at a time, so one
# failure does not hide the others. Prints one JSON object on its last line.
_DATASET_CHECK = r"""
import json, sys
spec = json.loads(sys.argv[1])
out = {"python": sys.version.split()[0], "checks": {}, "fingerprints": {}}
for key, item in spec["checks"].items():
    try:
        if item["kind"] == "seedtts":
            from benchmarks.dataset.seedtts import load_seedtts_samples, SEEDTTS_DATASET_ID
            n = len(load_seedtts_samples(SEEDTTS_DATASET_ID, split=item["lang"], revision=item["revision"]))
        else:
            from benchmarks.tasks.transcribe_diarize import load_movies800_samples
            n = len(load_movies800_samples(item["repo"], split="validation", audio_column="audio",
                                           expected_column="transcription", expected_sample_count=None))
        out["checks"][key] = {"count": n}
    except BaseException as exc:
        out["checks"][key] = {"error": (type(exc).__name__ + ": " + str(exc)).splitlines()[0][:300]}
for repo in spec["fingerprints"]:
    try:
        import datasets
        out["fingerprints"][repo] = {"loaded_fingerprint": datasets.load_dataset(repo, split="validation")._fingerprint}
    except BaseException as exc:
        out["fingerprints"][repo] = {"loaded_fingerprint": None,
                                     "error": (type(exc).__name__ + ": " + str(exc)).splitlines()[0][:300]}
print(json.dumps(out))
"""


def run_preflight(suite: Suite, steps: tuple[RunStep, ...], *, gpu: GpuProvider, gpu_index: int | None,
                  base_env: Mapping[str, str], fingerprints: bool = True, venv_check: bool = True) -> Preflight:
    problems: list[str] = []
    notes: list[str] = []
    sides: dict[str, SideFacts] = {}
    seen: set[str] = set()
    for step in steps:
        side = step.side
        if side.name in seen:
            continue
        seen.add(side.name)
        side_problems = _check_side(side, step)
        problems += side_problems
        if side_problems:
            continue
        env = {**base_env, **step.environment}
        if venv_check:
            problem, note = _check_venv_pins(side, env)
            problems += [problem] if problem else []
            notes += [note] if note else []
        facts, dataset_problems = _check_datasets(suite, side, env, tuple(c.workload for m in step.models
                                                                          for c in m.clients), fingerprints)
        problems += dataset_problems
        sides[side.name] = facts
    if steps:
        for model in steps[0].models:
            if not (model.snapshot / "config.json").is_file():
                problems.append(f"{model.snapshot}/config.json: missing; expected the {model.model_id} snapshot at "
                                f"revision {model.revision} (runbook Step 3; set --hf-hub)")
    gpu_info = None
    cpus = None
    if gpu.available:
        devices = gpu.devices()
        if gpu_index is None and len(devices) != 1:
            problems.append(f"GPU: {len(devices)} GPUs visible to NVML; the runbook measures on exactly one "
                            "(give the runner one GPU, or pick one with --gpu INDEX)")
        elif gpu_index is not None and not 0 <= gpu_index < len(devices):
            problems.append(f"GPU: --gpu {gpu_index} but NVML sees {len(devices)} GPU(s)")
        else:
            gpu_info = devices[gpu_index or 0]
            cpus = cpu_set(gpu_info.pci_bus_id)
            if cpus is None:
                notes.append(f"CPU set of GPU {gpu_info.index} ({gpu_info.pci_bus_id}) not found in sysfs; recorded as null")
    else:
        notes.append(gpu.reason)
    if problems:
        raise PreflightFailed(problems)
    return Preflight(gpu=gpu_info, cpu_set=cpus, sides=sides, notes=tuple(notes))


def _check_side(side: Arm, step: RunStep) -> list[str]:
    if not side.checkout.is_dir():
        return [f"{side.checkout}: no such directory; expected an sglang-omni checkout (runbook Step 2): check the --checkout path"]
    problems = []
    if not (side.python.is_file() and os.access(side.python, os.X_OK)):
        problems.append(f"{side.python}: missing or not executable; expected the checkout's venv python "
                        "(build it in the checkout as runbook Step 2 does, `uv venv .venv`, or pass --python)")
    for model in step.models[:1]:
        server = Path(model.server_argv[0])
        if server.is_absolute() and not (server.is_file() and os.access(server, os.X_OK)):
            problems.append(f"{server}: missing or not executable; expected the server entry point of the checkout's venv")
    return problems


VERIFY_PINS = Path(".github/scripts/verify_omni_installed_pins.py")


def _check_venv_pins(side: Arm, env: Mapping[str, str]) -> tuple[str | None, str | None]:
    """Runbook Step 2's last line: the venv must hold the checkout's exact pins. (problem, note)"""
    script = side.checkout / VERIFY_PINS
    if not script.is_file():
        return None, f"{script}: not in this checkout; venv pins not verified"
    argv = [str(side.python), str(script), str(side.python), str(side.checkout)]
    try:
        done = subprocess.run(argv, cwd=side.checkout, env=dict(env), capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{script}: could not run ({exc})", None
    last = ((done.stdout + done.stderr).strip().splitlines() or ["no output"])[-1]
    if done.returncode != 0:
        return (f"{side.python}: the venv does not match the checkout's pins (runbook Step 2; rebuild it, or "
                f"--skip-venv-check): {last}"), None
    return None, None


def _dataset_check(suite: Suite, side: Arm, workloads: tuple[Workload, ...],
                   fingerprints: bool) -> tuple[list[str], dict[str, int]]:
    """The dataset check's argv (empty when no dataset is needed) and the sample count expected per check."""
    checks: dict[str, dict] = {}
    expected: dict[str, int] = {}
    for w in workloads:
        spec = suite.datasets[w.dataset]
        if w.format == "seedtts":
            key = f"{spec.id}:{w.lang}"
            checks[key] = {"kind": "seedtts", "lang": w.lang, "revision": spec.revision}
        else:
            key = spec.id
            checks[key] = {"kind": "moss", "repo": spec.id}
        expected[key] = w.expected_samples
    repos = sorted({suite.datasets[w.dataset].id for w in workloads if w.format == "moss"}) if fingerprints else []
    if not checks:
        return [], {}
    return [str(side.python), "-c", _DATASET_CHECK, json.dumps({"checks": checks, "fingerprints": repos})], expected


def preflight_lines(suite: Suite, steps: tuple[RunStep, ...], *, fingerprints: bool = True,
                    venv_check: bool = True) -> list[str]:
    """What run_preflight runs, as shell lines for `gate run --dry-run` (the same argv, in the same order)."""
    lines = ["# --- preflight (runbook Steps 2-3): nothing touches the GPU; every problem is reported at once"]
    seen: set[str] = set()
    for step in steps:
        side = step.side
        if side.name in seen:
            continue
        seen.add(side.name)
        lines.append(f"# {side.name}: checkout {side.checkout}")
        lines.append(f"test -x {shlex.quote(str(side.python))}")
        if venv_check:
            script = side.checkout / VERIFY_PINS
            verify = shlex.join([str(side.python), str(script), str(side.python), str(side.checkout)])
            lines.append(f"cd {shlex.quote(str(side.checkout))} && {verify}  # if the script exists in the checkout")
        argv, expected = _dataset_check(suite, side, tuple(c.workload for m in step.models for c in m.clients),
                                        fingerprints)
        if argv:
            env = " ".join(f"{k}={shlex.quote(v)}" for k, v in step.environment.items())
            lines.append("# datasets offline; expected sample counts: "
                         + ", ".join(f"{k} {v}" for k, v in expected.items()))
            lines.append(f"env {env} {shlex.join(argv)}")
    if steps:
        for model in steps[0].models:
            lines.append(f"test -f {shlex.quote(str(model.snapshot / 'config.json'))}  # {model.model_id} at {model.revision}")
    lines.append("# gate: NVML sees exactly one GPU (or --gpu INDEX); its NUMA CPU set from sysfs; the per-GPU lock")
    return lines


def _check_datasets(suite: Suite, side: Arm, env: Mapping[str, str], workloads: tuple[Workload, ...],
                    fingerprints: bool) -> tuple[SideFacts, list[str]]:
    argv, expected = _dataset_check(suite, side, workloads, fingerprints)
    if not argv:
        return SideFacts(None, {}), []
    where = f"{side.checkout} (datasets, offline, in {side.python})"
    try:
        done = subprocess.run(argv, cwd=side.checkout, env=dict(env), capture_output=True, text=True,
                              timeout=DATASET_CHECK_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return SideFacts(None, {}), [f"{where}: dataset check did not finish in {DATASET_CHECK_TIMEOUT_S} s"]
    except OSError as exc:
        return SideFacts(None, {}), [f"{where}: cannot run the checkout's python ({exc.strerror})"]
    try:
        result = json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return SideFacts(None, {}), [f"{where}: dataset check failed (exit {done.returncode}): {tail}"]
    problems = []
    for key, want in expected.items():
        got = result["checks"].get(key, {})
        if "error" in got:
            problems.append(f"{where}: dataset {key} does not load offline: {got['error']}")
        elif got.get("count") != want:
            problems.append(f"{where}: dataset {key} has {got.get('count')} samples, expected {want}")
    datasets: dict[str, dict[str, Any]] = {}
    for w in workloads:
        spec = suite.datasets[w.dataset]
        entry = datasets.setdefault(spec.id, {"revision": spec.revision, "remote_head": None, "loaded_fingerprint": None})
        fp = result["fingerprints"].get(spec.id)
        if fp:
            entry.update(fp)
        key = f"{spec.id}:{w.lang}" if w.format == "seedtts" else spec.id
        entry.setdefault("counts", {})[w.lang or "validation"] = result["checks"].get(key, {}).get("count")
    return SideFacts(result.get("python"), datasets), problems
