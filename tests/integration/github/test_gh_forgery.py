"""Issue 35: a writer's branch workflow (a token with checks: write, which is the github-actions app like the
gate's own) forging the gate's judgement, tried through the real PyGithub against the recording fake GitHub.
A check run counts only when the trusted job proves it wrote it (the stamp key's HMAC, or a dedicated App);
without either, only the judgement made in the current run counts. docs/trust-model.md, "Check runs"."""
from __future__ import annotations

import pytest

from gate.formats.config import load_suite
from gate.publish import publication
from gate.publish.posting import judge_uploaded, post_model, post_not_run, render_section
from gate.publish.trust import Authority, BenchmarkRun, CheckStamp
from tests.helpers.fake_github import BOT, STAMP_KEY
from tests.helpers.gh_trees import make_trees

HEAD = "a" * 40
SUITE = load_suite()
KEYED = Authority(key=STAMP_KEY)
BARE = Authority()  # neither a stamp key nor a dedicated App configured
APP = Authority(app="asr-gate-bot")
GATE_APP = {"id": 99, "slug": "asr-gate-bot", "name": "ASR gate bot"}
ASR_CODE = ("sglang_omni/models/*asr*",)


@pytest.fixture(scope="module")
def judged(tmp_path_factory, example_reports):
    root = tmp_path_factory.mktemp("forgery-trees")
    out = {}
    for model in ("qwen3", "whisper"):
        report = judge_uploaded(make_trees(root / model, example_reports, model), model, SUITE, baseline=None, calibration=None)
        out[model] = (report, render_section(report))
    assert out["qwen3"][0].verdict.value == "fail" and out["whisper"][0].verdict.value == "pass"
    return out


def post(fake, publisher, judged, model, authority):
    report, section = judged[model]
    payload = fake.workflow_run_payload(42, HEAD)
    run = BenchmarkRun(payload["id"], payload["run_attempt"], payload["created_at"])
    return post_model(publisher, SUITE, 42, sha=HEAD, model=model, report=report, section=section, details_url=None,
                      log=lambda _: None, run=run, authority=authority)


def not_run(publisher, authority, paths=()):
    post_not_run(publisher, SUITE, 42, sha=HEAD, required_paths=paths, details_url=None, log=lambda _: None,
                 authority=authority)


def overall(fake):
    return [r for r in fake.check_runs_on(HEAD) if r["name"] == publication.CHECK_PREFIX][-1]


def sticky(fake):
    return next(c["body"] for c in fake.comments_on(42) if c["user"] == BOT)


# -- the two forgeries of the issue -------------------------------------------------------------------------

@pytest.mark.parametrize("authority", [KEYED, BARE], ids=["key", "no-key"])
def test_the_fails_own_stamp_copied_onto_a_success_by_another_run_does_not_turn_it_green(fake, publisher, judged,
                                                                                         authority):
    fake.add_pull(42, labels=("run-qwen3-asr",))
    post(fake, publisher, judged, "qwen3", authority)
    honest = next(r for r in fake.check_runs_on(HEAD) if r["name"] == "ASR gate / qwen3")
    assert honest["conclusion"] == "failure"
    fake.add_check_as(HEAD, "ASR gate / qwen3", "success", external_id=honest["external_id"])
    not_run(publisher, authority)  # the report workflow's not-run post rebuilds the overall check
    check = overall(fake)
    assert check["conclusion"] in ("failure", "action_required")
    assert "qwen3 success" not in check["output"]["title"] and "stale" not in check["output"]["title"]


@pytest.mark.parametrize("authority", [KEYED, BARE, APP], ids=["key", "no-key", "app"])
def test_a_made_up_stamp_on_an_unlabelled_pr_touching_asr_code_is_not_green(fake, publisher, authority):
    fake.add_pull(42, files=("sglang_omni/models/qwen3_asr.py",))
    fake.add_check_as(HEAD, "ASR gate / fun", "success", external_id="asr-gate:model:fun:1.1:1:1.0.0")
    not_run(publisher, authority, ASR_CODE)
    check = overall(fake)
    assert check["conclusion"] == "action_required" and check["output"]["title"].startswith("not authenticated")
    assert "cannot authenticate" in check["output"]["summary"] or "cannot be authenticated" in check["output"]["summary"]


