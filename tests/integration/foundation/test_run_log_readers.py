"""Every command that reads gate-run.json reads it through gate.formats.runlog: a log that is `null`, a list, or of
a wrong type is one line naming the file and exit 2 in `summarize`, `baseline create`, `history import` and
`compare` alike (issue 27 item 6: only `compare` refused it before), and a good log reads the same in all."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from gate.cli import cli
from gate.examples import ExampleSpec, write_example_tree
from gate.formats import runlog
from gate.formats.config import load_suite

STARTED = "2026-11-02T03:00:00.000+00:00"
BROKEN = {
    "null": "null",
    "a list": '[{"runs": {}}]',
    "runs of numbers": None,  # filled in from a good log below
    "a naive start": None,
    "an unknown status": None,
    "a run of a side not in sides": None,  # issue 38: was accepted
    "run3 dropped while run3 holds results": None,  # issue 38: compare judged 2 runs, baseline create stored 2
}


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    return write_example_tree(tmp_path_factory.mktemp("runlog"), load_suite(),
                              ExampleSpec(models=("qwen3",), runs=("1", "2", "3")))


def _good(tree) -> dict:
    return runlog.skeleton({tree.name: "/checkouts/pr"}, {f"{tree.name}/run{r}": "completed" for r in "123"},
                           started=STARTED, status="completed")


def _broken(tree, name: str) -> str:
    good = _good(tree)
    changes = {"runs of numbers": {"runs": {f"{tree.name}/run1": 1}},
               "a naive start": {"started": "2026-11-02T03:00:00"},
               "an unknown status": {"status": "finished"},
               "a run of a side not in sides": {"runs": {**good["runs"], "base/run1": "completed"}},
               "run3 dropped while run3 holds results": {"runs": {f"{tree.name}/run{r}": "completed" for r in "12"}}}
    return BROKEN[name] or json.dumps({**good, **changes[name]})


def _commands(tree, out):
    return {
        "summarize": ["summarize", str(tree), "--no-samples", "--models", "qwen3"],
        "baseline create": ["baseline", "create", str(tree), "--out", str(out / "baseline.json"), "--models", "qwen3"],
        "history import": ["history", "import", "--history", str(out / "history"), str(tree)],
        "compare": ["compare", str(tree), str(tree), "--no-cache"],
    }


@pytest.mark.parametrize("name", list(BROKEN))
@pytest.mark.parametrize("command", ["summarize", "baseline create", "history import", "compare"])
def test_a_malformed_run_log_is_refused_by_every_command(tree, tmp_path, name, command):
    log = tree / runlog.FILE
    log.write_text(_broken(tree, name), encoding="utf-8")
    try:
        result = CliRunner().invoke(cli, _commands(tree, tmp_path)[command])
    finally:
        log.unlink()
    lines = [line for line in result.output.splitlines() if line.startswith("gate: error:")]
    assert result.exit_code == 2, result.output
    assert len(lines) == 1 and lines[0].startswith(f"gate: error: {log}: "), result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "baseline.json").exists() and not (tmp_path / "history").exists()


@pytest.mark.parametrize("command", ["summarize", "baseline create", "history import"])
def test_a_good_run_log_is_read_the_same_by_every_command(tree, tmp_path, command):
    (tree / runlog.FILE).write_text(json.dumps(_good(tree)), encoding="utf-8")
    try:
        result = CliRunner().invoke(cli, _commands(tree, tmp_path)[command])
    finally:
        (tree / runlog.FILE).unlink()
    assert result.exit_code == 0, result.output
    if command == "history import":  # the night is the start the log records, not a guess from file times
        month = next((tmp_path / "history").rglob("2026-11.jsonl"))
        assert {json.loads(line)["time"] for line in month.read_text().splitlines()} == {"2026-11-02T03:00:00+00:00"}
