from __future__ import annotations

import pytest

from gate.publish.github import Publisher, connect
from tests.helpers.fake_github import BOT, REPO, TOKEN, FakeGitHub


@pytest.fixture
def fake():
    with FakeGitHub() as server:
        yield server


@pytest.fixture
def publisher(fake):
    client = connect(api_url=fake.base_url, token=TOKEN, retry=None)
    return Publisher(client, REPO, bot_login=BOT)


@pytest.fixture(scope="session")
def example_reports(tmp_path_factory):
    """Real reports from the verdict code on the synthetic trees: qwen3 (planted regression) and whisper (noise).

    Returns {"trees": (baseline, candidate), "qwen3": path, "whisper": path}; tests copy before editing.
    """
    import dataclasses
    import json

    from gate.examples import write_example_pair
    from gate.formats.config import load_suite
    from gate.judging.compare import compare
    from gate.reading.side_loader import load_side

    root = tmp_path_factory.mktemp("examples")
    suite = load_suite()
    models = ("qwen3", "whisper")
    small = dataclasses.replace(suite, workloads=suite.workloads_for(models),
                                models={k: v for k, v in suite.models.items() if k in models},
                                labels={k: v for k, v in suite.labels.items() if set(v) <= set(models)})
    baseline, candidate = write_example_pair(root / "trees", small)
    out = {"trees": (baseline, candidate)}
    for model in models:
        report = compare(load_side(baseline, suite, (model,)), load_side(candidate, suite, (model,)), suite,
                         models=(model,)).to_json()
        path = root / f"{model}.json"
        path.write_text(json.dumps(report), encoding="utf-8")
        out[model] = path
    return out

