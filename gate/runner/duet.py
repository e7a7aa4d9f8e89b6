"""`gate run --ab BASE CAND --design duet`: both builds' servers resident on one GPU, judged on paired blocks (issue 53).

Per session and model: both servers start on the one GPU (each from its own checkout and venv, its own port:
--port for the base, --port + 1 for the candidate; the memory split through the server's own
`--mem-fraction-static`, sized from the model's weights and the GPU's free memory), both are waited for, each is
warmed with the runbook's warm-up pass, then the runbook's clients run against them in alternating blocks
(A B | B A | A B ...: odd sessions lead with A, even ones with B, so each side leads as often), and both are
stopped; the GPU must be free before the next session. Each block is one complete client pass written as the
runbook writes a run (run<R> of its side), so `gate summarize` and the coverage checks read it unchanged; the
pair of blocks j of session s is run<(s-1)·P + j> on both sides. A block whose coverage is incomplete discards
its pair (both folders move to duet-discarded/, the run log stops listing them) and gate-duet.json says so.

K₁ sessions, then a look per model (the one judge on the sessions so far: gate.judging.duet); only a model it
leaves undecided gets the sessions up to K. gate-duet.json at each tree's root records the design, the
sessions, their blocks in order and the discarded pairs; the judge reads it to pair the runs by session.
Everything the runner guarantees for one server holds for the pair: both process groups are recorded in the
ledger before they start and stopped under every signal (Runner's cancellation), the lock per GPU, --resume
(a session whose blocks are all complete and of the same commit is kept).
"""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

from gate.formats import duet_log
from gate.formats.errors import GateError, InputError
from gate.formats.runlog import LoggedAction
from gate.reading.result_files import read_workload_run
from gate.runner import boundary, clients, procgroup, server
from gate.runner.cancel import Cancelled
from gate.runner.execute import Runner
from gate.runner.gpu import GpuProvider
from gate.runner.looks import Decider
from gate.runner.outfiles import output_failed
from gate.runner.plan import Arm, ModelStep, RunStep, plan_run
from gate.runner.preflight import PreflightFailed
from gate.runner.request import RunOutcome, RunRequest
from gate.runner.telemetry import Telemetry

FILE = duet_log.FILE  # gate.formats.duet_log owns the format; the runner writes it through duet_log.dumps
DISCARDED = "duet-discarded"
DEPARTURE = ("duet: both builds' servers resident on one GPU, alternating one-pass blocks, judged on each "
             "session's paired difference; throughput beside a second server, so its absolute figures are not the "
             "runbook's solo ones")
MEM_OPTION = "--mem-fraction-static"
SERVER_OVERHEAD_MIB = 3072  # CUDA context, graphs and activations beyond the weights, per server
NO_GPU_FRACTION = 0.4  # --no-gpu (the stand-in on a CPU): nothing to size from


@dataclass(frozen=True)
class DuetPlan:
    """How many sessions, and how a session is made: K₁ before the look, at most K, P block pairs a session."""

    first_sessions: int = 5
    max_sessions: int = 10
    pairs: int = 1
    mem_fraction: float | None = None  # per server; None: sized from the model and the GPU's free memory


def block_order(session: int, pairs: int) -> tuple[str, ...]:
    """The sides of a session's blocks in order: A B B A ... in odd sessions, B A A B ... in even ones."""
    pattern = "ABBA" if session % 2 else "BAAB"
    return tuple(pattern[i % 4] for i in range(2 * pairs))


def session_runs(session: int, pairs: int) -> tuple[str, ...]:
    """The run names (without "run") of a session's block pairs: the same on both sides."""
    return tuple(str((session - 1) * pairs + j) for j in range(1, pairs + 1))


def first_runs(plan: DuetPlan, warm: str) -> tuple[str, ...]:
    """The runs a duet plans before its look: the warm run (session 1's warm-up passes) and K₁ sessions' blocks."""
    return (warm, *(r for s in range(1, plan.first_sessions + 1) for r in session_runs(s, plan.pairs)))


def weights_mib(snapshot: Path) -> float:
    """The model's files on disk (a hub snapshot's links followed): what each resident server holds at least."""
    total = 0
    for root, _, files in os.walk(snapshot):
        for name in files:
            try:
                total += os.stat(Path(root) / name).st_size
            except OSError:
                continue
    return total / 2**20


