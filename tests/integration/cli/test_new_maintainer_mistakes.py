"""A new maintainer's 22 mistakes (issue 39; the table in the README's "Troubleshooting: a new maintainer's 22
mistakes"): each one is made through the real CLI, and its message must name the file or flag, say what was
expected and carry the fix, with the documented exit code.

A case is (argv, exit code, tokens): every token must appear in the `gate: error:` / `gate: warning:` line (or,
for `gate event`, the printed reason). Tokens are short on purpose: the flag or file, and a word of the fix.
The port in use is tested where the stand-in server is (tests/e2e/run/test_run_e2e.py,
test_busy_port_fails_before_any_run: exit 2, "port N is in use ... or pass --port").
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gate import cli as cli_module
from gate.formats.errors import EXIT_FAIL, EXIT_INPUT, EXIT_NOT_COMPARABLE, EXIT_OK
from gate.publish.github import _explain
from tests.helpers.shared_trees import quick_start_trees

REPO = Path(__file__).resolve().parents[3]
H200 = {"name": "NVIDIA H200", "driver_version": "580.95.05"}
H100 = {"name": "NVIDIA H100 80GB HBM3", "driver_version": "580.95.05"}


def _env(tree: Path, gpu: dict) -> None:
    for run_dir in tree.glob("run*"):
        doc = {"schema_version": 1, "gate_version": "synthetic", "gpu": gpu, "datasets": {}, "models": {}}
        (run_dir / "env.json").write_text(json.dumps(doc), encoding="utf-8")


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    """The quick start's trees (ex/baseline, ex/candidate, ex/baseline.json) and the files the mistakes need."""
    root = tmp_path_factory.mktemp("mistakes")
    ex = quick_start_trees(tmp_path_factory, root / "ex")
    base, candidate, calibration = ex / "baseline", ex / "candidate", ex / "baseline.json"
    shutil.copy(calibration, root / "nostamp.json")  # a calibration without its stamp beside it
    for name, gpu in (("h200", H200), ("h100", H100)):
        tree = shutil.copytree(base if name == "h200" else candidate, root / name)
        (tree / "gate-run.json").unlink(missing_ok=True)
        _env(tree, gpu)
    assert cli_module.run(["baseline", "create", str(root / "h200"), "--out", str(root / "h200-qwen3.json"),
                           "--models", "qwen3"]) == 0
    (root / "bad.yaml").write_text("models: [\n", encoding="utf-8")
    shipped = (REPO / "gate" / "suites" / "asr.yaml").read_text(encoding="utf-8")
    (root / "typo.yaml").write_text(shipped.replace("labels:", "lables:", 1), encoding="utf-8")
    (root / "report.json").write_text(json.dumps({"schema_version": 4, "verdict": "fail", "rows": []}),
                                      encoding="utf-8")
    (root / "afile").write_text("", encoding="utf-8")
    (root / "checkout").mkdir()
    event = {"action": "labeled", "label": {"name": "run-qwen3"}, "repository": {"full_name": "o/r"},
             "pull_request": {"number": 7, "labels": [{"name": "run-qwen3"}],
                              "head": {"sha": "a" * 40, "ref": "x", "repo": {"full_name": "o/r"}},
                              "base": {"sha": "b" * 40, "ref": "main", "repo": {"full_name": "o/r"}}}}
    (root / "event.json").write_text(json.dumps(event), encoding="utf-8")
    return root


# (id, argv, exit code, tokens the one line carries: the file or flag, what was expected, the fix)
CASES = [
    ("tree path typo", ["compare", "ex/baselin", "ex/candidate"], EXIT_INPUT,
     ["ex/baselin", "no such file", "expected a result tree"]),
    ("folder of trees given", ["compare", "ex", "ex/candidate"], EXIT_INPUT,
     ["ex:", "expected the runbook layout", "give one of them", "ex/baseline"]),
    ("a run folder given", ["compare", "ex/baseline/run1", "ex/candidate"], EXIT_INPUT,
     ["ex/baseline/run1", "one run of a tree", "give the tree"]),
    ("summarize on a run folder", ["summarize", "ex/baseline/run1"], EXIT_INPUT,
     ["ex/baseline/run1", "give the tree"]),
    ("swapped arguments", ["compare", "ex/candidate", "ex/baseline", "--format", "none"], EXIT_OK,
     ["swapped", "gate compare ex/baseline ex/candidate"]),
    ("baseline of another runner class", ["compare", "h200-qwen3.json", "h100", "--models", "qwen3", "--format", "none"],
     EXIT_NOT_COMPARABLE, ["h200-qwen3.json", "NVIDIA H200", "runner class", "--allow-diff gpu"]),
    ("suite YAML syntax error", ["compare", "ex/baseline", "ex/candidate", "--suite", "bad.yaml"], EXIT_INPUT,
     ["bad.yaml", "line 2", "expected a suite YAML", "--suite"]),
    ("suite key typo", ["compare", "ex/baseline", "ex/candidate", "--suite", "typo.yaml"], EXIT_INPUT,
     ["typo.yaml", "labels", "lables", "fix the spelling"]),
    ("calibration without its stamp", ["compare", "ex/baseline", "ex/candidate", "--calibration", "nostamp.json",
                                       "--format", "none"], EXIT_FAIL,
     ["--calibration nostamp.json", "nostamp.calibration-stamp.json", "put the stamp"]),
    ("--models typo", ["compare", "ex/baseline", "ex/candidate", "--models", "qwen"], EXIT_INPUT,
     ["--models qwen", "expected one of", "--models qwen3"]),
    ("--allow-diff unknown kind", ["compare", "ex/baseline", "ex/candidate", "--allow-diff", "gpus"], EXIT_INPUT,
     ["--allow-diff", "'gpu'", "--help"]),
    ("--calibration a folder", ["compare", "ex/baseline", "ex/candidate", "--calibration", "ex/baseline"], EXIT_INPUT,
     ["--calibration", "ex/baseline", "is a directory"]),
    ("a report given as the baseline", ["compare", "report.json", "ex/candidate"], EXIT_INPUT,
     ["report.json", "asr-gate-baseline", "it is a report", "gate baseline create"]),
    ("calibrate with an odd number of trees", ["baseline", "calibrate", "ex/baseline", "ex/candidate", "ex/baseline",
                                               "--baseline", "ex/baseline.json"], EXIT_INPUT,
     ["gate baseline calibrate", "pairs of trees", "got 3", "even number"]),
    ("--json under a file", ["compare", "ex/baseline", "ex/candidate", "--json", "afile/report.json",
                             "--format", "none"], EXIT_INPUT,
     ["afile/report.json", "is a file, not a folder", "give a path"]),
    ("--label typo", ["run", "--checkout", "checkout", "--out", "res", "--label", "run-qwen3", "--no-gpu"], EXIT_INPUT,
     ["--label", "run-qwen3", "known labels", "run-qwen3-asr"]),
    ("--checkout and --ab together", ["run", "--checkout", "checkout", "--ab", "checkout", "checkout", "--out", "res"],
     EXIT_INPUT, ["--checkout", "--ab", "exactly one"]),
    ("no history store", ["history", "--history", "nohist"], EXIT_INPUT,
     ["nohist", "expected a history store", "gate history import"]),
]


