"""Build a stand-in sglang-omni checkout (a TEST DOUBLE) and a fake HF hub for `gate run` tests.

    make_checkout(dest, knobs={...}) -> dest     # .venv/bin/{python,sgl-omni}, benchmarks/, a git commit
    make_hf_hub(dest, suite) -> dest             # models--*/snapshots/<rev>/config.json for every model
    small_suite(dest, counts) -> path            # the bundled suite with smaller expected_samples + timeouts

Usable from the command line too (benchmarks/gpu_e2e.sh): python tests/standin/build.py DEST
"""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

TEMPLATE = Path(__file__).resolve().parent / "checkout"
SMALL_COUNTS = {"seedtts_en": 6, "seedtts_zh": 5, "movies800times": 4, "aishell4_long": 2, "googletime": 3}
_WORKLOAD_COUNT_KEY = {"asr_en": "seedtts_en", "asr_zh": "seedtts_zh", "movies800times": "movies800times",
                       "movies800times_stream": "movies800times", "aishell4_long": "aishell4_long",
                       "googletime": "googletime"}


def make_checkout(dest: Path, *, python: str = sys.executable, knobs: dict | None = None, git: bool = True) -> Path:
    dest = Path(dest)
    shutil.copytree(TEMPLATE, dest, ignore=shutil.ignore_patterns("__pycache__"))
    venv_bin = dest / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    # A wrapper, not a symlink: a symlinked venv python would lose its own venv (pyvenv.cfg is looked up
    # beside the link), and with it torch on the GPU machine.
    wrapper = venv_bin / "python"
    # `pip freeze` of the stand-in venv answers from standin-freeze.txt: the real one would list the test
    # runner's own venv and takes seconds on a loaded machine, for every run of every test.
    wrapper.write_text('#!/bin/sh\nif [ "$1 $2 $3" = "-m pip freeze" ]; then\n'
                       '  exec cat "$(dirname "$0")/../../standin-freeze.txt"\nfi\n'
                       f'exec {shlex.quote(python)} "$@"\n')
    (dest / "standin-freeze.txt").write_text("standin-sglang-omni==0.0.0\ntorch==2.9.0+standin\n"
                                             "transformers==5.12.1\n")
    wrapper.chmod(0o755)
    server = venv_bin / "sgl-omni"
    # Like the real console script: the venv's python runs the server; the checkout is on sys.path.
    server.write_text('#!/bin/sh\nhere="$(cd "$(dirname "$0")" && pwd)"\n'
                      'exec "$here/python" "$here/../../standin_server.py" "$@"\n')
    server.chmod(0o755)
    if knobs is not None:
        write_knobs(dest, knobs)
    if git and shutil.which("git"):
        env = {**os.environ, "GIT_AUTHOR_NAME": "standin", "GIT_AUTHOR_EMAIL": "standin@example.invalid",
               "GIT_COMMITTER_NAME": "standin", "GIT_COMMITTER_EMAIL": "standin@example.invalid"}
        (dest / ".gitignore").write_text(".venv/\nstandin-*\n__pycache__/\n")
        for argv in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-q", "-m", "stand-in"]):
            subprocess.run(argv, cwd=dest, env=env, check=True, capture_output=True)
    return dest


def write_knobs(checkout: Path, knobs: dict) -> None:
    (Path(checkout) / "standin-knobs.json").write_text(json.dumps(knobs))


def make_hf_hub(dest: Path, suite) -> Path:
    dest = Path(dest)
    for model in suite.models.values():
        snapshot = Path(model.snapshot.replace("{hf_hub}", str(dest)))
        snapshot.mkdir(parents=True, exist_ok=True)
        (snapshot / "config.json").write_text(json.dumps({"_name_or_path": model.model_id, "standin": True}))
    return dest


def small_suite(dest: Path, counts: dict = SMALL_COUNTS, *, startup_timeout_s: float = 120, stop_grace_s: float = 2,
                client_timeout_s: float = 60, speed_gated: bool = True) -> Path:
    """The bundled suite, with expected_samples matching stand-in `counts` and short timeouts for tests.
    `speed_gated=False`: every speed metric is shown but decides nothing (`gate: false`), for a test whose verdicts
    must not hang on the speed of a loaded machine."""
    from gate.formats.config import default_suite_path
    text = default_suite_path().read_text()

    def count(match: re.Match) -> str:
        name = match.group(1)
        return match.group(0).replace(f"expected_samples: {match.group(2)}",
                                      f"expected_samples: {counts[_WORKLOAD_COUNT_KEY[name]]}")

    text = re.sub(r"\{id: \w+/(\w+),.*?expected_samples: (\d+)", count, text)
    text = re.sub(r"startup_timeout_s: \d+", f"startup_timeout_s: {startup_timeout_s}", text)
    text = re.sub(r"stop_grace_s: \d+", f"stop_grace_s: {stop_grace_s}", text)
    text = re.sub(r"gpu_free_timeout_s: \d+", "gpu_free_timeout_s: 60", text)
    text = re.sub(r"timeout_s: (3600|7200)", f"timeout_s: {client_timeout_s}", text)
    if not speed_gated:
        text = re.sub(r"kind: speed, (?!.*gate: false)", "kind: speed, gate: false, ", text)
    Path(dest).write_text(text)
    return Path(dest)


if __name__ == "__main__":
    import argparse
    parser = argparse.ArgumentParser(description="Build a stand-in checkout, HF hub and small suite under DEST.")
    parser.add_argument("dest", type=Path)
    parser.add_argument("--knobs", default="{}", help="JSON knobs for standin-knobs.json")
    parser.add_argument("--real-counts", action="store_true", help="keep the real dataset sizes (1088 2020 800 20 25)")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from gate.formats.config import load_suite
    args.dest.mkdir(parents=True, exist_ok=True)
    knobs = json.loads(args.knobs)
    if not args.real_counts:
        knobs.setdefault("counts", SMALL_COUNTS)
    make_checkout(args.dest / "checkout", knobs=knobs)
    suite_path = args.dest / "suite.yaml"
    if args.real_counts:
        from gate.formats.config import default_suite_path
        shutil.copy(default_suite_path(), suite_path)
    else:
        small_suite(suite_path)
    make_hf_hub(args.dest / "hf_hub", load_suite(suite_path))
    print(args.dest)
