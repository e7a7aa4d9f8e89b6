"""The `gate` command line. Thin: each command parses options, calls the library, maps the outcome to an exit code.

Commands live one per module in gate/commands/; this module only assembles the group and turns a
GateError (anything the user can cause) into one line on stderr and its documented exit code.
"""
from __future__ import annotations

import importlib
import sys

import click

from gate.errors import GateError

# Module name in gate/commands -> the click command it defines as `command`.
COMMAND_MODULES = (
    "summarize",
    "example",
    "run",
    "event",
    "post",
    "merge",
    "action",
    "compare",
    "baseline",
    "history",
)


class _GateGroup(click.Group):
    """Imports a command's module only when that command runs (or --help lists them), so `gate run` on the
    GPU machine does not need the libraries other commands use (jiwer, datasets, PyGithub)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | {_command_name(m) for m in COMMAND_MODULES})

    def get_command(self, ctx: click.Context, name: str):
        for module in COMMAND_MODULES:
            if _command_name(module) == name and name not in self.commands:
                self.add_command(importlib.import_module(f"gate.commands.{module}").command, name)
        return super().get_command(ctx, name)

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except GateError as exc:
            click.echo(f"gate: error: {exc}", err=True)
            ctx.exit(exc.exit_code)


@click.group(cls=_GateGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="asr-regression-gate", prog_name="gate")
def cli() -> None:
    """Regression gate for SGLang-Omni's ASR benchmarks (runbook as code, noise-floor verdicts)."""


def _command_name(module: str) -> str:
    return module.replace("_", "-")  # click's default name for a command function named like its module


def main() -> None:
    sys.exit(cli.main(prog_name="gate", standalone_mode=True))
