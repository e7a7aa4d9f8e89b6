"""The standing fuzz suite: every case of fuzzer.catalogue() through the real CLI, in process.

Invariants (README "Robustness: the fuzz suite"):
1. no traceback and no exception escapes: the command ends with SystemExit and a documented exit code;
2. no hang: each command must end within HANG_S seconds (SIGALRM interrupts a blocked open/read);
3. the broken file is named in what the gate prints or writes whenever it refuses something;
4. validity mutations of the candidate (which carries a known regression) never give PASS: overall,
   and for mutations of a field the gate reads, not for that workload's rows either; `summarize`
   exits 3 on them, never 0. Mutations that must be ignored (extra run folders, unknown workloads)
   leave the verdict as it was;
5. a broken baseline is refused as a whole (exit 2); a broken report is refused by `gate merge` (exit 2);
6. a calibration file that is a special file (FIFO, socket, character device, link to /dev/zero), of a
   non-integer schema_version, or with `calibration: null` is refused, naming it, by every command that
   reads one (`compare`, `baseline create --keep-calibration`, `baseline nights`): never kept quietly;
7. a metric key deleted from one run, or null in one run while the others measured it, and a denormal or
   huge value, make that workload incomplete (never a pass, never a quieter mean), naming the file;
8. a tree whose gate-run.json marks the run failed is never summarized as complete (`summarize` exits 3).
"""
from __future__ import annotations

import json
import os
import shutil
import signal
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from gate.cli import cli
from gate.formats.errors import DOCUMENTED_EXIT_CODES
from tests.helpers.fuzzer import Case, catalogue

HANG_S = 20
PASS_VERDICT = "pass"  # Verdict.PASS in the report JSON
SUMMARIZE_EVERY = 4  # summarize (slower than compare per case) runs on every 4th tree case
CASES = catalogue()
# The random choices of each case (which run, which value, where a file is cut); GATE_FUZZ_SEED tries a new one.
SEED = int(os.environ.get("GATE_FUZZ_SEED", "12"))


class _Hang(Exception):
    pass


def _on_alarm(signum, frame):
    raise _Hang()


def _invoke(*args: object):
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.alarm(HANG_S)
    try:
        return CliRunner().invoke(cli, [str(a) for a in args])
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _ended_cleanly(result, case: Case) -> None:
    assert not isinstance(result.exception, _Hang), f"{case.name}: hung for more than {HANG_S} s"
    assert result.exception is None or isinstance(result.exception, SystemExit), \
        f"{case.name}: {type(result.exception).__name__}: {result.exception}"
    assert result.exit_code in DOCUMENTED_EXIT_CODES, (case.name, result.exit_code)
    assert "Traceback" not in result.output, case.name


def test_the_catalogue_is_a_few_hundred_cases():
    assert 300 <= len(CASES) <= 600
    assert {c.target for c in CASES} == {"tree", "baseline", "report", "calibration", "summary"}


# The catalogue in two halves (every other case), the second in test_fuzz_second_half.py: xdist gives each file
# one worker (--dist loadfile), so the halves run side by side. Each case draws from its own generator (SEED, its
# index), so a case's mutation does not depend on which cases ran before it.
HALVES = 2


@pytest.mark.slow
def test_fuzz(seeds, tmp_path):
    run_cases(seeds, tmp_path, half=0)


def run_cases(seeds: dict, tmp_path: Path, *, half: int) -> None:
    tree_index = {id(c): k for k, c in enumerate(c for c in CASES if c.target == "tree")}
    for index, case in enumerate(CASES):
        if index % HALVES != half:
            continue
        rng = np.random.default_rng([SEED, index])
        work = tmp_path / f"case{index}"
        work.mkdir()
        if case.target == "tree":
            _tree_case(case, seeds, work, rng, summarize=(tree_index[id(case)] + 1) % SUMMARIZE_EVERY == 0)
        elif case.target == "baseline":
            _baseline_case(case, seeds, work, rng)
        elif case.target == "calibration":
            _calibration_case(case, seeds, work, rng)
        elif case.target == "summary":
            _summary_case(case, seeds, work, rng)
        else:
            _report_case(case, seeds, work, rng)
        shutil.rmtree(work, ignore_errors=True)


