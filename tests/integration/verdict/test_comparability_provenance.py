"""Comparability from the runbook's own provenance (issue 25 item 9): a tree without env.json still names its GPU,
driver, CUDA build and packages through its result files, and where env.json is present the two must agree."""
from __future__ import annotations

import json
import shutil

from click.testing import CliRunner

from gate.cli import cli
from gate.formats.errors import EXIT_NOT_COMPARABLE
from gate.formats.verdict import Verdict
from gate.judging.compare import compare
from gate.reading.comparability import CONFLICT, DRIVER, GPU
from gate.reading.results import read_tree
from gate.reading.side_loader import load_side
from gate.reading.tree_fingerprint import fingerprint_of_tree, parse_nvidia_smi_csv

H100 = "0, NVIDIA H100 80GB HBM3, GPU-5f1c, 81559, 570.86.15, P0, 700.00, 1980, 2619, 9.0"
H100_NAME = H100.split(", ")[1]  # the name nvidia-smi listed
H200 = "0, NVIDIA H200, GPU-8a2e, 143771, 570.86.15, P0, 700.00, 1980, 3201, 9.0"


def runbook_tree(make_tree, dest, *, csv=H100, cuda="13.0", torch=None, freeze=True, measured="base"):
    """The example tree with the runbook's provenance.gpu (and optionally torch) rewritten; no env.json;
    `freeze=False`: no freeze.txt either (the packages come from the result files). `measured`: another name is
    another measurement of the commit (a tree copied from another is refused as a copied run)."""
    shutil.copytree(make_tree(measured, seed=0 if measured == "base" else 7), dest)
    if not freeze:
        for path in dest.glob("run*/freeze.txt"):
            path.unlink()
    for path in dest.glob("run*/qwen3/asr_*.json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        data["provenance"]["gpu"].update(nvidia_smi_csv=csv, torch_cuda_build=cuda)
        if torch is not None:
            data["provenance"]["packages"]["torch"] = torch
        path.write_text(json.dumps(data), encoding="utf-8")
    assert not list(dest.glob("run*/env.json"))
    return dest


def test_the_csv_columns_are_the_runbooks(make_tree):
    assert parse_nvidia_smi_csv(H100) == (("NVIDIA H100 80GB HBM3",), "570.86.15")
    assert parse_nvidia_smi_csv(f"{H200}\n{H200.replace('0, ', '1, ', 1)}") == (("NVIDIA H200",), "570.86.15")
    assert parse_nvidia_smi_csv("synthetic") == ((), None)  # not the query's shape: unknown, never a name
    assert parse_nvidia_smi_csv(None) == ((), None)


def test_two_runbook_trees_differing_only_in_the_gpu_are_not_comparable_exit_4(suite, make_tree, tmp_path):
    base = runbook_tree(make_tree, tmp_path / "h200", csv=H200)
    cand = runbook_tree(make_tree, tmp_path / "h100", csv=H100, measured="again")
    fp = fingerprint_of_tree(read_tree(cand, suite), suite)
    assert (fp.gpu, fp.driver, fp.cuda) == ("NVIDIA H100 80GB HBM3", "570.86.15", "13.0")
    assert fp.packages and fp.packages["torch"] == "2.11.0" and "sglang-omni" not in fp.packages
    report = compare(load_side(base, suite), load_side(cand, suite), suite)
    assert report.verdict == Verdict.NOT_COMPARABLE
    assert [(d.kind, d.item) for d in report.environment_diff] == [(GPU, "gpu name")]

    result = CliRunner().invoke(cli, ["compare", str(base), str(cand), "--format", "markdown"])
    assert result.exit_code == EXIT_NOT_COMPARABLE, result.output
    assert "--allow-diff gpu" in result.output and "NVIDIA H200" in result.output
    accepted = CliRunner().invoke(cli, ["compare", str(base), str(cand), "--allow-diff", "gpu", "--format", "none"])
    assert accepted.exit_code != EXIT_NOT_COMPARABLE


def test_cuda_build_and_named_packages_count_too(suite, make_tree, tmp_path):
    base = runbook_tree(make_tree, tmp_path / "a", freeze=False)
    cand = runbook_tree(make_tree, tmp_path / "b", cuda="12.8", torch="2.10.0", freeze=False)
    report = compare(load_side(base, suite), load_side(cand, suite), suite)
    found = {(d.kind, d.item): (d.baseline, d.candidate) for d in report.environment_diff}
    assert found[(DRIVER, "torch CUDA build")] == ("13.0", "12.8")
    assert found[("freeze", "torch")] == ("2.11.0", "2.10.0")
    assert report.verdict == Verdict.NOT_COMPARABLE
    same = runbook_tree(make_tree, tmp_path / "c", freeze=False)
    assert not compare(load_side(base, suite), load_side(same, suite), suite).environment_diff


def test_a_freeze_that_contradicts_the_result_files_never_matches(suite, make_tree, tmp_path):
    lying = runbook_tree(make_tree, tmp_path / "a", torch="2.10.0")  # freeze.txt says torch 2.11.0
    fp = fingerprint_of_tree(read_tree(lying, suite), suite)
    freeze, provenance = "2.11.0", "2.10.0"  # what each source says
    assert fp.packages["torch"].startswith(CONFLICT) and f"freeze.txt {freeze} vs provenance {provenance}" in fp.packages["torch"]
    twin = runbook_tree(make_tree, tmp_path / "b", torch="2.10.0")
    assert compare(load_side(lying, suite), load_side(twin, suite), suite).verdict == Verdict.NOT_COMPARABLE


def test_env_json_must_agree_with_the_provenance(suite, make_tree, tmp_path):
    def with_env(dest, name):
        tree = runbook_tree(make_tree, dest, csv=H100)
        for run in sorted(tree.glob("run*")):
            (run / "env.json").write_text(json.dumps({"schema_version": 1, "gpu": {
                "name": name, "driver_version": "570.86.15"}}), encoding="utf-8")
        return tree

    agreeing = with_env(tmp_path / "ok", H100_NAME)
    assert fingerprint_of_tree(read_tree(agreeing, suite), suite).gpu == H100_NAME
    lying = with_env(tmp_path / "lie", "NVIDIA H200")  # env.json claims a GPU nvidia-smi did not list
    fp = fingerprint_of_tree(read_tree(lying, suite), suite)
    assert fp.gpu.startswith(CONFLICT) and f"NVIDIA H200 vs {H100_NAME}" in fp.gpu  # env.json's claim vs nvidia-smi's
    # Even against a tree with the same conflict, a conflict never matches: not comparable unless allowed.
    report = compare(load_side(lying, suite), load_side(with_env(tmp_path / "lie2", "NVIDIA H200"), suite), suite)
    assert report.verdict == Verdict.NOT_COMPARABLE
    # Issue 39: the headline says that each side disagrees with itself, not that the sides differ, and the fix is
    # not --allow-diff.
    assert {d.within for d in report.environment_diff if d.blocking} == {"both"}
    from gate.render.renderer import render_comment, render_terminal

    text = render_terminal(report)
    assert "a side's own records disagree" in text and "the sides ran on different setups" not in text
    assert "add --allow-diff" not in text
    assert "a side's own records disagree" in render_comment(report)
    one_sided = compare(load_side(agreeing, suite), load_side(lying, suite), suite)
    assert {d.within for d in one_sided.environment_diff if d.blocking} == {"candidate"}
