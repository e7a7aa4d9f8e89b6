"""The one family of errors a user can cause; the CLI prints them as one line and exits non-zero."""
from __future__ import annotations


class GateError(Exception):
    """A problem with the user's input or environment: reported as one line, never a traceback."""

    exit_code = 2

    def __init__(self, message: str, *, path: object | None = None) -> None:
        self.path = None if path is None else str(path)
        super().__init__(f"{self.path}: {message}" if self.path else message)


class SuiteError(GateError):
    """The suite YAML is malformed."""


class InputError(GateError):
    """A result tree, baseline or report cannot be read as expected."""
