"""The fuzz suite's seeds: `gate example` on a small copy of the packaged suite (see fuzzer.py)."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from gate.cli import cli
from tests.helpers.fuzzer import small_suite


@pytest.fixture(scope="session")
def seeds(tmp_path_factory):
    """`gate example` on the small suite: baseline.json, a candidate with a known regression, its report."""
    root = tmp_path_factory.mktemp("fuzz-seed")
    suite = small_suite(root / "small.yaml")
    made = CliRunner().invoke(cli, ["example", str(root / "ex"), "--suite", str(suite)])
    assert made.exit_code == 0, made.output
    report = root / "report.json"
    first = CliRunner().invoke(cli, ["compare", str(root / "ex/baseline.json"), str(root / "ex/candidate"),
                                     "--suite", str(suite), "--json", str(report), "--format", "none"])
    assert first.exit_code == 1 and json.loads(report.read_text())["verdict"] == "fail", first.output
    return {"suite": suite, "baseline": root / "ex/baseline.json", "candidate": root / "ex/candidate",
            "report": report}
