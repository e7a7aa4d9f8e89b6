"""Fixtures for `gate run` tests: a stand-in sglang-omni checkout (test double), a fake HF hub, a small
suite, and a way to run `gate run` as its own process and check that none of its processes survive."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from gate.formats.config import load_suite
from tests.standin.build import SMALL_COUNTS, make_checkout, make_hf_hub, small_suite, write_knobs
from tests.standin.procs import free_port, our_processes

REPO = Path(__file__).resolve().parents[2]

# `gate run` through the real CLI group (gate.cli imports a command's module only when it runs).
GATE_RUN = "import sys\nfrom gate.cli import main\nsys.argv = ['gate', 'run', *sys.argv[1:]]\nmain()\n"


@dataclass
class Bench:
    root: Path
    checkout: Path
    hf_hub: Path
    suite_path: Path
    out: Path
    port: int
    marker: str

    @property
    def suite(self):
        return load_suite(self.suite_path)

    def knobs(self, knobs: dict) -> None:
        write_knobs(self.checkout, {"counts": SMALL_COUNTS, **knobs})

    no_gpu: bool = True  # a gpu-marked test sets False to use the real GPU through pynvml
    prefix: tuple[str, ...] = ()  # a command before the gate's python (tests/helpers/unprivileged.py)

    def args(self, *extra: str, checkout: bool = True) -> list[str]:
        base = ["--out", str(self.out), "--suite", str(self.suite_path), "--hf-hub", str(self.hf_hub),
                *(["--no-gpu"] if self.no_gpu else []),
                "--port", str(self.port), "--lock-dir", str(self.root / "locks"), "--no-dataset-fingerprints",
                "--port-wait", "0.5"]
        return (["--checkout", str(self.checkout)] if checkout else []) + base + list(extra)

    def env(self) -> dict:
        path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)  # keep a --target site
        return {**os.environ, "STANDIN_TEST_MARKER": self.marker, "PYTHONPATH": path}

    def start(self, *extra: str, checkout: bool = True, python_prelude: str = "") -> subprocess.Popen:
        return subprocess.Popen([*self.prefix, sys.executable, "-c", python_prelude + GATE_RUN,
                                 *self.args(*extra, checkout=checkout)],
                                cwd=REPO, env=self.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def run(self, *extra: str, checkout: bool = True, timeout: float = 60,
            python_prelude: str = "") -> subprocess.CompletedProcess:
        proc = self.start(*extra, checkout=checkout, python_prelude=python_prelude)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            raise AssertionError(f"gate run did not finish in {timeout} s:\n{err}") from None
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)

    def run_log(self, name: str = "main") -> dict:
        return json.loads((self.out / name / "gate-run.json").read_text())

    def leftovers(self) -> list[int]:
        return our_processes(self.marker)


@pytest.fixture(scope="session")
def suite_file(tmp_path_factory) -> Path:
    return small_suite(tmp_path_factory.mktemp("suite") / "suite.yaml", startup_timeout_s=2, stop_grace_s=0.5,
                       client_timeout_s=20)


@pytest.fixture(scope="session")
def hf_hub(tmp_path_factory, suite_file) -> Path:
    return make_hf_hub(tmp_path_factory.mktemp("hub") / "hub", load_suite(suite_file))


@pytest.fixture
def bench(tmp_path, suite_file, hf_hub) -> Bench:
    checkout = make_checkout(tmp_path / "sglang-omni", knobs={"counts": SMALL_COUNTS})
    b = Bench(root=tmp_path, checkout=checkout, hf_hub=hf_hub, suite_path=suite_file, out=tmp_path / "results",
              port=free_port(), marker=uuid.uuid4().hex)
    yield b
    left = b.leftovers()
    for pid in left:  # never leave a stray process on the test machine, even when a test failed
        try:
            os.kill(pid, 9)
        except OSError:
            pass
    assert not left, f"processes of this test still running after it: {left}"
