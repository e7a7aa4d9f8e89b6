"""`gate store history` (the nightly's writer of the baseline branch's history) against a real local bare git
repository, with the mutation set of `gate history import` (tests/history/test_store_fuzz.py), issue 38:

- a mutation in tonight's history: no traceback, never exit 70, the planted file named, nothing unreadable
  pushed (the branch's history reads back with no skipped line) and every good record pushed;
- a mutation already on the branch: named, kept as it is, tonight's record added;
- kill -9 at every git call and every rename of a store: the branch is the old tip or the new one, both
  readable, and tonight's folder is unchanged.
"""
from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from gate.formats.errors import DOCUMENTED_EXIT_CODES
from gate.history.store import HistoryStore
from tests.e2e.history.test_store_fuzz import BENIGN, FILES, LINES, MUTATIONS, _Hang, invoke, mutate
from tests.helpers.nights import synthetic_records

BRANCH = "asr-gate-baselines"
NIGHTS = 30
pytestmark = pytest.mark.slow  # real git: a clone, a commit and a push per case


def git(*args, cwd) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout


def _bare(tmp_path: Path) -> Path:
    bare = tmp_path / "origin.git"
    git("init", "--quiet", "--bare", str(bare), cwd=tmp_path)
    return bare


def _tonight(tmp_path: Path, nights: int = NIGHTS) -> Path:
    root = tmp_path / "history-night"
    HistoryStore(root).append(synthetic_records(nights=nights, step_night=20), warn=None)
    return root


def _store_history(source: Path, bare: Path):
    return invoke("store", "history", source, "--runner-class", "h100", "--sha", "c" * 40, "--remote", bare,
                  "--branch", BRANCH)


def _branch_history(bare: Path, tmp_path: Path):
    """The branch tip's history as the store reads it (None when the branch does not exist)."""
    if not git("ls-remote", "--heads", str(bare), BRANCH, cwd=tmp_path):
        return None
    out = tmp_path / f"read-{len(list(tmp_path.glob('read-*')))}"
    git("clone", "--quiet", "--branch", BRANCH, str(bare), str(out), cwd=tmp_path)
    for path in (out / "history").rglob("*.jsonl"):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            assert data.endswith(b"\n"), f"{path}: a torn last line on the branch"
    return HistoryStore(out / "history").read(warn=None)


def _said(result) -> str:
    return result.output + (result.stderr or "")


def _checked(case: str, result) -> None:
    assert not isinstance(result.exception, _Hang), f"{case}: hung"
    assert result.exception is None or isinstance(result.exception, SystemExit), \
        f"{case}: {type(result.exception).__name__}: {result.exception}"
    assert result.exit_code in DOCUMENTED_EXIT_CODES and result.exit_code != 70, (case, result.exit_code, _said(result))
    assert "Traceback" not in _said(result), case


@pytest.mark.parametrize("name", MUTATIONS)
def test_a_mutation_in_tonights_history_is_named_and_kept_out_of_the_push(tmp_path, name):
    source = _tonight(tmp_path)
    planted = mutate(source, name)
    bare = _bare(tmp_path)
    result = _store_history(source, bare)
    case = f"{name} × store history"
    _checked(case, result)
    assert result.exit_code == 0, (case, _said(result))  # the good records are stored whatever one line is
    if name not in BENIGN:
        assert str(planted) in _said(result), f"{case}: {planted} not named: {_said(result)[-400:]}"
    stored = _branch_history(bare, tmp_path)
    assert stored is not None and stored.skipped == (), f"{case}: pushed what the reader cannot use: {stored.skipped}"
    assert len(stored.select(runner_class="h100")) == NIGHTS, case


# What git can hold on the branch: no FIFO, socket or 65 MiB file.
ON_THE_BRANCH = [m for m in MUTATIONS if m in LINES or m in FILES and not any(
    word in m for word in ("FIFO", "socket", "65 MiB"))]


