"""The one family of errors a user can cause; the CLI prints them as one line and exits non-zero.

Documented exit codes of every command (README "Exit codes"):

    0   pass / success (warn is 0 too)
    1   fail: a regression (compare only; nothing else exits 1)
    2   input that cannot be opened as what it must be (no tree, not a baseline, bad suite,
        usage error), or an output that cannot be written (the old file is left intact)
    3   incomplete: a workload is missing, or a result file in a tree is missing, malformed or
        unreadable (its workload run is invalid; the file and field are named)
    4   not comparable: the two sides differ in GPU, driver, packages, dataset, model, token budget,
        or one side's env.json cannot be read
    70  internal error of the gate itself (a bug: one line, never a traceback)
    130 interrupted (Ctrl-C / SIGINT); 143 terminated (SIGTERM); 129 hung up (SIGHUP: the terminal
        or SSH session closed); 131 quit (SIGQUIT, Ctrl-\\)
"""
from __future__ import annotations

EXIT_OK = 0
EXIT_FAIL = 1
EXIT_INPUT = 2
EXIT_INCOMPLETE = 3
EXIT_NOT_COMPARABLE = 4
EXIT_INTERNAL = 70
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143
EXIT_HANGUP = 129
EXIT_QUIT = 131
DOCUMENTED_EXIT_CODES = (EXIT_OK, EXIT_FAIL, EXIT_INPUT, EXIT_INCOMPLETE, EXIT_NOT_COMPARABLE, EXIT_INTERNAL,
                         EXIT_INTERRUPTED, EXIT_TERMINATED, EXIT_HANGUP, EXIT_QUIT)


class GateError(Exception):
    """A problem with the user's input or environment: reported as one line, never a traceback."""

    exit_code = EXIT_INPUT

    def __init__(self, message: str, *, path: object | None = None) -> None:
        self.path = None if path is None else str(path)
        super().__init__(f"{self.path}: {message}" if self.path else message)


class SuiteError(GateError):
    """The suite YAML is malformed."""


class InputError(GateError):
    """A result tree, baseline or report cannot be read as expected."""


class IncompleteInput(InputError):
    """A file *inside* a result tree is malformed: its workload is incomplete (exit 3), not the tree unreadable."""

    exit_code = EXIT_INCOMPLETE


class OutputError(GateError):
    """An output cannot be written (full disk, no permission); the previous file, if any, is intact."""
