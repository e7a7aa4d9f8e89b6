"""Options declared the same way by several commands: one decorator each, one help text, one parsing rule.

Like asv's `commands/common_args.py`. Light on purpose (click and pathlib only): `gate --help` and usage
errors must not import the library. Checks that need the suite (a model the suite does not have) stay with
the code that loads the suite; these decorators only parse.

    @suite_option            --suite FILE     the suite YAML (default: the packaged gate/suites/asr.yaml)
    @models_option()         --models a,b     repeatable and comma-separated, parsed to a tuple of names
    @json_path_option(help)  --json PATH      write JSON to PATH ('-': stdout where the command says so)
    @json_flag_option(help)  --json           (`gate history`, `gate history noise`: a flag, as documented)
    @calibration_option(help)    --calibration FILE  a baseline file with an A/A calibration
    @history_dir_option(help)    --history DIR       the nightly history store (gate history's folder)
    @runner_class_option(help)   --runner-class NAME the GPU class a history or baseline is filed under
    @nights_option(n, lo, hi)    --nights N          how many nights, in [lo, hi]
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

SUITE_HELP = "Suite YAML (default: the packaged gate/suites/asr.yaml)."
MODELS_HELP = "Only these suite models (repeat or comma-separate, e.g. --models qwen3,moss_td)."


def suite_option(function: F) -> F:
    """`--suite FILE` -> `suite_path: Path | None` (None: the packaged suite)."""
    return click.option("--suite", "suite_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
                        help=SUITE_HELP)(function)


def split_models(values: tuple[str, ...] | list[str] | str | None) -> tuple[str, ...]:
    """`--models a,b --models c` -> ("a", "b", "c"): commas and repeats, blanks dropped, order kept."""
    if values is None:
        return ()
    items = (values,) if isinstance(values, str) else values
    return tuple(m.strip() for item in items for m in item.split(",") if m.strip())


def _models_callback(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> tuple[str, ...]:
    return split_models(value)


def models_option(default_text: str | None = None) -> Callable[[F], F]:
    """`--models` -> `models: tuple[str, ...]` (empty: the command's default, named by `default_text`)."""
    help_text = MODELS_HELP if default_text is None else f"{MODELS_HELP} Default: {default_text}."
    return click.option("--models", "models", multiple=True, callback=_models_callback, help=help_text)


def json_path_option(help_text: str, *, required: bool = False) -> Callable[[F], F]:
    """`--json PATH` -> `json_path: Path | None`; what is written there is the command's own help text."""
    return click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
                        required=required, help=help_text)


def json_flag_option(help_text: str) -> Callable[[F], F]:
    """`--json` as a flag -> `as_json: bool`: kept where it is documented as one (prints JSON to stdout)."""
    return click.option("--json", "as_json", is_flag=True, help=help_text)


def calibration_option(help_text: str, *, dest: str = "calibration_path", folder_refused: bool = True
                       ) -> Callable[[F], F]:
    """`--calibration FILE` -> `dest: Path | None`: a baseline file with an A/A calibration. `folder_refused`
    False: the command checks the path itself (`gate run` says what it expected in its own line)."""
    return click.option("--calibration", dest, type=click.Path(dir_okay=not folder_refused, path_type=Path),
                        default=None, help=help_text)


def history_dir_option(help_text: str) -> Callable[[F], F]:
    """`--history DIR` -> `history_dir: Path | None`: the nightly history store (None: not given)."""
    return click.option("--history", "history_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
                        help=help_text)


def runner_class_option(help_text: str, *, default: str | None = None, required: bool = False) -> Callable[[F], F]:
    """`--runner-class NAME` -> `runner_class`: the GPU class a history or baseline is filed under."""
    return click.option("--runner-class", "runner_class", default=default, required=required,
                        show_default=default is not None, help=help_text)


def nights_option(default: int, low: int, high: int, help_text: str | None = None) -> Callable[[F], F]:
    """`--nights N` -> `nights: int` in [low, high]."""
    return click.option("--nights", "nights", default=default, show_default=True, type=click.IntRange(low, high),
                        help=help_text)
