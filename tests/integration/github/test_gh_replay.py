"""Issue 50: a superseded genuine judgement re-posted, copies with another title, and checks named like the gate's
that the gate did not post, tried through the real PyGithub against the recording fake GitHub.

K4 (the issue's sequence): a FAIL is accepted, the acceptance withdrawn (comment deleted or label removed), the
report re-run FAILs again, then a writer's branch workflow re-posts the accepted check run (its external_id,
title and summary) with conclusion success. The stamp's sequence ranks it below the newer FAIL: never counted,
and named. K (the overall check): an earlier green `ASR gate` re-posted after a red one ranks below it by the
overall check's own sequence and is named at every later post. A commit status named `ASR gate` is named, never
counted. docs/trust-model.md, "Check runs"."""
from __future__ import annotations

import pytest

from gate.formats.config import load_suite
from gate.publish import posting, publication
from gate.publish.posting import judge_uploaded, post_model, render_section
from gate.publish.trust import Authority, BenchmarkRun, CheckStamp
from tests.helpers.fake_github import STAMP_KEY
from tests.helpers.gh_trees import make_trees

HEAD = "a" * 40
SUITE = load_suite()
KEYED = Authority(key=STAMP_KEY)
BARE = Authority()
GATE_APP = {"id": 99, "slug": "asr-gate-bot", "name": "ASR gate bot"}
APP = Authority(app="asr-gate-bot")
APP_AND_KEY = Authority(app="asr-gate-bot", key=STAMP_KEY)


@pytest.fixture(scope="module")
def judged(tmp_path_factory, example_reports):
    root = tmp_path_factory.mktemp("replay-trees")
    out = {}
    for model in ("qwen3", "whisper"):
        report = judge_uploaded(make_trees(root / model, example_reports, model), model, SUITE, baseline=None, calibration=None)
        out[model] = (report, render_section(report))
    assert out["qwen3"][0].verdict.value == "fail" and out["whisper"][0].verdict.value == "pass"
    return out


def post(publisher, judged, model, authority, run, report_run=(0, 0)):
    report, section = judged[model]
    return post_model(publisher, SUITE, 42, sha=HEAD, model=model, report=report, section=section, details_url=None,
                      log=lambda _: None, run=run, authority=authority, judged_in=report_run)


def benchmark_run(fake) -> BenchmarkRun:
    payload = fake.workflow_run_payload(42, HEAD)
    return BenchmarkRun(payload["id"], payload["run_attempt"], payload["created_at"])


def checks(fake, name):
    return [r for r in fake.check_runs_on(HEAD) if r["name"] == name]


def overall(fake):
    """The gate's latest overall check (a forged one named `ASR gate` is not the gate's)."""
    return [r for r in checks(fake, publication.CHECK_PREFIX) if r["app"]["slug"] in ("github-actions", "asr-gate-bot")
            and (r.get("external_id") or "").startswith("asr-gate:overall:")][-1]


def sticky(fake):
    return next(c["body"] for c in fake.comments_on(42) if c["user"] == fake.poster)


def names(text, check, app="github-actions", why=None):
    """Whether `text` names a check under a gate name the gate did not count: its name, its app, and why."""
    line = next((line for line in text.splitlines() if f"a check named {check} posted by the app {app}" in line), "")
    return bool(line) and (why is None or publication._WHY[why] in line)


def k4(fake, publisher, judged, authority, withdraw):
    """Accept the FAIL, withdraw the acceptance, re-run the report (FAIL again), then re-post the accepted check."""
    fake.add_pull(42, labels=("run-qwen3-asr",))
    run = benchmark_run(fake)
    assert post(publisher, judged, "qwen3", authority, run, (500, 1)).posted
    if withdraw == "comment":
        accepted_by = fake.comment_as(42, "/asr-gate accept qwen3 the new decoder is intended", user="maintainer")
    else:
        fake.add_label(42, "asr-gate-accept")
    assert post(publisher, judged, "qwen3", authority, run, (500, 2)).posted  # the report re-run: accepted
    accepted = checks(fake, "ASR gate / qwen3")[-1]
    assert accepted["conclusion"] == "success" and accepted["output"]["title"].startswith("accepted by @maintainer")
    if withdraw == "comment":
        fake.delete_comment(accepted_by)
    else:
        fake.remove_label_as(42, "asr-gate-accept", actor="maintainer")
    assert post(publisher, judged, "qwen3", authority, run, (500, 3)).posted  # re-run: the FAIL stands again
    assert checks(fake, "ASR gate / qwen3")[-1]["conclusion"] == "failure"
    # A writer's branch workflow re-posts the accepted judgement, word for word, as success.
    fake.add_check_as(HEAD, "ASR gate / qwen3", "success", external_id=accepted["external_id"],
                      title=accepted["output"]["title"], summary=accepted["output"]["summary"])
    return accepted


