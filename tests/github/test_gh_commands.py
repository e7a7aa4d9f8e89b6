"""The GitHub-facing commands driven through the real `gate` CLI group (exit codes, stdout, stderr, files)."""
from __future__ import annotations

import json
import os
import shutil

import gh_payloads as p
import pytest
from click.testing import CliRunner
from fake_github import BOT, REPO, TOKEN

from gate.cli import cli


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
    assert "pull_request.head.sha: expected a str" in result.stderr


def test_event_without_actions_environment(tmp_path):
    result = invoke(["event"])
    assert result.exit_code == 2 and "GITHUB_EVENT_NAME: required here but not set" in result.stderr


# -- gate post ----------------------------------------------------------------------------------------

def test_post_dry_run_contacts_nothing(example_reports):
    result = invoke(["post", "--report", str(example_reports["qwen3"]), "--pr", "42", "--sha", p.HEAD,
                     "--label", "run-qwen3-asr", "--dry-run"])
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)
    assert plan["verdict"] == "fail" and plan["comment"]["pr"] == 42
    assert plan["comment"]["body"].startswith("<!-- asr-regression-gate: asr -->")
    assert plan["check"]["head_sha"] == p.HEAD and plan["check"]["title"].startswith("FAIL: ")
    assert plan["remove_labels"] == ["run-qwen3-asr"]


def github_env(fake, tmp_path, event=None, name="workflow_run"):
    env = {"GITHUB_API_URL": fake.base_url, "GITHUB_TOKEN": TOKEN, "GITHUB_REPOSITORY": REPO,
           "GITHUB_SERVER_URL": "https://github.test", "GITHUB_RUN_ID": "555"}
    if event is not None:
        env.update(GITHUB_EVENT_NAME=name, GITHUB_EVENT_PATH=str(event_file(tmp_path, event, "wr.json")))
    return env


def write_meta(tmp_path, **overrides):
    meta = {"schema_version": 1, "pr": 42, "sha": p.HEAD, "labels": ["run-qwen3-asr"], "models": ["qwen3"], **overrides}
    path = tmp_path / "meta.json"
    path.write_text(json.dumps(meta))
    return path


def test_post_from_workflow_run_comments_checks_and_removes_the_label(fake, tmp_path, example_reports):
    fake.add_pull(42, labels=("run-qwen3-asr", "bug"), head_repo="contributor/sglang-omni")
    env = github_env(fake, tmp_path, p.workflow_run(conclusion="failure", prs=[], fork=True))
    args = ["post", "--report", str(example_reports["qwen3"]), "--meta", str(write_meta(tmp_path))]
    result = invoke(args, **env)
    assert result.exit_code == 0, result.output
    assert "comment created on #42" in result.stdout and "check run failure on aaaaaaaaaaaa" in result.stdout
    assert fake.state.labels[42] == ["bug"]
    check = fake.state.check_runs[0]
    assert check["conclusion"] == "failure" and check["head_sha"] == p.HEAD
    assert check["output"]["title"] == "FAIL: 5 fail of 10 rows (qwen3)"
    assert check["output"]["summary"].startswith("## ") and "<!-- asr-regression-gate" not in check["output"]["summary"]
    assert check["details_url"] == f"https://github.test/{REPO}/actions/runs/123456789"  # the benchmark run
    (comment,) = fake.comments_on(42)
    assert comment["user"] == BOT and comment["body"].startswith("<!-- asr-regression-gate: asr -->")
    # The same report posted again (a re-run of the report workflow) edits nothing and adds nothing.
    again = invoke(args, **env)
    assert "comment unchanged on #42" in again.stdout and "label run-qwen3-asr already gone" in again.stdout
    assert len(fake.comments_on(42)) == 1


def test_post_refuses_a_pr_number_whose_head_is_not_the_runs_head(fake, tmp_path, example_reports):
    fake.add_pull(42, head_repo="someone-else/sglang-omni", head_ref="feature/x")
    env = github_env(fake, tmp_path, p.workflow_run(prs=[], fork=True))
    result = invoke(["post", "--report", str(example_reports["qwen3"]), "--meta", str(write_meta(tmp_path))], **env)
    assert result.exit_code == 2 and "refusing to post" in result.stderr
    assert not fake.comments_on(42) and not fake.state.check_runs


def test_post_refuses_meta_for_another_commit(fake, tmp_path, example_reports):
    env = github_env(fake, tmp_path, p.workflow_run(prs=[42]))
    result = invoke(["post", "--report", str(example_reports["qwen3"]), "--meta", str(write_meta(tmp_path, sha="f" * 40))], **env)
    assert result.exit_code == 2 and "run metadata is for commit ffffffffffff" in result.stderr
    assert not fake.requests


def test_post_refuses_to_remove_a_label_the_suite_does_not_own(fake, tmp_path, example_reports):
    env = github_env(fake, tmp_path, p.workflow_run(prs=[42]))
    result = invoke(["post", "--report", str(example_reports["qwen3"]), "--meta", str(write_meta(tmp_path, labels=["lgtm"]))], **env)
    assert result.exit_code == 2 and "label 'lgtm' is not a gate label" in result.stderr
    assert not fake.requests


