"""The `gate` command line. Thin: each command parses options, calls the library, maps the outcome to an exit code.

Commands live one per module in gate/commands/; this module only assembles the group, keeps
`gate --help`/`--version` free of heavy imports (command modules load only when their command runs),
and maps everything that is not a verdict to its own exit code:

    2    usage error or bad input (one line: `gate: error: ...`)
    70   internal error: a bug in the gate (one line: `gate: internal error: ...; please report`)
    130  interrupted by Ctrl-C (SIGINT)
    143  terminated by SIGTERM
    129  hung up (SIGHUP: the terminal or SSH session closed); 131 quit (SIGQUIT)
"""
from __future__ import annotations

import errno
import importlib
import os
import signal
import sys
import traceback
from typing import Any, NoReturn

import click

from gate import __version__
from gate.formats.errors import EXIT_HANGUP, EXIT_INPUT, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_QUIT, EXIT_TERMINATED, GateError

# The exit codes every command shares; each command's --help ends with this block after its own codes.
COMMON_EXIT_CODES = ("  2    usage error or unreadable input (one line: gate: error: ...)\n"
                     f"  {EXIT_INTERNAL}   internal error (a bug: please report it)\n"
                     f"  {EXIT_INTERRUPTED}  interrupted (Ctrl-C)\n"
                     f"  {EXIT_TERMINATED}  terminated (SIGTERM)\n"
                     f"  {EXIT_HANGUP}  hung up (SIGHUP), {EXIT_QUIT} quit (SIGQUIT)")

# Module name in gate/commands -> the click command it defines as `command`.
COMMAND_MODULES = (
    "summarize",
    "example",
    "run",
    "event",
    "post",
    "merge",
    "store",
    "action",
    "compare",
    "baseline",
    "history",
)

# The line `gate --help` shows per command, kept here so that listing commands imports none of them
# (scipy, numpy, PyGithub, jiwer). A command missing here is imported to read its own help.
# tests/integration/cli/test_cli_codes.py checks each line against the command's docstring.
SHORT_HELP = {
    "action": "Run GATE_COMMAND with GATE_ARGS; then write the job summary, annotations and outputs.",
    "baseline": "Create baselines from result trees and calibrate their noise floor from A/A pairs and nights.",
    "compare": "Compare CANDIDATE against BASE; each is a result tree or a baseline JSON file.",
    "event": "Print run, reason, models, matrix, sha, base-sha, pr, labels as NAME=VALUE lines.",
    "history": "The last N nights of main per workload × metric: a sparkline, the latest value, change points.",
    "example": "Write OUT/baseline, OUT/candidate (synthetic result trees) and OUT/baseline.json.",
    "merge": "Merge REPORTS (each validated against the report schema) into one report.json.",
    "post": "Judge uploaded result trees and publish the check runs and the one sticky comment.",
    "run": "Run the ASR benchmarks of one checkout (or two, --ab) and write the runbook's result tree.",
    "store": "Write tonight's baselines or history to the baseline branch, or refuse with one line.",
    "summarize": "Summarize one result tree TREE (runbook layout, or CI artifact files).",
}


COMMON_EPILOG = f"\b\nExit codes of every command:\n{COMMON_EXIT_CODES}"


def _with_common_epilog(command: click.Command) -> click.Command:
    """Every command's --help ends with the exit codes all commands share (its own are in its docstring)."""
    command.epilog = COMMON_EPILOG
    for sub in getattr(command, "commands", {}).values():
        _with_common_epilog(sub)
    return command


class _Interrupted(BaseException):  # not an Exception: no `except Exception` in a command swallows it
    def __init__(self, exit_code: int) -> None:
        super().__init__(exit_code)
        self.exit_code = exit_code


class _GateGroup(click.Group):
    """Imports a command's module only when that command runs or shows its own help."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | {_name(m) for m in COMMAND_MODULES})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        for module in COMMAND_MODULES:
            if _name(module) == name and name not in self.commands:
                self.add_command(_with_common_epilog(_import_command(name, module)), name)
        return super().get_command(ctx, name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, SHORT_HELP[name] if name in SHORT_HELP else self._short_help(ctx, name))
                for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def _short_help(self, ctx: click.Context, name: str) -> str:
        command = self.get_command(ctx, name)
        return command.get_short_help_str(limit=100) if command else ""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:  # past click's own handler, which would print an empty line first
            raise _Interrupted(EXIT_INTERRUPTED) from None
        except GateError as exc:
            click.echo(f"gate: error: {exc}", err=True)
            ctx.exit(exc.exit_code)


# Modules only an extra installs -> the extra (pip install 'asr-regression-gate[EXTRA]').
EXTRA_OF_MODULE = {"httpx": "runner", "pynvml": "runner"}
# Modules of the base install (pyproject.toml's dependencies) -> the distribution that provides them:
# a broken environment missing one gets the pip line that fixes it, not an internal error.
DISTRIBUTION_OF_MODULE = {"jiwer": "jiwer", "rapidfuzz": "rapidfuzz", "scipy": "scipy", "numpy": "numpy",
                          "yaml": "pyyaml", "jinja2": "jinja2", "github": "PyGithub", "requests": "requests",
                          "click": "click"}


def _import_command(name: str, module: str) -> click.Command:
    try:
        return importlib.import_module(f"gate.commands.{module}").command
    except ModuleNotFoundError as exc:
        raise missing_extra(name, exc) from None


def missing_extra(name: str, exc: ModuleNotFoundError) -> Exception:
    """The error for a command whose library needs a module only an extra installs (one line naming the extra);
    any other missing module is returned as it is (a bug: exit 70)."""
    missing = (exc.name or "").split(".")[0]
    extra = EXTRA_OF_MODULE.get(missing)
    if extra is not None:
        return GateError(f"`gate {name}` needs {missing}, which is not installed; "
                         f"pip install 'asr-regression-gate[{extra}]'")
    distribution = DISTRIBUTION_OF_MODULE.get(missing)
    if distribution is not None:
        return GateError(f"`gate {name}` needs {missing}, which is not installed (a dependency of the gate itself); "
                         f"pip install '{distribution}'")
    return exc


def _name(module: str) -> str:
    return module.replace("_", "-")  # click's default name for a command function named like its module


@click.group(cls=_GateGroup, context_settings={"help_option_names": ["-h", "--help"]},
             epilog="Exit codes: each command's --help lists its own; every command shares "
                    f"2 usage error or bad input, {EXIT_INTERNAL} internal error, "
                    f"{EXIT_INTERRUPTED} Ctrl-C, {EXIT_TERMINATED} SIGTERM, {EXIT_HANGUP} SIGHUP, {EXIT_QUIT} SIGQUIT.\n\n"
                    "Example: gate example example-out && gate compare example-out/baseline.json "
                    "example-out/candidate")
@click.version_option(__version__, prog_name="gate")
def cli() -> None:
    """Regression gate for SGLang-Omni's ASR benchmarks (runbook as code, noise-floor verdicts)."""