@pytest.mark.parametrize("withdraw", ["comment", "label"])
def test_k4_a_superseded_accepted_judgement_re_posted_never_turns_it_green_and_is_named(fake, publisher, judged,
                                                                                          withdraw):
    accepted = k4(fake, publisher, judged, KEYED, withdraw)
    fake.add_label(42, "run-whisper-asr")  # a second model's honest PASS makes the gate post again
    assert post(publisher, judged, "whisper", KEYED, benchmark_run(fake), (501, 1)).posted
    check = overall(fake)
    assert check["conclusion"] == "failure" and "qwen3 failure" in check["output"]["title"]
    assert names(check["output"]["summary"], "ASR gate / qwen3", why="superseded")
    body = sticky(fake)
    assert "| qwen3 | ❌ failure | FAIL:" in body and accepted["output"]["title"][:40] not in body.split("###")[0]
    assert names(body, "ASR gate / qwen3", why="superseded")


def test_k4_with_a_dedicated_app_the_actions_app_copy_is_ignored_and_named(fake, publisher, judged):
    fake.app = GATE_APP
    publisher.bot_login = fake.poster
    k4(fake, publisher, judged, APP_AND_KEY, "comment")  # the copy is posted with the Actions token
    fake.add_label(42, "run-whisper-asr")
    assert post(publisher, judged, "whisper", APP_AND_KEY, benchmark_run(fake), (501, 1)).posted
    check = overall(fake)
    assert check["conclusion"] == "failure"
    assert names(check["output"]["summary"], "ASR gate / qwen3", why="unproven")


def test_a_copied_genuine_stamp_with_another_title_shows_the_gates_own_row(fake, publisher, judged):
    fake.add_pull(42, labels=("run-whisper-asr",))
    assert post(publisher, judged, "whisper", KEYED, benchmark_run(fake), (600, 1)).posted
    honest = checks(fake, "ASR gate / whisper")[-1]
    fake.add_check_as(HEAD, "ASR gate / whisper", "success", external_id=honest["external_id"],
                      title="PASS: all is well, merge now", summary=honest["output"]["summary"])
    fake.add_label(42, "run-qwen3-asr")
    post(publisher, judged, "qwen3", KEYED, benchmark_run(fake), (601, 1))
    body = sticky(fake)
    assert f"| whisper | ✅ success | {honest['output']['title']} |" in body and "merge now" not in body
    assert names(body, "ASR gate / whisper", why="unproven")


@pytest.mark.parametrize("authority", [KEYED, BARE, APP], ids=["key", "no-key", "app"])
def test_a_branch_workflow_check_named_asr_gate_is_named_with_its_app_time_and_the_setting(fake, publisher, judged,
                                                                                           authority):
    if authority is APP:
        fake.app = GATE_APP
        publisher.bot_login = fake.poster
    fake.add_pull(42, labels=("run-qwen3-asr",))
    fake.add_check_as(HEAD, "ASR gate", "success", external_id=None, title="all green")  # the Actions token
    assert post(publisher, judged, "qwen3", authority, benchmark_run(fake)).posted
    summary = overall(fake)["output"]["summary"]
    assert names(summary, "ASR gate", why="unstamped") and names(sticky(fake), "ASR gate")
    assert " at 2026-12-01T" in next(line for line in summary.splitlines() if "a check named ASR gate " in line)
    if authority is APP:
        assert "expects the App asr-gate-bot" in summary
    else:
        assert "a dedicated GitHub App" in summary and "docs/github-app.md" in summary


def test_a_check_named_asr_gate_from_another_app_names_the_expected_source(fake, publisher, judged):
    fake.add_pull(42, labels=("run-qwen3-asr",))
    fake.add_check_as(HEAD, "ASR gate", "success", external_id="asr-gate:overall:all:1.1:0:0.0.0",
                      app={"id": 7, "slug": "some-ci", "name": "Some CI"})
    assert post(publisher, judged, "qwen3", KEYED, benchmark_run(fake)).posted
    summary = overall(fake)["output"]["summary"]
    assert names(summary, "ASR gate", app="some-ci") and "expects GitHub Actions" in summary


def test_without_a_key_a_planted_stamp_with_the_real_label_event_does_not_make_the_post_refuse_itself(
        fake, publisher, judged):
    fake.add_pull(42, labels=("run-qwen3-asr",))
    event = next(e for e in fake.state.timeline[42] if e["event"] == "labeled")["id"]
    for planted in (CheckStamp("model", "qwen3", "999.1", event).text(),  # today's format
                    f"asr-gate:model:qwen3:999.1:{event}"):  # the format before issue 50
        fake.add_check_as(HEAD, "ASR gate / qwen3", "success", external_id=planted)
    outcome = post(publisher, judged, "qwen3", BARE, benchmark_run(fake))
    assert outcome.posted and outcome.refused is None
    assert checks(fake, "ASR gate / qwen3")[-1]["app"]["slug"] == "github-actions"
    assert overall(fake)["conclusion"] == "failure"


