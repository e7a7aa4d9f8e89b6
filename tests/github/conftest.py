from __future__ import annotations

import pytest
from fake_github import BOT, REPO, TOKEN, FakeGitHub

from gate.github import Publisher, connect


@pytest.fixture
def fake():
    with FakeGitHub() as server:
        yield server


@pytest.fixture
def publisher(fake):
    client = connect(api_url=fake.base_url, token=TOKEN, retry=None, throttle=False)
    return Publisher(client, REPO, bot_login=BOT)
