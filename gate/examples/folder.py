"""Write an example folder so that the same command can run again: build beside, rename into place.

OUT is built in a temporary sibling folder and renamed into place, so an interrupted run leaves
nothing half-written, and a folder an example command wrote before (it carries MARKER) is replaced.
A folder no example command wrote is refused, never overwritten. Folders are made group- and
world-readable as the umask allows (mkdtemp alone would leave them 0700).
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable, TypeVar

from gate.formats import atomic
from gate.formats.errors import InputError

MARKER = ".gate-example"  # written last into OUT; its presence means "an example command wrote this folder"
T = TypeVar("T")


def write_replaceable(out: Path, write: Callable[[Path], T], *, command: str, texts: tuple[str, ...] = ()) -> T:
    """Call `write(staging)` and move the staging folder to `out`; returns what `write` returned.

    `texts`: files (relative to OUT) whose text names the folder they were written in; the staging
    folder's name in them becomes OUT's."""
    check_replaceable(out, command)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.gate-example-", dir=out.parent))
        os.chmod(staging, 0o777 & ~atomic.UMASK)
    except OSError as exc:
        raise InputError(f"cannot write ({exc.strerror})", path=exc.filename or out) from None
    try:
        result = write(staging)
        for name in texts:
            text = (staging / name).read_text(encoding="utf-8")
            (staging / name).write_text(text.replace(str(staging), str(out)), encoding="utf-8")
        (staging / MARKER).write_text(f"written by `{command}`; it may replace this folder\n", encoding="utf-8")
        _move_into_place(staging, out)
    except OSError as exc:
        raise InputError(f"cannot write ({exc.strerror})", path=exc.filename or out) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)  # gone already when the rename succeeded
    return result


def check_replaceable(out: Path, command: str) -> None:
    if out.name in ("", ".", ".."):
        raise InputError("expected a folder to create or replace, like example-out (it is built beside itself)",
                         path=out)
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise InputError(f"exists and is not a directory; expected a new directory or one `{command}` wrote",
                         path=out)
    if out.is_dir() and any(out.iterdir()) and not (out / MARKER).is_file():
        raise InputError(f"exists, is not empty and was not written by `{command}` (no {MARKER} file); "
                         f"expected a new or empty directory, or one `{command}` wrote", path=out)


def _move_into_place(staging: Path, out: Path) -> None:
    """Rename the finished folder into place; an earlier example (or empty folder) is set aside, then removed."""
    if not out.exists():
        os.rename(staging, out)
        return
    retired = Path(tempfile.mkdtemp(prefix=f".{out.name}.gate-example-old-", dir=out.parent))
    os.rename(out, retired / out.name)
    try:
        os.rename(staging, out)
    except OSError:
        os.rename(retired / out.name, out)  # put the previous example back: OUT is never left missing
        raise
    finally:
        shutil.rmtree(retired, ignore_errors=True)
