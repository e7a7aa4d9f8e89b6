"""The plan of a `gate run` as data: which runs, in which order, and every command with its placeholders filled.

Nothing here starts a process. The commands come from the suite (server.command + a model's
server_args; a workload's client.command + client_extra_args) so that `gate run --dry-run` prints
exactly what will run and a maintainer can diff it against the runbook (Steps 4-6).
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from gate.formats.config import Suite, Workload
from gate.formats.errors import SuiteError

_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")


@dataclass(frozen=True)
class Arm:
    """One commit under test: a name for its result tree and the sglang-omni checkout that holds it."""

    name: str
    checkout: Path
    python: Path  # the checkout's venv python ({python})

    @property
    def venv_bin(self) -> Path:
        return self.python.parent


@dataclass(frozen=True)
class Setup:
    """Everything a plan needs besides the suite: where to write and the machine-specific paths."""

    out: Path
    port: int
    hf_hub: Path  # the hub cache: snapshots are found here, and the checkout's processes use it (HF_HUB_CACHE)
    torchinductor_cache: Path
    hf_home: Path | None = None  # HF_HOME for the checkout's processes (datasets cache, token); None: inherited

    def hf_environment(self) -> dict[str, str]:
        """One Hugging Face cache for models, datasets and the server: what the gate checks is what they load."""
        env = {"HF_HUB_CACHE": str(self.hf_hub)}
        if self.hf_home is not None:
            env["HF_HOME"] = str(self.hf_home)
        return env


@dataclass(frozen=True)
class ClientStep:
    workload: Workload
    argv: tuple[str, ...]
    timeout_s: float
    output: Path  # the file (SeedTTS) or directory (MOSS) the client must produce
    log: Path


@dataclass(frozen=True)
class ModelStep:
    model: str
    model_id: str
    revision: str
    snapshot: Path
    server_argv: tuple[str, ...]
    model_dir: Path
    server_log: Path
    server_pid: Path
    clients: tuple[ClientStep, ...]


@dataclass(frozen=True)
class RunStep:
    side: Arm
    run: str  # "warm", "1", ...
    run_dir: Path
    environment: Mapping[str, str]  # the suite's Step 4 environment, placeholders filled
    models: tuple[ModelStep, ...]

    @property
    def label(self) -> str:
        return f"{self.side.name}/run{self.run}"


def run_order(runs: tuple[str, ...], sides: tuple[Arm, ...], warm: str) -> tuple[tuple[Arm, str], ...]:
    """(side, run) in execution order. One side: runs as given. Two sides (A/B): every warm run
    as A then B, then scored runs alternating A,B / B,A / A,B ... (runbook: A, B, B, A, A, B)."""
    if len(sides) == 1:
        return tuple((sides[0], run) for run in runs)
    a, b = sides
    order: list[tuple[Arm, str]] = []
    scored = [r for r in runs if r == warm] + [r for r in runs if r != warm]
    flip = False
    for run in scored:
        if run == warm:
            order += [(a, run), (b, run)]
            continue
        order += [(b, run), (a, run)] if flip else [(a, run), (b, run)]
        flip = not flip
    return tuple(order)


def expand(template: str, values: Mapping[str, str], *, where: str) -> str:
    """Fill {name} placeholders; an unknown name is a suite error naming where it was used."""

    def fill(match: re.Match) -> str:
        name = match.group(1)
        if name not in values:
            raise SuiteError(f"{where}: unknown placeholder {{{name}}}; known: {', '.join(sorted(values))}")
        return values[name]

    return _PLACEHOLDER.sub(fill, template)


def plan_run(suite: Suite, setup: Setup, side: Arm, run: str, models: tuple[str, ...]) -> RunStep:
    run_dir = setup.out / side.name / f"run{run}"
    common = {
        "python": str(side.python),
        "venv_bin": str(side.venv_bin),
        "port": str(setup.port),
        "run_dir": str(run_dir),
        "hf_hub": str(setup.hf_hub),
        "torchinductor_cache": str(setup.torchinductor_cache),
        "seedtts_revision": suite.datasets["seedtts"].revision or "" if "seedtts" in suite.datasets else "",
    }
    environment = {k: expand(v, common, where=f"environment.{k}") for k, v in suite.environment.items()}
    environment.update(setup.hf_environment())
    steps = []
    for model_key in models:
        model = suite.models[model_key]
        snapshot = Path(expand(model.snapshot, common, where=f"models.{model_key}.snapshot"))
        values = {**common, "model": model_key, "model_id": model.model_id, "snapshot": str(snapshot),
                  "passes": str(model.passes)}
        server_argv = tuple(expand(a, values, where="server.command") for a in suite.server.command)
        server_argv += tuple(expand(a, values, where=f"models.{model_key}.server_args") for a in model.server_args)
        model_dir = run_dir / model_key
        clients = tuple(_client_step(w, values, run_dir) for w in suite.workloads_for((model_key,)))
        steps.append(ModelStep(model_key, model.model_id, model.revision, snapshot, server_argv, model_dir,
                               model_dir / "server.log", model_dir / "server.pid", clients))
    return RunStep(side, run, run_dir, environment, tuple(steps))


def _client_step(workload: Workload, values: Mapping[str, str], run_dir: Path) -> ClientStep:
    values = {**values, "lang": workload.lang or "", "dataset": workload.dataset, "path": workload.path,
              "raw_dir": workload.raw_dir or ""}
    where = f"workload {workload.id} client.command"
    argv = tuple(expand(a, values, where=where) for a in workload.client.command) + workload.client_extra_args
    output = run_dir / workload.path
    log = run_dir / workload.model / f"{workload.name}.client.log"
    return ClientStep(workload, argv, float(workload.client.timeout_s), output, log)


def dry_run_lines(suite: Suite, steps: tuple[RunStep, ...]) -> list[str]:
    """The plan as shell lines, in order, in the runbook's words (Steps 4-6) so it can be diffed."""
    lines: list[str] = []
    for step in steps:
        side = step.side
        lines.append(f"# --- {step.label}: checkout {side.checkout}")
        lines.append(f"cd {shlex.quote(str(side.checkout))}")
        lines.append("export " + " ".join(f"{k}={shlex.quote(v)}" for k, v in step.environment.items()))
        lines.append("# gate: stop servers left by earlier gate runs (own pid files), wait until GPU memory "
                     f"< {suite.server.gpu_free_below_mib} MiB (timeout {suite.server.gpu_free_timeout_s:g} s)")
        out = shlex.quote(str(step.run_dir))
        lines += [f"rm -rf {out}", f"mkdir -p {out}", f"git rev-parse HEAD > {out}/commit.txt",
                  f"{shlex.quote(str(side.python))} -m pip freeze --exclude-editable > {out}/freeze.txt",
                  f"# gate: write {out}/env.json; sample GPU telemetry into {out}/telemetry.json"]
        for model in step.models:
            lines.append(f"mkdir -p {shlex.quote(str(model.model_dir))}")
            lines.append("# gate: wait until the port can be bound")
            lines.append(f"setsid {shlex.join(model.server_argv)} > {shlex.quote(str(model.server_log))} 2>&1 &"
                         f"  # pid -> {model.server_pid}")
            lines.append(f"# gate: wait for GET /health == 200 (timeout {suite.server.startup_timeout_s:g} s), "
                         "stop at once if the server exits")
            for client in model.clients:
                lines.append(f"{shlex.join(client.argv)}  # timeout {client.timeout_s:g} s, log {client.log}")
            lines.append(f"kill -- -$(cat {shlex.quote(str(model.server_pid))})  # gate: TERM the group, KILL after "
                         f"{suite.server.stop_grace_s:g} s")
            lines.append(f"# gate: wait until GPU memory < {suite.server.gpu_free_below_mib} MiB")
        lines.append(f"# gate: check coverage of {step.label}")
    return lines
