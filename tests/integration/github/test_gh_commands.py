"""The GitHub-facing commands driven through the real `gate` CLI group (exit codes, stdout, stderr, files)."""
from __future__ import annotations

import json
import os
import shutil

import pytest
from click.testing import CliRunner

from gate.cli import cli
from gate.publish.publication import STICKY_MARKER
from gate.render.renderer import COMMENT_MARKER
from tests.helpers import gh_payloads as p
from tests.helpers.fake_github import BOT, REPO, TOKEN


def invoke(args, **env):
    """Run `gate ARGS` with only the given GITHUB_*/GATE_* variables set."""
    clean = {k: None for k in os.environ if k.startswith(("GITHUB_", "GATE_", "RUNNER_"))}
    clean.update({k: str(v) for k, v in env.items()})
    return CliRunner().invoke(cli, args, env=clean, catch_exceptions=False)


def event_file(tmp_path, payload, name="event.json"):
    path = tmp_path / name
    path.write_text(json.dumps(payload), encoding="utf-8")
    return path


def outputs_of(path):
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


# -- gate event ---------------------------------------------------------------------------------------

def test_event_writes_step_outputs_and_meta(tmp_path):
    out = tmp_path / "github_output"
    result = invoke(["event", "--write-meta", str(tmp_path / "gate-meta" / "meta.json")], GITHUB_EVENT_NAME="pull_request",
                    GITHUB_EVENT_PATH=event_file(tmp_path, p.pull_request(label="run-asr-all")), GITHUB_OUTPUT=out)
    assert result.exit_code == 0, result.output
    outputs = outputs_of(out)
    assert outputs["run"] == "true" and outputs["sha"] == p.HEAD and outputs["pr"] == "42"
    assert json.loads(outputs["matrix"]) == {"model": ["qwen3", "whisper", "fun", "moss_td"]}
    meta = json.loads((tmp_path / "gate-meta" / "meta.json").read_text())
    assert meta == {"schema_version": 1, "pr": 42, "sha": p.HEAD, "labels": ["run-asr-all"],
                    "models": ["qwen3", "whisper", "fun", "moss_td"]}


def test_event_hostile_label_does_not_break_outputs(tmp_path):
    out = tmp_path / "github_output"
    payload = p.pull_request(label="x\nrun=true\nmatrix={}")
    result = invoke(["event"], GITHUB_EVENT_NAME="pull_request", GITHUB_EVENT_PATH=event_file(tmp_path, payload),
                    GITHUB_OUTPUT=out)
    assert result.exit_code == 0
    assert outputs_of(out)["run"] == "false" and out.read_text().count("\n") == 10  # ten one-line outputs


def test_event_malformed_payload_is_one_line_exit_2(tmp_path):
    payload = p.without(p.pull_request(), "pull_request", "head")
    result = invoke(["event"], GITHUB_EVENT_NAME="pull_request", GITHUB_EVENT_PATH=event_file(tmp_path, payload))
    assert result.exit_code == 2
    assert result.stderr.startswith("gate: error: ") and result.stderr.count("\n") == 1
    assert "pull_request.head.sha: " in result.stderr and "expected a str" in result.stderr  # the field, the type


def test_event_without_actions_environment(tmp_path):
    result = invoke(["event"])
    assert result.exit_code == 2 and result.stderr.startswith("gate: error: ")
    assert "GITHUB_EVENT_NAME: " in result.stderr
    assert "not set" in result.stderr and result.stderr.count("\n") == 1


# -- gate post (the trusted report job) -----------------------------------------------------------------

@pytest.fixture
def qwen3_trees(tmp_path, example_reports):
    from tests.helpers.gh_trees import make_trees

    return make_trees(tmp_path / "trees", example_reports, "qwen3")


def test_post_dry_run_judges_and_contacts_nothing(qwen3_trees):
    result = invoke(["post", "--trees", str(qwen3_trees), "--model", "qwen3", "--dry-run"])
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)
    assert plan["verdict"] == "fail" and plan["check"]["name"] == "ASR gate / qwen3"
    # An A/B of one job: WER FAILs on its paired test, the 6% slower throughput and p95 on the A/B's own runs.
    verdict, counts = plan["check"]["title"].split(": ")
    assert plan["check"]["conclusion"] == "failure" and verdict == "FAIL" and counts == "3 fail of 10 rows"


