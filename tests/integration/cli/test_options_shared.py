"""Options several commands declare are declared once (gate/commands/_options.py): same help, same type."""
from __future__ import annotations

import click

from gate.cli import COMMAND_MODULES, cli
from gate.commands._options import MODELS_HELP, SUITE_HELP


def _leaf_commands():
    ctx = click.Context(cli)
    for module in COMMAND_MODULES:
        name = module.replace("_", "-")
        command = cli.get_command(ctx, name)
        subs = getattr(command, "commands", None)
        if subs:
            yield from ((f"{name} {sub}", subs[sub]) for sub in subs)
            if command.params:
                yield name, command
        else:
            yield name, command


def _option(command: click.Command, flag: str) -> click.Option | None:
    return next((p for p in command.params if isinstance(p, click.Option) and flag in p.opts), None)


def test_suite_is_one_option_everywhere():
    seen = []
    for name, command in _leaf_commands():
        option = _option(command, "--suite")
        if option is not None:
            seen.append(name)
            assert (option.name, option.help) == ("suite_path", SUITE_HELP), name
            assert isinstance(option.type, click.Path) and not option.type.dir_okay, name
    assert len(seen) >= 12


def test_models_is_one_option_everywhere():
    seen = []
    for name, command in _leaf_commands():
        option = _option(command, "--models")
        if option is not None:
            seen.append(name)
            assert option.multiple and (option.help or "").startswith(MODELS_HELP), name
    assert {"run", "compare", "summarize", "baseline create"} <= set(seen)


def test_json_is_a_path_except_where_documented_as_a_flag():
    flags = set()
    for name, command in _leaf_commands():
        option = _option(command, "--json")
        if option is None:
            continue
        if option.is_flag:
            flags.add(name)
            assert option.name == "as_json", name
        else:
            assert option.name == "json_path" and isinstance(option.type, click.Path), name
    assert flags == {"history", "history noise"}
