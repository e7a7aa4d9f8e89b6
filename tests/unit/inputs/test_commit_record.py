"""run<R>/commit.txt has one reader (gate.formats.commit_record): every caller accepts and refuses the same files,
each with its own documented outcome (the verdict: an invalid run; the trusted check: an error naming
the file; --resume: redo the run; the swap check: no commit sign)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

import pytest

from gate.formats import commit_record
from gate.formats.config import load_suite
from gate.formats.inputs import COMMIT, Unreadable
from gate.formats.result_types import RUN_RECORD, Problem
from gate.judging.swap_check import recorded
from gate.publish.untrusted import UntrustedInputError, check_consistency
from gate.reading.results import read_tree
from gate.runner.execute import _recorded_commit

SHA = "0123456789abcdef" * 2 + "01234567"
SUITE = load_suite()


def _link(path: Path) -> None:
    target = path.parent.parent / "elsewhere.txt"
    target.write_text(SHA + "\n")  # a valid commit behind the link: the link itself is refused
    path.symlink_to(target)


BAD: dict[str, tuple[Callable[[Path], object], str]] = {
    "link": (_link, "a symbolic link (not followed); expected the commit record as a regular file"),
    "fifo": (os.mkfifo, "not a regular file (a FIFO); expected a commit record"),
    "garbage": (lambda p: p.write_text("main\n"), "4 characters on 1 line, not a commit SHA; expected one git commit"),
    "two lines": (lambda p: p.write_text(f"{SHA}\n{SHA}\n"), "81 characters on 2 lines, not a commit SHA"),
    "empty": (lambda p: p.write_text(""), "empty; expected one git commit SHA"),
    "oversize": (lambda p: p.write_text("a" * (COMMIT.max_bytes + 1)),
                 f"{COMMIT.max_bytes + 1} bytes; expected a commit record of at most {COMMIT.max_bytes} bytes"),
    "not UTF-8": (lambda p: p.write_bytes(b"\xff" * 40 + b"\n"), "not UTF-8 text (byte 0); expected a commit record"),
}


def _tree(tmp_path: Path, make: Callable[[Path], object] | None) -> Path:
    """trees/candidate with run1..run3, each holding qwen3; run1's commit.txt made by `make`, the others valid."""
    side = tmp_path / "trees" / "candidate"
    for run in ("run1", "run2", "run3"):
        (side / run / "qwen3").mkdir(parents=True)
        if run != "run1" or make is None:
            (side / run / commit_record.FILE).write_text(SHA + "\n")
    if make is not None:
        make(side / "run1" / commit_record.FILE)
    return side


def test_a_valid_commit_is_read_alike_by_every_caller(tmp_path):
    side = _tree(tmp_path, None)
    run1 = side / "run1"
    assert commit_record.read_commit(run1) == SHA
    assert read_tree(side, SUITE, models=("qwen3",)).runs[0].commit == SHA
    check_consistency(side.parent, SUITE, "qwen3", head_sha=SHA, base_sha=None, ab=False)  # no error
    assert _recorded_commit(run1) == SHA
    assert recorded(side, git=False).commit == SHA


def test_an_absent_commit_is_none_for_readers_and_a_mismatch_at_the_trust_boundary(tmp_path):
    side = _tree(tmp_path, lambda p: None)
    assert commit_record.read_commit(side / "run1") is None
    info = read_tree(side, SUITE, models=("qwen3",)).runs[0]
    assert info.commit is None and info.problems == ()
    with pytest.raises(UntrustedInputError, match="candidate/run1/commit.txt names 'nothing'; the PR head is"):
        check_consistency(side.parent, SUITE, "qwen3", head_sha=SHA, base_sha=None, ab=False)
    assert _recorded_commit(side / "run1") is None
    assert recorded(side, git=False).commit == SHA  # the first run that has a commit.txt


@pytest.mark.parametrize("name", BAD)
def test_a_bad_commit_txt_is_refused_alike_by_every_caller(tmp_path, name):
    make, reason = BAD[name]
    side = _tree(tmp_path, make)
    path = side / "run1" / commit_record.FILE
    with pytest.raises(Unreadable) as refused:
        commit_record.read_commit(side / "run1")
    assert reason in refused.value.reason and "\n" not in str(refused.value)
    # The verdict: the run is invalid (RUN_RECORD, exit 3), the problem naming the file and the same reason.
    info = read_tree(side, SUITE, models=("qwen3",)).runs[0]
    assert info.commit is None and info.problems == (Problem(RUN_RECORD, refused.value.reason, str(path)),)
    # The trusted consistency check: one line naming the file (exit 2), the same reason.
    with pytest.raises(UntrustedInputError) as untrusted:
        check_consistency(side.parent, SUITE, "qwen3", head_sha=SHA, base_sha=None, ab=False)
    assert str(untrusted.value) == str(refused.value) and untrusted.value.exit_code == 2
    # --resume: not shown to be this commit, so the run is redone.
    assert _recorded_commit(side / "run1") is None
    # The swap check: no commit sign (it never reads past a refused file to another run's).
    assert recorded(side, git=False).commit is None