def github_env(fake, tmp_path, event=None, name="workflow_run"):
    env = {"GITHUB_API_URL": fake.base_url, "GITHUB_TOKEN": TOKEN, "GITHUB_REPOSITORY": REPO,
           "GITHUB_SERVER_URL": "https://github.test", "GITHUB_RUN_ID": "555"}
    if event is not None:
        env.update(GITHUB_EVENT_NAME=name, GITHUB_EVENT_PATH=str(event_file(tmp_path, event, "wr.json")))
    return env


def test_post_from_a_fork_workflow_run_finds_the_pr_judges_and_publishes(fake, tmp_path, qwen3_trees):
    fake.add_pull(42, labels=("run-qwen3-asr", "bug"), head_repo="contributor/sglang-omni")
    env = github_env(fake, tmp_path, p.workflow_run(conclusion="success", prs=[], fork=True))
    args = ["post", "--trees", str(qwen3_trees), "--model", "qwen3", "--json", str(tmp_path / "out" / "report.json")]
    result = invoke(args, **env)
    assert result.exit_code == 0, result.output
    assert "check run failure" in result.stdout and "comment created on #42" in result.stdout
    assert fake.state.labels[42] == ["bug"]
    check = fake.state.check_runs[0]
    assert (check["name"], check["conclusion"], check["head_sha"]) == ("ASR gate / qwen3", "failure", p.HEAD)
    assert check["details_url"] == f"https://github.test/{REPO}/actions/runs/123456789"  # the benchmark run
    assert json.loads((tmp_path / "out" / "report.json").read_text())["verdict"] == "fail"
    (comment,) = fake.comments_on(42)
    assert comment["user"] == BOT and comment["body"].startswith(STICKY_MARKER)
    # A re-run of the report workflow: the label is gone now, but the timeline shows it was added at this head.
    again = invoke(args, **env)
    assert again.exit_code == 0 and "comment unchanged on #42" in again.stdout
    assert len(fake.comments_on(42)) == 1


def test_post_keeps_an_acceptance_beside_the_trusted_report(fake, tmp_path, qwen3_trees):
    fake.add_pull(42, labels=("run-qwen3-asr",))
    fake.state.permissions["alice"] = "admin"
    reason = "decoder change, WER cost agreed in #41"
    fake.comment_as(42, f"/asr-gate accept all {reason}", user="alice")
    env = github_env(fake, tmp_path, p.workflow_run(prs=[42]))
    out = tmp_path / "gate-out" / "report.json"
    result = invoke(["post", "--trees", str(qwen3_trees), "--model", "qwen3", "--json", str(out)], **env)
    assert result.exit_code == 0, result.output
    assert "FAIL of qwen3 accepted" in result.stdout and "by @alice" in result.stdout
    record = json.loads((out.parent / "acceptance.json").read_text())
    assert record == {"model": "qwen3", "sha": p.HEAD, "by": "alice", "via": "comment",
                      "reason": reason, "at": record["at"]}
    assert record["at"].startswith("2026-12-01T09:")
    assert json.loads(out.read_text())["verdict"] == "fail"  # the report keeps the trusted verdict


def test_post_without_an_open_pr_for_the_head_posts_nothing(fake, tmp_path, qwen3_trees):
    env = github_env(fake, tmp_path, p.workflow_run(prs=[], fork=True))
    result = invoke(["post", "--trees", str(qwen3_trees), "--model", "qwen3"], **env)
    assert result.exit_code == 0 and "nothing posted" in result.stdout
    assert not fake.state.check_runs and not fake.calls("POST")


def test_post_missing_trees_is_a_refusal_not_a_pass(fake, tmp_path):
    fake.add_pull(42, labels=("run-fun-asr",))
    env = github_env(fake, tmp_path, p.workflow_run(conclusion="failure", prs=[42]))
    result = invoke(["post", "--trees", str(tmp_path / "absent"), "--model", "fun"], **env)
    assert result.exit_code == 0, result.output
    check = fake.state.check_runs[0]
    assert check["name"] == "ASR gate / fun" and check["conclusion"] == "failure"
    body = fake.comments_on(42)[0]["body"]
    assert "no result trees" in body and "for fun" in body
    assert fake.state.labels[42] == []


def test_post_bad_token_is_one_clear_line(fake, tmp_path, qwen3_trees):
    env = {**github_env(fake, tmp_path), "GITHUB_TOKEN": "expired"}
    result = invoke(["post", "--trees", str(qwen3_trees), "--model", "qwen3", "--pr", "42", "--sha", p.HEAD], **env)
    assert result.exit_code == 2
    assert result.stderr.startswith("gate: error: ") and result.stderr.count("\n") == 1
    assert "rejected the token (401)" in result.stderr and f"repository {REPO};" in result.stderr
    assert "check GITHUB_TOKEN" in result.stderr and result.stderr.endswith(": Bad credentials\n")


