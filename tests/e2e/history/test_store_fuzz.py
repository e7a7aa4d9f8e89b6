"""The history store as a fuzz surface: every mutation × every command that reads it, in process.

Invariants (issue 27):
1. no traceback, no exception escapes, a documented exit code (never 70);
2. no hang: SIGALRM after HANG_S seconds (a FIFO month file must not block a reader);
3. no silent acceptance: whenever a mutation makes a line or file unusable, the command either refuses
   (exit 2 naming the file) or skips it and names the file (and the line) on stderr;
4. `--json` outputs are strict JSON (no NaN or Infinity).
Every mutation goes through all nine commands, `gate history` first, on a store of its own.
"""
from __future__ import annotations

import json
import os
import signal
import socket
from pathlib import Path
from typing import Callable

import pytest
from click.testing import CliRunner

from gate.cli import cli
from gate.formats.errors import DOCUMENTED_EXIT_CODES
from gate.history.store import HistoryStore
from tests.helpers.nights import synthetic_records

HANG_S = 30
MONTH = "h100/2026-09.jsonl"


def _good_line() -> dict:
    return json.loads(synthetic_records(nights=1)[0].line())


def _with(**changes) -> str:
    data = _good_line()
    data["time"] = "2026-09-28T02:00:00+00:00"
    data.update(changes)
    return json.dumps(data)


def _values(metric: str, value) -> str:
    data = _good_line()
    data["time"] = "2026-09-28T02:00:00+00:00"
    data["values"][metric] = [value, value, value]
    return json.dumps(data)


def _deep(n: int) -> str:
    return _with().replace('"env":"abc"', '"env":' + "[" * n + "]" * n).replace('"env": "abc"', '"env": ' + "[" * n + "]" * n)


LINES: dict[str, str | bytes] = {
    "torn last line": _with()[:60],
    "5001-digit integer": _values("throughput_samples_per_s", 1).replace("[1, 1, 1]", "[" + "9" * 5001 + ", 1, 1]"),
    "400-digit integer": _values("throughput_samples_per_s", 1).replace("[1, 1, 1]", "[" + "9" * 400 + ", 1, 1]"),
    "20-digit integer": _values("throughput_samples_per_s", 1).replace("[1, 1, 1]", "[" + "9" * 20 + ", 1, 1]"),
    "1e308 speed": _values("throughput_samples_per_s", 1e308),
    "1e400 (infinite)": _values("throughput_samples_per_s", 1).replace("[1, 1, 1]", "[1e400, 1, 1]"),
    "NaN": _values("throughput_samples_per_s", 1).replace("[1, 1, 1]", "[NaN, 1, 1]"),
    "Infinity": _values("throughput_samples_per_s", 1).replace("[1, 1, 1]", "[Infinity, 1, 1]"),
    "negative speed": _values("throughput_samples_per_s", -98.0),
    "zero speed": _values("throughput_samples_per_s", 0.0),
    "zero latency": _values("latency_mean_s", 0),
    "negative WER": _values("corpus_wer", -0.01),
    "WER 1e5": _values("corpus_wer", 1e5),
    "speed as a string": _values("throughput_samples_per_s", "98"),
    "speed as true": _values("throughput_samples_per_s", True),
    "100k-deep nesting": _deep(100_000),
    "100-deep nesting": _deep(100),
    "duplicate key complete": _with()[:-1] + ', "complete": false}',
    "duplicate key v": '{"v": 1, ' + _with()[1:],
    "complete as a string": _with(complete="false"),
    "complete as 0": _with(complete=0),
    "complete null": _with(complete=None),
    "v true": _with(v=True),
    "v 1.0": _with(v=1.0),
    "v as a string": _with(v="1"),
    "v 2": _with(v=2),
    "v missing": json.dumps({k: v for k, v in json.loads(_with()).items() if k != "v"}),
    "commit numeric": _with(commit=12345),
    "runs numeric": _with(runs=3),
    "runs of numbers": _with(runs=[1, 2, 3]),
    "verdict numeric": _with(verdict=1),
    "verdict unknown": _with(verdict="great"),
    "verdict upper case": _with(verdict="PASS"),
    "env a list": _with(env=["a"]),
    "env an object": _with(env={"gpu": "h100"}),
    "values a list": _with(values=[1, 2]),
    "values per run mismatch": _with(runs=["run1"]),
    "time without offset": _with(time="2026-09-28T02:00:00"),
    "time garbage": _with(time="yesterday"),
    "time numeric": _with(time=1790000000),
    "kind unknown": _with(kind="weekly"),
    "workload numeric": _with(workload=7),
    "workload path": _with(workload="../../etc/passwd"),
    "workload 10k chars": _with(workload="q/" + "w" * 10_000),
    "extra key": _with(extra=1),
    "a list line": "[1, 2, 3]",
    "a null line": "null",
    "a number line": "42",
    "a string line": '"night"',
    "BOM before a line": "\ufeff" + _with(),
    "an empty object": "{}",
    "a 2 MiB line": _with(env="x" * (2 * 1024 * 1024)),
    "NUL bytes": _with()[:40] + "\x00" + _with()[40:],
    "not UTF-8": b"\xff\xfe" + _with().encode(),
}
BENIGN = {"no final newline", "CRLF line ends"}  # must be read as they are, nothing to name


