"""The traps a newcomer hit on a fresh clone (issue 51, "Traps"): each is made with the command the issue names, and
must end in the verdict a user expects or one `gate: error:` line with its documented exit code."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from gate import cli as cli_module
from gate.examples import write_example_baseline, write_example_pair
from gate.formats.config import load_suite
from gate.formats.errors import EXIT_INPUT, EXIT_OK


@pytest.fixture(scope="module")
def ex(tmp_path_factory) -> Path:
    """The quick start's trees: ex/baseline, ex/candidate (all four models) and the calibrated ex/baseline.json."""
    root = tmp_path_factory.mktemp("traps")
    suite = load_suite()
    write_example_pair(root / "ex", suite)
    write_example_baseline(root / "ex", suite)
    return root


def _gate(capsys, *argv: str | Path) -> tuple[int, str, str]:
    code = cli_module.run([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def _error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("gate: error: ")]
    assert len(lines) == 1, err
    return lines[0]


def _calibration_entries(path: Path) -> int:
    return sum(len(metrics) for metrics in json.loads(path.read_text(encoding="utf-8"))["calibration"].values())


def test_baseline_create_over_a_calibrated_baseline_refuses_to_drop_it(ex, tmp_path, capsys):
    """`gate baseline create … --out FILE` over a calibrated FILE dropped its calibration without a word."""
    out = tmp_path / "baseline.json"
    out.write_bytes((ex / "ex" / "baseline.json").read_bytes())
    entries = _calibration_entries(out)
    assert entries > 0
    code, _, err = _gate(capsys, "baseline", "create", ex / "ex" / "baseline", "--out", out)
    assert code == EXIT_INPUT
    line = _error_line(err)
    assert str(out) in line and "--keep-calibration" in line and "--force" in line
    assert _calibration_entries(out) == entries  # nothing was written
    code, _, _ = _gate(capsys, "baseline", "create", ex / "ex" / "baseline", "--out", out, "--keep-calibration", out)
    assert code == EXIT_OK and _calibration_entries(out) == entries
    code, _, _ = _gate(capsys, "baseline", "create", ex / "ex" / "baseline", "--out", out, "--force")
    assert code == EXIT_OK and _calibration_entries(out) == 0
    # an uncalibrated baseline is simply replaced
    code, _, _ = _gate(capsys, "baseline", "create", ex / "ex" / "baseline", "--out", out)
    assert code == EXIT_OK