def test_post_tracking_issue_for_nightly_opens_on_warn(fake, tmp_path, example_reports):
    env = {**github_env(fake, tmp_path), "GITHUB_SHA": "c" * 40}
    warn = json.loads(example_reports["whisper"].read_text())
    warn["verdict"] = "warn"
    (tmp_path / "warn.json").write_text(json.dumps(warn))
    outcomes = []
    for path in (tmp_path / "warn.json", example_reports["qwen3"], example_reports["whisper"]):
        result = invoke(["post", "--report", str(path), "--tracking-issue"], **env)
        assert result.exit_code == 0, result.output
        outcomes.append(result.stdout.split("tracking issue: ")[1].strip())
    assert outcomes == ["opened", "updated", "closed"]
    assert [i["state"] for i in fake.state.issues.values()] == ["closed"]
    assert not fake.comments_on(42) and not fake.calls("DELETE")  # no PR comment, no label


@pytest.mark.parametrize("args, words", [
    (["post", "--dry-run"], "give exactly one of --trees"),
    (["post", "--not-run", "--trees", "x", "--model", "qwen3"], "give exactly one of --trees"),
    (["post", "--trees", "x", "--model", "nope"], "--model: expected one of"),
])
def test_post_bad_arguments_are_one_line(args, words):
    result = invoke(args)
    assert result.exit_code == 2 and words in result.stderr and result.stderr.count("\n") == 1


# -- gate merge ---------------------------------------------------------------------------------------

def test_merge_reads_download_artifact_layout(tmp_path, example_reports):
    for model in ("qwen3", "whisper"):
        leg = tmp_path / "reports" / f"asr-gate-model-{model}-1-1"
        leg.mkdir(parents=True)
        shutil.copy(example_reports[model], leg / "report.json")
    out = tmp_path / "gate-result" / "report.json"
    result = invoke(["merge", str(tmp_path / "reports"), "--json", str(out)])
    assert result.exit_code == 0, result.output
    merged = json.loads(out.read_text())
    assert merged["verdict"] == "fail" and sorted(merged["models"]) == ["qwen3", "whisper"]


def test_merge_refuses_an_off_schema_leg(tmp_path, example_reports):
    bad = tmp_path / "bad.json"
    bad.write_text('{"verdict": "pass"}')
    result = invoke(["merge", str(example_reports["qwen3"]), str(bad), "--json", str(tmp_path / "m.json")])
    assert result.exit_code == 2 and f"{bad}: report does not" in result.stderr and "the schema" in result.stderr
    assert not (tmp_path / "m.json").exists()


# -- gate action (what action.yml runs) ---------------------------------------------------------------

def action_env(tmp_path, **inputs):
    return {"GITHUB_OUTPUT": tmp_path / "output", "GITHUB_STEP_SUMMARY": tmp_path / "summary",
            **{f"GATE_{k.upper()}": v for k, v in inputs.items()}}


def test_action_compare_writes_summary_annotations_and_outputs(tmp_path, example_reports):
    baseline, candidate = example_reports["trees"]
    report = tmp_path / "out dir" / "report.json"  # the folder does not exist yet: the action creates it
    env = action_env(tmp_path, command="compare", report=report, fail_on_regression="false",
                     args=f"'{baseline}' '{candidate}' --models qwen3 --format none --json '{report}'")
    result = invoke(["action"], **env)
    assert result.exit_code == 0, result.output  # FAIL verdict, but fail-on-regression is off
    outputs = outputs_of(tmp_path / "output")
    assert outputs["verdict"] == "fail" and outputs["exit-code"] == "1"
    assert outputs["report-json"] == str(report.resolve())
    assert open(outputs["comment-markdown"]).read().startswith(COMMENT_MARKER.format(suite="asr"))
    assert "ASR regression gate" in (tmp_path / "summary").read_text()
    errors = [line for line in result.stdout.splitlines() if line.startswith("::error title=ASR gate FAIL%3A qwen3/asr_en")]
    warnings = [line for line in result.stdout.splitlines() if line.startswith("::warning title=ASR gate WARN%3A qwen3/asr_en")]
    rows = [r for r in json.loads(report.read_text())["rows"] if r["workload"] == "qwen3/asr_en"]
    # one annotation per FAIL and per WARN row (in one job the slowdown FAILs on the sides' own runs)
    assert len(errors) == sum(r["verdict"] == "fail" for r in rows) >= 1
    assert len(warnings) == sum(r["verdict"] == "warn" for r in rows)


