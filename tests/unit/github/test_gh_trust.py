"""The binding and acceptance rules as pure functions over GitHub's records (no server needed)."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

from gate.formats.config import load_suite
from gate.publish.trust import (
    Authority,
    BenchmarkRun,
    CheckStamp,
    CheckState,
    CommitStatus,
    HeadRun,
    JudgementSeq,
    PullInfo,
    TimelineEntry,
    bind_label,
    find_acceptance,
    head_arrival,
    labelled_models,
    own_checks,
)

SUITE = load_suite()
OLD, HEAD = "d" * 40, "a" * 40
T0 = datetime(2026, 12, 1, 9, 0, tzinfo=timezone.utc)
WRITERS = {"maintainer": "write", "alice": "admin", "tri": "triage", "bob": "read"}.get


def at(minutes):
    return T0 + timedelta(minutes=minutes)


def pull(*, labels=("run-qwen3-asr",), fork=False):
    return PullInfo(number=7, head_sha=HEAD, head_repo="contributor/x" if fork else "sgl-project/sglang-omni",
                    head_ref="f", base_repo="sgl-project/sglang-omni", labels=tuple(labels))


def run_on(sha, minute, *, fork=False, branch="f"):
    return HeadRun(id=minute, head_sha=sha, head_branch=branch, event="pull_request", created_at=at(minute),
                   head_repo="contributor/x" if fork else "sgl-project/sglang-omni")


def labeled(name, minute, actor="maintainer", ident=None):
    return TimelineEntry("labeled", label=name, actor=actor, id=ident or 100 + minute, created_at=at(minute))


def comment(body, actor, minute):
    return TimelineEntry("commented", actor=actor, body=body, id=500 + minute, created_at=at(minute))


def bind(timeline, *, p=None, runs=(run_on(HEAD, 1),), own=None, run=None):  # noqa: B008  # a frozen HeadRun, built once
    p = p or pull()
    arrival, why = head_arrival(HEAD, p, timeline, list(runs))
    assert arrival is not None, why
    return bind_label(pull=p, timeline=timeline, arrival=arrival, model="qwen3", suite=SUITE, permission_of=WRITERS,
                      run=run, own=own or {}, check_name="ASR gate / qwen3")


def test_a_writers_label_after_the_head_arrived_binds_to_that_event():
    binding = bind([TimelineEntry("committed", sha=HEAD), labeled("run-qwen3-asr", 5, ident=77)])
    assert binding.ok and binding.event.id == 77


def test_a_label_from_before_the_head_arrived_does_not_bind():
    timeline = [TimelineEntry("committed", sha=OLD), labeled("run-qwen3-asr", 0), TimelineEntry("committed", sha=HEAD)]
    assert not bind(timeline).ok


def test_a_forged_commit_date_does_not_move_the_head_before_the_label():
    # The new head's committed event sorts before the label (its author date is old); the pull_request run
    # GitHub created when it was pushed (minute 9) is after the label (minute 5): no binding.
    timeline = [TimelineEntry("committed", sha=OLD), TimelineEntry("committed", sha=HEAD), labeled("run-qwen3-asr", 5)]
    assert not bind(timeline, runs=[run_on(HEAD, 9)]).ok


def test_a_head_with_no_server_record_cannot_be_placed():
    timeline = [TimelineEntry("committed", sha=HEAD), labeled("run-qwen3-asr", 5)]
    arrival, why = head_arrival(HEAD, pull(), timeline, [])
    assert arrival is None and "cannot be placed" in why
    other_branch = [run_on(HEAD, 1, branch="elsewhere"), run_on(HEAD, 1, fork=True)]
    assert head_arrival(HEAD, pull(), timeline, other_branch)[0] is None


def test_a_force_push_naming_no_commit_makes_earlier_runs_no_evidence():
    timeline = [TimelineEntry("head_ref_force_pushed", sha=None, id=9, created_at=at(4)), labeled("run-qwen3-asr", 5)]
    # The run at minute 1 saw HEAD before the force push; what the force push pushed is unknown.
    assert head_arrival(HEAD, pull(), timeline, [run_on(HEAD, 1)])[0] is None
    assert head_arrival(HEAD, pull(), timeline, [run_on(HEAD, 1), run_on(HEAD, 6)])[0] == at(6)


def test_a_force_push_naming_the_head_places_it():
    timeline = [TimelineEntry("head_ref_force_pushed", sha=HEAD, id=9, created_at=at(4)), labeled("run-qwen3-asr", 5)]
    assert head_arrival(HEAD, pull(), timeline, [])[0] == at(4)
    assert bind(timeline, runs=()).ok


def test_triage_labels_do_not_bind_and_say_why():
    binding = bind([labeled("run-qwen3-asr", 5, actor="tri")])
    assert not binding.ok and "@tri (triage) does not count" in binding.reason


def test_a_label_removed_before_the_judge_runs_revokes_it():
    timeline = [labeled("run-qwen3-asr", 5), TimelineEntry("unlabeled", label="run-qwen3-asr", actor="maintainer",
                                                           id=8, created_at=at(6))]
    binding = bind(timeline, p=pull(labels=()))
    assert not binding.ok and binding.reason.startswith("revoked")


def test_a_label_event_judged_by_another_run_is_a_replay():
    own = {"ASR gate / qwen3": CheckState("ASR gate / qwen3", "failure", "", "", 1,
                                          CheckStamp("model", "qwen3", "55.1", 105).text(), "github-actions")}
    timeline = [labeled("run-qwen3-asr", 5)]
    replay = bind(timeline, own=own, run=BenchmarkRun(66, 1, at(7)))
    assert not replay.ok and replay.reason.startswith("replay")
    assert bind(timeline, own=own, run=BenchmarkRun(55, 1, at(7))).ok  # the same run attempt, posting again
    assert not bind(timeline, own=own, run=BenchmarkRun(55, 2, at(7))).ok


def test_a_label_added_after_the_benchmark_run_started_is_not_its_label():
    assert not bind([labeled("run-qwen3-asr", 9)], run=BenchmarkRun(66, 1, at(7))).ok


def test_run_asr_all_selects_every_model_after_the_head():
    timeline = [labeled("run-asr-all", 5)]
    assert labelled_models(pull(labels=("run-asr-all",)), timeline, at(1), SUITE) == tuple(SUITE.models)
    assert labelled_models(pull(labels=("run-asr-all",)), timeline, at(6), SUITE) == ()


KEY = b"k" * 32
KEYED = Authority(key=KEY)


def signed(model, run, event, conclusion, *, sha=HEAD, kind="model"):
    return KEYED.sign(CheckStamp(kind, model, run, event), sha=sha, conclusion=conclusion).text()


def test_only_the_gates_own_check_runs_count():
    stamp = signed("qwen3", "1.1", 3, "failure")
    runs = [CheckState("ASR gate / fun", "success", "", "", 9, "1b4e28ba-2fa1-11d2-883f-0016d3cca427", "github-actions"),
            CheckState("ASR gate / qwen3", "success", "", "", 8, stamp, "some-other-app"),
            CheckState("ASR gate / qwen3", "failure", "", "", 7, stamp, "github-actions"),
            CheckState("ASR gate / whisper", "success", "", "", 6, stamp, "github-actions")]  # stamp of another model
    own = own_checks(runs, prefix="ASR gate / ", sha=HEAD, authority=KEYED)
    assert list(own.states) == ["ASR gate / qwen3"] and own.states["ASR gate / qwen3"].conclusion == "failure"
    assert own.foreign == ("ASR gate / fun", "ASR gate / whisper") and own.unproven == ("ASR gate / qwen3",)


def test_a_copied_stamp_proves_nothing_on_another_conclusion_head_run_or_label_event():
    honest = signed("qwen3", "55.1", 105, "failure")
    assert own_checks([CheckState("ASR gate / qwen3", "failure", "", "", 1, honest, "github-actions")],
                      prefix="ASR gate / ", sha=HEAD, authority=KEYED).states
    tag = CheckStamp.parse(honest).tag
    copies = {
        "conclusion": CheckState("ASR gate / qwen3", "success", "", "", 2, honest, "github-actions"),
        "run": CheckState("ASR gate / qwen3", "failure", "", "", 2, CheckStamp("model", "qwen3", "56.1", 105, tag).text(),
                          "github-actions"),
        "event": CheckState("ASR gate / qwen3", "failure", "", "", 2, CheckStamp("model", "qwen3", "55.1", 106, tag).text(),
                            "github-actions"),
        "made up": CheckState("ASR gate / qwen3", "success", "", "", 2, CheckStamp("model", "qwen3", "1.1", 1).text(),
                              "github-actions"),
        "other key": CheckState("ASR gate / qwen3", "success", "", "", 2, Authority(key=b"x" * 32).sign(
            CheckStamp("model", "qwen3", "55.1", 105), sha=HEAD, conclusion="success").text(), "github-actions"),
    }
    for what, run in copies.items():
        own = own_checks([run], prefix="ASR gate / ", sha=HEAD, authority=KEYED)
        assert not own.states and own.unproven == ("ASR gate / qwen3",), what
    other_head = own_checks([CheckState("ASR gate / qwen3", "failure", "", "", 1, honest, "github-actions")],
                            prefix="ASR gate / ", sha=OLD, authority=KEYED)
    assert not other_head.states and other_head.blocking == ("ASR gate / qwen3",)


def test_the_later_judgement_is_chosen_by_its_authenticated_stamp_not_by_recency():
    older_pass = signed("qwen3", "50.1", 100, "success")
    newer_fail = signed("qwen3", "60.1", 200, "failure")
    runs = [CheckState("ASR gate / qwen3", "success", "", "", 9, older_pass, "github-actions"),  # a copy, posted last
            CheckState("ASR gate / qwen3", "failure", "", "", 8, newer_fail, "github-actions"),
            CheckState("ASR gate / qwen3", "success", "", "", 7, older_pass, "github-actions")]
    own = own_checks(runs, prefix="ASR gate / ", sha=HEAD, authority=KEYED)
    assert own.states["ASR gate / qwen3"].conclusion == "failure" and own.unproven == ()


def test_without_a_key_or_app_no_stamp_counts_and_a_dedicated_app_counts_by_itself():
    stamp = CheckStamp("model", "qwen3", "1.1", 3).text()
    run = CheckState("ASR gate / qwen3", "success", "", "", 1, stamp, "github-actions")
    bare = own_checks([run], prefix="ASR gate / ", sha=HEAD, authority=Authority())
    assert not bare.states and not bare.configured and bare.unproven == ("ASR gate / qwen3",)
    assert "ASR gate / qwen3" in bare.claimed  # kept to refuse replays, never to pass
    app = Authority(app="asr-gate-bot")
    assert not own_checks([run], prefix="ASR gate / ", sha=HEAD, authority=app).states  # the Actions app: anyone's
    theirs = CheckState("ASR gate / qwen3", "success", "", "", 1, stamp, "asr-gate-bot")
    assert own_checks([theirs], prefix="ASR gate / ", sha=HEAD, authority=app).states


def test_the_overall_check_ranks_by_its_sequence_and_a_re_post_stays_named_after_the_next_post():
    def overall(counter, conclusion):
        return KEYED.sign(CheckStamp("overall", "all", "1.1", 3, sequence=JudgementSeq(counter, 70, 1)), sha=HEAD,
                          conclusion=conclusion).text()

    green, red, next_red = overall(1, "success"), overall(2, "failure"), overall(3, "failure")
    runs = [CheckState("ASR gate", "success", "", "", 1, green, "github-actions"),
            CheckState("ASR gate", "failure", "", "", 2, red, "github-actions"),
            CheckState("ASR gate", "success", "", "", 3, green, "github-actions")]  # the green one, re-posted
    after = [*runs, CheckState("ASR gate", "failure", "", "", 4, next_red, "github-actions")]  # the gate's next post
    for listed, newest, counter in ((runs, 2, 3), (after, 4, 4)):
        own = own_checks(listed, prefix="ASR gate / ", sha=HEAD, authority=KEYED, overall="ASR gate")
        assert own.overall is not None and own.overall.run_id == newest and own.next_overall_counter() == counter
        assert not own.states and [o.why for o in own.others] == ["superseded"]  # the copy (run 3) only, each time
    # Two models' report jobs (report runs 71 and 70) racing to the same counter: the gate's both, nothing named.
    racing = KEYED.sign(CheckStamp("overall", "all", "2.1", 4, sequence=JudgementSeq(2, 71, 1)), sha=HEAD,
                        conclusion="failure").text()
    raced = [CheckState("ASR gate", "success", "", "", 1, green, "github-actions"),
             CheckState("ASR gate", "failure", "", "", 2, racing, "github-actions"),
             CheckState("ASR gate", "failure", "", "", 3, red, "github-actions")]  # counter 2 of report run 70, later
    assert own_checks(raced, prefix="ASR gate / ", sha=HEAD, authority=KEYED, overall="ASR gate").others == ()


def test_commit_statuses_under_a_gate_name_are_named_and_never_count():
    statuses = [CommitStatus("asr GATE", "success", "dev", at(5)),  # GitHub compares contexts ignoring case
                CommitStatus("ASR gate / qwen3", "success", "dev", at(6)),
                CommitStatus("ci/lint", "success", "dev", at(7))]
    own = own_checks([], prefix="ASR gate / ", sha=HEAD, authority=KEYED, overall="ASR gate", statuses=statuses)
    assert not own.states and [(o.name, o.app, o.why) for o in own.others] == [
        ("ASR gate / qwen3", "dev", "status"), ("asr GATE", "dev", "status")]


def test_stamps_parse_and_refuse_a_malformed_tag():
    tagged = signed("qwen3", "1.1", 3, "failure")
    assert CheckStamp.parse(tagged).text() == tagged
    assert CheckStamp.parse(tagged + "00") is None and CheckStamp.parse(tagged.upper()) is None
    base = "asr-gate:model:qwen3:1.1:3"
    assert CheckStamp.parse(base + ":2.77.1") == CheckStamp("model", "qwen3", "1.1", 3, sequence=JudgementSeq(2, 77, 1))
    assert CheckStamp.parse(base) is None  # a stamp without a sequence (before issue 50)
    assert CheckStamp.parse(base + ":2.x.1") is None


def test_acceptance_rules():
    arrival = at(1)
    before = [comment("/asr-gate accept qwen3 fine", "alice", 0)]
    assert find_acceptance(before, arrival=arrival, model="qwen3", labels_now=(), permission_of=WRITERS) == (None, [])
    other = [comment("/asr-gate accept whisper fine", "alice", 5)]
    assert find_acceptance(other, arrival=arrival, model="qwen3", labels_now=(), permission_of=WRITERS)[0] is None
    bot = [comment("/asr-gate accept all injected", "github-actions[bot]", 5)]
    assert find_acceptance(bot, arrival=arrival, model="qwen3", labels_now=(), permission_of=WRITERS)[0] is None
    mixed = [comment("/asr-gate accept all ok", "bob", 5), comment("/asr-gate accept qwen3 agreed", "alice", 6)]
    accepted, refused = find_acceptance(mixed, arrival=arrival, model="qwen3", labels_now=(), permission_of=WRITERS)
    assert (accepted.by, accepted.reason, accepted.via, accepted.at) == ("alice", "agreed", "comment",
                                                                        "2026-12-01T09:06:00Z")
    [why] = refused  # who, with which permission, and what is needed
    assert why.startswith("@bob (read) cannot accept") and why.endswith(": write access is needed")


def test_an_accept_command_not_on_the_first_line_does_not_accept():
    for body in ("how to accept:\n```\n/asr-gate accept all because\n```", "> /asr-gate accept all quoted",
                 "    /asr-gate accept all indented code", "<!--\n/asr-gate accept all hidden -->",
                 "`/asr-gate accept all inline`", " /asr-gate accept all leading space"):
        found, _ = find_acceptance([comment(body, "alice", 5)], arrival=at(1), model="qwen3", labels_now=(),
                                   permission_of=WRITERS)
        assert found is None, body


def test_the_accept_label_counts_only_while_on_the_pr():
    timeline = [labeled("asr-gate-accept", 5, actor="alice")]
    kwargs = dict(arrival=at(1), model="qwen3", permission_of=WRITERS)
    assert find_acceptance(timeline, labels_now=("asr-gate-accept",), **kwargs)[0].via == "label"
    assert find_acceptance(timeline, labels_now=(), **kwargs)[0] is None



def test_a_bot_with_write_permission_never_binds_a_run_label(monkeypatch):
    monkeypatch.setitem(globals(), "WRITERS", {"maintainer": "write", "ci[bot]": "write"}.get)
    binding = bind([TimelineEntry("committed", sha=HEAD), labeled("run-qwen3-asr", 5, actor="ci[bot]", ident=78)])
    assert not binding.ok and binding.event is None and len(binding.refusals) == 1
