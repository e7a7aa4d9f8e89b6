"""Issue 50: the set-up check's rules (gate.publish.setup), over plain records."""
from __future__ import annotations

from gate.publish.setup import BranchPolicy, blocking, check

MAIN_ONLY = BranchPolicy(custom=("main",))


def lines(**kw):
    args = {"environment": "asr-gate", "policy": MAIN_ONLY, "default_branch": "main", "key": True, "app": False}
    findings = check(**{**args, **kw})
    return [f.line for f in findings], blocking(findings)


def test_an_environment_admitting_only_the_default_branch_with_a_key_is_clean():
    assert lines() == ([], False)
    assert lines(key=False, app=True, installed=True) == ([], False)


def test_an_unprotected_environment_is_one_line_and_fails_closed_where_it_holds_the_proof():
    found, closed = lines(policy=BranchPolicy(any_branch=True))
    assert len(found) == 1 and "admits every branch" in found[0] and "restrict" in found[0] and closed
    found, closed = lines(policy=BranchPolicy(any_branch=True), key=False)
    assert not closed  # nothing to steal: only warned (with the blank key line)
    assert sum("admits every branch" in line for line in found) == 1


def test_other_branches_in_the_policy_fail_closed_and_protected_branches_only_warn():
    found, closed = lines(policy=BranchPolicy(custom=("main", "release/*", "tag:v*")))
    assert len(found) == 1 and "also admits release/*, tag:v*" in found[0] and closed
    found, closed = lines(policy=BranchPolicy(protected_branches=True))
    assert len(found) == 1 and "every protected branch" in found[0] and not closed


def test_a_blank_key_is_one_line_and_does_not_fail_closed():
    found, closed = lines(key=False)
    assert len(found) == 1 and "(blank or missing)" in found[0] and not closed


def test_a_repository_level_secret_is_one_line_each_and_fails_closed():
    found, closed = lines(exposed=("ASR_GATE_APP_PRIVATE_KEY",), app=True, key=False, installed=True)
    assert len(found) == 1 and found[0].startswith("ASR_GATE_APP_PRIVATE_KEY is also") and closed
    assert "delete it there" in found[0]


def test_no_environment_with_a_key_fails_closed_and_an_unreadable_policy_is_said():
    found, closed = lines(environment=None)
    assert len(found) == 1 and "no environment is named" in found[0] and closed
    found, closed = lines(policy=BranchPolicy(error="HTTP 403"))
    assert len(found) == 1 and "could not be read (HTTP 403)" in found[0] and not closed


def test_an_app_not_installed_on_the_repository_fails_closed():
    found, closed = lines(key=False, app=True, installed=False)
    assert len(found) == 1 and "does not cover this" in found[0] and closed


def test_a_failing_set_up_keeps_a_passing_overall_check_from_passing():
    from gate.publish.publication import CheckPlan, with_setup
    from gate.publish.setup import SetupFinding

    green = CheckPlan("ASR gate", "success", "success", "1 model(s): whisper success", "summary")
    held = with_setup(green, (SetupFinding("the environment asr-gate admits every branch", True),))
    assert held.conclusion == "action_required" and held.status_state == "failure"
    assert held.title.startswith("set-up unsafe") and held.summary.startswith("- set-up: the environment")
    warned = with_setup(green, (SetupFinding("blank key", False),))
    assert warned.conclusion == "success" and warned.title == green.title and "- set-up: blank key" in warned.summary
