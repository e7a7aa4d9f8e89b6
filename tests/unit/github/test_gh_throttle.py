"""PyGithub's spacing of requests (GitHub's secondary rate limits) is kept for a remote API and left off for one on
this machine's loopback, where the GitHub double answers (gate.publish.github.connect)."""
from __future__ import annotations

import pytest

from gate.publish.github import connect


def _spacing(api_url: str, **kw) -> tuple:
    requester = connect(api_url=api_url, token="t", **kw)._Github__requester  # type: ignore[attr-defined]
    return requester._Requester__seconds_between_requests, requester._Requester__seconds_between_writes


@pytest.mark.parametrize("url", ["https://api.github.com", "https://ghe.example/api/v3", "http://10.0.0.1:8080"])
def test_a_remote_api_is_throttled_as_pygithub_does(url):
    assert _spacing(url) == (0.25, 1.0)


@pytest.mark.parametrize("url", ["http://127.0.0.1:8080", "http://127.5.5.5", "http://[::1]:9/api", "http://localhost:1"])
def test_an_api_on_loopback_is_not(url):
    assert _spacing(url) == (None, None)


def test_the_caller_may_say_either_way():
    assert _spacing("http://127.0.0.1:8080", throttle=True) == (0.25, 1.0)
    assert _spacing("https://api.github.com", throttle=False) == (None, None)
