"""Issue 22's findings, tried the way an attacker with a fork (or a maintainer on a busy day) would: through the
real PyGithub against the recording fake GitHub. No spoofed, replayed, stale, fail-open, code-block or triage
path may publish success, and each refusal is one escaped line in the check."""
from __future__ import annotations

import functools
import shutil
from datetime import timedelta

import pytest

from gate.formats.config import load_suite
from gate.publish import posting, publication
from gate.publish.posting import judge_uploaded, render_section
from gate.publish.trust import Authority, BenchmarkRun, CheckStamp
from gate.publish.untrusted import UntrustedInputError, check_consistency
from tests.helpers.fake_github import BOT, MERGE_BASE, STAMP_KEY
from tests.helpers.gh_trees import make_trees

HEAD = "a" * 40
SUITE = load_suite()
# The trusted job with its stamp key: judgements of other runs count once proven (tests/github/test_gh_forgery.py
# covers the job without one).
KEYED = Authority(key=STAMP_KEY)
post_model = functools.partial(posting.post_model, authority=KEYED)
post_not_run = functools.partial(posting.post_not_run, authority=KEYED)


@pytest.fixture(scope="module")
def judged(tmp_path_factory, example_reports):
    """qwen3 (a planted regression: FAIL) and whisper (noise: PASS), judged once from honest trees."""
    root = tmp_path_factory.mktemp("attack-trees")
    out = {}
    for model in ("qwen3", "whisper"):
        tree = make_trees(root / model, example_reports, model)
        report = judge_uploaded(tree, model, SUITE, baseline=None, calibration=None)
        out[model] = (tree, report, render_section(report))
    assert out["qwen3"][1].verdict.value == "fail" and out["whisper"][1].verdict.value == "pass"
    return out


def benchmark_run(fake, *, attempt=1, pr=42, sha=HEAD):
    """The benchmark run a label started (GitHub creates it after the label; the workflow_run payload names it)."""
    payload = fake.workflow_run_payload(pr, sha, attempt=attempt)
    return BenchmarkRun(payload["id"], payload["run_attempt"], payload["created_at"])


def post(fake, publisher, judged, model, *, run=None, sha=HEAD, report=True):
    tree, rep, section = judged[model]
    lines: list[str] = []
    outcome = post_model(publisher, SUITE, 42, sha=sha, model=model, report=rep if report else None,
                         section=section if report else publication.refused_section("refused"),
                         details_url=None, log=lines.append, run=run or benchmark_run(fake, sha=sha),
                         refused=None if report else "refused")
    return outcome, lines


def latest(fake, name, sha=HEAD):
    runs = [r for r in fake.check_runs_on(sha) if r["name"] == name]
    return runs[-1] if runs else None


def conclusions(fake, sha=HEAD):
    out = {}
    for run in fake.check_runs_on(sha):
        out[run["name"]] = run["conclusion"]
    return out


def gate_overall(fake, sha=HEAD):
    """What the required check shows: the gate's own latest `ASR gate` check run."""
    return latest(fake, "ASR gate", sha)


# -- 1. spoofed check runs -------------------------------------------------------------------------------

def test_a_forks_job_named_like_a_gate_check_does_not_turn_an_unlabelled_pr_green(fake, publisher):
    fake.add_pull(42, head_repo="contributor/sglang-omni", files=("sglang_omni/models/qwen3_asr.py",))
    fake.add_job_check(HEAD, "ASR gate / fun", "success")
    post_not_run(publisher, SUITE, 42, sha=HEAD, required_paths=("sglang_omni/models/*asr*",), details_url=None,
                 log=lambda _: None)
    overall = gate_overall(fake)
    assert overall["conclusion"] == "action_required"
    summary = overall["output"]["summary"]
    assert "a check named ASR gate / fun " in summary and "was not made by the gate" in summary


