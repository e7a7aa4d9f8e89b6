"""The record of every process group a gate run starts (servers and clients): <out>/gate-processes.json.

An entry is written *before* its process starts (the tag is chosen first) and removed once its
group is stopped, so after a SIGKILL of the gate the file lists exactly what may still run. The
next gate run with the same out dir stops those groups before it begins. Processes are found by
the tag in their environment (procgroup), so a pid reused by a stranger is never signalled.
A lock on <out>/.gate-run.lock keeps two live gates off one out dir.
"""
from __future__ import annotations

import errno
import fcntl
import json
import os
import stat
from pathlib import Path
from typing import Any, Callable, Sequence

from gate.formats.errors import GateError
from gate.runner import procgroup
from gate.runner.outfiles import Writes

LEDGER_NAME = "gate-processes.json"
LOCK_NAME = ".gate-run.lock"


class OutDirBusy(GateError):
    """Another live gate run writes into this out dir."""

    exit_code = 4


class Ledger:
    def __init__(self, out: Path, writes: Writes | None = None) -> None:
        self.writes = writes or Writes()  # a failed write raises OutputFailed (exit 3), or is held during a stop
        self.path = Path(out) / LEDGER_NAME
        self.entries: dict[str, dict[str, Any]] = {}  # tag -> entry
        self._lock_fd: int | None = None

    # --- one gate per out dir ------------------------------------------------------------------

    def lock(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        lock_path = self.path.with_name(LOCK_NAME)
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
        except OSError as exc:
            raise GateError(f"cannot open the out-dir lock ({exc.strerror}); expected a regular file", path=lock_path) from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise GateError("not a regular file; expected the gate's out-dir lock", path=lock_path)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EAGAIN, errno.EACCES):
                raise OutDirBusy("another gate run is writing into this out dir; wait for it or use another --out",
                                 path=self.path.parent) from None
            raise
        self._lock_fd = fd

    def unlock(self) -> None:
        if self._lock_fd is not None:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = None

    # --- entries -------------------------------------------------------------------------------

    def add(self, tag: str, *, kind: str, label: str, argv: Sequence[str]) -> None:
        self.entries[tag] = {"tag": tag, "kind": kind, "label": label, "pid": None, "gate_pid": os.getpid(),
                             "argv": list(argv)}
        self._write()

    def started(self, tag: str, pid: int) -> None:
        if tag in self.entries:
            self.entries[tag]["pid"] = pid
            self._write()

    def remove(self, tag: str) -> None:
        if self.entries.pop(tag, None) is not None:
            self._write()

    def _write(self) -> None:
        # fsync'd: the record must survive the SIGKILL that makes it useful
        doc = {"schema_version": 1, "processes": list(self.entries.values())}
        self.writes.text(self.path, json.dumps(doc, indent=1) + "\n")

    # --- leftovers of an earlier gate run ------------------------------------------------------

    def stop_leftovers(self, *, grace_s: float, hurry: Callable[[], bool] = lambda: False) -> list[str]:
        """Stop every group an earlier gate run recorded here and did not stop; one line per group found."""
        try:
            doc = json.loads(self.path.read_text())
            recorded = [p for p in doc["processes"] if isinstance(p, dict)]
        except FileNotFoundError:
            return []
        except (OSError, ValueError, KeyError, TypeError) as exc:
            return [f"{self.path}: unreadable process record ({exc}); leftovers not checked"]
        lines = []
        for entry in recorded:
            tag = entry.get("tag")
            if not isinstance(tag, str) or not tag:
                continue
            pid = entry.get("pid") if isinstance(entry.get("pid"), int) else None
            count = procgroup.stop_recorded(pid, tag, grace_s=grace_s, hurry=hurry)
            if count:
                lines.append(f"stopped {count} leftover process(es) of an earlier gate run: {entry.get('kind')} "
                             f"{entry.get('label')} (group {pid}, gate pid {entry.get('gate_pid')})")
        self.entries = {}
        self._write()
        return lines
