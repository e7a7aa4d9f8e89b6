"""The suite's per-model `passes` (issue 37): P timed passes per server start, the SeedTTS client's --repeats P.
Default 1 (the runbook's --repeats 1); only SeedTTS clients take it, and a command without {passes} is refused
rather than silently measuring one pass."""
from __future__ import annotations

from pathlib import Path

import pytest

from gate.formats.config import default_suite_path, load_suite
from gate.formats.errors import SuiteError
from gate.runner.plan import Arm, Setup, plan_run

SETUP = Setup(out=Path("/work/results"), port=8000, hf_hub=Path("/hub"), torchinductor_cache=Path("/work/ti"))
ARM = Arm("main", Path("/co"), Path("/co/.venv/bin/python"))


def _suite(tmp_path: Path, old: str, new: str):
    text = default_suite_path().read_text(encoding="utf-8")
    assert text.count(old) == 1
    path = tmp_path / "asr.yaml"
    path.write_text(text.replace(old, new), encoding="utf-8")
    return load_suite(path)


def _repeats(suite, model: str) -> list[str]:
    step = plan_run(suite, SETUP, ARM, "1", (model,)).models[0]
    return [c.argv[c.argv.index("--repeats") + 1] for c in step.clients]


def test_default_is_one_pass():
    suite = load_suite()
    assert {m.passes for m in suite.models.values()} == {1}
    assert _repeats(suite, "qwen3") == ["1", "1"]


def test_a_model_with_four_passes_runs_the_client_with_repeats_4(tmp_path):
    suite = _suite(tmp_path, "revision: 06f233fe06e710322aca913c1bc4249a0d71fce1\n",
                   "revision: 06f233fe06e710322aca913c1bc4249a0d71fce1\n    passes: 4\n")
    assert suite.models["whisper"].passes == 4
    assert _repeats(suite, "whisper") == ["4", "4"]
    assert _repeats(suite, "qwen3") == ["1", "1"]


@pytest.mark.parametrize("old, new, words", [
    ("revision: 704aa4a9c304e8520be88901e0d1960158ef5b15\n",
     "revision: 704aa4a9c304e8520be88901e0d1960158ef5b15\n    passes: 2\n",
     r"models.moss_td.passes: 2 timed passes need the SeedTTS client's --repeats"),
    ("revision: 7278e1e70fe206f11671096ffdd38061171dd6e5\n",
     "revision: 7278e1e70fe206f11671096ffdd38061171dd6e5\n    passes: 0\n",
     r"models.qwen3.passes: expected a positive integer"),
])
def test_bad_passes_are_one_line_suite_errors(tmp_path, old, new, words):
    with pytest.raises(SuiteError, match=words):
        _suite(tmp_path, old, new)


def test_a_client_command_without_the_placeholder_is_refused(tmp_path):
    text = default_suite_path().read_text(encoding="utf-8")
    text = text.replace('"--repeats", "{passes}"', '"--repeats", "1"').replace(
        "revision: 7278e1e70fe206f11671096ffdd38061171dd6e5\n",
        "revision: 7278e1e70fe206f11671096ffdd38061171dd6e5\n    passes: 3\n")
    path = tmp_path / "asr.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SuiteError, match=r"client.command: expected --repeats \{passes\} \(models.qwen3.passes is 3\)"):
        load_suite(path)