def test_spoofed_successes_after_a_real_fail_change_nothing(fake, publisher, judged):
    fake.add_pull(42, labels=("run-qwen3-asr", "run-whisper-asr"))
    post(fake, publisher, judged, "qwen3")
    for model in ("qwen3", "fun", "moss_td"):
        fake.add_job_check(HEAD, f"ASR gate / {model}", "success")
    post(fake, publisher, judged, "whisper")  # any later post rebuilds the overall check
    overall = gate_overall(fake)
    assert overall["conclusion"] == "failure" and "qwen3 failure" in overall["output"]["title"]
    summary = overall["output"]["summary"]
    assert summary.count("was not made by the gate") == 3 and summary.count("ASR gate / qwen3") == 1
    comment = next(c["body"] for c in fake.comments_on(42) if c["user"] == BOT)
    assert "| qwen3 | ❌ failure" in comment and "| fun |" not in comment
    post_not_run(publisher, SUITE, 42, sha=HEAD, required_paths=(), details_url=None, log=lambda _: None)
    assert gate_overall(fake)["conclusion"] == "failure"


def test_the_gates_check_runs_carry_its_stamp(fake, publisher, judged):
    fake.add_pull(42, labels=("run-qwen3-asr",))
    run = benchmark_run(fake)
    post(fake, publisher, judged, "qwen3", run=run)
    event = next(e for e in fake.state.timeline[42] if e["event"] == "labeled")["id"]
    stamp = CheckStamp.parse(latest(fake, "ASR gate / qwen3")["external_id"])
    assert (stamp.kind, stamp.model, stamp.run, stamp.event) == ("model", "qwen3", f"{run.id}.1", event)
    check = latest(fake, "ASR gate / qwen3")
    assert stamp.sequence.counter == 1  # the first judgement of qwen3 on this head
    assert stamp == KEYED.sign(CheckStamp("model", "qwen3", f"{run.id}.1", event, sequence=stamp.sequence), sha=HEAD,
                               conclusion="failure", title=check["output"]["title"], summary=check["output"]["summary"])


# -- 2. order of writes ----------------------------------------------------------------------------------

def test_a_failed_comment_edit_never_leaves_a_stale_overall_check(fake, publisher, judged):
    from gate.publish.github import GitHubError

    fake.add_pull(42, labels=("run-whisper-asr",))
    post(fake, publisher, judged, "whisper")
    assert gate_overall(fake)["conclusion"] == "success"
    fake.add_label(42, "run-qwen3-asr")
    fake.fail("PATCH", r"/issues/comments/\d+$", 403, times=5)  # a secondary rate limit on the comment edit
    with pytest.raises(GitHubError, match="403"):
        post(fake, publisher, judged, "qwen3")
    assert conclusions(fake) == {"ASR gate / whisper": "success", "ASR gate / qwen3": "failure", "ASR gate": "failure"}
    writes = [(r.method, (r.body or {}).get("name")) for r in fake.requests if r.method in ("POST", "PATCH")]
    last = writes[writes.index(("POST", "ASR gate / qwen3")):]
    assert last[:3] == [("POST", "ASR gate / qwen3"), ("POST", "ASR gate"), ("PATCH", None)]


# -- 3. replay -------------------------------------------------------------------------------------------

def test_a_second_run_on_the_same_label_event_is_refused(fake, publisher, judged):
    fake.add_pull(42, labels=("run-qwen3-asr",))
    honest = benchmark_run(fake)
    post(fake, publisher, judged, "qwen3", run=honest)  # FAIL; the one-shot label is removed
    assert "run-qwen3-asr" not in fake.state.labels[42]
    outcome, _ = post(fake, publisher, judged, "whisper", run=benchmark_run(fake))  # forged trees, all green
    assert outcome.refused and conclusions(fake)["ASR gate"] == "failure"
    assert "ASR gate / whisper" not in conclusions(fake)


def test_a_replay_while_the_label_is_still_on_is_refused_and_the_same_attempt_may_post_again(fake, publisher, judged):
    fake.add_pull(42, labels=("run-asr-all",))  # stays on until every model it selects is judged
    honest = benchmark_run(fake)
    post(fake, publisher, judged, "qwen3", run=honest)
    outcome, _ = post(fake, publisher, judged, "qwen3", run=benchmark_run(fake))
    assert outcome.refused and outcome.refused.startswith("replay: label event")
    assert latest(fake, "ASR gate / qwen3")["conclusion"] == "failure"
    assert "replay" in gate_overall(fake)["output"]["summary"]
    assert post(fake, publisher, judged, "qwen3", run=honest)[0].posted  # the report job re-run: same attempt
    again = BenchmarkRun(honest.id, 2, honest.created_at)
    assert post(fake, publisher, judged, "qwen3", run=again)[0].refused


# -- 4. fails closed -------------------------------------------------------------------------------------

