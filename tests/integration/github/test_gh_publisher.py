from __future__ import annotations

import pytest

from gate.formats.github_limits import CHECK_SUMMARY, COMMENT, CUT_NOTE
from gate.publish.github import (
    GitHubError,
    Publisher,
    connect,
    default_retry,
)
from tests.helpers.fake_github import BOT, REPO, TOKEN

COMMENT_MAX_CHARS, CHECK_SUMMARY_MAX_BYTES = COMMENT.limit, CHECK_SUMMARY.limit

MARK = "<!-- asr-regression-gate: asr -->"
SHA = "a" * 40


def test_three_posts_leave_one_comment_with_the_latest_body(fake, publisher):
    fake.add_pull(42)
    results = [publisher.upsert_comment(42, f"report {i}\n{MARK}", marker=MARK) for i in range(3)]
    assert [r.action for r in results] == ["created", "updated", "updated"]
    comments = fake.comments_on(42)
    assert len(comments) == 1 and comments[0]["body"] == f"report 2\n{MARK}"
    assert len(fake.calls("POST", r"/issues/42/comments$")) == 1
    assert len(fake.calls("PATCH", r"/issues/comments/")) == 2


def test_same_body_twice_is_not_edited(fake, publisher):
    fake.add_pull(42)
    publisher.upsert_comment(42, f"same\n{MARK}", marker=MARK)
    assert publisher.upsert_comment(42, f"same\n{MARK}", marker=MARK).action == "unchanged"
    assert not fake.calls("PATCH")


def test_a_users_comment_quoting_the_marker_is_never_edited(fake, publisher):
    fake.add_pull(42)
    quoted = fake.add_comment(42, f"why does the bot say {MARK}?", user="curious-dev")
    publisher.upsert_comment(42, f"report\n{MARK}", marker=MARK)
    assert fake.state.comments[quoted]["body"].startswith("why does")
    assert len(fake.comments_on(42)) == 2


def test_marker_of_another_suite_is_a_different_comment(fake, publisher):
    fake.add_pull(42)
    publisher.upsert_comment(42, "tts\n<!-- asr-regression-gate: tts -->", marker="<!-- asr-regression-gate: tts -->")
    publisher.upsert_comment(42, f"asr\n{MARK}", marker=MARK)
    assert len(fake.comments_on(42)) == 2


def test_sticky_comment_found_beyond_the_first_page(fake, publisher):
    fake.add_pull(42)
    for i in range(120):
        fake.add_comment(42, f"chatter {i}", user="someone")
    sticky = fake.add_comment(42, f"old\n{MARK}")
    assert publisher.upsert_comment(42, f"new\n{MARK}", marker=MARK).comment_id == sticky
    assert len(fake.calls("GET", r"/issues/42/comments$")) == 2  # page 1 and page 2 via Link


def test_lost_create_response_does_not_make_a_second_comment(fake, publisher):
    fake.add_pull(42)
    fake.fail("POST", r"/issues/42/comments$", 502, apply=True)  # applied, but the answer is an error
    result = publisher.upsert_comment(42, f"report\n{MARK}", marker=MARK)
    assert len(fake.comments_on(42)) == 1 and result.action == "unchanged"


def test_create_failing_before_applying_is_tried_once_more(fake, publisher):
    fake.add_pull(42)
    fake.fail("POST", r"/issues/42/comments$", 503)
    assert publisher.upsert_comment(42, f"report\n{MARK}", marker=MARK).action == "created"
    assert len(fake.comments_on(42)) == 1


def test_oversize_body_is_cut_below_the_limit_and_keeps_the_marker(fake, publisher):
    fake.add_pull(42)
    publisher.upsert_comment(42, "x" * 200_000 + "\n" + MARK, marker=MARK)
    body = fake.comments_on(42)[0]["body"]
    assert len(body) <= COMMENT_MAX_CHARS <= 65536
    assert body.endswith(MARK) and CUT_NOTE in body


def test_body_without_marker_is_refused(fake, publisher):
    fake.add_pull(42)
    with pytest.raises(GitHubError, match="without its marker"):
        publisher.upsert_comment(42, "no marker", marker=MARK)
    assert not fake.requests


