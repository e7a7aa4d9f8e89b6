"""A copied run is one measurement, not two (issue 38): a hard-linked or copied run folder is refused by
summarize, compare, baseline create and calibrate alike (gate.reading.copies, one rule), naming both runs."""
from __future__ import annotations

import os
import shutil

import pytest
from click.testing import CliRunner

from gate.cli import cli


def _invoke(*args):
    result = CliRunner().invoke(cli, [str(a) for a in args])
    return result.exit_code, result.output  # stdout and stderr together


def _hard_link_tree(src, dst):
    shutil.copytree(src, dst, copy_function=os.link)


@pytest.fixture
def linked(make_tree, tmp_path):
    """A tree whose run2 is a hard-linked copy of its run1."""
    tree = tmp_path / "linked"
    shutil.copytree(make_tree("plain"), tree)
    shutil.rmtree(tree / "run2")
    _hard_link_tree(tree / "run1", tree / "run2")
    return tree


def _refused(code, out, copy="run2", original="run1"):
    assert code == 2, out
    line = [ln for ln in out.splitlines() if ln.startswith("gate: error: ")]
    assert len(line) == 1 and f"{copy} measures exactly what" in line[0] and original in line[0], out


def test_summarize_refuses_a_copied_run(linked):
    _refused(*_invoke("summarize", linked))


def test_compare_refuses_a_copied_run_on_either_side(linked, make_tree):
    _refused(*_invoke("compare", make_tree("seed11", seed=11), linked))
    _refused(*_invoke("compare", linked, make_tree("seed11", seed=11)))


def test_baseline_create_refuses_a_copied_run(linked, tmp_path):
    _refused(*_invoke("baseline", "create", linked, "--out", tmp_path / "b.json"))
    assert not (tmp_path / "b.json").exists()


def test_compare_refuses_a_candidate_run_copied_from_the_base(make_tree, tmp_path):
    base = make_tree("plain")
    candidate = tmp_path / "candidate"
    shutil.copytree(make_tree("seed11", seed=11), candidate)
    shutil.rmtree(candidate / "run3")
    _hard_link_tree(base / "run1", candidate / "run3")
    code, out = _invoke("compare", base, candidate)
    _refused(code, out, copy="run3", original="run1")
