"""One server cycle of a run: port free, server up, its clients, server stopped, GPU free (runbook Step 5).

No window leaves a process behind: from the ledger record to the spawn and the record of its group,
signals are deferred (`Cancellation.shielded`), and the `try` whose `finally` stops the server is
entered before the spawn. The stop itself and every log write inside it are shielded too, and a write
that fails there (full disk) is held until the stop is done (`Writes.quiet`). The same holds for each
client (clients.run_client). `boundary.reached` marks the steps for the test that signals at each one.
"""
from __future__ import annotations

import time
from typing import Mapping

from gate.formats.config import Suite
from gate.formats.errors import GateError
from gate.reading.result_files import read_workload_run
from gate.runner import boundary, clients, procgroup, server
from gate.runner.cancel import Cancellation
from gate.runner.gpu import GpuProvider, wait_until_free
from gate.runner.ledger import Ledger
from gate.runner.logbook import Logbook
from gate.runner.outfiles import Writes, output_failed
from gate.runner.plan import ModelStep, RunStep
from gate.runner.progress import Progress


class ServerCycle:
    """One model's server cycle and what surrounds it (its coverage check, the GPU-free wait)."""

    def __init__(self, suite: Suite, *, port: int, port_wait_s: float, progress_every_s: float, log: Logbook,
                 gpu: GpuProvider, gpu_index: int, cancel: Cancellation, ledger: Ledger, writes: Writes,
                 progress: Progress) -> None:
        self.suite = suite
        self.port = port
        self.port_wait_s = port_wait_s
        self.progress_every_s = progress_every_s
        self.log = log
        self.gpu = gpu
        self.gpu_index = gpu_index
        self.cancel = cancel
        self.ledger = ledger
        self.writes = writes
        self.progress = progress
        self.subreaper = False

    def become_subreaper(self) -> None:
        """Adopt orphaned descendants from now on, so the ones that escape a server's group are found."""
        self.subreaper = procgroup.become_subreaper()

    def run(self, step: RunStep, model: ModelStep, env: Mapping[str, str]) -> None:
        log = self.log
        port = self.port
        try:
            model.model_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise output_failed(model.model_dir, exc, "create") from None
        with log.step("port-free", run=step, model=model.model, command=[str(port)]):
            server.wait_port_free(port, timeout_s=self.port_wait_s, say=self.progress.say)
        self.progress.say(f"{step.label} {model.model}: starting server")
        srv: server.Server | None = None
        failure: BaseException | None = None
        try:
            with log.step("server-start", run=step, model=model.model, command=list(model.server_argv)):
                with self.cancel.shielded():  # record, spawn, record its group: a signal waits for all three
                    tag = procgroup.new_tag()
                    self.ledger.add(tag, kind="server", label=f"{step.label}/{model.model}", argv=model.server_argv)
                    srv = server.spawn(model.server_argv, cwd=step.side.checkout, env=env, port=port,
                                       log=model.server_log, pid_file=model.server_pid, tag=tag)
                    boundary.reached("server spawned")
                    self.ledger.started(tag, srv.group.pgid)
                server.record_server(srv, self.writes.text)
            self._serve(step, model, env, srv)
        except BaseException as exc:
            failure = exc
            raise
        finally:
            if srv is not None:
                self._stop_server(step, model, srv, failure)

    def _serve(self, step: RunStep, model: ModelStep, env: Mapping[str, str], srv: server.Server) -> None:
        log = self.log
        with log.step("server-ready", run=step, model=model.model) as entry:
            ready = server.wait_healthy(srv, timeout_s=self.suite.server.startup_timeout_s, say=self.progress.say)
            entry.message = f"healthy after {ready:.2f} s"
        for client in model.clients:
            self.progress.say(f"{step.label} {model.model}: client {client.workload.name}")
            with log.step("client", run=step, model=model.model, command=list(client.argv)) as entry:
                client_tag = procgroup.new_tag()
                result = clients.run_client(
                    client, cwd=step.side.checkout, env=env, server_alive=lambda: srv.alive,
                    server_report=srv.exit_report, tag=client_tag, shield=self.cancel.shielded,
                    before_start=lambda: self.ledger.add(client_tag, kind="client",  # noqa: B023  # called before the loop moves on
                                                         label=f"{step.label}/{client.workload.id}", argv=client.argv),  # noqa: B023  # called before the loop moves on
                    on_start=lambda g: self.ledger.started(g.tag, g.pgid),
                    stop_group=lambda g: self._stop_group(g, clients.STOP_GRACE_S, what="the client"),
                    say=lambda line: self.progress.say(f"{step.label} {model.model}: {line}"),
                    progress_every_s=self.progress_every_s)
                entry.exit_status = result.exit_code

    def _stop_server(self, step: RunStep, model: ModelStep, srv: server.Server, failure: BaseException | None) -> None:
        """The whole stop, its log writes included, runs shielded; a signal meanwhile cancels once it is done."""
        log, grace = self.log, self.suite.server.stop_grace_s
        with self.cancel.shielded(raise_after=False), self.writes.quiet():
            boundary.reached("server stop begins")
            with log.step("server-stop", run=step, model=model.model) as entry:
                if self.cancel.signum is not None:
                    self.progress.say(f"{step.label} {model.model}: stopping the server (TERM, {grace:g} s grace, "
                                      "then KILL)")
                began = time.monotonic()
                how = procgroup.stop(srv.group, grace_s=grace, hurry=self.cancel.hurried, say=self.progress.say,
                                     what=f"the {model.model} server")
                self.ledger.remove(srv.group.tag)
                entry.message = stop_message(how, grace, time.monotonic() - began, self.cancel.hurry)
                entry.exit_status = srv.group.proc.returncode
            self._report_escaped(step, model.model)
        if not self.cancel.hurry:  # after a second signal, leave at once
            try:
                with log.step("gpu-free", run=step, model=model.model):
                    self.wait_gpu_free()
            except GateError as gpu_exc:
                if failure is None:
                    raise
                if isinstance(failure, GateError):
                    failure.args = (f"{failure}\n(and then: {gpu_exc})",)
        self.cancel.raise_pending()  # a signal that came during the stop cancels now
        if failure is None:
            self.writes.raise_held()  # a log write the stop could not make fails the run now

    def _stop_group(self, group: procgroup.Group, grace_s: float, *, what: str = "the process group") -> str:
        """Stop a group whatever happens meanwhile: a first signal waits for the stop, a second one hurries it."""
        with self.cancel.shielded(), self.writes.quiet():
            how = procgroup.stop(group, grace_s=grace_s, hurry=self.cancel.hurried, say=self.progress.say, what=what)
            self.ledger.remove(group.tag)
        return how

    def _report_escaped(self, step: RunStep, model: str) -> None:
        """Descendants that left the session AND dropped the tag are found only because the gate is
        their subreaper: kill them and say so (they would otherwise outlive the run unnoticed)."""
        if not self.subreaper:
            return
        found = procgroup.escaped(known=set())
        if not found:
            return
        with self.log.step("escaped-processes", run=step, model=model) as entry:
            procgroup.kill([pid for pid, _ in found])
            entry.status = "warning"
            entry.message = "; ".join(f"pid {pid} ({cmd})" for pid, cmd in found)
        self.progress.say(f"warning: {len(found)} process(es) escaped the server's process group and its tag "
                          f"(setsid and a cleared environment); killed: {entry.message}")

    def coverage(self, step: RunStep, model: ModelStep) -> list[str]:
        """Check one model's coverage as soon as its clients are done; the run goes on to the next model,
        so one failure report names every model whose coverage is short."""
        with self.log.step("coverage", run=step, model=model.model) as entry:
            problems = []
            for client in model.clients:  # "every request failed" is the reader's own problem (ALL_FAILED)
                problems += [str(p) for p in read_workload_run(step.run_dir, client.workload).coverage.problems]
            if problems:
                entry.status = "incomplete"
                entry.message = "; ".join(problems)
                self.progress.say(f"{step.label} {model.model}: coverage incomplete: " + "; ".join(problems))
        return problems

    def wait_gpu_free(self) -> None:
        s = self.suite.server
        wait_until_free(self.gpu, self.gpu_index, below_mib=s.gpu_free_below_mib, timeout_s=s.gpu_free_timeout_s,
                        say=self.progress.say)


def stop_message(how: str, grace_s: float, seconds: float, hurried: bool) -> str:
    """What the server-stop step says: how the group ended, and after how long when a second signal hurried it."""
    if how == "kill" and hurried:
        return f"SIGKILL after {seconds:.1f} s (second signal: no grace)"
    return {"term": "stopped by SIGTERM", "kill": f"SIGKILL after {grace_s:g} s grace", "gone": "had already exited"}[how]
