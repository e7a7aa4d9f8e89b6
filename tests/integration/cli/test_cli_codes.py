"""The CLI's own contract: light --help/--version, one-line usage errors, exit codes that are not verdicts."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import click
import pytest

from gate import __version__
from gate import cli as cli_module
from gate.cli import COMMAND_MODULES, SHORT_HELP, cli
from gate.formats.errors import EXIT_INTERNAL

HEAVY = ("scipy", "numpy", "github", "jiwer")


@pytest.mark.parametrize("argv", [["--help"], ["--version"]])
def test_help_and_version_import_no_heavy_module(argv):
    probe = ("import json, sys\nfrom gate.cli import run\ncode = run(%r)\n"
             "print(json.dumps([code, sorted(m for m in sys.modules if m.split('.')[0] in %r)]))" % (argv, HEAVY))
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    code, heavy = json.loads(done.stdout.strip().splitlines()[-1])
    assert code == 0 and heavy == []


def test_version_is_the_package_version(capsys):
    assert cli_module.run(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"gate, version {__version__}"


def test_listed_help_lines_are_the_commands_own():
    ctx = click.Context(cli)
    assert set(SHORT_HELP) == {m.replace("_", "-") for m in COMMAND_MODULES}
    for name, line in SHORT_HELP.items():
        command = cli.get_command(ctx, name)
        first = " ".join((command.help or "").split("\n\n")[0].split())
        assert first == line, name


def _all_commands():
    ctx = click.Context(cli)
    for module in COMMAND_MODULES:
        name = module.replace("_", "-")
        command = cli.get_command(ctx, name)
        yield (name,), command
        for sub in getattr(command, "commands", {}):
            yield (name, sub), command.commands[sub]


@pytest.mark.parametrize("path, command", list(_all_commands()), ids=lambda v: " ".join(v) if isinstance(v, tuple) else "")
def test_every_help_lists_exit_codes_and_an_example(path, command, capsys):
    if getattr(command, "commands", None):
        assert cli_module.run([*path, "--help"]) == 0
        assert "143" in capsys.readouterr().out
        return
    assert cli_module.run([*path, "--help"]) == 0
    text = capsys.readouterr().out
    assert "Exit codes:" in text and "0 " in text.split("Exit codes:")[1]
    for code in ("70", "130", "143", "129", "131"):
        assert code in text.split("Exit codes of every command:")[1]
    assert "Example" in text, path


@pytest.mark.parametrize("argv", [["compare"], ["nosuch"], ["compare", "a", "b", "--format", "xml"], ["--bogus"],
                                  ["summarize", "x", "--json"]])
def test_usage_errors_are_one_line_exit_2(argv, capsys):
    assert cli_module.run(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("gate: error: ")


def test_internal_error_is_70_one_line(monkeypatch, capsys):
    def broken(*args, **kwargs):
        raise ZeroDivisionError("a bug")
    monkeypatch.setattr("gate.commands.summarize.load_suite", broken)
    monkeypatch.delenv("GATE_DEBUG", raising=False)
    assert cli_module.run(["summarize", "anything"]) == EXIT_INTERNAL == 70
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("gate: internal error: ")
    assert " ZeroDivisionError: a bug; " in err and "please report" in err
    assert "Traceback" not in err


def test_gate_debug_prints_the_traceback_of_an_internal_error(monkeypatch, capsys):
    def broken(*args, **kwargs):
        raise ZeroDivisionError("a bug")
    monkeypatch.setattr("gate.commands.summarize.load_suite", broken)
    monkeypatch.setenv("GATE_DEBUG", "1")
    assert cli_module.run(["summarize", "anything"]) == EXIT_INTERNAL
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent") and "ZeroDivisionError: a bug" in err
    last = err.splitlines()[-1]  # then the same one line as without GATE_DEBUG
    assert last.startswith("gate: internal error: ") and " ZeroDivisionError: a bug; " in last


def test_ctrl_c_is_130(monkeypatch, capsys):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr("gate.commands.summarize.load_suite", interrupted)
    assert cli_module.run(["summarize", "anything"]) == 130
    assert capsys.readouterr().err.strip() == "gate: interrupted"


@pytest.mark.parametrize("sig, code, said", [(signal.SIGTERM, 143, "gate: terminated"),
                                             (signal.SIGHUP, 129, "gate: hung up (SIGHUP)"),
                                             (signal.SIGQUIT, 131, "gate: quit (SIGQUIT)")])
def test_sigterm_sighup_sigquit_unwind_with_their_code(tmp_path, sig, code, said):
    """A real process gets the signal while `gate example` is half-way through writing its trees: the example's
    baseline writer is held (a sleep after it leaves a mark), so the signal lands mid-write whatever the machine's
    load. (Reading a FIFO cannot be used to block it: the strict reader refuses a FIFO at once.)"""
    out, mark = tmp_path / "example", tmp_path / "mid-write"
    # the signals at their defaults, as a terminal gives them: `nohup` and a shell's background jobs start the test
    # with SIGHUP or SIGQUIT ignored, which the gate keeps (gate.cli.main replaces only SIG_DFL)
    probe = ("import signal, time\n"
             "for ending in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):\n"
             "    signal.signal(ending, signal.SIG_DFL)\n"
             "import gate.examples as examples\nreal = examples.write_example_baseline\n"
             "def held(*args, **kwargs):\n"
             f"    open({str(mark)!r}, 'w').close()\n"
             "    time.sleep(120)  # the signal interrupts this\n"
             "    return real(*args, **kwargs)\n"
             "examples.write_example_baseline = held\n"
             "from gate.cli import main\nmain()")
    proc = subprocess.Popen([sys.executable, "-c", probe, "example", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not mark.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert mark.exists(), "the example never reached its baseline writer"
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == code
    assert err.strip().splitlines()[-1] == said
    assert not out.exists()  # nothing half-written is left behind


def test_run_without_the_runner_extra_names_the_extra():
    probe = ("import sys\nsys.modules['httpx'] = None  # as if the [runner] extra were not installed\n"
             "from gate.cli import run\nraise SystemExit(run(['run', '--checkout', '.', '--out', 'x']))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.startswith("gate: error: ") and done.stderr.count("\n") == 1
    assert "`gate run` needs httpx" in done.stderr and "not installed" in done.stderr
    extra = "asr-regression-gate[runner]"  # the distribution and its extra: what to install
    assert done.stderr.endswith(f"; pip install '{extra}'\n")


def test_outputs_to_stdout_and_into_new_folders(tmp_path):
    from click.testing import CliRunner

    from gate.examples import ExampleSpec, write_example_tree
    from gate.formats.config import load_suite

    tree = write_example_tree(tmp_path / "tree", load_suite(), ExampleSpec(models=("qwen3",), runs=("1", "2", "3")))
    # The same commit measured again (a tree compared with itself is a copied run, refused).
    again = write_example_tree(tmp_path / "again", load_suite(), ExampleSpec(seed=2, models=("qwen3",), runs=("1", "2", "3")))
    runner = CliRunner()
    out = tmp_path / "new" / "deeper"
    done = runner.invoke(cli, ["compare", str(tree), str(again), "--json", "-", "--format", "none", "--no-cache",
                               "--comment", str(out / "comment.md"), "--summary", str(out / "summary.md")])
    assert done.exit_code == 0, done.stderr
    assert json.loads(done.stdout)["verdict"] == "pass"
    assert (out / "comment.md").read_text().strip() and (out / "summary.md").read_text().strip()
    summary = runner.invoke(cli, ["summarize", str(tree), "--models", "qwen3", "--json", "-", "--no-samples"])
    assert summary.exit_code == 0 and json.loads(summary.stdout)["schema_version"] == 1
