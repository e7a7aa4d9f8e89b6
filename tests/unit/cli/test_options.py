"""The shared option builders (gate/commands/_options.py) and `gate post`'s mode, decided once."""
from __future__ import annotations

from pathlib import Path

import pytest

from gate.commands._options import split_models
from gate.formats.errors import InputError
from gate.publish.post_request import EXACTLY_ONE, PostMode, PostRequest, decide_mode


@pytest.mark.parametrize("given, expected", [
    ((), ()),
    (None, ()),
    (("qwen3",), ("qwen3",)),
    (("qwen3,moss_td", "whisper"), ("qwen3", "moss_td", "whisper")),
    (("qwen3, ,whisper,",), ("qwen3", "whisper")),
    ("qwen3,fun", ("qwen3", "fun")),
])
def test_models_are_repeated_or_comma_separated(given, expected):
    assert split_models(given) == expected


@pytest.mark.parametrize("trees, not_run, report, mode", [
    (Path("t"), False, None, PostMode.TREES),
    (None, True, None, PostMode.NOT_RUN),
    (None, False, Path("r.json"), PostMode.REPORT),
])
def test_post_mode_is_the_one_option_given(trees, not_run, report, mode):
    assert decide_mode(trees=trees, not_run=not_run, report=report) is mode


@pytest.mark.parametrize("trees, not_run, report", [
    (None, False, None),
    (Path("t"), True, None),
    (Path("t"), False, Path("r.json")),
    (None, True, Path("r.json")),
    (Path("t"), True, Path("r.json")),
])
def test_post_mode_refuses_anything_but_exactly_one(trees, not_run, report):
    with pytest.raises(InputError) as raised:
        decide_mode(trees=trees, not_run=not_run, report=report)
    assert str(raised.value) == EXACTLY_ONE


def test_post_request_is_typed_from_the_options():
    request = PostRequest.from_options(trees=None, not_run=True, report=None, required_paths=" a/**, ,b/*.py",
                                       sha="abc", pr=7)
    assert request.mode is PostMode.NOT_RUN
    assert request.required_paths == ("a/**", "b/*.py")
    assert (request.sha, request.pr, request.trees, request.dry_run) == ("abc", 7, None, False)
