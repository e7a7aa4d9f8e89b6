"""The README's shell blocks run as written: quick starts 1 and 3 on a fresh clone of this commit, quick start 2
against .ci/run (which runs it), and every other shell block carries the reason CI cannot run it.

A fenced block's info string says which: ```sh runs here; ```sh ci-run is the test command .ci/run runs;
```sh needs-github and ```sh needs-gpu-runner need a repository you administer or the GPU machine, and are skipped
with that reason. An edit to the README's commands or figures, or to what they print, breaks this file.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
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


def test_every_shell_block_says_whether_ci_runs_it():
    blocks = shell_blocks(README.read_text(encoding="utf-8"))
    tags = [tag for tag, _ in blocks]
    unknown = [tag for tag in tags if tag not in {"", "ci-run", *SKIPS}]
    assert not unknown, f"README shell blocks with an unknown tag {unknown}: use one of '', 'ci-run', {sorted(SKIPS)}"
    assert [tag for tag, _ in quick_starts()] == ["", "ci-run", ""], "the quick starts: run, .ci/run's command, run"
    setup = shell_blocks(sections()["Adopt it in sglang-omni"])
    assert setup and all(tag in SKIPS for tag, _ in setup), "a set-up block CI can run belongs in a test here"


def _commands(line: str) -> list[str]:
    return [c.strip() for c in line.split(" && ")]


def _normal(command: str) -> str:
    """pip spelled as .ci/run spells it (python -m pip, --quiet) reads as the README's plain pip."""
    command = re.sub(r"\s+#.*$", "", command).strip()
    return command.replace("python -m pip ", "pip ").replace(" --quiet", "")


def test_the_readme_test_command_is_what_ci_runs():
    (command,) = [body for tag, body in quick_starts() if tag == "ci-run"]
    readme = [_normal(c) for c in _commands(command)]
    ci = [_normal(line) for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
          if line.strip() and not line.startswith(("#", " ", "\t", "set ", "cd ", "if ", "fi"))]
    ci = [c for c in ci if c != "pip install --upgrade pip"]
    assert readme[0] == "python3 -m venv .venv" and readme[1] == ". .venv/bin/activate"
    assert ci == readme, f".ci/run runs {ci}; README quick start 2 says {readme}"


@pytest.mark.parametrize("tag", sorted(SKIPS))
def test_blocks_that_need_github_or_the_gpu_machine_are_skipped_with_the_reason(tag):
    blocks = [body for t, body in shell_blocks(README.read_text(encoding="utf-8")) if t == tag]
    assert blocks, f"no README block is tagged {tag}: drop it from SKIPS"
    for body in blocks:  # at least they parse as shell
        assert subprocess.run(["bash", "-n"], input=body, text=True).returncode == 0, body
    pytest.skip(f"{len(blocks)} README block(s) tagged {tag}: {SKIPS[tag]}")


# --- quick starts 1 and 3 on a fresh clone -------------------------------------------------------------------------

def _fresh_env(home: Path) -> dict[str, str]:
    """The environment of someone who just cloned: no active venv (ours is left off PATH), no gate settings."""
    venv = os.environ.get("VIRTUAL_ENV")
    path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if not (venv and p.startswith(venv))]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GATE_", "VIRTUAL_ENV", "PYTHON"))}
    env["PATH"] = os.pathsep.join(path)
    return env


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    if shutil.which("git") is None:
        pytest.skip("needs git")
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
    if head.returncode != 0:
        pytest.skip(f"{ROOT} is not a git checkout: the README's blocks start from a clone")
    dest = tmp_path_factory.mktemp("readme") / "asr-regression-gate"
    subprocess.run(["git", "clone", "--quiet", "--no-checkout", str(ROOT), str(dest)], check=True)
    subprocess.run(["git", "-C", str(dest), "checkout", "--quiet", "--detach", head.stdout.strip()], check=True)
    return dest


def _run(block: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", block], cwd=cwd, env=_fresh_env(cwd), capture_output=True, text=True,
                          timeout=1800)


@pytest.mark.slow
def test_quick_start_1_ends_as_the_readme_says(clone):
    (block, _, _) = [body for _, body in quick_starts()]
    done = _run(block, clone)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out[-3000:]
    text = " ".join(sections()["Quick start"].split())
    figures = {  # what the README says -> what the run must print
        "`Verdict: FAIL (exit code 1)`": "Verdict: FAIL (exit code 1)",
        "throughput −6.6%": re.compile(r"throughput_samples_per_s .* -6\.6% "),
        "p95 latency +7.6%": re.compile(r"latency_p95_s .* \+7\.6% "),
        "WER 1.38% → 1.67%": re.compile(r"corpus_wer +1\.38% .* 1\.67% "),
        "47 utterances worse and 2 better": "47 worse, 2 better",
    }
    for said, printed in figures.items():
        assert said in text, f"README quick start 1 no longer says {said!r}: update this test with it"
        found = printed in out if isinstance(printed, str) else printed.search(out)
        assert found, f"README says {said!r}; the run printed:\n{out[-4000:]}"
    assert re.search(r"whisper +all \d+ pass", out) and re.search(r"fun +all \d+ pass", out), "every other row passes"
    # and again, as it is (the README says every block can be run again): the same verdict
    again = _run(block, clone)
    assert again.returncode == 1 and "Verdict: FAIL (exit code 1)" in again.stdout, (again.stdout + again.stderr)[-3000:]


@pytest.mark.slow
def test_quick_start_3_ends_as_the_readme_says(clone):
    (_, _, block) = [body for _, body in quick_starts()]
    done = _run(block, clone)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-3000:]
    nights = clone / "example-out" / "nights"
    verdicts = {n: json.loads((nights / f"night-{n:02d}" / "report.json").read_text(encoding="utf-8"))["verdict"]
                for n in range(2, 31)}
    text = " ".join(sections()["Quick start"].split())
    said = "Every night on the step (21–30) WARNs, as do 4 of the 19 no-op nights (03, 13, 15 and 19"
    assert said in text, f"README quick start 3 no longer says {said!r}: update this test with it"
    warned = sorted(n for n, v in verdicts.items() if v == "warn")
    assert warned == [3, 13, 15, 19, *range(21, 31)], verdicts
    assert set(verdicts.values()) == {"pass", "warn"}, verdicts
    step = "qwen3/asr_en throughput `-3.9% worse from 2026-10-21`"
    assert step in text
    assert re.search(r"qwen3/asr_en +throughput_samples_per_s .* -3\.9% worse from 2026-10-21", out), out[-4000:]
    for metric in ("latency_mean_s", "latency_p95_s", "rtf_mean"):  # "with mean and p95 latency and RTF beside it"
        assert re.search(rf"qwen3/asr_en +{metric} .* worse from 2026-10-21", out), metric
    assert "30 nights" in out and (nights / "site" / "index.html").is_file()


def test_the_tags_are_read_from_the_info_string():
    text = "a\n   ```sh needs-github\n   gh x\n   ```\n```yaml\nk: v\n```\n```sh\necho hi\n```\n"
    assert shell_blocks(text) == [("needs-github", "gh x"), ("", "echo hi")]