def test_a_force_push_naming_no_commit_fails_closed(fake, publisher, judged):
    fake.add_pull(42, labels=("run-whisper-asr",), head_sha="d" * 40, head_repo="contributor/sglang-omni")
    fake.force_push(42, HEAD, name_commit=False, run=False)  # the fork also deleted the workflow: no run either
    outcome, _ = post(fake, publisher, judged, "whisper", run=BenchmarkRun(999, 1, fake.tick()))
    assert not outcome.posted and "cannot be placed" in outcome.refused
    assert conclusions(fake) == {"ASR gate": "action_required"}
    title = gate_overall(fake)["output"]["title"]
    assert title.startswith(f"refused: the head commit {HEAD[:12]} ") and "cannot be placed" in title


def test_a_commit_dated_before_the_label_does_not_inherit_it(fake, publisher, judged):
    fake.add_pull(42, labels=("run-whisper-asr",), head_sha="d" * 40, head_repo="contributor/sglang-omni")
    fake.push(42, HEAD, author_date=fake.now - timedelta(hours=1))  # sorts before the label in the timeline
    events = [e["event"] for e in fake.state.timeline[42]]
    assert events.index("labeled") > max(i for i, e in enumerate(fake.state.timeline[42]) if e.get("sha") == HEAD)
    outcome, _ = post(fake, publisher, judged, "whisper")
    assert not outcome.posted and conclusions(fake) == {"ASR gate": "action_required"}


# -- 5. revocation ---------------------------------------------------------------------------------------

def test_removing_the_run_label_before_the_report_stops_the_post(fake, publisher, judged):
    fake.add_pull(42, labels=("run-whisper-asr",))
    run = benchmark_run(fake)
    fake.remove_label_as(42, "run-whisper-asr", actor="maintainer")
    outcome, _ = post(fake, publisher, judged, "whisper", run=run)
    assert outcome.refused.startswith("revoked") and conclusions(fake) == {"ASR gate": "action_required"}


def test_removing_the_accept_label_or_deleting_the_comment_withdraws_the_acceptance(fake, publisher, judged):
    fake.add_pull(42, labels=("run-asr-all",))
    fake.state.permissions["alice"] = "write"
    fake.add_label(42, "asr-gate-accept", actor="alice")
    fake.remove_label_as(42, "asr-gate-accept", actor="alice")
    comment = fake.comment_as(42, "/asr-gate accept qwen3 trades WER for speed", user="alice")
    fake.delete_comment(comment)
    run = benchmark_run(fake)
    outcome, _ = post(fake, publisher, judged, "qwen3", run=run)
    assert outcome.acceptance is None and conclusions(fake)["ASR gate"] == "failure"


def test_an_acceptance_says_who_when_and_why(fake, publisher, judged):
    fake.add_pull(42, labels=("run-qwen3-asr",))
    fake.state.permissions["alice"] = "write"
    fake.comment_as(42, "/asr-gate accept qwen3 <img src=x onerror=alert(1)> @team #4", user="alice")
    outcome, _ = post(fake, publisher, judged, "qwen3")
    check = latest(fake, "ASR gate / qwen3")
    assert check["conclusion"] == "success" and outcome.acceptance.by == "alice"
    assert check["output"]["title"].startswith(f"accepted by @{outcome.acceptance.by} at ")
    assert outcome.acceptance.at.startswith("2026-12-01T09:") and outcome.acceptance.at in check["output"]["title"]
    assert "<img" not in check["output"]["summary"] and "&lt;img" in check["output"]["summary"]


# -- 6. acceptance only as the first line ----------------------------------------------------------------

def test_an_accept_command_quoted_in_a_code_block_accepts_nothing(fake, publisher, judged):
    fake.add_pull(42, labels=("run-qwen3-asr",))
    fake.state.permissions["alice"] = "write"
    fake.comment_as(42, "To accept, a writer comments:\n```\n/asr-gate accept all <reason>\n```", user="alice")
    outcome, _ = post(fake, publisher, judged, "qwen3")
    assert outcome.acceptance is None and conclusions(fake)["ASR gate"] == "failure"


# -- 7. who may label ------------------------------------------------------------------------------------