def test_a_made_up_tag_does_not_verify(fake, publisher):
    fake.add_pull(42)
    forged = CheckStamp("model", "fun", "1.1", 1, "0" * 32).text()
    fake.add_check_as(HEAD, "ASR gate / fun", "success", external_id=forged)
    not_run(publisher, KEYED)
    assert overall(fake)["conclusion"] == "action_required"


# -- a real judgement still turns it green or red ------------------------------------------------------------

@pytest.mark.parametrize("authority", [KEYED, BARE], ids=["key", "no-key"])
@pytest.mark.parametrize(("model", "conclusion"), [("qwen3", "failure"), ("whisper", "success")])
def test_a_real_judgement_turns_the_overall_check_red_or_green(fake, publisher, judged, authority, model, conclusion):
    fake.add_pull(42, labels=(f"run-{model}-asr",))
    assert post(fake, publisher, judged, model, authority).posted
    assert overall(fake)["conclusion"] == conclusion
    not_run(publisher, authority)  # a later not-run post on the same head
    assert overall(fake)["conclusion"] == (conclusion if authority is KEYED else "action_required")


def test_with_a_key_two_runs_combine_and_without_one_the_earlier_fail_is_never_lost(fake, publisher, judged):
    fake.add_pull(42, labels=("run-qwen3-asr",))
    post(fake, publisher, judged, "qwen3", KEYED)
    fake.add_label(42, "run-whisper-asr")
    post(fake, publisher, judged, "whisper", KEYED)
    assert overall(fake)["conclusion"] == "failure" and "qwen3 failure" in overall(fake)["output"]["title"]


def test_without_a_key_an_earlier_runs_fail_keeps_a_later_pass_from_turning_it_green(fake, publisher, judged):
    fake.add_pull(42, labels=("run-qwen3-asr",))
    post(fake, publisher, judged, "qwen3", BARE)
    fake.add_label(42, "run-whisper-asr")
    post(fake, publisher, judged, "whisper", BARE)
    check = overall(fake)
    assert check["conclusion"] == "action_required" and "not authenticated: qwen3" in check["output"]["title"]
    assert "ASR_GATE_STAMP_KEY" in check["output"]["summary"]
    assert "| qwen3 | 🔒 not authenticated" in sticky(fake)


def test_a_dedicated_app_proves_its_own_check_runs(fake, publisher, judged):
    fake.app = GATE_APP  # the gate posts with the App's installation token
    fake.add_pull(42, labels=("run-qwen3-asr",))
    post(fake, publisher, judged, "qwen3", APP)
    fake.add_check_as(HEAD, "ASR gate / qwen3", "success",  # the Actions app, whatever stamp it copies
                      external_id=next(r for r in fake.check_runs_on(HEAD) if r["name"] == "ASR gate / qwen3")["external_id"])
    not_run(publisher, APP)
    assert overall(fake)["conclusion"] == "failure"


# -- a look-alike posted later hides nothing (filter=all) ----------------------------------------------------

def test_a_look_alike_finishing_later_neither_hides_the_fail_nor_makes_the_reason_stale(fake, publisher, judged):
    fake.add_pull(42, labels=("run-qwen3-asr", "run-whisper-asr"))
    post(fake, publisher, judged, "qwen3", KEYED)
    fake.add_job_check(HEAD, "ASR gate / qwen3", "success")  # a job named like the gate, completed later
    not_run(publisher, KEYED)
    check = overall(fake)
    assert check["conclusion"] == "failure" and "qwen3 failure" in check["output"]["title"]
    assert "stale" not in check["output"]["title"]
    listed = fake.calls("GET", r"/check-runs$")
    assert listed and all(call.query.get("filter") == ["all"] for call in listed)
    post(fake, publisher, judged, "whisper", KEYED)
    assert "| qwen3 | ❌ failure" in sticky(fake)


def test_a_stamp_key_shorter_than_32_characters_is_one_error_line(tmp_path):
    from tests.integration.github.test_gh_commands import invoke

    result = invoke(["post", "--not-run", "--sha", HEAD, "--pr", "42"], GITHUB_REPOSITORY="o/r", GITHUB_TOKEN="t",
                    GATE_STAMP_KEY="short")
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert result.stderr.startswith("gate: error: GATE_STAMP_KEY:") and " 32 " in result.stderr  # names it and the bound