@pytest.mark.parametrize("argv, code, tokens", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_each_mistake_names_the_flag_or_file_and_the_fix(work, monkeypatch, capsys, argv, code, tokens):
    monkeypatch.chdir(work)
    assert cli_module.run(argv) == code
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("gate: ")]
    line = next((line for line in lines if line.startswith(("gate: error: ", "gate: warning: "))), "")
    missing = [token for token in tokens if token not in line]
    assert not missing, f"{missing} not in {line!r}"
    assert sum(line.startswith("gate: error: ") for line in lines) <= 1


def _gate(*argv: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    probe = "import sys\nfrom gate.cli import main\nsys.argv = ['gate', *sys.argv[1:]]\nmain()\n"
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    return subprocess.run([sys.executable, "-c", probe, *argv], cwd=cwd, capture_output=True, text=True, timeout=120,
                          env={**(env if env is not None else os.environ), "PYTHONPATH": path})


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="an NVIDIA driver is present: no GPU error to make")
def test_gate_run_without_a_gpu_names_no_gpu(work):
    done = _gate("run", "--checkout", "checkout", "--out", "res", "--models", "qwen3", cwd=work)
    assert done.returncode == EXIT_INPUT and "NVML" in done.stderr and "use --no-gpu" in done.stderr


def test_a_checkout_without_its_venv_says_how_to_build_it(work, tmp_path):
    done = _gate("run", "--checkout", "checkout", "--out", str(tmp_path / "res"), "--models", "qwen3", "--no-gpu",
                 "--hf-hub", str(tmp_path / "hub"), "--lock-dir", str(tmp_path / "locks"), cwd=work)
    assert done.returncode == EXIT_INPUT
    assert done.stderr.count("gate: error: preflight failed:") == 1
    venv = next(line for line in done.stderr.splitlines() if ".venv/bin/python" in line)
    assert "expected the checkout's venv python" in venv and "uv venv .venv" in venv and "--python" in venv


def test_a_wrong_checkout_path_names_the_flag(work, tmp_path):
    done = _gate("run", "--checkout", "nope", "--out", str(tmp_path / "res"), "--models", "qwen3", "--no-gpu",
                 "--hf-hub", str(tmp_path / "hub"), "--lock-dir", str(tmp_path / "locks"), cwd=work)
    assert done.returncode == EXIT_INPUT
    line = next(line for line in done.stderr.splitlines() if "nope" in line)
    assert "no such directory" in line and "check the --checkout path" in line


def test_a_pr_label_that_is_not_a_gate_label_lists_the_labels_to_create(work):
    done = _gate("event", "--event-name", "pull_request", "--event-path", "event.json", cwd=work)
    assert done.returncode == EXIT_OK
    reason = next(line for line in done.stdout.splitlines() if line.startswith("reason="))
    assert "'run-qwen3' is not a gate label" in reason and "run-qwen3-asr" in reason and "gh label create" in reason


def test_a_workflow_without_the_token_names_the_variable(work):
    env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_TOKEN", "GATE_GITHUB_TOKEN", "GITHUB_REPOSITORY")}
    done = _gate("post", "--report", "report.json", "--tracking-issue", cwd=work, env=env)
    assert done.returncode == EXIT_INPUT
    assert done.stderr.startswith("gate: error: GITHUB_TOKEN (or GATE_GITHUB_TOKEN): required here but not set")
    assert "run it in the workflow" in done.stderr and done.stderr.count("\n") == 1


def test_a_token_without_the_permission_names_the_scopes_and_the_fix():
    text = _explain(403, "posting the comment", {"message": "Resource not accessible by integration"})
    assert "(403)" in text and "pull-requests/issues/checks/statuses: write" in text and "permissions:" in text


def test_the_reference_table_lists_22_mistakes():
    readme = (REPO / "docs" / "reference.md").read_text(encoding="utf-8")
    section = readme.split("## Troubleshooting: a new maintainer's 22 mistakes", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and line[2:4].strip(" |").isdigit()]
    assert [int(row.split("|")[1]) for row in rows] == list(range(1, 23))