def test_post_with_a_schema_invalid_report_posts_nothing(fake, tmp_path, example_reports):
    report = json.loads(example_reports["qwen3"].read_text())
    report["verdict"] = "pass</details>"
    bad = tmp_path / "report.json"
    bad.write_text(json.dumps(report))
    result = invoke(["post", "--report", str(bad), "--pr", "42", "--sha", p.HEAD], **github_env(fake, tmp_path))
    assert result.exit_code == 2 and "does not match the schema at $.verdict" in result.stderr
    assert not fake.requests


def test_post_bad_token_is_one_clear_line(fake, tmp_path, example_reports):
    fake.add_pull(42)
    env = {**github_env(fake, tmp_path), "GITHUB_TOKEN": "expired"}
    result = invoke(["post", "--report", str(example_reports["whisper"]), "--pr", "42", "--sha", p.HEAD], **env)
    assert result.exit_code == 2
    assert result.stderr == ("gate: error: GitHub rejected the token (401) while reading repository "
                             f"{REPO}; check GITHUB_TOKEN: Bad credentials\n")


def test_post_tracking_issue_for_nightly(fake, tmp_path, example_reports):
    env = {**github_env(fake, tmp_path), "GITHUB_SHA": "c" * 40}
    first = invoke(["post", "--report", str(example_reports["qwen3"]), "--tracking-issue", "--no-check"], **env)
    assert first.exit_code == 0, first.output
    assert "tracking issue: opened" in first.stdout
    recovered = invoke(["post", "--report", str(example_reports["whisper"]), "--tracking-issue", "--no-check"], **env)
    assert "tracking issue: closed" in recovered.stdout
    assert [i["state"] for i in fake.state.issues.values()] == ["closed"]
    assert not fake.state.check_runs and not fake.calls("DELETE")  # no check, no label, no PR comment


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
    assert result.exit_code == 2 and "bad.json: report does not match the schema" in result.stderr
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
    assert open(outputs["comment-markdown"]).read().startswith("<!-- asr-regression-gate: asr -->")
    assert "ASR regression gate" in (tmp_path / "summary").read_text()
    errors = [line for line in result.stdout.splitlines() if line.startswith("::error title=ASR gate FAIL%3A qwen3/asr_en")]
    assert len(errors) == 5


def test_action_fails_the_step_on_regression_by_default(tmp_path, example_reports):
    report = tmp_path / "merged.json"
    env = action_env(tmp_path, command="merge", report=report,
                     args=f"{example_reports['qwen3']} {example_reports['whisper']} --json {report}")
    assert invoke(["action"], **env).exit_code == 0  # merge itself succeeds whatever the verdict
    assert outputs_of(tmp_path / "output")["verdict"] == "fail"


def test_action_args_are_split_but_never_expanded(tmp_path):
    env = action_env(tmp_path, command="merge", args="'$HOME/*.json' --json out.json")
    result = invoke(["action"], **env)
    assert result.exit_code == 2 and "$HOME/*.json: cannot read the report" in result.stderr
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
    from gate.report import Report
    from gate.untrusted import render_report
    assert "no report for qwen3" in render_report(Report.from_json(merged)).comment


def test_merge_of_reports_from_different_suites_is_one_line(tmp_path, example_reports):
    other = json.loads(example_reports["whisper"].read_text())
    other["suite"] = "tts"
    path = tmp_path / "other.json"
    path.write_text(json.dumps(other))
    result = invoke(["merge", str(example_reports["qwen3"]), str(path), "--json", str(tmp_path / "m.json")])
    assert result.exit_code == 2 and "reports cannot be merged" in result.stderr


def test_post_no_report_says_so_and_removes_the_label(fake, tmp_path):
    fake.add_pull(42, labels=("run-fun-asr",))
    fake.add_comment(42, "<!-- asr-regression-gate: asr -->\nold result")
    env = github_env(fake, tmp_path, p.workflow_run(conclusion="failure", prs=[42]))
    result = invoke(["post", "--no-report", "--meta", str(write_meta(tmp_path, labels=["run-fun-asr"]))], **env)
    assert result.exit_code == 0, result.output
    (comment,) = fake.comments_on(42)
    assert "no result" in comment["body"] and f"/{REPO}/actions/runs/123456789" in comment["body"]
    check = fake.state.check_runs[0]
    assert check["conclusion"] == "neutral" and check["output"]["title"].startswith("ERROR:")
    assert fake.state.labels[42] == []


def test_post_needs_exactly_one_of_report_and_no_report(example_reports):
    both = invoke(["post", "--report", str(example_reports["qwen3"]), "--no-report", "--dry-run"])
    neither = invoke(["post", "--dry-run"])
    assert both.exit_code == neither.exit_code == 2
    assert "give exactly one of --report FILE or --no-report" in neither.stderr