@pytest.mark.parametrize("name", ON_THE_BRANCH)
def test_a_mutation_on_the_branch_is_named_kept_and_tonight_is_added(tmp_path, name):
    bare = _bare(tmp_path)
    seed = _tonight(tmp_path / "seed")
    assert _store_history(seed, bare).exit_code == 0
    work = tmp_path / "edit"
    git("clone", "--quiet", "--branch", BRANCH, str(bare), str(work), cwd=tmp_path)
    if name == "directory as a month file":  # git keeps no empty folder
        (work / "history" / "h100" / "2026-11.jsonl").mkdir()
        (work / "history" / "h100" / "2026-11.jsonl" / "x").write_text("x\n")
        planted = work / "history" / "h100" / "2026-11.jsonl"
    else:
        planted = mutate(work / "history", name)
    git("add", "-A", cwd=work)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet", "-m", f"hand edit: {name}", cwd=work)
    git("push", "--quiet", "origin", f"HEAD:{BRANCH}", cwd=work)
    tonight = _tonight(tmp_path / "night", nights=NIGHTS + 1)  # night 31 is new
    result = _store_history(tonight, bare)
    case = f"{name} on the branch × store history"
    _checked(case, result)
    relative = str(planted.relative_to(work))
    if name not in BENIGN:
        assert relative in _said(result), f"{case}: {relative} not named: {_said(result)[-400:]}"
    if result.exit_code == 0:
        stored = _branch_history(bare, tmp_path)
        assert stored is not None and len(stored.select(runner_class="h100")) == NIGHTS + 1, case
    else:
        assert result.exit_code == 2, case


# kill -9 at the k-th git call or rename of `gate store history` (a child process of the test).
_KILL_AT = """import os, signal
from gate.publish import branch
_count = [0]
def _maybe_die():
    _count[0] += 1
    with open({record!r}, "a") as f:
        f.write("x\\n")
    if _count[0] == {k}:
        os.kill(os.getpid(), signal.SIGKILL)
_git_call = branch.SubprocessGit.__call__
def _call(self, *args, **kwargs):
    _maybe_die()
    return _git_call(self, *args, **kwargs)
branch.SubprocessGit.__call__ = _call
_replace = os.replace
def _rename(*args, **kwargs):
    _maybe_die()
    return _replace(*args, **kwargs)
os.replace = _rename
import sys
from gate.cli import main
sys.argv = ["gate", *sys.argv[1:]]
main()
"""


def _digest(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        digest.update(str(path.relative_to(folder)).encode())
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def test_kill_9_at_every_step_leaves_the_branch_and_the_folder_valid(tmp_path):
    bare = _bare(tmp_path)
    assert _store_history(_tonight(tmp_path / "seed", nights=10), bare).exit_code == 0
    source = _tonight(tmp_path / "night", nights=NIGHTS)
    before = _digest(source)
    args = ["store", "history", str(source), "--runner-class", "h100", "--sha", "c" * 40, "--remote", str(bare),
            "--branch", BRANCH]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[3]),
                                                        os.environ.get("PYTHONPATH", "")])}
    k, killed = 0, 0
    while True:
        k += 1
        record = tmp_path / f"steps-{k}.txt"
        done = subprocess.run([sys.executable, "-c", _KILL_AT.format(record=str(record), k=k), *args], env=env,
                              capture_output=True, text=True, timeout=120)
        stored = _branch_history(bare, tmp_path)
        assert stored is not None and stored.skipped == (), f"kill at step {k}: {stored}"
        assert len(stored.select(runner_class="h100")) in (10, NIGHTS), f"kill at step {k}"
        assert _digest(source) == before, f"kill at step {k}: tonight's folder changed"
        git("fsck", "--no-progress", cwd=bare)
        if done.returncode != -signal.SIGKILL:
            assert done.returncode == 0, done.stderr
            break
        killed += 1
    assert killed >= 8, killed  # every git call (init, remote, ls-remote, fetch, checkout, clean, add, diff, commit, push)