def mem_fraction(total_mib: float, free_mib: float, weights: float, *, model: str) -> float:
    """Each server's share of the GPU: half the free memory, less a tenth for the two contexts; PreflightFailed
    (one line) where that share cannot hold the model's weights and SERVER_OVERHEAD_MIB."""
    share = 0.45 * free_mib
    need = 1.2 * weights + SERVER_OVERHEAD_MIB
    if share < need:
        raise PreflightFailed([f"duet: {model} needs about {need:.0f} MiB a server and the GPU has {free_mib:.0f} MiB "
                               f"free, {share:.0f} MiB a server: both servers cannot fit; run --design interleave "
                               "(or pass --duet-fallback to fall back to it)"])
    return round(share / total_mib, 3)


def duet_fits(gpu: GpuProvider, index: int, snapshots: Mapping[str, Path]) -> str | None:
    """Why the duet cannot run on this GPU (the first model that does not fit), or None: --duet-fallback's check."""
    devices = gpu.devices()
    if not devices or devices[0].memory_total_mib is None:
        return None
    total = float(devices[min(index, len(devices) - 1)].memory_total_mib or 0)
    free = total - gpu.memory_used_mib(index)
    for model, snapshot in snapshots.items():
        try:
            mem_fraction(total, free, weights_mib(snapshot), model=model)
        except PreflightFailed as exc:
            return str(exc)
    return None