@pytest.mark.parametrize("verdict, conclusion", [("pass", "success"), ("warn", "neutral"), ("fail", "failure")])
def test_check_run_payload_carries_the_conclusion(fake, publisher, verdict, conclusion):
    result = publisher.publish_check(SHA, name="ASR gate", conclusion=conclusion, status_state="success",
                                     title=f"{verdict.upper()}: 3 rows",
                                     summary="## table", details_url="https://github.test/run/1")
    sent = fake.calls("POST", "/check-runs$")[0].body
    assert sent["head_sha"] == SHA and sent["status"] == "completed" and sent["conclusion"] == conclusion
    assert sent["output"] == {"title": f"{verdict.upper()}: 3 rows", "summary": "## table"}
    assert sent["details_url"] == "https://github.test/run/1"
    assert (result.kind, result.conclusion) == ("check_run", conclusion)


def test_check_summary_is_cut_in_utf8_bytes(fake, publisher):
    publisher.publish_check(SHA, name="ASR gate", conclusion="success", status_state="success", title="t",
                            summary="词" * 40_000)
    summary = fake.calls("POST", "/check-runs$")[0].body["output"]["summary"]
    assert len(summary.encode()) <= CHECK_SUMMARY_MAX_BYTES and summary.endswith("artifact._\n")


def test_forbidden_check_run_falls_back_to_a_commit_status(fake, publisher):
    fake.checks_forbidden = True
    result = publisher.publish_check(SHA, name="ASR gate", conclusion="failure", status_state="failure",
                                     title="FAIL: " + "w" * 300, summary="s")
    assert result.kind == "status" and result.conclusion == "failure"
    status = fake.state.statuses[0]
    assert status["sha"] == SHA and status["context"] == "ASR gate" and len(status["description"]) <= 140


def test_forbidden_check_run_without_fallback_is_a_clear_error(fake, publisher):
    fake.checks_forbidden = True
    with pytest.raises(GitHubError, match=r"GitHub refused \(403\) while creating check run 'ASR gate'"):
        publisher.publish_check(SHA, name="ASR gate", conclusion="success", status_state="success", title="t",
                                summary="s", fallback_to_status=False)


def test_label_removal_and_already_gone(fake, publisher):
    fake.add_pull(42, labels=("run-qwen3-asr", "area/asr"))
    assert publisher.remove_label(42, "run-qwen3-asr") is True
    assert publisher.remove_label(42, "run-qwen3-asr") is False  # 404: someone removed it first
    assert publisher.remove_label(42, "area/asr") is True  # a "/" in a label name survives the URL
    assert fake.state.labels[42] == []


def test_bad_token_is_one_line(fake):
    client = connect(api_url=fake.base_url, token="wrong", retry=None)
    with pytest.raises(GitHubError) as err:
        Publisher(client, REPO, bot_login="github-actions[bot]").upsert_comment(1, MARK, marker=MARK)
    assert err.value.status == 401 and str(err.value).startswith("GitHub rejected the token ")
    assert f"while reading repository {REPO}" in str(err.value)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("status, words", [(403, "refused (403)"), (404, "found nothing (404)"), (500, "answered 500")])
def test_api_errors_name_the_call(fake, publisher, status, words):
    fake.add_pull(42)
    fake.fail("GET", r"/issues/42/comments$", status)
    with pytest.raises(GitHubError, match=rf"{words.replace('(', '[(]').replace(')', '[)]')} while listing comments of #42"):
        publisher.upsert_comment(42, MARK, marker=MARK)


def test_persistent_5xx_ends_after_bounded_retries(fake):
    retry = default_retry()
    retry.backoff_factor = 0  # keep the test fast; the attempt count is what matters
    client = connect(api_url=fake.base_url, token=TOKEN, retry=retry)
    fake.add_pull(42)
    fake.fail("GET", r"/issues/42/comments$", 502, times=100)
    with pytest.raises(GitHubError, match="kept failing"):
        Publisher(client, REPO, bot_login="github-actions[bot]").find_sticky(42, MARK)
    assert len(fake.calls("GET", r"/issues/42/comments$")) == 4  # first try + 3 retries


def test_unreachable_server_is_one_line():
    client = connect(api_url="http://127.0.0.1:9", token=TOKEN, retry=None)
    with pytest.raises(GitHubError, match="cannot reach GitHub while reading repository"):
        Publisher(client, REPO, bot_login="x").find_sticky(1, MARK)


def test_pull_request_as_github_describes_it(fake, publisher):
    fake.add_pull(7, head_sha="e" * 40, head_repo="contributor/sglang-omni", head_ref="fix", labels=("run-qwen3-asr",))
    pull = publisher.pull_request(7)
    assert (pull.head_sha, pull.head_repo, pull.head_ref, pull.labels) == ("e" * 40, "contributor/sglang-omni", "fix",
                                                                          ("run-qwen3-asr",))
    assert pull.same_repo is False


