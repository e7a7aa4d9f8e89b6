"""Atomic, durable writes: every file the gate writes appears whole or not at all.

`write_text(path, text, what="baseline")` writes a temporary file in the same folder, fsyncs it,
renames it over `path` (atomic on POSIX within one file system) and fsyncs the folder so the rename
itself survives a crash. A kill at any moment leaves either the old file or the new one; a full
disk (ENOSPC) or any other OSError leaves the old file untouched, removes the temporary file and
raises one OutputError line ("no space left on device; <path> is unchanged").

"""
from __future__ import annotations

import contextlib
import errno
import os
import tempfile
from pathlib import Path

from gate.formats.errors import OutputError

UMASK = os.umask(0o022)
os.umask(UMASK)  # read once: a new file gets the usual 0666 & ~umask (mkstemp alone would give 0600)


def write_text(path: str | Path, text: str, *, what: str = "output") -> Path:
    """Write `text` (UTF-8) to `path` atomically; OutputError (one line) if it cannot be written.

    A path that is not UTF-8 reaches text as lone surrogates (Python's surrogateescape); they are written
    escaped (`\\udcff`), never as raw bytes: in JSON that is a valid string escape, in text a visible one."""
    return write_bytes(path, text.encode("utf-8", "backslashreplace"), what=what)


def write_bytes(path: str | Path, data: bytes, *, what: str = "output") -> Path:
    path = Path(path)
    existed = False
    tmp: str | None = None
    try:
        existed = path.exists()  # inside the try: a parent the user cannot enter is an OutputError, not a bug
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        finally:
            os.close(fd)
        if existed:
            _keep_mode(path, tmp)
        else:
            os.chmod(tmp, 0o666 & ~UMASK)
        os.replace(tmp, path)
        tmp = None
        _fsync_dir(path.parent)
    except OSError as exc:
        raise OutputError(_message(exc, what, path, existed), path=path) from None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    return path


def _keep_mode(path: Path, tmp: str) -> None:
    """The replacement keeps the old file's permission bits (mkstemp creates 0600)."""
    with contextlib.suppress(OSError):
        os.chmod(tmp, path.stat().st_mode & 0o7777)


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems cannot fsync a directory; the rename is still atomic
    finally:
        os.close(fd)


def _message(exc: OSError, what: str, path: Path, existed: bool) -> str:
    reason = "no space left on device" if exc.errno == errno.ENOSPC else (exc.strerror or str(exc))
    blocked = next((p for p in path.parents if _is_file(p)), None)
    if blocked is not None:  # mkdir says "File exists" when a parent is a file
        reason = f"{blocked} is a file, not a folder: give a path in a folder"
    kept = "the previous file is unchanged" if existed else "nothing was written"
    return f"cannot write the {what} ({reason}); {kept}"


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:
        return False
