"""`gate store` against a real local bare git repository standing for the baseline branch: nothing reaches the
branch that was not judged PASS the same night, no calibration is dropped or shrunk, a rejected push is
applied again on the new tip, and the history is merged line by line."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from gate.cli import cli
from gate.config import load_suite
from gate.examples import CANDIDATE_COMMIT, ExampleSpec, write_example_tree
from gate.store import Change, StoreError, SubprocessGit, write

SUITE = load_suite()
pytestmark = pytest.mark.slow  # real example trees and judges (multimodel), real git (store)
BRANCH = "asr-gate-baselines"


def git(*args, cwd):
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout


@pytest.fixture
def remote(tmp_path):
    bare = tmp_path / "origin.git"
    git("init", "--quiet", "--bare", str(bare), cwd=tmp_path)
    return bare


def branch_files(remote: Path, tmp_path: Path) -> dict[str, str]:
    """path -> text of every file on the branch's tip ({} when the branch does not exist)."""
    heads = git("ls-remote", "--heads", str(remote), BRANCH, cwd=tmp_path)
    if not heads:
        return {}
    out = tmp_path / f"read-{len(list(tmp_path.glob('read-*')))}"
    git("clone", "--quiet", "--branch", BRANCH, str(remote), str(out), cwd=tmp_path)
    return {str(p.relative_to(out)): p.read_text() for p in out.rglob("*") if p.is_file() and ".git" not in p.parts}


def store(*args):
    result = CliRunner().invoke(cli, ["store", *[str(a) for a in args]], catch_exceptions=False)
    return result.exit_code, result.output + (result.stderr if result.stderr_bytes else "")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """whisper baselines: uncalibrated, calibrated from three A/A pairs, and from two (fewer df)."""
    root = tmp_path_factory.mktemp("store-files")
    trees = [write_example_tree(root / f"aa{k}", SUITE, ExampleSpec(models=("whisper",), seed=60 + k)) for k in range(6)]
    night = write_example_tree(root / "night", SUITE, ExampleSpec(models=("whisper",), seed=7, commit=CANDIDATE_COMMIT))
    out = {}
    for name, pairs in (("plain", 0), ("three", 3), ("two", 2)):
        path = root / name / "whisper.json"
        path.parent.mkdir()
        args = [["baseline", "create", night, "--out", path]]
        if pairs:
            args.append(["baseline", "calibrate", *trees[: 2 * pairs], "--baseline", path])
        for a in args:
            result = CliRunner().invoke(cli, [str(x) for x in a], catch_exceptions=False)
            assert result.exit_code == 0, result.output
        out[name] = path.parent
    return out


def report(tmp_path, *, verdict="pass", commit=CANDIDATE_COMMIT, example_reports=None):
    data = json.loads(example_reports["whisper"].read_text())
    assert data["verdict"] == "pass"
    data["candidate"]["commit"] = commit
    path = tmp_path / f"report-{verdict}.json"
    if verdict != "pass":  # a real failing report: qwen3's, with whisper's model list kept out
        data = json.loads(example_reports["qwen3"].read_text())
        data["candidate"]["commit"] = commit
    path.write_text(json.dumps(data))
    return path


def first_night(remote, files):
    code, out = store("baselines", files["three"], "--runner-class", "h200", "--sha", CANDIDATE_COMMIT,
                      "--remote", remote)
    assert code == 0 and "store pushed" in out, out


def test_the_first_night_creates_the_branch_without_a_report(remote, files, tmp_path):
    first_night(remote, files)
    stored = branch_files(remote, tmp_path)
    assert list(stored) == ["h200/whisper.json"]
    assert stored["h200/whisper.json"] == (files["three"] / "whisper.json").read_text()


def test_a_night_without_a_report_never_replaces_a_stored_baseline(remote, files, tmp_path):
    first_night(remote, files)
    before = branch_files(remote, tmp_path)
    code, out = store("baselines", files["three"], "--runner-class", "h200", "--sha", "e" * 40, "--remote", remote)
    assert code == 2 and "tonight has no report" in out
    code, out = store("baselines", files["three"], "--runner-class", "h200", "--sha", "e" * 40, "--remote", remote,
                      "--report", tmp_path / "missing.json")
    assert code == 2 and "tonight's report is missing" in out
    assert branch_files(remote, tmp_path) == before


