"""Change points as records: found once, shown for as long as the history exists; one issue per step."""
from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import math

from click.testing import CliRunner

from gate.cli import cli
from gate.history.store import HistoryStore
from tests.helpers.fake_github import BOT, REPO, TOKEN, FakeGitHub
from tests.helpers.nights import synthetic_records

NIGHTS = 120
STEPS = (20, 80)  # throughput -6% from night 20, another -6% from night 80


def two_step_nights():
    # 120 nights that end in the past: the store refuses a night in the future (issue 38)
    records = synthetic_records(nights=NIGHTS, step_night=STEPS[0], seed=11,
                                first=_dt.datetime(2026, 5, 1, 2, 0, tzinfo=_dt.timezone.utc))
    out = []
    for i, record in enumerate(records):
        if i >= STEPS[1]:  # the second step, on top of the first
            factor = math.exp(math.log(0.94))
            values = {**record.values,
                      "throughput_samples_per_s": tuple(v * factor for v in record.values["throughput_samples_per_s"]),
                      "latency_mean_s": tuple(v / factor for v in record.values["latency_mean_s"])}
            record = dataclasses.replace(record, values=values)
        out.append(record)
    return out


def env(fake: FakeGitHub) -> dict[str, str]:
    return {"GITHUB_API_URL": fake.base_url, "GITHUB_REPOSITORY": REPO, "GITHUB_TOKEN": TOKEN,
            "GITHUB_SERVER_URL": "https://github.test", "GATE_BOT_LOGIN": BOT}


def test_both_steps_are_still_shown_at_night_120_with_one_issue_each(tmp_path):
    root = tmp_path / "history"
    records = two_step_nights()
    with FakeGitHub() as fake:
        for upto in (40, 100, NIGHTS):  # three nightlies along the way (each night's own run is the same walk)
            HistoryStore(root).append(records[:upto])
            result = CliRunner().invoke(cli, ["history", "detect", "--history", str(root), "--recent", "3",
                                              "--track"], env=env(fake))
            assert result.exit_code == 0, result.output
        assert len(fake.state.issues) == 2  # one per step (throughput and mean latency moved together)
        titles = sorted(i["title"] for i in fake.state.issues.values())
        assert all("throughput_samples_per_s" in t and "latency_mean_s" not in t for t in titles)
    doc = json.loads(CliRunner().invoke(cli, ["history", "--history", str(root), "--json"]).output)
    thr = next(t for t in doc["trends"] if t["metric"] == "throughput_samples_per_s")
    nights = [cp["night"][:10] for cp in thr["change_points"]]
    assert nights == [records[STEPS[0]].time[:10], records[STEPS[1]].time[:10]]  # the first is 100 nights old
    assert all(cp["issue"] for cp in thr["change_points"])
    noise = json.loads(CliRunner().invoke(cli, ["history", "noise", "--history", str(root), "--json"]).output)
    assert next(n for n in noise if n["metric"] == "throughput_samples_per_s")["nights"] == NIGHTS - STEPS[1]


def test_without_the_stored_record_the_window_would_forget_the_first_step(tmp_path):
    root = tmp_path / "history"
    HistoryStore(root).append(two_step_nights())
    doc = json.loads(CliRunner().invoke(cli, ["history", "--history", str(root), "--json"]).output)
    thr = next(t for t in doc["trends"] if t["metric"] == "throughput_samples_per_s")
    assert len(thr["change_points"]) == 1  # the 90-night window alone: why change points are stored


def test_a_bad_change_point_line_is_named_and_skipped(tmp_path):
    root = tmp_path / "history"
    HistoryStore(root).append(two_step_nights()[:40])
    assert CliRunner().invoke(cli, ["history", "detect", "--history", str(root), "--recent", "40"]).exit_code == 0
    path = root / "h100" / "change-points.jsonl"
    line = json.loads(path.read_text().splitlines()[0])
    path.write_text(path.read_text() + json.dumps({**line, "issue": "12"}) + "\n")
    result = CliRunner().invoke(cli, ["history", "--history", str(root)])
    assert result.exit_code == 0 and f"{path}:3: $.issue" in result.stderr, result.stderr