def test_find_pull_for_a_fork_head(fake, publisher):
    fake.add_pull(7, head_sha="e" * 40, head_repo="contributor/sglang-omni", head_ref="fix")
    fake.add_pull(8, head_sha="f" * 40, head_repo="other/sglang-omni", head_ref="fix")
    assert publisher.find_pull_for_head("contributor/sglang-omni", "fix", "e" * 40) == 7
    assert publisher.find_pull_for_head("contributor/sglang-omni", "fix", "f" * 40) is None  # head moved on


def test_duplicates_are_deleted_keeping_the_oldest(fake, publisher):
    fake.add_pull(42)
    first = fake.add_comment(42, f"{MARK}\nrun A")
    fake.add_comment(42, f"{MARK}\nrun B")  # a concurrent report run created its own
    fake.add_comment(42, f"someone quoting {MARK}", user="contributor")
    kept = publisher.dedupe(42, MARK)
    mine = [c for c in fake.comments_on(42) if c["user"] == BOT]
    assert kept.id == first and len(mine) == 1 and mine[0]["body"].endswith("run A")
    assert len(fake.comments_on(42)) == 2  # the user's comment is never touched


def test_a_run_that_created_while_another_did_converges_on_one_comment(fake, publisher):
    fake.add_pull(42)
    # The other run's comment appears between our listing (none found) and our create.
    original = publisher._stickies
    calls = []

    def racing_find(number, marker):
        found = original(number, marker)
        if not calls:
            calls.append(fake.add_comment(42, f"{MARK}\nother run"))
        return found

    publisher._stickies = racing_find
    result = publisher.upsert_comment(42, f"{MARK}\nthis run", marker=MARK)
    mine = [c for c in fake.comments_on(42) if c["user"] == BOT]
    assert len(mine) == 1 and mine[0]["body"].endswith("this run") and result.comment_id == calls[0]


def test_pre_existing_duplicate_stickies_are_deleted_when_the_oldest_is_edited(fake, publisher):
    fake.add_pull(42)
    first = fake.add_comment(42, f"old one\n{MARK}")
    fake.add_comment(42, f"stale duplicate\n{MARK}")
    result = publisher.upsert_comment(42, f"new\n{MARK}", marker=MARK)
    assert result.comment_id == first and [c["body"] for c in fake.comments_on(42)] == [f"new\n{MARK}"]


def test_timeline_and_permission(fake, publisher):
    fake.add_pull(42, labels=("run-qwen3-asr",))
    fake.comment_as(42, "/asr-gate accept qwen3 intended", user="alice")
    fake.state.permissions["alice"] = "write"
    events = publisher.timeline(42)
    assert [(e.event, e.label, e.actor) for e in events] == [
        ("committed", None, None), ("labeled", "run-qwen3-asr", "maintainer"), ("commented", None, "alice")]
    assert events[0].sha == "a" * 40 and events[2].body.startswith("/asr-gate accept")
    assert publisher.permission("alice") == "write" and publisher.permission("bob") == "read"


def test_check_states_keep_the_latest_run_per_name(fake, publisher):
    for conclusion in ("failure", "success"):
        publisher.publish_check(SHA, name="ASR gate / qwen3", conclusion=conclusion, status_state="success",
                                title=conclusion, summary="s")
    publisher.publish_check(SHA, name="ASR gate", conclusion="failure", status_state="failure", title="t", summary="s")
    runs = publisher.check_runs(SHA, prefix="ASR gate / ")
    assert [(r.name, r.conclusion, r.app) for r in runs] == [("ASR gate / qwen3", "success", "github-actions"),
                                                              ("ASR gate / qwen3", "failure", "github-actions")]


def test_tracking_issue_opens_updates_and_closes_once(fake, publisher):
    mark = "<!-- asr-regression-gate-nightly: asr -->"
    actions = [publisher.upsert_tracking_issue(title="ASR regression on main", body=f"night {i}", marker=mark,
                                               regressed=regressed, note=f"note {i}")
               for i, regressed in enumerate([True, True, False, False])]
    assert actions == ["opened", "updated", "closed", "none"]
    assert len(fake.state.issues) == 1
    issue = next(iter(fake.state.issues.values()))
    assert issue["state"] == "closed" and issue["body"].startswith("night 1")
