"""Folders `gate run` cannot read or enter are the user's to fix (issue 38): one `gate: error:` line naming
the folder, a documented exit, nothing left running, never the internal error's exit 70. Root runs the gate
without its override of permission bits (tests/helpers/unprivileged.py)."""
from __future__ import annotations

import pytest

from tests.helpers.unprivileged import as_a_user

RUN = ("--models", "qwen3", "--runs", "1")


def _one_error(stderr: str) -> str:
    errors = [line for line in stderr.splitlines() if line.startswith("gate: ")]
    assert len(errors) == 1 and stderr.rstrip().endswith(errors[0]), stderr
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr
    return errors[0]


@pytest.fixture
def locked(bench):
    """chmod 000 on a folder for one test, given back after it (pytest must clean it up)."""
    bench.prefix = tuple(as_a_user())
    folders = []

    def lock(folder):
        folder.mkdir(parents=True, exist_ok=True)
        folder.chmod(0)
        folders.append(folder)
        return folder

    yield lock
    for folder in folders:
        folder.chmod(0o755)


def test_an_unreadable_out_name_folder_is_bad_input(bench, locked):
    folder = locked(bench.out / "main")
    done = bench.run(*RUN)
    assert done.returncode == 2, done.stderr
    line = _one_error(done.stderr)
    assert line.startswith("gate: error: ") and str(folder) in line, line
    assert bench.leftovers() == []


def test_an_unreadable_checkout_venv_is_a_preflight_problem(bench, locked):
    folder = locked(bench.checkout / ".venv")
    done = bench.run(*RUN)
    assert done.returncode == 2, done.stderr
    line = _one_error(done.stderr)
    assert str(folder) in line, line
    assert bench.leftovers() == []


def test_resume_with_an_unreadable_run_folder_names_it(bench, locked):
    assert bench.run(*RUN).returncode == 0
    folder = locked(bench.out / "main" / "run1")
    done = bench.run(*RUN, "--resume")
    assert done.returncode in (2, 3), done.stderr
    line = _one_error(done.stderr)
    assert str(folder) in line and "EEXIST" not in line, line
    assert bench.leftovers() == []