def _plant_line(root: Path, line: str | bytes) -> Path:
    path = root / MONTH
    raw = line if isinstance(line, bytes) else line.encode("utf-8")
    path.write_bytes(path.read_bytes() + raw + b"\n")
    return path


def _fifo(root: Path) -> Path:
    path = root / "h100" / "2026-11.jsonl"
    os.mkfifo(path)
    return path


def _link(target: str) -> Callable[[Path], Path]:
    def make(root: Path) -> Path:
        path = root / "h100" / "2026-11.jsonl"
        path.symlink_to(target)
        return path
    return make


def _directory(root: Path) -> Path:
    path = root / "h100" / "2026-11.jsonl"
    path.mkdir()
    return path


def _huge(root: Path) -> Path:
    path = root / "h100" / "2026-11.jsonl"
    with path.open("wb") as handle:
        handle.truncate(65 * 1024 * 1024)  # sparse: over the 64 MiB cap without using the disk
    return path


def _socket(root: Path) -> Path:
    path = root / "h100" / "2026-11.jsonl"
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(path))
    sock.close()
    return path


def _outside(root: Path) -> Path:
    target = root.parent / "elsewhere.jsonl"
    target.write_text(_with() + "\n")
    return _link(str(target))(root)


def _cp_fifo(root: Path) -> Path:
    path = root / "h100" / "change-points.jsonl"
    os.mkfifo(path)
    return path


def _cp_line(line: str) -> Callable[[Path], Path]:
    def make(root: Path) -> Path:
        path = root / "h100" / "change-points.jsonl"
        path.write_text(line + "\n")
        return path
    return make


def _no_final_newline(root: Path) -> Path:
    path = root / MONTH
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    return path


def _crlf(root: Path) -> Path:
    path = root / MONTH
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    return path


_CP = {"v": 1, "workload": "qwen3/asr_en", "metric": "throughput_samples_per_s", "unit": "samples/s",
       "relative": True, "worse": True, "gated": True, "night": "2026-09-20T02:00:00+00:00", "commit": "a",
       "previous_commit": "b", "reported": "2026-09-23T02:00:00+00:00", "before": 98.0, "after": 92.0,
       "change": -0.06, "ci": [-0.08, -0.04], "p_value": 1e-5, "issue": None}
FILES: dict[str, Callable[[Path], Path]] = {
    "FIFO month file": _fifo,
    "link to /dev/zero": _link("/dev/zero"),
    "link to /dev/urandom": _link("/dev/urandom"),
    "dangling link": _link("/nonexistent/history.jsonl"),
    "link outside the store": _outside,
    "directory as a month file": _directory,
    "65 MiB month file": _huge,
    "socket as a month file": _socket,
    "FIFO change points": _cp_fifo,
    "change point p 2": _cp_line(json.dumps({**_CP, "p_value": 2})),
    "change point issue string": _cp_line(json.dumps({**_CP, "issue": "12"})),
    "change point ci of 3": _cp_line(json.dumps({**_CP, "ci": [1, 2, 3]})),
    "change point duplicate key": _cp_line(json.dumps(_CP)[:-1] + ', "issue": 3}'),
    "no final newline": _no_final_newline,
    "CRLF line ends": _crlf,
}
MUTATIONS = [*LINES, *FILES]


