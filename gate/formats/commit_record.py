"""run<R>/commit.txt, the commit a run measured: its one reader.

The runner writes it (gate.runner.execute, or runbook Step 4: `git rev-parse HEAD > commit.txt`): one
git commit SHA, 40 hex digits (64 in a SHA-256 repository), on one line. Every reader calls
`read_commit`, so a commit.txt is accepted or refused alike by the verdict, the trusted consistency
check, `gate run --resume` and the swap check. What each caller makes of a refusal is its own:

- gate.reading.results: a RUN_RECORD problem, the run is invalid (INCOMPLETE, exit 3);
- gate.publish.untrusted: an UntrustedInputError naming the file (exit 2), nothing from the tree is used;
- gate.runner.execute (`--resume`): the run is redone, as for a run made from another commit;
- gate.judging.swap_check: no commit sign (a warning only; the verdict names the file already).
"""
from __future__ import annotations

import re
from pathlib import Path

from gate.formats import inputs

FILE = "commit.txt"
_SHA = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")
_EXPECTED = "expected one git commit SHA (40 or 64 lowercase hex digits) on one line"


def read_commit(run_dir: str | Path) -> str | None:
    """The SHA in `run_dir`/commit.txt; None when there is no such file (a run made without it).

    Raises inputs.Unreadable (one line naming the file) for a symbolic link, a FIFO, a device or a
    directory, a file over inputs.COMMIT's cap, text that is not UTF-8, or anything but one SHA line."""
    path = Path(run_dir) / FILE
    if not inputs.is_present(path):
        return None
    # Never followed: the runner writes a regular file, and a link could point anywhere (a FIFO, /dev/zero).
    text = inputs.read_text(path, inputs.COMMIT, follow_links=False)
    sha = text.removesuffix("\n")
    if not _SHA.fullmatch(sha):
        raise inputs.Unreadable(f"{_shape(sha)}; {_EXPECTED}", path=path)
    return sha


def _shape(text: str) -> str:
    """What the file holds, without echoing it (it may come from an untrusted upload)."""
    if not text.strip():
        return "empty"
    lines = text.count("\n") + 1
    return f"{len(text)} characters on {lines} line{'s' if lines > 1 else ''}, not a commit SHA"
