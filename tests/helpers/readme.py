"""The README's shell blocks, read as the tests in tests/e2e/readme/ read them, and run on a fresh clone of this commit.

A fenced block's info string says which: ```sh runs here; ```sh ci-run is the test command .ci/run runs;
```sh needs-github and ```sh needs-gpu-runner need a repository you administer or the GPU machine."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
FENCE = re.compile(r"^(?P<indent> *)```(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=indent)```[ \t]*$", re.M | re.S)
SHELLS = {"sh", "bash", "shell", "console"}
SKIPS = {"needs-github": "needs GitHub: a repository you administer and gh logged in",
         "needs-gpu-runner": "needs the GPU machine that becomes a self-hosted runner"}


def sections() -> dict[str, str]:
    text = README.read_text(encoding="utf-8")
    parts = re.split(r"^## (.+)$", text, flags=re.M)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts), 2)}


def shell_blocks(text: str) -> list[tuple[str, str]]:
    """(tag, commands) of each shell block; the tag is what follows the language ("" for a block CI runs)."""
    out = []
    for m in FENCE.finditer(text):
        lang, _, tag = m.group("info").strip().partition(" ")
        if lang in SHELLS:
            body = "\n".join(line[len(m.group("indent")):] for line in m.group("body").splitlines())
            out.append((tag.strip(), body.strip()))
    return out


def quick_starts() -> list[tuple[str, str]]:
    return shell_blocks(sections()["Quick start"])


def _fresh_env(home: Path) -> dict[str, str]:
    """The environment of someone who just cloned: no active venv (ours is left off PATH), no gate settings."""
    venv = os.environ.get("VIRTUAL_ENV")
    path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if not (venv and p.startswith(venv))]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GATE_", "VIRTUAL_ENV", "PYTHON"))}
    env["PATH"] = os.pathsep.join(path)
    return env


def fresh_clone(tmp_path_factory) -> Path:
    """A clone of this commit, checked out detached, as someone who just cloned has it (skips without git)."""
    if shutil.which("git") is None:
        pytest.skip("needs git")
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
    if head.returncode != 0:
        pytest.skip(f"{ROOT} is not a git checkout: the README's blocks start from a clone")
    dest = tmp_path_factory.mktemp("readme") / "asr-regression-gate"
    subprocess.run(["git", "clone", "--quiet", "--no-checkout", str(ROOT), str(dest)], check=True)
    subprocess.run(["git", "-C", str(dest), "checkout", "--quiet", "--detach", head.stdout.strip()], check=True)
    return dest


def run_block(block: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", block], cwd=cwd, env=_fresh_env(cwd), capture_output=True, text=True,
                          timeout=1800)
