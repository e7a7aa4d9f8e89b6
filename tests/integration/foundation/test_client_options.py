"""Upstream's newer MOSS client options (issue 52): --request-rate and --exclude-sample-ids are comparability facts
(kind `client`), and an exclusion says which samples were left out, not merely that the total is wrong."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from gate.cli import cli
from gate.examples import ExampleSpec, write_example_tree
from gate.formats import result_types
from gate.formats.config import load_suite
from gate.reading.results import read_tree
from tests.helpers.streams import MOSS_PLAIN, stream_suite

RUNS = ("run1", "run2", "run3")


def _invoke(*args):
    result = CliRunner().invoke(cli, [str(a) for a in args])
    return result.exit_code, result.output + (result.stderr if result.stderr_bytes else "")


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("options")
    suite_path = stream_suite(root / "suite.yaml")
    suite = load_suite(suite_path)
    base = write_example_tree(root / "base", suite, ExampleSpec(seed=0, models=("moss_td",), runs=("1", "2", "3")))
    cand = write_example_tree(root / "cand", suite, ExampleSpec(seed=1, models=("moss_td",), runs=("1", "2", "3")))
    return suite_path, suite, base, cand


def _edit(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def test_a_paced_candidate_is_not_comparable(setup, tmp_path):
    suite_path, _, base, cand = setup
    paced = tmp_path / "paced"
    shutil.copytree(cand, paced)
    for run in RUNS:
        _edit(paced / run / MOSS_PLAIN / result_types.MOSS_SPEED_FILE,
              lambda d: d["config"].update(request_rate=4.0))
    code, out = _invoke("compare", base, paced, "--suite", suite_path, "--models", "moss_td")
    assert code == 4, out
    assert "request_rate" in out and "inf" in out, out
    code, out = _invoke("compare", base, paced, "--suite", suite_path, "--models", "moss_td", "--allow-diff", "client")
    assert code != 4, out


def test_an_exclusion_names_the_samples_left_out(setup, tmp_path):
    suite_path, suite, base, cand = setup
    excluded = tmp_path / "excluded"
    shutil.copytree(cand, excluded)
    left_out = ["movie_0003.wav", "movie_0042.wav"]
    expected = suite.workload(MOSS_PLAIN).expected_samples
    _edit(excluded / "run1" / MOSS_PLAIN / result_types.MOSS_SPEED_FILE,
          lambda d: d["config"].update(exclude_sample_ids=left_out))
    _edit(excluded / "run1" / MOSS_PLAIN / result_types.MOSS_RESULTS_FILE,
          lambda d: d["summary"].update(total_samples=expected - 2, evaluated=expected - 2))
    read = read_tree(excluded, suite, models=("moss_td",))
    run1 = read.workloads[MOSS_PLAIN][0]
    (problem,) = [p for p in run1.coverage.problems if p.code == result_types.EXCLUDED_SAMPLES]
    assert "movie_0003.wav, movie_0042.wav" in problem.message and "--exclude-sample-ids" in problem.message
    assert result_types.WRONG_TOTAL not in run1.coverage.codes
    assert run1.provenance.exclude_sample_ids == "movie_0003.wav,movie_0042.wav"
    code, out = _invoke("compare", base, excluded, "--suite", suite_path, "--models", "moss_td")
    assert code == 3, out
    assert "movie_0003.wav" in out, out


def test_a_malformed_exclusion_is_one_line(setup, tmp_path):
    suite_path, suite, _, cand = setup
    broken = tmp_path / "broken"
    shutil.copytree(cand, broken)
    _edit(broken / "run1" / MOSS_PLAIN / result_types.MOSS_SPEED_FILE,
          lambda d: d["config"].update(exclude_sample_ids=[3]))
    run1 = read_tree(broken, suite, models=("moss_td",)).workloads[MOSS_PLAIN][0]
    assert run1.coverage.codes == (result_types.BAD_SCHEMA,), run1.coverage.problems
    assert "exclude_sample_ids" in run1.coverage.problems[0].message