class DuetRunner(Runner):
    """The runner's preflight, lock, ledger, log and cancellation, with sessions of two resident servers."""

    def __init__(self, request: RunRequest, plan: DuetPlan, *, gpu: GpuProvider, base_env: Mapping[str, str],
                 decider: Callable[[], Decider] | None = None, progress_stream=None) -> None:
        super().__init__(request, gpu=gpu, base_env=base_env, progress_stream=progress_stream)
        if len(request.sides) != 2:
            raise GateError("--design duet needs --ab BASE CANDIDATE")
        self.plan = plan
        self.decider = decider
        self.ports = {request.sides[0].name: request.setup.port, request.sides[1].name: request.setup.port + 1}
        self.fractions: dict[str, float] = {}
        self.sessions: list[duet_log.Session] = []
        self.decisions: dict[str, duet_log.Look] = {}
        self.previous = self._previous_record()

    # --- the record ---------------------------------------------------------------------------------------

    def _previous_record(self) -> duet_log.DuetLog | None:
        """--resume: the earlier attempt's record; one it cannot read keeps no session (they are measured again)."""
        try:
            return duet_log.read(self.request.setup.out / self.request.sides[1].name)
        except InputError:
            return None

    def record(self) -> duet_log.DuetLog:
        base, cand = (s.name for s in self.request.sides)
        return duet_log.DuetLog(
            schema=duet_log.SCHEMA, design="duet", departure=DEPARTURE, sides=(base, cand), ports=dict(self.ports),
            first_sessions=self.plan.first_sessions, max_sessions=self.plan.max_sessions,
            pairs_per_session=self.plan.pairs, mem_fraction_static=dict(self.fractions), sessions=tuple(self.sessions),
            looks=dict(self.decisions))

    def _write_record(self) -> None:
        text = duet_log.dumps(self.record())
        for side in self.request.sides:
            self.writes.text(self.request.setup.out / side.name / FILE, text)

    # --- the whole duet -----------------------------------------------------------------------------------

    def _run_all(self, outcome: RunOutcome) -> None:
        self._stop_leftovers()
        for port in self.ports.values():
            with self.log.step("port-free", command=[str(port)]):
                try:
                    server.wait_port_free(port, timeout_s=self.request.port_wait_s, say=self.progress.say)
                except server.ServerFailed as exc:
                    raise PreflightFailed([str(exc)]) from None
        self._size_memory()
        models = tuple(self.request.models)
        for session in range(1, self.plan.first_sessions + 1):
            self._session(session, models, outcome)
        undecided = models
        if self.decider is not None and self.plan.max_sessions > self.plan.first_sessions:
            decider = self.decider()
            undecided = ()
            for model in models:
                first = decider.first(model)
                self.decisions[model] = duet_log.Look(LoggedAction(first.action), tuple(first.reasons))
                self.progress.say(f"duet first look after {self.plan.first_sessions} sessions: {model}: {first.action}")
                if first.action == "extend":
                    undecided += (model,)
                else:
                    outcome.decisions[model] = first.action
            self._write_record()
            for session in range(self.plan.first_sessions + 1, self.plan.max_sessions + 1 if undecided else 0):
                for side in self.request.sides:
                    for run in session_runs(session, self.plan.pairs):
                        self.log.add_pending(f"{side.name}/run{run}")
                self._session(session, undecided, outcome)
            for model in undecided:
                pooled = decider.pooled(model)
                look = self.decisions[model]
                self.decisions[model] = dataclasses.replace(look, pooled=LoggedAction(pooled.action),
                                                            reasons=(*look.reasons, *pooled.reasons))
                outcome.decisions[model] = pooled.action
                self.progress.say(f"duet look after {self.plan.max_sessions} sessions: {model}: {pooled.action}")
        self._write_record()

    def _size_memory(self) -> None:
        """--mem-fraction-static per model: given, or half the free memory less the contexts (one line if too little)."""
        gpu = self.preflight.gpu if self.preflight else None
        for model in self.request.models:
            if self.plan.mem_fraction is not None:
                self.fractions[model] = self.plan.mem_fraction
                continue
            if gpu is None or not gpu.memory_total_mib:
                self.fractions[model] = NO_GPU_FRACTION
                continue
            snapshot = next(m.snapshot for s in self.steps for m in s.models if m.model == model)
            free = float(gpu.memory_total_mib) - self.gpu.memory_used_mib(self.gpu_index)
            self.fractions[model] = mem_fraction(float(gpu.memory_total_mib), free, weights_mib(snapshot), model=model)
        with self.log.step("duet-memory") as entry:
            entry.message = "; ".join(f"{m}: {MEM_OPTION} {f}" for m, f in self.fractions.items())

    def _side_setup(self, side: Arm):
        return dataclasses.replace(self.request.setup, port=self.ports[side.name])

    def _steps(self, session: int, models: tuple[str, ...]) -> dict[tuple[str, str], RunStep]:
        runs = session_runs(session, self.plan.pairs)
        return {(side.name, run): plan_run(self.suite, self._side_setup(side), side, run, models)
                for side in self.request.sides for run in runs}

    def _kept_session(self, session: int, steps: Mapping[tuple[str, str], RunStep]) -> duet_log.Session | None:
        """--resume: the earlier attempt's record of this session, when all its blocks are complete, same commit."""
        if not self.request.resume or self.previous is None:
            return None
        earlier = next((s for s in self.previous.completed() if s.session == session), None)
        if earlier is None or not all(self._complete(step) for step in steps.values()):
            return None
        return earlier

    def _session(self, session: int, models: tuple[str, ...], outcome: RunOutcome) -> None:
        steps = self._steps(session, models)
        kept = self._kept_session(session, steps)
        if kept is not None:
            self.sessions.append(kept)
            for (side, run), step in steps.items():
                self.log.set_run(step.label, "skipped")
                outcome.skipped.append(step.label)
                if run not in {p.run for p in kept.discarded}:
                    for m in models:
                        self.log.made(side, m, run)
            self.progress.say(f"duet session {session}: complete already, kept (--resume)")
            self._write_record()
            return
        began = time.monotonic()
        record = _SessionRecord(session, models)
        self.sessions.append(record.typed())
        self._write_record()
        with self.log.step("gpu-free"):
            self.cycle.wait_gpu_free()
        warm = self._warm_steps(session, models)
        for step in (*steps.values(), *warm.values()):
            self.log.set_run(step.label, "running")
            self._prepare_run(step, self._env(step))
        telemetry = Telemetry(self.gpu, self.gpu_index)
        try:
            telemetry.start()
            for model in models:
                self._pair(session, model, steps, warm, record)
        except BaseException as exc:
            record.status = (duet_log.SessionStatus.INTERRUPTED if isinstance(exc, Cancelled)
                             else duet_log.SessionStatus.FAILED)
            for step in steps.values():
                self.log.set_run(step.label, record.status.value)
            raise
        finally:
            telemetry.stop()
            with self.writes.quiet():
                doc = json.dumps(telemetry.document(), indent=1) + "\n"
                for step in (*steps.values(), *warm.values()):
                    self.writes.text(step.run_dir / "telemetry.json", doc)
                self.sessions[-1] = record.typed()
                self._write_record()
        self._discard_incomplete(session, models, steps, record)
        for (side, run), step in steps.items():
            if step.run_dir.is_dir():
                self.log.set_run(step.label, "completed")
                outcome.completed.append(step.label)
                for m in models:
                    self.log.made(side, m, run)
        for step in warm.values():
            self.log.set_run(step.label, "completed")
        record.status = duet_log.SessionStatus.COMPLETED
        record.seconds = round(time.monotonic() - began, 3)  # GPU time of the session, GPU-free wait to GPU free
        self.sessions[-1] = record.typed()
        self._write_record()
        self.writes.raise_held()
        self.progress.say(f"duet session {session}: complete ({len(record.discarded)} pair(s) discarded)")

    def _warm_steps(self, session: int, models: tuple[str, ...]) -> dict[str, RunStep]:
        """Session 1 warms into the runbook's run<warm>; later sessions into duet-warm/session<S>/ (never a run
        folder of the tree, so no reader counts it)."""
        out: dict[str, RunStep] = {}
        for side in self.request.sides:
            setup = self._side_setup(side)
            if session > 1:
                setup = dataclasses.replace(setup, out=setup.out / side.name / "duet-warm" / f"session{session}")
            out[side.name] = plan_run(self.suite, setup, side, self.suite.warm_run, models)
        return out

    def _pair(self, session: int, model: str, steps: Mapping[tuple[str, str], RunStep],
              warm: Mapping[str, RunStep], record: _SessionRecord) -> None:
        """One model's two resident servers: start both, wait for both, warm each, the blocks, stop both."""
        sides = self.request.sides
        runs = session_runs(session, self.plan.pairs)
        servers: dict[str, server.Server] = {}
        failure: BaseException | None = None
        try:
            for side in sides:
                servers[side.name] = self._start(session, side, steps[(side.name, runs[0])], model)
            for side in sides:
                step = steps[(side.name, runs[0])]
                with self.log.step("server-ready", run=step, model=model) as entry:
                    ready = server.wait_healthy(servers[side.name], timeout_s=self.suite.server.startup_timeout_s,
                                                say=self.progress.say)
                    entry.message = f"healthy after {ready:.2f} s (duet session {session}, port {self.ports[side.name]})"
            for side in sides:
                self._block(warm[side.name], model, servers[side.name])
            done = {side.name: 0 for side in sides}
            for letter in block_order(session, self.plan.pairs):
                side = sides[0] if letter == "A" else sides[1]
                run = runs[done[side.name]]
                done[side.name] += 1
                began = time.monotonic()
                self._block(steps[(side.name, run)], model, servers[side.name])
                record.blocks.append(duet_log.Block(model, side.name, f"run{run}", round(time.monotonic() - began, 3)))
        except BaseException as exc:
            failure = exc
            raise
        finally:
            if servers:
                self._stop_pair(steps[(sides[0].name, runs[0])], model, servers, failure)

    def _start(self, session: int, side: Arm, step: RunStep, model: str) -> server.Server:
        model_step = _model(step, model)
        argv = (*without_mem_option(model_step.server_argv), MEM_OPTION, f"{self.fractions[model]:g}")
        folder = self.request.setup.out / side.name / "duet-servers" / f"session{session}" / model
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise output_failed(folder, exc, "create") from None
        with self.log.step("port-free", run=step, model=model, command=[str(self.ports[side.name])]):
            server.wait_port_free(self.ports[side.name], timeout_s=self.request.port_wait_s, say=self.progress.say)
        self.progress.say(f"duet session {session} {model}: starting {side.name}'s server on port {self.ports[side.name]}")
        with self.log.step("server-start", run=step, model=model, command=list(argv)):
            with self.cancel.shielded():  # record, spawn, record its group: a signal waits for all three
                tag = procgroup.new_tag()
                self.ledger.add(tag, kind="server", label=f"{side.name}/duet-session{session}/{model}", argv=argv)
                srv = server.spawn(argv, cwd=side.checkout, env=self._env(step), port=self.ports[side.name],
                                   log=folder / "server.log", pid_file=folder / "server.pid", tag=tag)
                boundary.reached("server spawned")
                self.ledger.started(tag, srv.group.pgid)
            server.record_server(srv, self.writes.text)
        return srv

    def _block(self, step: RunStep, model: str, srv: server.Server) -> None:
        """One complete client pass of the model's workloads against its side's server, into the step's run folder."""
        env = self._env(step)
        for client in _model(step, model).clients:
            self.progress.say(f"{step.label} {model}: client {client.workload.name} (duet block)")
            with self.log.step("client", run=step, model=model, command=list(client.argv)) as entry:
                tag = procgroup.new_tag()
                result = clients.run_client(
                    client, cwd=step.side.checkout, env=env, server_alive=lambda: srv.alive,
                    server_report=srv.exit_report, tag=tag, shield=self.cancel.shielded,
                    before_start=lambda: self.ledger.add(tag, kind="client",  # noqa: B023  # called before the loop moves on
                                                         label=f"{step.label}/{client.workload.id}", argv=client.argv),  # noqa: B023
                    on_start=lambda g: self.ledger.started(g.tag, g.pgid),
                    stop_group=lambda g: self.cycle._stop_group(g, clients.STOP_GRACE_S, what="the client"),
                    say=lambda line: self.progress.say(f"{step.label} {model}: {line}"),  # noqa: B023
                    progress_every_s=self.request.progress_every_s)
                entry.exit_status = result.exit_code

    def _stop_pair(self, step: RunStep, model: str, servers: Mapping[str, server.Server],
                   failure: BaseException | None) -> None:
        """Both groups stopped, shielded (a signal meanwhile cancels once both are down), then the GPU free."""
        grace = self.suite.server.stop_grace_s
        with self.cancel.shielded(raise_after=False), self.writes.quiet():
            boundary.reached("server stop begins")
            for name, srv in servers.items():
                with self.log.step("server-stop", run=step, model=model) as entry:
                    how = procgroup.stop(srv.group, grace_s=grace, hurry=self.cancel.hurried, say=self.progress.say,
                                         what=f"{name}'s {model} server")
                    self.ledger.remove(srv.group.tag)
                    entry.message = f"{name}: {how}"
                    entry.exit_status = srv.group.proc.returncode
            self.cycle._report_escaped(step, model)
        if not self.cancel.hurry:
            try:
                with self.log.step("gpu-free", run=step, model=model):
                    self.cycle.wait_gpu_free()
            except GateError as gpu_exc:
                if failure is None:
                    raise
                if isinstance(failure, GateError):
                    failure.args = (f"{failure}\n(and then: {gpu_exc})",)
        self.cancel.raise_pending()
        if failure is None:
            self.writes.raise_held()

    def _discard_incomplete(self, session: int, models: tuple[str, ...], steps: Mapping[tuple[str, str], RunStep],
                            record: _SessionRecord) -> None:
        """A pair whose either block has incomplete coverage is discarded whole: both folders move to
        duet-discarded/ and the run log stops listing them; the record says which and why."""
        for run in session_runs(session, self.plan.pairs):
            problems = []
            for side in self.request.sides:
                step = steps[(side.name, run)]
                for model in models:
                    with self.log.step("coverage", run=step, model=model) as entry:
                        found = [str(p) for c in _model(step, model).clients
                                 for p in read_workload_run(step.run_dir, c.workload).coverage.problems]
                        if found:
                            entry.status = "incomplete"
                            entry.message = "; ".join(found)
                            problems += [f"{side.name}/run{run} {model}: {p}" for p in found]
            if not problems:
                continue
            record.discarded.append(duet_log.Discarded(run, tuple(p[:2000] for p in problems[:200])))
            self.progress.say(f"duet session {session}: pair run{run} discarded (a block's coverage is incomplete: "
                              f"{problems[0]})")
            for side in self.request.sides:
                step = steps[(side.name, run)]
                target = self.request.setup.out / side.name / DISCARDED / f"session{session}-run{run}"
                try:
                    shutil.rmtree(target, ignore_errors=True)
                    target.parent.mkdir(parents=True, exist_ok=True)
                    step.run_dir.rename(target)
                except OSError as exc:
                    raise output_failed(step.run_dir, exc, "move the discarded block") from None
                self.log.drop_run(step.label)


@dataclass
class _SessionRecord:
    """A session as it is being measured; `typed()` is what gate-duet.json records of it so far."""

    session: int
    models: tuple[str, ...]
    status: duet_log.SessionStatus = duet_log.SessionStatus.RUNNING
    blocks: list[duet_log.Block] = dataclasses.field(default_factory=list)
    discarded: list[duet_log.Discarded] = dataclasses.field(default_factory=list)
    seconds: float | None = None

    def typed(self) -> duet_log.Session:
        return duet_log.Session(self.session, self.models, self.status, tuple(self.blocks), tuple(self.discarded),
                                self.seconds)


def without_mem_option(argv: tuple[str, ...]) -> tuple[str, ...]:
    """The server's argv without a --mem-fraction-static the suite gives (the duet sizes its own)."""
    out: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg == MEM_OPTION:
            skip = True
        elif not arg.startswith(MEM_OPTION + "="):
            out.append(arg)
    return tuple(out)


def _model(step: RunStep, model: str) -> ModelStep:
    return next(m for m in step.models if m.model == model)