def _tree_case(case: Case, seeds: dict, work: Path, rng: np.random.Generator, *, summarize: bool) -> None:
    tree = work / "candidate"
    shutil.copytree(seeds["candidate"], tree, symlinks=True)
    broken = case.apply(tree, rng)
    report_path = work / "report.json"
    result = _invoke("compare", seeds["baseline"], tree, "--suite", seeds["suite"], "--json", report_path,
                     "--format", "terminal", "--all")
    _ended_cleanly(result, case)
    report = json.loads(report_path.read_text()) if report_path.exists() else None
    if not case.validity:
        assert result.exit_code == 1 and report and report["verdict"] == "fail", (case.name, result.output[-800:])
        return
    assert result.exit_code != 0, f"{case.name} ({broken}): PASS on a tree with a known regression"
    shown = result.output + (report_path.read_text() if report else "")
    assert Path(broken).name in shown, f"{case.name}: {broken} is not named"
    if case.field_level and report:
        rows = [r for r in report["rows"] if r.get("workload") == case.workload]
        assert rows and all(r["verdict"] != PASS_VERDICT for r in rows), (case.name, broken, rows[:2])
    if summarize:
        summary = _invoke("summarize", tree, "--suite", seeds["suite"])
        _ended_cleanly(summary, case)
        # 3: incomplete; 2: the tree cannot be opened (an unreadable gate-run.json: what was planned is unknown)
        assert summary.exit_code in (2, 3), (case.name, broken, summary.output[-800:])
        assert Path(broken).name in summary.output, f"summarize: {case.name}: {broken} is not named"


def _baseline_case(case: Case, seeds: dict, work: Path, rng: np.random.Generator) -> None:
    baseline = work / "baseline.json"
    shutil.copy(seeds["baseline"], baseline)
    case.apply(baseline, rng)
    result = _invoke("compare", baseline, seeds["candidate"], "--suite", seeds["suite"], "--format", "none")
    _ended_cleanly(result, case)
    assert result.exit_code == 2, (case.name, result.output[-800:])
    assert str(baseline) in result.output and result.output.count("\n") == 1, (case.name, result.output)


def _calibration_case(case: Case, seeds: dict, work: Path, rng: np.random.Generator) -> None:
    """A broken calibration file, given to each command that reads one: refused (exit 2), named, never dropped."""
    calibration = work / "calibration.json"
    shutil.copy(seeds["baseline"], calibration)
    case.apply(calibration, rng)
    commands = {
        "compare": ("compare", calibration, seeds["candidate"], "--suite", seeds["suite"], "--format", "none"),
        "baseline create --keep-calibration": ("baseline", "create", seeds["candidate"], "--out", work / "new.json",
                                               "--keep-calibration", calibration, "--suite", seeds["suite"]),
        "baseline nights": ("baseline", "nights", calibration, "--tonight", seeds["candidate"], "--suite", seeds["suite"]),
    }
    for command, args in commands.items():
        result = _invoke(*args)
        _ended_cleanly(result, case)
        assert result.exit_code == 2, (case.name, command, result.output[-800:])
        assert str(calibration) in result.output, (case.name, command, result.output[-800:])
    assert not (work / "new.json").exists(), f"{case.name}: a baseline was written without the calibration asked for"


def _summary_case(case: Case, seeds: dict, work: Path, rng: np.random.Generator) -> None:
    tree = work / "candidate"
    shutil.copytree(seeds["candidate"], tree, symlinks=True)
    broken = case.apply(tree, rng)
    summary = _invoke("summarize", tree, "--suite", seeds["suite"], "--no-samples")
    _ended_cleanly(summary, case)
    assert summary.exit_code == 3 and broken in summary.output, (case.name, summary.output[-800:])


def _report_case(case: Case, seeds: dict, work: Path, rng: np.random.Generator) -> None:
    report = work / "report.json"
    shutil.copy(seeds["report"], report)
    case.apply(report, rng)
    result = _invoke("merge", report, "--json", work / "merged.json", "--suite", seeds["suite"])
    _ended_cleanly(result, case)
    assert result.exit_code == 2, (case.name, result.output[-800:])
    assert "report.json" in result.output, (case.name, result.output)
