"""Main goes red on a confirmed step (issue 39): 8 nights at the old level, then qwen3/asr_en throughput ×0.90 merged
for 14 nights, through `gate history detect --track` against the GitHub fake. The nightly check on main's commit FAILs
by the third night on the new level and stays FAIL until a maintainer accepts the step; accepted, the drift guard
lets the baseline move to the new level and the check is no longer failed."""
from __future__ import annotations

import datetime as _dt
import math

import numpy as np
from click.testing import CliRunner

from gate.cli import cli
from gate.formats.config import load_suite
from gate.history.guard import guard
from gate.history.store import HistoryStore, Record
from gate.publish.publication import CHECK_PREFIX
from tests.helpers.fake_github import BOT, REPO, TOKEN, FakeGitHub

OLD_NIGHTS, NEW_NIGHTS = 8, 14
FIRST = _dt.datetime(2026, 9, 1, 2, 0, tzinfo=_dt.timezone.utc)
NIGHTLY = CHECK_PREFIX + " nightly"


def night(i: int, rng: np.random.Generator) -> Record:
    level = rng.normal(0, 0.01) + (math.log(0.90) if i >= OLD_NIGHTS else 0.0)
    runs = level + rng.normal(0, 0.01, 3)
    values = {"corpus_wer": tuple(float(v) for v in 0.0138 + rng.normal(0, 0.0002, 3)),
              "throughput_samples_per_s": tuple(float(v) for v in 98.0 * np.exp(runs)),
              "latency_mean_s": tuple(float(v) for v in 0.34 * np.exp(-runs))}
    return Record(time=(FIRST + _dt.timedelta(days=i)).isoformat(), kind="nightly", commit=f"{i:040x}",
                  workload="qwen3/asr_en", runs=("run1", "run2", "run3"), values=values, verdict="warn", env="abc",
                  complete=True, runner_class="h100")


def nightly_conclusions(fake: FakeGitHub, sha: str) -> list[str]:
    return [r["conclusion"] for r in fake.check_runs_on(sha) if r["name"] == NIGHTLY]


def test_a_merged_step_fails_the_nightly_until_accepted(tmp_path):
    suite = load_suite()
    rng = np.random.default_rng(11)
    store = HistoryStore(tmp_path / "history")
    records = []
    with FakeGitHub() as fake:
        fake.state.permissions["maintainer"] = "write"
        env = {"GITHUB_API_URL": fake.base_url, "GITHUB_REPOSITORY": REPO, "GITHUB_SERVER_URL": "https://github.test",
               "GATE_BOT_LOGIN": BOT, "GITHUB_TOKEN": TOKEN}
        failed_from, accepted_on = None, None
        for i in range(OLD_NIGHTS + NEW_NIGHTS):
            records.append(night(i, rng))
            store.append(records[-1:])
            result = CliRunner().invoke(cli, ["history", "detect", "--history", str(tmp_path / "history"),
                                              "--runner-class", "h100", "--track"], env=env, catch_exceptions=False)
            assert result.exit_code == 0, result.output
            red = "failure" in nightly_conclusions(fake, records[-1].commit)
            if i < OLD_NIGHTS:
                assert not red  # no step yet: nothing goes red
                continue
            if failed_from is None and red:
                failed_from = i - OLD_NIGHTS + 1  # nights on the new level when main first went red
            if accepted_on is None and failed_from is not None and i - OLD_NIGHTS + 1 == failed_from + 3:
                issue = next(n for n, v in fake.state.issues.items() if "throughput" in v["title"])
                assert "Closing this issue without accepting" in fake.state.issues[issue]["body"]
                fake.comment_as(issue, "/asr-gate accept qwen3 the new decoder is slower by design", user="maintainer")
                accepted_on = i
                continue
            if failed_from is not None and accepted_on is None:
                assert red, f"night {i}: the nightly must stay FAIL until the step is accepted"
            if accepted_on is not None and i > accepted_on:
                assert not red, f"night {i}: accepted, the nightly is no longer failed"
        assert failed_from is not None and failed_from <= 3, failed_from
        assert accepted_on is not None
        # Accepted on its issue: the drift guard lets the baseline move to tonight (the new level).
        from gate.publish.github import Publisher, connect
        from gate.publish.tracking import step_acceptance

        publisher = Publisher(connect(api_url=fake.base_url, token=TOKEN), REPO, bot_login=BOT)
        findings = guard(store.read(), records[-1:], suite, runner_class="h100",
                         on_issue=step_acceptance(publisher, suite, lambda _: None))
        assert findings == []