def mutate(root: Path, name: str) -> Path:
    if name in LINES:
        return _plant_line(root, LINES[name])
    return FILES[name](root)


class _Hang(Exception):
    pass


def _on_alarm(signum, frame):
    raise _Hang()


def invoke(*args: object):
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.alarm(HANG_S)
    try:
        return CliRunner().invoke(cli, [str(a) for a in args])
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory):
    """A tree for import and compare, and a baseline file for `baseline nights` (made once)."""
    from gate.examples import ExampleSpec, write_example_tree
    from gate.formats.config import load_suite
    from gate.reading.baseline_file import write_baseline
    from gate.reading.tree_side import side_from_tree

    base = tmp_path_factory.mktemp("fuzz-fixtures")
    suite = load_suite()
    tree = write_example_tree(base / "tree", suite, ExampleSpec(models=("qwen3",), runs=("1", "2", "3")))
    slow = write_example_tree(base / "slow", suite, ExampleSpec(models=("qwen3",), runs=("1", "2", "3"), seed=5,
                                                                speed_factor={"qwen3/asr_en": 0.9}))
    baseline = write_baseline(side_from_tree(tree, suite, sample_reader=lambda *a: {}), base / "baseline.json")
    return {"tree": tree, "slow": slow, "baseline": baseline}


def commands(root: Path, out: Path, fx: dict) -> dict[str, list]:
    return {
        "history": ["history", "--history", root, "--json"],
        "detect": ["history", "detect", "--history", root, "--runner-class", "h100", "--recent", "30"],
        "noise": ["history", "noise", "--history", root, "--json"],
        "plot": ["history", "plot", out / "charts", "--history", root],
        "publish": ["history", "publish", out / "site", "--history", root],
        "import": ["history", "import", "--history", root, "--runner-class", "h100", "--time",
                   "2026-09-29T02:00:00+00:00", fx["tree"]],
        "baseline nights": ["baseline", "nights", fx["baseline"], "--history", root, "--runner-class", "h100"],
        "compare --history": ["compare", fx["tree"], fx["slow"], "--history", root, "--format", "markdown"],
        "repair": ["history", "repair", "--history", root],
    }


def check(name: str, command: str, result, planted: Path) -> None:
    case = f"{name} × {command}"
    assert not isinstance(result.exception, _Hang), f"{case}: hung for more than {HANG_S} s"
    assert result.exception is None or isinstance(result.exception, SystemExit), \
        f"{case}: {type(result.exception).__name__}: {result.exception}"
    assert result.exit_code in DOCUMENTED_EXIT_CODES and result.exit_code != 70, (case, result.exit_code)
    assert "Traceback" not in result.output, case
    if name in BENIGN:
        assert "warning" not in result.stderr, (case, result.stderr)
        return
    said = result.output + (result.stderr or "")
    if command == "repair" and result.exit_code == 0 and planted.name.endswith(".jsonl") and name in LINES:
        assert str(planted) in said and "moved to" in said, (case, said[-500:])
        return
    assert str(planted) in said, f"{case}: exit {result.exit_code} without naming {planted}: {said[-400:]}"
    if command in ("history", "noise") and result.exit_code == 0:
        json.loads(result.stdout, parse_constant=lambda c: pytest.fail(f"{case}: {c} in --json output"))


def _store(tmp_path: Path) -> Path:
    root = tmp_path / "history"
    HistoryStore(root).append(synthetic_records(nights=30, step_night=20))
    return root


@pytest.mark.slow  # mutation sweep over the history store
@pytest.mark.parametrize("name", MUTATIONS)
def test_every_mutation_on_every_command(tmp_path, name, fixtures):
    root = _store(tmp_path)
    planted = mutate(root, name)
    for command, args in commands(root, tmp_path / "out", fixtures).items():
        if command == "repair":
            continue  # last: it changes the store
        check(name, command, invoke(*args), planted)
    check(name, "repair", invoke(*commands(root, tmp_path / "out", fixtures)["repair"]), planted)
