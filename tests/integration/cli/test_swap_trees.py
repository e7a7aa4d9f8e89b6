"""Swapped result trees are named from the run log's sides and from the commits' order in git."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from gate.examples import ExampleSpec, write_example_tree
from gate.formats import runlog
from gate.formats.config import load_suite
from gate.judging.swap_check import order_unknown, recorded, swap_warnings
from gate.reading.baseline_file import write_baseline
from gate.reading.tree_side import side_from_tree


def _tree(root: Path, commit: str, sides: dict[str, str] | None) -> Path:
    (root / "run1").mkdir(parents=True)
    (root / "run1" / "commit.txt").write_text(commit + "\n")
    if sides is not None:
        log = runlog.skeleton(sides, {f"{side}/run1": "completed" for side in sides}, started="2026-11-02T03:00:00+00:00")
        (root / "gate-run.json").write_text(json.dumps(log))
    return root


def test_ab_trees_given_the_wrong_way_round_name_the_base(tmp_path):
    sides = {"base": "/nowhere/a", "candidate": "/nowhere/b"}
    base = _tree(tmp_path / "base", "a" * 40, sides)
    cand = _tree(tmp_path / "candidate", "b" * 40, sides)
    assert swap_warnings(recorded(base), recorded(cand), []) == []
    warnings = swap_warnings(recorded(cand), recorded(base), [])
    assert len(warnings) == 1
    assert f"so {base} looks like the base" in warnings[0]
    assert f"gate compare {base} {cand}" in warnings[0]  # the fix, ready to run


def test_one_tree_with_a_log_is_enough_and_trees_of_two_runs_are_not_a_sign(tmp_path):
    cand_of_run = _tree(tmp_path / "x" / "candidate", "b" * 40, {"base": "/n/a", "candidate": "/n/b"})
    plain = _tree(tmp_path / "plain", "a" * 40, None)
    assert len(swap_warnings(recorded(cand_of_run), recorded(plain), [])) == 1
    other_base = _tree(tmp_path / "y" / "base", "c" * 40, {"base": "/n/c", "candidate": "/n/d"})
    first_base = _tree(tmp_path / "z" / "base", "d" * 40, {"base": "/n/e", "candidate": "/n/f"})
    assert swap_warnings(recorded(first_base), recorded(other_base), []) == []  # two bases of two runs
    nightly = _tree(tmp_path / "main", "e" * 40, {"main": "/n/main"})
    assert recorded(nightly).role is None  # a one-side run has no base or candidate


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_commit_order_from_git_in_the_checkout_the_log_names(tmp_path):
    repo = tmp_path / "checkout"
    repo.mkdir()

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                              env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                                   "GIT_COMMITTER_EMAIL": "t@t", "HOME": str(tmp_path)}).stdout.strip()
    git("init", "-q")
    git("commit", "-q", "--allow-empty", "-m", "old")
    old = git("rev-parse", "HEAD")
    git("commit", "-q", "--allow-empty", "-m", "new")
    new = git("rev-parse", "HEAD")
    # Two nightly trees (one side each, so the log gives no roles): only the commits tell the order.
    older = _tree(tmp_path / "night-1" / "main", old, {"main": str(repo)})
    newer = _tree(tmp_path / "night-2" / "main", new, {"main": str(repo)})
    assert swap_warnings(recorded(older), recorded(newer), []) == []
    warnings = swap_warnings(recorded(newer), recorded(older), [])
    assert len(warnings) == 1 and f"{old[:10]} is an ancestor of BASE's {new[:10]}" in warnings[0]
    assert f"so {older} looks like the base" in warnings[0]
    untrusted = swap_warnings(recorded(newer, git=False), recorded(older, git=False), [])
    assert untrusted == []  # trees from an untrusted source: git never runs in a folder they name


def test_a_baseline_stored_after_the_candidate_ran_is_not_a_sign(tmp_path):
    """A nightly refresh stores a baseline after a PR's trees were made: times of different kinds do not count."""
    tree = _tree(tmp_path / "candidate", "b" * 40, None)
    (tree / "gate-run.json").write_text(json.dumps(runlog.skeleton({"candidate": "/c"}, {"candidate/run1": "completed"},
                                                                   started="2026-11-02T03:00:00+00:00")))
    suite = load_suite()
    stored = write_example_tree(tmp_path / "stored", suite, ExampleSpec(models=("qwen3",), runs=("1", "2", "3")))
    baseline = write_baseline(side_from_tree(stored, suite, models=("qwen3",)), tmp_path / "baseline.json")
    baseline.write_text(json.dumps({**json.loads(baseline.read_text()), "created": "2026-11-05T03:00:00+00:00"}))
    assert swap_warnings(recorded(baseline), recorded(tree), []) == []


