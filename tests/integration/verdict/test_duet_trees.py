"""Duet trees through the real click group (issue 53): a torn gate-duet.json is one line and exit 2; a duet A/A
calibrates the duet's components into the baseline, which the planner's dry run reads."""
from __future__ import annotations

import shutil

from click.testing import CliRunner

from gate.cli import cli
from gate.formats import duet_log
from tests.helpers import duet_records


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def test_compare_on_a_torn_duet_record_exits_2_in_one_line(make_tree, tmp_path):
    base, cand = tmp_path / "base", tmp_path / "cand"
    shutil.copytree(make_tree("base"), base)
    shutil.copytree(make_tree("base-again", seed=2), cand)
    for tree in (base, cand):
        (tree / duet_log.FILE).write_text(duet_log.dumps(duet_records.record(3))[:150])
    result = invoke("compare", base, cand)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("gate: error: ") and duet_log.FILE in lines[0]
    assert "Traceback" not in result.output
