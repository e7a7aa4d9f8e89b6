"""The README's shell blocks run as written: quick start 1 on a fresh clone of this commit (quick start 3:
test_readme_nightly.py, apart so that the two run on two xdist workers), quick start 2 against .ci/run (which runs
it), and every other shell block carries the reason CI cannot run it.

A fenced block's info string says which: ```sh runs here; ```sh ci-run is the test command .ci/run runs;
```sh needs-github and ```sh needs-gpu-runner need a repository you administer or the GPU machine, and are skipped
with that reason. An edit to the README's commands or figures, or to what they print, breaks this file.
"""
from __future__ import annotations

import re
import subprocess

import pytest

from tests.helpers.readme import README, ROOT, SKIPS, fresh_clone, quick_starts, run_block, sections, shell_blocks


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


# --- quick start 1 on a fresh clone -------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.long  # ~2 min: a fresh clone, its venv and pip, then the block
def test_quick_start_1_ends_as_the_readme_says(tmp_path_factory):
    clone = fresh_clone(tmp_path_factory)
    (block, _, _) = [body for _, body in quick_starts()]
    done = run_block(block, clone)
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
    # That the block can be run again (as the README says every block can) is test_example_command.py's
    # test_second_run_rewrites_the_same_folder: `gate example` over its own folder writes the same bytes.


def test_the_tags_are_read_from_the_info_string():
    text = "a\n   ```sh needs-github\n   gh x\n   ```\n```yaml\nk: v\n```\n```sh\necho hi\n```\n"
    assert shell_blocks(text) == [("needs-github", "gh x"), ("", "echo hi")]