def test_a_triage_users_label_is_not_honoured(fake, publisher, judged):
    fake.add_pull(42)
    fake.state.permissions["tri"] = "triage"
    fake.add_label(42, "run-whisper-asr", actor="tri")
    outcome, lines = post(fake, publisher, judged, "whisper")
    assert not outcome.posted and "ASR gate / whisper" not in conclusions(fake)
    assert any("@tri (triage) does not count" in line for line in lines)
    assert "@tri (triage)" in gate_overall(fake)["output"]["title"]


# -- stale heads -----------------------------------------------------------------------------------------

def test_a_moved_head_gets_only_an_action_required_check(fake, publisher, judged):
    fake.add_pull(42, labels=("run-whisper-asr",))
    run = benchmark_run(fake)
    fake.push(42, "e" * 40)
    outcome, _ = post(fake, publisher, judged, "whisper", run=run)
    assert outcome.stale and conclusions(fake, "e" * 40) == {"ASR gate": "action_required"}
    assert latest(fake, "ASR gate / whisper")["output"]["title"].startswith("not the PR head")


# -- 11. consistency of the uploaded trees ---------------------------------------------------------------

@pytest.fixture
def tree(judged, tmp_path):
    return shutil.copytree(judged["qwen3"][0], tmp_path / "trees")


def consistent(tree):
    check_consistency(tree, SUITE, "qwen3", head_sha=HEAD, base_sha=MERGE_BASE, ab=True)


def test_honest_trees_are_consistent(tree):
    consistent(tree)


def test_a_candidate_that_measured_another_commit_is_refused(tree):
    (tree / "candidate" / "run2" / "commit.txt").write_text("c" * 40 + "\n")
    with pytest.raises(UntrustedInputError, match=r"candidate/run2/commit.txt names 'c{40}'; the PR head is a{40}"):
        consistent(tree)


def test_a_base_that_is_not_the_merge_base_is_refused(tree):
    for commit in tree.glob("base/run*/commit.txt"):
        commit.write_text("f" * 40 + "\n")
    with pytest.raises(UntrustedInputError, match="the merge base is b{40}"):
        consistent(tree)


def test_a_run_copied_across_the_sides_is_refused(tree):
    shutil.rmtree(tree / "candidate" / "run3" / "qwen3")
    shutil.copytree(tree / "base" / "run1" / "qwen3", tree / "candidate" / "run3" / "qwen3")
    with pytest.raises(UntrustedInputError, match="candidate/run3 measures exactly what base/run1 measures"):
        consistent(tree)


def test_an_empty_outliers_folder_is_refused(tree):
    (tree / "base" / "outliers" / "run1" / "qwen3").mkdir(parents=True)
    with pytest.raises(UntrustedInputError, match="outliers/run1/qwen3 is empty"):
        consistent(tree)


def test_a_remeasure_the_outlier_rule_did_not_ask_for_is_refused(tree):
    shutil.copytree(tree / "base" / "run1" / "qwen3", tree / "base" / "outliers" / "run1" / "qwen3")
    with pytest.raises(UntrustedInputError, match="the outlier rule does not set run1 aside"):
        consistent(tree)


def _scale_throughput(run_dir, factor, workloads=("en", "zh")):
    import json
    for w in workloads:
        path = run_dir / "qwen3" / f"asr_{w}.json"
        doc = json.loads(path.read_text())
        doc["results"][0]["throughput_samples_per_s"]["mean"] *= factor
        path.write_text(json.dumps(doc))


def test_a_slow_start_remeasured_against_the_other_arm_is_accepted(tree):
    # base: run1 in the slow mode as uploaded, run2's original slower still (the arm's deepest slow start, every
    # workload far below the candidate's median) and re-measured; the within-arm rule would have picked run3 (the
    # arm's median sits in the slow mode), the runner's slow-start rule picked run2 (issue 36: both arms alike)
    _scale_throughput(tree / "base" / "run1", 0.8)
    shutil.copytree(tree / "base" / "run2" / "qwen3", tree / "base" / "outliers" / "run2" / "qwen3")
    _scale_throughput(tree / "base" / "outliers" / "run2", 0.75)
    consistent(tree)


def test_a_remeasure_of_a_run_slow_in_one_workload_only_is_refused(tree):
    shutil.copytree(tree / "base" / "run2" / "qwen3", tree / "base" / "outliers" / "run2" / "qwen3")
    _scale_throughput(tree / "base" / "outliers" / "run2", 0.8, workloads=("en",))
    with pytest.raises(UntrustedInputError, match="the outlier rule does not set run2 aside"):
        consistent(tree)