def test_action_fails_the_step_on_regression_by_default(tmp_path, example_reports):
    report = tmp_path / "merged.json"
    env = action_env(tmp_path, command="merge", report=report,
                     args=f"{example_reports['qwen3']} {example_reports['whisper']} --json {report}")
    assert invoke(["action"], **env).exit_code == 0  # merge itself succeeds whatever the verdict
    assert outputs_of(tmp_path / "output")["verdict"] == "fail"


def test_action_args_are_split_but_never_expanded(tmp_path):
    env = action_env(tmp_path, command="merge", args="'$HOME/*.json' --json out.json")
    result = invoke(["action"], **env)
    assert result.exit_code == 2 and "$HOME/*.json: missing" in result.stderr  # the literal name: not expanded
    assert outputs_of(tmp_path / "output")["exit-code"] == "2"


@pytest.mark.parametrize("command, args, words", [("action", "", "command input: expected one of"),
                                                  ("compare", "'unclosed", "args input: cannot split")])
def test_action_bad_inputs_are_one_line(tmp_path, command, args, words):
    result = invoke(["action"], **action_env(tmp_path, command=command, args=args))
    assert result.exit_code == 2 and words in result.stderr and result.stderr.count("\n") == 1


def test_action_keeps_other_commands_failures_even_without_fail_on_regression(tmp_path, example_reports):
    tree = tmp_path / "tree"
    shutil.copytree(example_reports["trees"][0], tree)
    (tree / "run1" / "qwen3" / "asr_en.json").unlink()  # an incomplete tree: summarize exits 3
    result = invoke(["action"], **action_env(tmp_path, command="summarize", args=str(tree), fail_on_regression="false"))
    assert result.exit_code == 3
    assert outputs_of(tmp_path / "output")["exit-code"] == "3"


def test_merge_marks_a_model_without_report_incomplete(tmp_path, example_reports):
    out = tmp_path / "merged.json"
    result = invoke(["merge", str(example_reports["whisper"]), "--json", str(out), "--expect-models", "whisper,qwen3"])
    assert result.exit_code == 0, result.output
    assert "no report for qwen3" in result.stderr
    merged = json.loads(out.read_text())
    assert merged["verdict"] == "incomplete" and merged["exit_code"] == 3 and merged["models"] == ["whisper", "qwen3"]
    assert next(c for c in merged["coverage"] if c["workload"] == "qwen3/asr_en")["candidate"]["complete"] is False
    from gate.commands.action import render_report
    from gate.formats.report import Report
    assert "no report for qwen3" in render_report(Report.from_json(merged)).comment


def test_merge_of_reports_from_different_suites_is_one_line(tmp_path, example_reports):
    other = json.loads(example_reports["whisper"].read_text())
    other["suite"] = "tts"
    path = tmp_path / "other.json"
    path.write_text(json.dumps(other))
    result = invoke(["merge", str(example_reports["qwen3"]), str(path), "--json", str(tmp_path / "m.json")])
    assert result.exit_code == 2 and "reports cannot be merged" in result.stderr


def test_event_from_meta_gives_the_report_jobs_matrix(tmp_path):
    meta = tmp_path / "meta.json"
    meta.write_text(json.dumps({"schema_version": 1, "pr": 42, "sha": p.HEAD, "labels": ["run-asr-all"],
                                "models": ["whisper", "qwen3"]}))
    result = invoke(["event", "--from-meta", str(meta)])
    assert result.exit_code == 0, result.output
    outputs = dict(line.split("=", 1) for line in result.stdout.splitlines())
    assert outputs["run"] == "true" and json.loads(outputs["matrix"]) == {"model": ["qwen3", "whisper"]}
    missing = invoke(["event", "--from-meta", str(tmp_path / "absent.json")])
    assert missing.exit_code == 0 and "run=false" in missing.stdout


@pytest.mark.parametrize("models, words", [(["qwen3; rm -rf /"], "does not match the schema"),
                                           (["gpt5"], "does not know: gpt5")])
def test_event_from_meta_refuses_what_the_suite_does_not_know(tmp_path, models, words):
    meta = tmp_path / "meta.json"
    meta.write_text(json.dumps({"schema_version": 1, "pr": 42, "sha": p.HEAD, "labels": [], "models": models}))
    result = invoke(["event", "--from-meta", str(meta)])
    assert result.exit_code == 2 and words in result.stderr