def test_with_a_key_a_judgement_of_the_same_label_event_by_another_run_is_still_a_replay(fake, publisher, judged):
    fake.add_pull(42, labels=("run-asr-all",))
    run = benchmark_run(fake)
    assert post(publisher, judged, "qwen3", KEYED, run).posted
    again = post(publisher, judged, "qwen3", KEYED, BenchmarkRun(run.id, 2, run.created_at))  # benchmark re-run
    assert not again.posted and again.refused.startswith("replay")


def test_each_judgement_of_a_model_on_a_head_gets_the_next_counter(fake, publisher, judged):
    fake.add_pull(42, labels=("run-qwen3-asr",))
    run = benchmark_run(fake)
    for attempt in (1, 2, 3):
        post(publisher, judged, "qwen3", KEYED, run, (700, attempt))
    stamps = [CheckStamp.parse(r["external_id"]) for r in checks(fake, "ASR gate / qwen3")]
    assert [(s.sequence.counter, s.sequence.report_run, s.sequence.report_attempt) for s in stamps] == [
        (1, 700, 1), (2, 700, 2), (3, 700, 3)]


def gate_overall_checks(fake, app="github-actions"):
    """The overall checks the gate posted, oldest first (a branch workflow's copy comes from the same app, but
    after them: the fake's ids only grow)."""
    return [r for r in checks(fake, publication.CHECK_PREFIX) if r["app"]["slug"] == app
            and (r.get("external_id") or "").startswith("asr-gate:overall:")]


def test_k_an_earlier_green_overall_check_re_posted_after_a_red_one_is_never_counted_and_is_named(
        fake, publisher, judged):
    fake.add_pull(42, labels=("run-whisper-asr",))
    assert post(publisher, judged, "whisper", KEYED, benchmark_run(fake), (800, 1)).posted  # PASS
    green = gate_overall_checks(fake)[-1]
    assert green["conclusion"] == "success"
    fake.add_label(42, "run-qwen3-asr")
    run = benchmark_run(fake)
    assert post(publisher, judged, "qwen3", KEYED, run, (801, 1)).posted  # a new FAIL on the same head
    assert gate_overall_checks(fake)[-1]["conclusion"] == "failure"
    # A writer's branch workflow (the Actions token, as the gate's) re-posts the green overall check word for word.
    copy = fake.add_check_as(HEAD, "ASR gate", "success", external_id=green["external_id"],
                             title=green["output"]["title"], summary=green["output"]["summary"])
    own = posting._read_own(publisher, HEAD, KEYED)
    assert own.overall is not None and own.overall.run_id != copy  # the newest genuine one ranks first, not the copy
    assert [(o.name, o.app, o.why) for o in own.others] == [("ASR gate", "github-actions", "superseded")]
    assert post(publisher, judged, "qwen3", KEYED, run, (801, 2)).posted  # the gate's next post (a report re-run)
    latest = gate_overall_checks(fake)[-1]
    assert latest["id"] > copy and latest["conclusion"] == "failure"
    counters = [CheckStamp.parse(r["external_id"]).sequence.counter for r in gate_overall_checks(fake) if r["id"] != copy]
    assert counters == list(range(1, len(counters) + 1))
    assert names(latest["output"]["summary"], "ASR gate", why="superseded")
    assert names(sticky(fake), "ASR gate", why="superseded")
    # Named at every later post, not only the first: it stays posted after a newer judgement.
    assert [o.why for o in posting._read_own(publisher, HEAD, KEYED).others] == ["superseded"]


@pytest.mark.parametrize("status", [None, "success"], ids=["no-status", "status"])
def test_a_commit_status_named_asr_gate_is_named_and_never_counted(fake, publisher, judged, status):
    fake.add_pull(42, labels=("run-qwen3-asr",))
    if status is not None:  # a writer's branch workflow sets a commit status with the gate's required name
        fake.add_status_as(HEAD, "ASR gate", status, creator="github-actions[bot]")
    assert post(publisher, judged, "qwen3", KEYED, benchmark_run(fake)).posted
    own = posting._read_own(publisher, HEAD, KEYED)
    assert [(o.name, o.app, o.why) for o in own.others] == (
        [("ASR gate", "github-actions[bot]", "status")] if status else [])
    check = gate_overall_checks(fake)[-1]
    assert check["conclusion"] == "failure"  # qwen3's FAIL, whatever the status says
    named = [line for line in (check["output"]["summary"] + sticky(fake)).splitlines() if "a commit status" in line]
    assert len(named) == (2 if status else 0)
    assert all("github-actions" in line and "docs/github-app.md" in line for line in named)
