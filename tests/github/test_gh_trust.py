"""The binding and acceptance rules as pure functions over GitHub's records (no server needed)."""
from __future__ import annotations

from gate.config import load_suite
from gate.github import PullInfo, TimelineEntry
from gate.trust import bind_trigger, find_acceptance, models_labelled_at_head

SUITE = load_suite()
OLD, HEAD = "d" * 40, "a" * 40


def pull(*, labels=(), fork=False):
    return PullInfo(number=7, head_sha=HEAD, head_repo="contributor/x" if fork else "sgl-project/sglang-omni",
                    head_ref="f", base_repo="sgl-project/sglang-omni", labels=tuple(labels))


def commit(sha):
    return TimelineEntry("committed", sha=sha)


def labeled(name, actor="maintainer"):
    return TimelineEntry("labeled", label=name, actor=actor)


def comment(body, actor):
    return TimelineEntry("commented", actor=actor, body=body)


def test_run_asr_all_selects_every_model_and_only_after_the_head_commit():
    timeline = [commit(OLD), labeled("run-asr-all"), commit(HEAD)]
    assert models_labelled_at_head(pull(fork=True), timeline, SUITE) == ()
    assert models_labelled_at_head(pull(fork=True), [*timeline, labeled("run-asr-all")], SUITE) == tuple(SUITE.models)


def test_force_push_counts_as_a_new_head():
    timeline = [commit(OLD), labeled("run-qwen3-asr"), TimelineEntry("head_ref_force_pushed", sha=HEAD)]
    assert not bind_trigger(run_sha=HEAD, pull=pull(fork=True), timeline=timeline, models=("qwen3",), suite=SUITE).ok


def test_unknown_model_and_stale_head_are_refused_with_a_reason():
    timeline = [commit(HEAD), labeled("run-qwen3-asr")]
    unknown = bind_trigger(run_sha=HEAD, pull=pull(), timeline=timeline, models=("gpt",), suite=SUITE)
    stale = bind_trigger(run_sha=OLD, pull=pull(), timeline=timeline, models=("qwen3",), suite=SUITE)
    assert not unknown.ok and "does not know: gpt" in unknown.reason
    assert not stale.ok and stale.reason.startswith("stale:")


def test_binding_names_the_labels_to_remove():
    binding = bind_trigger(run_sha=HEAD, pull=pull(labels=("run-qwen3-asr", "bug")), models=("qwen3",), suite=SUITE,
                           timeline=[commit(HEAD), labeled("run-qwen3-asr")])
    assert binding.ok and binding.labels == ("run-qwen3-asr",)


def test_acceptance_rules():
    writers = {"alice": "write", "bob": "read", "github-actions[bot]": "write"}.get
    before_push = [comment("/asr-gate accept qwen3 fine", "alice"), commit(HEAD)]
    assert find_acceptance(before_push, sha=HEAD, model="qwen3", permission_of=writers) == (None, [])
    other_model = [commit(HEAD), comment("/asr-gate accept whisper fine", "alice")]
    assert find_acceptance(other_model, sha=HEAD, model="qwen3", permission_of=writers)[0] is None
    bot = [commit(HEAD), comment("quoted:\n/asr-gate accept all injected", "github-actions[bot]")]
    assert find_acceptance(bot, sha=HEAD, model="qwen3", permission_of=writers)[0] is None
    mixed = [commit(HEAD), comment("/asr-gate accept all ok", "bob"), comment("/asr-gate accept qwen3 agreed", "alice")]
    accepted, refused = find_acceptance(mixed, sha=HEAD, model="qwen3", permission_of=writers)
    assert (accepted.by, accepted.reason, accepted.via) == ("alice", "agreed", "comment")
    assert refused == ["@bob (read) cannot accept a regression: write access is needed"]