def test_a_refused_post_exits_non_zero_and_names_files_relative_to_the_trees(fake, tmp_path, qwen3_trees):
    fake.add_pull(42, labels=("run-qwen3-asr",))
    (qwen3_trees / "candidate" / "run2" / "commit.txt").write_text("c" * 40 + "\n")  # not the PR head
    env = github_env(fake, tmp_path, p.workflow_run(prs=[42]))
    result = invoke(["post", "--trees", str(qwen3_trees), "--model", "qwen3"], **env)
    assert result.exit_code == 0, result.output  # bound: the refusal is the model's (failing) check
    check = next(r for r in fake.state.check_runs if r["name"] == "ASR gate / qwen3")
    assert check["conclusion"] == "failure" and "candidate/run2/commit.txt" in check["output"]["summary"]
    for run in fake.state.check_runs:
        assert str(tmp_path) not in str(run["output"]) and "/tmp/" not in str(run["output"])
    fake.push(42, "e" * 40)  # unbound now: the overall check says why, and the command fails
    result = invoke(["post", "--trees", str(qwen3_trees), "--model", "qwen3", "--sha", "e" * 40], **env)
    assert result.exit_code == 2 and "gate: error: not bound: qwen3" in result.stderr


def test_hostile_why_through_merge_stays_escaped(tmp_path, example_reports):
    from gate.commands.action import render_report
    from gate.formats.report import Report

    data = json.loads(example_reports["qwen3"].read_text())
    assert data["utterances"], "the example lists changed utterances"
    path, out = tmp_path / "report.json", tmp_path / "merged.json"
    for utterance in data["utterances"]:
        utterance["why"] = "<img src=x onerror=alert(1)> @team #4"
    path.write_text(json.dumps(data))
    assert invoke(["merge", str(path), "--json", str(out)]).exit_code == 2  # `why` is a closed vocabulary
    for utterance in data["utterances"]:
        utterance["why"] = "worse"
        utterance["reference"] = utterance["candidate_hypothesis"] = "<img src=x onerror=alert(1)> @team #4"
    path.write_text(json.dumps(data))
    assert invoke(["merge", str(path), "--json", str(out)]).exit_code == 0
    rendered = render_report(Report.from_json(json.loads(out.read_text())))
    for text in (rendered.comment, rendered.summary):
        assert "<img" not in text and "@team" not in text


def test_hostile_history_fields_are_escaped_in_the_tracking_issue():
    from gate.history.records import ChangePoint
    from gate.publish.tracking import issue_body

    hostile = "<img src=x onerror=alert(1)> @team #4"
    cp = ChangePoint(workload=hostile, metric=hostile, unit="samples/s", log=True, worse=True, night=hostile,
                     commit=hostile, previous_commit="a" * 40, reported=hostile, before=10.0, after=9.0, change=-0.1,
                     ci=(-0.12, -0.08), p_value=0.001)
    body = issue_body((cp,), repository="o/r", server_url="https://github.test", chart_url=None, run_url=None)
    assert "<img" not in body and "&lt;img" in body and "@team" not in body and "/commit/&lt;" not in body
    assert "compare/" not in body  # no diff link built from a commit that is not a hash


def test_post_with_the_stamp_key_tags_its_check_and_a_copy_posted_by_another_run_counts_for_nothing(
        fake, tmp_path, qwen3_trees):
    """Issue 35 through the CLI: GATE_STAMP_KEY (the action's stamp-key input) tags the stamp; the not-run post
    of a later event verifies it, and the FAIL's stamp copied onto a success proves nothing."""
    from gate.publish.trust import CheckStamp
    from tests.helpers.fake_github import STAMP_KEY

    fake.add_pull(42, labels=("run-qwen3-asr",), head_repo="contributor/sglang-omni")
    env = github_env(fake, tmp_path, p.workflow_run(conclusion="success", prs=[], fork=True))
    env["GATE_STAMP_KEY"] = STAMP_KEY.decode()
    result = invoke(["post", "--trees", str(qwen3_trees), "--model", "qwen3"], **env)
    assert result.exit_code == 0, result.output
    honest = next(r for r in fake.state.check_runs if r["name"] == "ASR gate / qwen3")
    assert CheckStamp.parse(honest["external_id"]).tag
    fake.add_check_as(p.HEAD, "ASR gate / qwen3", "success", external_id=honest["external_id"])
    again = invoke(["post", "--not-run", "--pr", "42", "--sha", p.HEAD],
                   **{k: v for k, v in env.items() if not k.startswith("GITHUB_EVENT")})
    assert again.exit_code == 0, again.output
    overall = [r for r in fake.state.check_runs if r["name"] == "ASR gate"][-1]
    assert overall["conclusion"] == "failure" and "qwen3 failure" in overall["output"]["title"]