# Signals that end a command like SIGTERM (unwinding, exit 128 + N), and the one line each prints.
_ENDING_SIGNALS = {signal.SIGTERM: "terminated", signal.SIGHUP: "hung up (SIGHUP)", signal.SIGQUIT: "quit (SIGQUIT)"}


def _raise_sigterm(signum: int, frame: Any) -> NoReturn:
    raise _Interrupted(128 + signum)


def run(argv: list[str] | None = None) -> int:
    """Run the CLI and return its exit code; every outcome that is not a verdict has its own code."""
    try:
        result = cli.main(args=argv, prog_name="gate", standalone_mode=False)
    except SystemExit as exc:  # commands end with their verdict's code
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except click.exceptions.Exit as exc:  # --help, --version, ctx.exit()
        return exc.exit_code
    except click.UsageError as exc:
        return _usage_error(exc)
    except GateError as exc:  # raised while parsing (e.g. by an option callback), outside invoke
        click.echo(f"gate: error: {exc}", err=True)
        return exc.exit_code
    except click.ClickException as exc:  # e.g. a file click could not open
        click.echo(f"gate: error: {_one_line(exc.format_message())}", err=True)
        return exc.exit_code
    except (KeyboardInterrupt, click.exceptions.Abort):
        return _interrupted()
    except _Interrupted as exc:
        if exc.exit_code == EXIT_INTERRUPTED:
            return _interrupted()
        said = _ENDING_SIGNALS.get(signal.Signals(exc.exit_code - 128), "terminated")
        try:
            click.echo(f"gate: {said}", err=True)
        except OSError:  # the terminal that hung up is gone
            pass
        return exc.exit_code
    except ModuleNotFoundError as exc:  # a module imported as the command runs (jiwer by the sample reader)
        error = missing_extra(_command_name(argv), exc)
        if isinstance(error, GateError):
            click.echo(f"gate: error: {error}", err=True)
            return error.exit_code
        return _internal_error(exc)
    except PermissionError as exc:  # a file or folder the user cannot read, enter or write: never a bug
        where = f"{exc.filename}: " if exc.filename else ""
        code = errno.errorcode.get(exc.errno or 0, "EACCES")
        click.echo(f"gate: error: {where}cannot read, enter or write it ({code}: permission denied); expected a "
                   "file or folder this user can read and write", err=True)
        return EXIT_INPUT
    except Exception as exc:  # noqa: BLE001 - a bug: one line and its own code, never a traceback and never 1
        return _internal_error(exc)
    return result if isinstance(result, int) else 0


def _internal_error(exc: Exception) -> int:
    if os.environ.get("GATE_DEBUG") == "1":  # a maintainer asked for the traceback (docs/reference.md, Commands)
        traceback.print_exc()
    click.echo(f"gate: internal error: {type(exc).__name__}: {_one_line(str(exc))}; please report "
               "(GATE_DEBUG=1 prints the traceback)", err=True)
    return EXIT_INTERNAL


def _command_name(argv: list[str] | None) -> str:
    words = [a for a in (sys.argv[1:] if argv is None else argv) if not a.startswith("-")]
    return words[0] if words else "…"


def _interrupted() -> int:
    """One line for Ctrl-C: on a terminal it overwrites the "^C" the terminal echoed."""
    click.echo(("\r" if sys.stderr.isatty() else "") + "gate: interrupted", err=True)
    return EXIT_INTERRUPTED


def _usage_error(exc: click.UsageError) -> int:
    where = ""
    if exc.ctx is not None and exc.ctx.command_path:
        where = f" ({exc.ctx.command_path} --help for usage)"
    click.echo(f"gate: error: {_one_line(exc.format_message())}{where}", err=True)
    return EXIT_INPUT


def _one_line(text: str) -> str:
    return " ".join(text.split())


def main() -> None:
    # A path that is not UTF-8 (lone surrogates in Python) is printed escaped, never a UnicodeEncodeError;
    # `\udcff` is also a valid JSON escape, so `--json -` stays JSON.
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    # SIGTERM, SIGHUP and SIGQUIT become an exception so commands unwind (finally blocks, temp folders) and
    # exit 128 + N. `gate run` installs its own handlers for the runner's stop sequence; they replace these.
    for signum in _ENDING_SIGNALS:
        if signal.getsignal(signum) in (signal.SIG_DFL, None):
            signal.signal(signum, _raise_sigterm)
    sys.exit(run())


if __name__ == "__main__":  # python -m gate.cli (e.g. under -X importtime)
    main()