def _age(tree: Path, hours: float) -> Path:
    """Set every file's time in the tree's run folders to `hours` before now (as if measured then)."""
    import os
    import time

    when = time.time() - hours * 3600
    for path in tree.rglob("*"):
        if path.is_file():
            os.utime(path, (when, when))
    return tree


def test_hand_made_trees_files_own_times_are_no_sign_and_the_unknown_order_is_said(tmp_path):
    """Runbook trees have no run log, and their files' times are no sign (issue 51: interleaved trees overlap, a
    copy resets them): with no checkout to order the commits, the gate says it cannot tell, naming the fix."""
    older = _age(_tree(tmp_path / "main_a", "a" * 40, None), hours=5)
    newer = _age(_tree(tmp_path / "pr_regress", "b" * 40, None), hours=1)
    assert swap_warnings(recorded(newer), recorded(older), []) == []
    note = order_unknown(recorded(newer), recorded(older))
    assert note is not None and "cannot be told" in note and f"BASE is taken to be {newer}" in note
    assert f"gate compare {older} {newer}" in note and "--checkout DIR" in note
    assert order_unknown(recorded(older), _same_commit(recorded(older))) is None  # an A/A pair: no order


def _same_commit(side):
    import dataclasses

    return dataclasses.replace(side, path=side.path + "-again")


def test_interleaved_or_copied_trees_give_no_time_sign(tmp_path):
    """The runbook alternates the commits (A, B, B, A, A, B): the trees' times overlap and say nothing; so do two
    trees copied minutes apart."""
    a = _tree(tmp_path / "a", "a" * 40, None)
    b = _tree(tmp_path / "b", "b" * 40, None)
    _age(a, hours=0.05)
    assert swap_warnings(recorded(b), recorded(a), []) == []


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_a_checkout_given_by_hand_orders_hand_made_trees(tmp_path):
    repo = tmp_path / "checkout"
    repo.mkdir()
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t",
           "HOME": str(tmp_path)}

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                              env=env).stdout.strip()
    git("init", "-q")
    git("commit", "-q", "--allow-empty", "-m", "old")
    old = git("rev-parse", "HEAD")
    git("commit", "-q", "--allow-empty", "-m", "new")
    new = git("rev-parse", "HEAD")
    main = _tree(tmp_path / "main_a", old, None)
    pr = _tree(tmp_path / "pr", new, None)
    assert swap_warnings(recorded(pr), recorded(main), []) == []  # no log, no checkout: no sign
    assert order_unknown(recorded(pr), recorded(main)) is not None  # ... and that is said
    given = (str(repo),)
    warnings = swap_warnings(recorded(pr, checkouts=given), recorded(main, checkouts=given), [])
    assert len(warnings) == 1 and f"{old[:10]} is an ancestor of BASE's {new[:10]}" in warnings[0]
    assert swap_warnings(recorded(main, checkouts=given), recorded(pr, checkouts=given), []) == []
    assert order_unknown(recorded(main, checkouts=given), recorded(pr, checkouts=given)) is None  # git told
