"""Every `gate …` line of every workflow, the composite action's callers and the caller snippets, parsed by the
command's own click parser (options, choices, types), and the cheap ones executed against example trees, so a
renamed or removed option fails CI instead of the first night on main (issue 22)."""
from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import pytest
import yaml

from gate.cli import cli

ROOT = Path(__file__).resolve().parents[3]
FILES = sorted([*(ROOT / ".github" / "workflows").glob("*.yml"), *(ROOT / "docs" / "callers").glob("*.yml")])
SAMPLES = {"matrix.model": "qwen3", "inputs.runner-class": "h100", "inputs.max-runs": "14", "runner.temp": "/tmp/rt",
           "inputs.baseline-branch": "asr-gate-baselines", "inputs.required-paths": "a/*,b/*",
           "steps.calibration.outputs.args": "--calibration store/h100/qwen3.json"}
_EXPR = re.compile(r"\$\{\{(.*?)\}\}", re.S)
_LITERAL = re.compile(r"^'([^']*)'$")
_FORMAT = re.compile(r"^format\('([^']*)'(.*)\)$", re.S)


def _value(expression: str) -> str:
    """A sample value for one `${{ }}` expression; `cond && A || B` takes A (the branch that adds options)."""
    text = " ".join(expression.split())
    if "&&" in text:
        text = text.split("&&", 1)[1].rsplit("||", 1)[0].strip()
    literal = _LITERAL.match(text)
    if literal:
        return literal[1]
    fmt = _FORMAT.match(text)
    if fmt:
        return re.sub(r"\{\d\}", "x", fmt[1])
    if text in SAMPLES:
        return SAMPLES[text]
    if text.endswith(("sha", "outputs.sha")):
        return "a" * 40
    if "join(" in text:
        return "qwen3,whisper"
    return "sample"


def expand(text: str) -> str:
    return _EXPR.sub(lambda m: _value(m[1]), text)


def gate_lines():
    """(file, where, argv) of each gate command: action steps (command + args) and `gate` in run scripts."""
    for path in FILES:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        for job_id, job in (doc.get("jobs") or {}).items():
            for step in job.get("steps") or []:
                where = f"{path.name}:{job_id}:{step.get('name', '?')}"
                if str(step.get("uses", "")).startswith("./"):
                    inputs = step.get("with") or {}
                    yield path.name, where, [inputs["command"], *shlex.split(expand(str(inputs.get("args", ""))))]
                script = str(step.get("run", "")).replace("\\\n", " ")
                for line in script.splitlines():
                    found = re.search(r'(?:bin/gate"?|"\$gate")\s+(\w[\w-]*)(.*)$', line)
                    if found:
                        rest = re.sub(r'"\$\{(trees|pairs)\[@\]\}"', "X", found[2])  # arrays of trees: a tree
                        rest = re.sub(r'"\$\{\w+\[@\]\}"', "", rest)  # arrays of optional flags: none
                        rest = re.sub(r'"\$\(date[^)]*\)"', "2026-12-01T00:00:00+00:00", rest)
                        rest = re.sub(r"\$\{?(\w+)\}?", "X", rest)
                        yield path.name, where, [found[1], *shlex.split(expand(rest))]


LINES = list(gate_lines())


def test_the_workflows_name_every_command_they_use():
    commands = {argv[0] for _, _, argv in LINES}
    assert {"event", "run", "compare", "merge", "post", "baseline", "history", "store"} <= commands


@pytest.mark.parametrize("name, where, argv", LINES, ids=[w for _, w, _ in LINES])
def test_every_gate_line_parses_with_its_command(name, where, argv):
    ctx = click.Context(cli)
    command = cli.get_command(ctx, argv[0])
    assert command is not None, f"{where}: no command {argv[0]!r}"
    args = argv[1:]
    while isinstance(command, click.Group):  # baseline create / store baselines / history import ...
        sub = command.get_command(ctx, args[0])
        assert sub is not None, f"{where}: no subcommand {args[0]!r} of {argv[0]}"
        command, args = sub, args[1:]
    try:
        command.make_context(argv[0], list(args), resilient_parsing=False)
    except click.UsageError as exc:
        pytest.fail(f"{where}: gate {' '.join(argv)}: {exc.format_message()}")


def test_event_lines_run_on_a_real_payload(tmp_path, monkeypatch):
    import json

    from click.testing import CliRunner

    from tests.helpers.gh_payloads import pull_request, workflow_run

    payloads = {"pull_request": pull_request(), "workflow_run": workflow_run()}
    for name, where, argv in LINES:
        if argv[0] != "event" or "--from-meta" in argv:
            continue
        event = "workflow_run" if "report" in name else "pull_request"
        path = tmp_path / "event.json"
        path.write_text(json.dumps(payloads[event]))
        argv = [a if not a.startswith("gate-meta/") else str(tmp_path / a) for a in argv]
        result = CliRunner().invoke(cli, argv, env={"GITHUB_EVENT_NAME": event, "GITHUB_EVENT_PATH": str(path),
                                                    "GITHUB_SHA": "c" * 40}, catch_exceptions=False)
        assert result.exit_code == 0, f"{where}: {result.output}"