def test_only_a_pass_report_of_the_same_night_moves_the_baseline(remote, files, tmp_path, example_reports):
    first_night(remote, files)
    before = branch_files(remote, tmp_path)
    other = report(tmp_path, commit="e" * 40, example_reports=example_reports)
    code, out = store("baselines", files["three"], "--runner-class", "h200", "--sha", CANDIDATE_COMMIT,
                      "--remote", remote, "--report", other)
    assert code == 2 and f"not of tonight's {CANDIDATE_COMMIT}" in out
    failing = report(tmp_path, verdict="fail", example_reports=example_reports)
    code, out = store("baselines", files["three"], "--runner-class", "h200", "--sha", CANDIDATE_COMMIT,
                      "--remote", remote, "--report", failing)
    assert code == 2 and ("does not cover it" in out or "only a PASS night" in out)
    assert branch_files(remote, tmp_path) == before
    passing = report(tmp_path, example_reports=example_reports)
    code, out = store("baselines", files["three"], "--runner-class", "h200", "--sha", CANDIDATE_COMMIT,
                      "--remote", remote, "--report", passing)
    assert code == 0 and "store unchanged" in out  # the same file: nothing to commit


@pytest.mark.parametrize("new, words", [("plain", "drops the calibration of whisper/"),
                                        ("two", "fewer degrees of freedom are not stored silently")])
def test_a_calibration_is_never_dropped_or_shrunk(remote, files, tmp_path, example_reports, new, words):
    first_night(remote, files)
    before = branch_files(remote, tmp_path)
    code, out = store("baselines", files[new], "--runner-class", "h200", "--sha", CANDIDATE_COMMIT, "--remote", remote,
                      "--report", report(tmp_path, example_reports=example_reports), "--update", "always")
    assert code == 2 and words in out, out
    assert branch_files(remote, tmp_path) == before


def test_a_rejected_push_is_applied_again_on_the_new_tip(remote, tmp_path):
    """Another writer pushes between our fetch and our push: the first push is rejected, the second lands."""
    other = tmp_path / "other"
    history = tmp_path / "night" / "h200"
    history.mkdir(parents=True)
    (history / "whisper.jsonl").write_text('{"night": 2}\n')
    write(Change("seed", lambda root: (root / "history").mkdir() or (root / "history" / "seed.txt").write_text("x\n")),
          remote=str(remote), branch=BRANCH, make_git=lambda cwd: SubprocessGit(cwd))
    pushes = []

    class Racing(SubprocessGit):
        def __call__(self, *args, check=True):
            if args[0] == "push" and not pushes:
                pushes.append(1)
                git("clone", "--quiet", "--branch", BRANCH, str(remote), str(other), cwd=tmp_path)
                (other / "history" / "h200").mkdir(parents=True)
                (other / "history" / "h200" / "whisper.jsonl").write_text('{"night": 1}\n')
                git("add", "-A", cwd=other)
                git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "other writer", cwd=other)
                git("push", "--quiet", "origin", f"HEAD:{BRANCH}", cwd=other)
            return super().__call__(*args, check=check)

    from gate.store import history_change

    lines = []
    done = write(history_change(runner_class="h200", source=tmp_path / "night", sha="c" * 40), remote=str(remote),
                 branch=BRANCH, make_git=lambda cwd: Racing(cwd), log=lines.append)
    assert done == "pushed" and any("push rejected (attempt 1)" in line for line in lines)
    stored = branch_files(remote, tmp_path)
    assert stored["history/h200/whisper.jsonl"] == '{"night": 1}\n{"night": 2}\n'  # both writers' lines, once each
    assert stored["history/seed.txt"] == "x\n"


def test_history_is_a_union_and_a_missing_history_is_refused(remote, tmp_path):
    night = tmp_path / "h"
    (night / "h200").mkdir(parents=True)
    (night / "h200" / "qwen3.jsonl").write_text("a\nb\n")
    assert store("history", night, "--runner-class", "h200", "--sha", "c" * 40, "--remote", remote)[0] == 0
    (night / "h200" / "qwen3.jsonl").write_text("b\nc\n")
    assert store("history", night, "--runner-class", "h200", "--sha", "d" * 40, "--remote", remote)[0] == 0
    assert branch_files(remote, tmp_path)["history/h200/qwen3.jsonl"] == "a\nb\nc\n"
    code, out = store("history", tmp_path / "none", "--runner-class", "h200", "--sha", "c" * 40, "--remote", remote)
    assert code == 2 and "expected the night's history as a directory" in out


def test_an_unreadable_branch_is_an_error_not_a_first_night(tmp_path, files):
    code, out = store("baselines", files["three"], "--runner-class", "h200", "--sha", CANDIDATE_COMMIT,
                      "--remote", tmp_path / "no-such-repo.git")
    assert code == 2 and "cannot read the baseline branch" in out


def test_store_errors_are_store_errors():
    with pytest.raises(StoreError, match="expected on-pass or always"):
        from gate.store import baseline_change
        baseline_change(runner_class="h200", new={"whisper": Path("x")}, night=None, sha="c" * 40, update="never",
                        entries_of=lambda p, m: {})
