"""Every file the runner itself writes under --out, written whole or not at all, and a full disk reported once.

`Writes.text(path, text)` writes a temporary file beside `path`, fsyncs it and renames it over `path`; on
any OSError (ENOSPC, EACCES, EROFS...) the temporary file is removed and OutputFailed (exit 3) names the
path and the errno. Inside `quiet()` (a stop sequence) a failed write is only recorded: the stop must
finish whatever the disk says; the first recorded failure is raised once the stop is done.
"""
from __future__ import annotations

import contextlib
import errno
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from gate.formats.errors import GateError
from gate.runner import boundary


class OutputFailed(GateError):
    """A file under --out could not be written (full disk, permissions): the run failed (exit 3)."""

    exit_code = 3


def os_error_text(exc: OSError) -> str:
    code = errno.errorcode.get(exc.errno, str(exc.errno)) if exc.errno is not None else "OSError"
    return f"{code}: {exc.strerror or exc}"


def output_failed(path: Path | str, exc: OSError, what: str = "write") -> OutputFailed:
    return OutputFailed(f"cannot {what} {path} ({os_error_text(exc)})")


def write_output(path: Path, text: str) -> None:
    """Atomic and durable; OutputFailed (temporary file removed) if it cannot be written."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "w") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise output_failed(path, exc) from None
    except BaseException:  # a signal in the middle: no temporary file left behind either
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    finally:
        boundary.reached(f"wrote {path.name}")


class Writes:
    """The runner's writes under --out: raise the first failure, or hold it while a stop runs."""

    def __init__(self) -> None:
        self.error: OutputFailed | None = None  # the first failure of this gate run
        self._quiet = 0
        self._raised = False

    def text(self, path: Path, text: str) -> None:
        try:
            write_output(path, text)
        except OutputFailed as exc:
            first = self.error is None
            if first:
                self.error = exc
            if self._quiet or not first:
                return  # held (a stop runs), or the run is already failing on this disk: the first one is reported
            self._raised = True
            raise

    @contextmanager
    def quiet(self) -> Iterator[None]:
        self._quiet += 1
        try:
            yield
        finally:
            self._quiet -= 1

    def raise_held(self) -> None:
        """After a stop: the failure it held, if nothing has reported it yet."""
        if self.error is not None and not self._raised and not self._quiet:
            self._raised = True
            raise self.error
