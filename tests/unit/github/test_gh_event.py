from __future__ import annotations

import json

import pytest

from gate.formats.config import load_suite
from gate.publish.event import EventError, parse_trigger, read_trigger
from tests.helpers import gh_payloads as p

SUITE = load_suite()


def trigger(name, payload, **kw):
    return parse_trigger(name, payload, suite=SUITE, **kw)


def test_labeled_runs_only_the_added_label_on_the_head_sha():
    t = trigger("pull_request", p.pull_request("labeled", label="run-whisper-asr", labels=["run-qwen3-asr", "run-whisper-asr"]))
    assert t.run and t.models == ("whisper",) and t.labels == ("run-whisper-asr",)
    assert (t.sha, t.base_sha, t.pr, t.same_repo) == (p.HEAD, p.BASE, 42, True)


def test_run_asr_all_selects_every_model_in_suite_order():
    t = trigger("pull_request", p.pull_request("labeled", label="run-asr-all"))
    assert t.models == tuple(SUITE.models) == ("qwen3", "whisper", "fun", "moss_td")


def test_unrelated_label_does_not_run():
    t = trigger("pull_request", p.pull_request("labeled", label="documentation"))
    assert not t.run and "not a gate label" in t.reason and t.models == ()


def test_fork_labeled_runs_but_fork_synchronize_needs_a_new_label():
    assert trigger("pull_request", p.pull_request("labeled", fork=True)).run
    t = trigger("pull_request", p.pull_request("synchronize", labels=["run-fun-asr"], fork=True))
    assert not t.run and "label again" in t.reason and t.same_repo is False


def test_same_repo_synchronize_needs_a_new_label_too():
    # One label event is one judgement of the head it was added to (docs/trust-model.md).
    t = trigger("pull_request", p.pull_request("synchronize", labels=["run-fun-asr", "bug", "run-moss-asr"]))
    assert not t.run and t.models == () and "label again" in t.reason


def test_synchronize_without_gate_label_does_not_run():
    assert not trigger("pull_request", p.pull_request("synchronize", labels=["bug"])).run


def test_opened_does_not_run():
    assert not trigger("pull_request", p.pull_request("opened")).run


def test_schedule_runs_every_model_on_github_sha():
    t = trigger("schedule", p.schedule(), default_sha=p.MAIN)
    assert t.run and t.models == tuple(SUITE.models) and t.sha == p.MAIN and t.pr is None


@pytest.mark.parametrize("models, expected", [(None, ("qwen3", "whisper", "fun", "moss_td")),
                                              ("all", ("qwen3", "whisper", "fun", "moss_td")),
                                              ("moss_td, qwen3", ("qwen3", "moss_td"))])
def test_dispatch_models_input(models, expected):
    assert trigger("workflow_dispatch", p.dispatch(models), default_sha=p.MAIN).models == expected


def test_dispatch_unknown_model_is_one_clear_line():
    with pytest.raises(EventError, match=r"inputs.models: unknown model\(s\) llama"):
        trigger("workflow_dispatch", p.dispatch("qwen3,llama"), default_sha=p.MAIN)


def test_workflow_run_reports_success_and_failure_but_not_cancelled():
    t = trigger("workflow_run", p.workflow_run(conclusion="failure", prs=[42]))
    assert t.run and (t.run_id, t.sha, t.pr, t.head_branch) == (123456789, p.HEAD, 42, "feature/x")
    assert not trigger("workflow_run", p.workflow_run(conclusion="cancelled")).run


def test_workflow_run_from_fork_has_no_pr_number():
    t = trigger("workflow_run", p.workflow_run(prs=[], fork=True))
    assert t.pr is None and t.head_repository == "contributor/sglang-omni"


def test_other_events_do_not_run():
    assert not trigger("push", {"ref": "refs/heads/main"}).run


@pytest.mark.parametrize("name, payload, message", [
    ("pull_request", p.without(p.pull_request(), "pull_request", "head", "sha"), "pull_request.head.sha: expected a str"),
    ("pull_request", p.pull_request(head_sha="main"), "pull_request.head.sha: expected a 40-hex commit SHA"),
    ("pull_request", p.without(p.pull_request(), "label"), "label.name: expected a str"),
    ("workflow_run", p.without(p.workflow_run(), "workflow_run", "id"), "workflow_run.id: expected an integer"),
    ("schedule", [], "expected the event payload to be a JSON object"),
])
def test_malformed_payloads_name_the_field(name, payload, message):
    with pytest.raises(EventError) as err:
        trigger(name, payload, default_sha=p.MAIN)
    assert message in str(err.value)


def test_read_trigger_names_the_file(tmp_path):
    bad = tmp_path / "event.json"
    bad.write_text("{not json")
    with pytest.raises(EventError, match=f"{bad}: expected the event payload as JSON"):
        read_trigger("schedule", bad, suite=SUITE)
    with pytest.raises(EventError, match="cannot read event payload"):
        read_trigger("schedule", tmp_path / "missing.json", suite=SUITE)
    good = tmp_path / "good.json"
    good.write_text(json.dumps(p.pull_request()))
    assert read_trigger("pull_request", good, suite=SUITE).models == ("qwen3",)
