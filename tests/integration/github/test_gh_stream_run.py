"""The trusted job checks a stream run is one (issue 52): a non-streamed MOSS run uploaded in the
movies800times_stream workload is INCOMPLETE there with the one-line fix, never "4 improved"."""
from __future__ import annotations

import json
import os
import shutil

from click.testing import CliRunner

from gate.cli import cli
from gate.examples import ExampleSpec, write_example_tree
from gate.formats.config import load_suite
from tests.helpers.gh_trees import make_trees


def test_the_trusted_job_finds_a_plain_run_in_the_stream_workload(tmp_path):
    suite = load_suite()
    sides = tuple(write_example_tree(tmp_path / name, suite, ExampleSpec(seed=seed, models=("moss_td",)))
                  for name, seed in (("baseline", 0), ("candidate", 1)))
    trees = make_trees(tmp_path / "trees", {"trees": sides}, "moss_td")
    for run in sorted(p for p in (trees / "candidate").iterdir() if p.name.startswith("run")):
        stream, plain = run / "moss_td" / "movies800times_stream", run / "moss_td" / "movies800times"
        shutil.rmtree(stream)
        shutil.copytree(plain, stream)
    clean = {k: None for k in os.environ if k.startswith(("GITHUB_", "GATE_", "RUNNER_"))}
    result = CliRunner().invoke(cli, ["post", "--trees", str(trees), "--model", "moss_td", "--dry-run"], env=clean,
                                catch_exceptions=False)
    plan = json.loads(result.stdout)
    assert plan["verdict"] == "incomplete", result.output
    assert "has no streaming fields" in result.stdout and "--stream flag" in result.stdout, result.output
