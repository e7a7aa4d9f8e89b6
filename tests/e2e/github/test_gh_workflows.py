"""The workflows, the composite action and the caller snippets: lint clean, and the security rules hold.

The rules are checked on the parsed YAML (not by grepping), so a refactor that breaks one fails here.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gate.formats.config import load_suite

ROOT = Path(__file__).resolve().parents[3]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
CALLERS = sorted((ROOT / "docs" / "callers").glob("*.yml"))
ACTION = ROOT / "action.yml"
# GitHub expressions the workflows must use (code, compared as written)
PLAN_MATRIX = "fromJSON(needs.plan.outputs.matrix)"
HEAD_REPOSITORY = "workflow_run.head_repository.full_name"
GITHUB_HOSTED = "runner.environment == 'github-hosted'"
PINNED = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40}$")
needs_linters = pytest.mark.skipif(not (shutil.which("zizmor") and shutil.which("check-jsonschema")),
                                   reason="zizmor/check-jsonschema not installed (pip install -e '.[lint]')")


def load(path: Path) -> dict:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["on"] = data.pop(True, data.get("on"))  # YAML 1.1 reads the key `on` as True
    return data


def steps(doc: dict):
    for job_id, job in (doc.get("jobs") or {}).items():
        for step in job.get("steps") or []:
            yield job_id, step
    for step in (doc.get("runs") or {}).get("steps") or []:
        yield "action", step


def test_there_is_something_to_check():
    names = {p.name for p in WORKFLOWS}
    assert {"ci.yml", "asr-gate.yml", "asr-gate-report.yml", "asr-gate-nightly.yml", "asr-gate-calibration.yml"} <= names
    assert len(CALLERS) == 4


@needs_linters
def test_lint_script_reports_no_findings():
    result = subprocess.run([str(ROOT / "scripts" / "lint-workflows.sh")], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "lint: no findings" in result.stdout


@needs_linters
def test_linters_do_catch_what_they_are_for(tmp_path):
    """A planted workflow with template injection, an unpinned action and no timeout fails both linters."""
    bad = tmp_path / ".github" / "workflows" / "bad.yml"
    bad.parent.mkdir(parents=True)
    bad.write_text(
        "name: bad\non: pull_request\npermissions: {contents: read}\njobs:\n  j:\n    runs-on: ubuntu-latest\n"
        "    steps:\n      - uses: actions/checkout@v4\n        with: {persist-credentials: false}\n"
        "      - run: echo \"${{ github.event.pull_request.title }}\"\n")
    zizmor = subprocess.run(["zizmor", "--offline", "--format", "plain", str(bad)], capture_output=True, text=True)
    assert zizmor.returncode != 0 and "template-injection" in zizmor.stdout and "unpinned-uses" in zizmor.stdout
    timeout = subprocess.run(["check-jsonschema", "--builtin-schema", "custom.github-workflows-require-timeout", str(bad)],
                             capture_output=True, text=True)
    assert timeout.returncode != 0


@pytest.mark.parametrize("path", [*WORKFLOWS, *CALLERS, ACTION], ids=lambda p: p.name)
def test_no_expression_inside_run_and_every_action_pinned(path):
    doc = load(path)
    for job_id, step in steps(doc):
        assert "${{" not in step.get("run", ""), f"{path.name}:{job_id}: pass values through env:, not into run:"
        uses = step.get("uses")
        if uses and not uses.startswith("./"):
            assert PINNED.match(uses), f"{path.name}:{job_id}: {uses} is not pinned to a full commit SHA"
    for job_id, job in (doc.get("jobs") or {}).items():
        if "uses" in job:  # a reusable-workflow call
            assert PINNED.match(job["uses"].split(" ")[0]), f"{path.name}:{job_id}: pin the reusable workflow"


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_every_job_has_a_timeout_and_checkouts_keep_no_credentials(path):
    doc = load(path)
    for job_id, job in doc["jobs"].items():
        assert "timeout-minutes" in job, f"{path.name}:{job_id}"
        for step in job.get("steps") or []:
            if str(step.get("uses", "")).startswith("actions/checkout@"):
                keep = step.get("with", {}).get("persist-credentials")
                # Every push goes through `gate store` (the token on git's command line only): no checkout keeps one.
                assert keep is False, f"{path.name}:{job_id}: checkout must set persist-credentials: false"


@pytest.mark.parametrize("path", [*WORKFLOWS, *sorted((ROOT / "docs" / "callers").glob("*.yml"))], ids=lambda p: p.name)
def test_no_workflow_writes_a_branch_with_shell_git(path):
    """The baseline branch is written only by `gate store` (tested against a real bare repository), never by a
    shell `git commit` / `git push` / branch switch in a step (issue 22)."""
    for job_id, step in steps(load(path)):
        script = str(step.get("run", ""))
        for word in ("git push", "git commit", "git switch", "git checkout --orphan", " commit --", "push origin"):
            assert word not in script, f"{path.name}:{job_id}:{step.get('name')}: {word!r} in a run step"


def gpu_jobs(doc: dict):
    return {job_id: job for job_id, job in doc["jobs"].items() if "inputs.runner" in str(job.get("runs-on"))}


@pytest.mark.parametrize("name", ["asr-gate.yml", "asr-gate-nightly.yml", "asr-gate-calibration.yml"])
def test_gpu_jobs_are_read_only_and_secret_free(name):
    doc = load(ROOT / ".github" / "workflows" / name)
    assert doc["permissions"] == {"contents": "read"}
    jobs = gpu_jobs(doc)
    assert jobs, "no GPU job found"
    for job_id, job in jobs.items():
        assert job.get("permissions", {"contents": "read"}) == {"contents": "read"}
        text = yaml.safe_dump(job)
        assert "secrets." not in text and "github.token" not in text and "github-token" not in text, job_id
        concurrency = job["concurrency"]
        assert concurrency["cancel-in-progress"] is False and "matrix.model" in concurrency["group"]
        assert PLAN_MATRIX in str(job["strategy"]["matrix"])  # one model per runner


def test_pr_benchmark_checks_out_the_immutable_head_sha():
    bench = load(ROOT / ".github" / "workflows" / "asr-gate.yml")["jobs"]["bench"]
    checkouts = [s for s in bench["steps"] if str(s.get("uses", "")).startswith("actions/checkout@")]
    candidate = next(s for s in checkouts if s["with"].get("path") == "candidate")
    assert candidate["with"]["ref"] == "${{ needs.plan.outputs.sha }}"
    assert "head.ref" not in yaml.safe_dump(bench) and "head_ref" not in yaml.safe_dump(bench)


def test_artifact_names_are_unique_per_run_and_leg():
    for path in WORKFLOWS:
        for job_id, step in steps(load(path)):
            if str(step.get("uses", "")).startswith("actions/upload-artifact@"):
                name = step["with"]["name"]
                assert "github.run_id" in name and "github.run_attempt" in name, f"{path.name}:{job_id}: {name}"
                if "matrix" in str(load(path)["jobs"][job_id].get("strategy", "")):
                    assert "matrix.model" in name


def test_report_workflow_never_checks_out_the_pull_request():
    doc = load(ROOT / ".github" / "workflows" / "asr-gate-report.yml")
    assert doc["permissions"] == {}
    checkouts = 0
    for job_id, step in steps(doc):
        if str(step.get("uses", "")).startswith("actions/checkout@"):
            checkouts += 1
            assert step["with"]["persist-credentials"] is False
            if "repository" in step["with"]:  # the pinned gate
                assert step["with"]["repository"] == "${{ inputs.gate-repository }}"
                assert step["with"]["ref"] == "${{ inputs.gate-ref }}"
            else:  # this repository's baseline branch: trusted data, never a PR ref
                assert step["with"]["ref"] == "${{ inputs.baseline-branch }}", f"{job_id}: {step['with']}"
        if str(step.get("uses", "")).startswith("actions/download-artifact@"):
            assert "runner.temp" in step["with"]["path"]  # outside the workspace, never on a path that is executed
    assert checkouts == 4
    for job in doc["jobs"].values():
        assert job["runs-on"] == "ubuntu-latest"  # GitHub-hosted: the write token never meets a PR's runner


def test_report_workflow_reads_trees_and_metadata_never_a_report():
    jobs = load(ROOT / ".github" / "workflows" / "asr-gate.yml")["jobs"]
    uploaded = {s["with"]["name"] for job in ("plan", "bench") for s in jobs[job]["steps"]
                if str(s.get("uses", "")).startswith("actions/upload-artifact@")}
    report = load(ROOT / ".github" / "workflows" / "asr-gate-report.yml")
    downloaded = [s["with"]["name"] for _, s in steps(report) if str(s.get("uses", "")).startswith("actions/download-artifact@")]
    same_run = {d.replace("github.event.workflow_run.id", "github.run_id")
                 .replace("github.event.workflow_run.run_attempt", "github.run_attempt") for d in downloaded}
    assert len(downloaded) == 2 and same_run <= uploaded
    assert all(("meta" in d) or ("trees" in d) for d in downloaded)  # no report, no verdict from the PR job


def test_report_judge_job_is_serialised_per_pr_head_and_model():
    judge = load(ROOT / ".github" / "workflows" / "asr-gate-report.yml")["jobs"]["judge"]
    group = judge["concurrency"]["group"]
    assert HEAD_REPOSITORY in group and "workflow_run.head_branch" in group
    assert "matrix.model" in group and judge["concurrency"]["cancel-in-progress"] is False


def test_caller_filter_lets_every_suite_label_through_and_names_match():
    suite = load_suite()
    assert all(label.startswith("run-") for label in suite.labels)  # the PR caller's cheap `if:` relies on it
    pr_caller = load(ROOT / "docs" / "callers" / "asr-gate-pr.yml")
    report_caller = load(ROOT / "docs" / "callers" / "asr-gate-report-caller.yml")
    assert report_caller["on"]["workflow_run"]["workflows"] == [pr_caller["name"]]
    assert "concurrency" not in pr_caller  # an unrelated label must not cancel a running benchmark


def test_action_inputs_reach_the_shell_only_through_env():
    action = load(ACTION)
    assert action["runs"]["using"] == "composite"
    run_step = next(s for s in action["runs"]["steps"] if s.get("id") == "gate")
    assert run_step["run"].strip() == '"$GATE_BIN" action'
    every_input = {f"GATE_{name.upper().replace('-', '_')}" for name in action["inputs"]}
    from_inputs = {name for s in action["runs"]["steps"] for name, value in (s.get("env") or {}).items()
                   if str(value).startswith("${{ inputs.")}
    assert every_input == from_inputs
    assert not any("${{" in s.get("run", "") for s in action["runs"]["steps"])
    assert set(action["outputs"]) == {"verdict", "report-json", "comment-markdown", "exit-code"}


def test_action_installs_only_hash_pinned_packages():
    install = next(s for s in load(ACTION)["runs"]["steps"] if s.get("id") == "install")["run"]
    pip_lines = " ".join(install.split("\\\n")).split("\n")
    installs = [line for line in pip_lines if "pip install" in line]
    assert len(installs) == 2
    assert "--require-hashes" in installs[0] and "--no-deps" in installs[0] and '-r "$GATE_LOCK"' in installs[0]
    assert all(flag in installs[1] for flag in ("--no-deps", "--no-index", "--no-build-isolation"))
    cache = next(s for s in load(ACTION)["runs"]["steps"] if str(s.get("uses", "")).startswith("actions/cache@"))
    assert cache["if"] == GITHUB_HOSTED and "steps.venv.outputs.key" in cache["with"]["key"]


def test_action_run_step_executes_gate_action_with_its_env(tmp_path, example_reports):
    """Run the action's own `run:` line under bash, with the env it declares filled in as Actions would."""
    action = load(ACTION)
    run_step = next(s for s in action["runs"]["steps"] if s.get("id") == "gate")
    report = tmp_path / "merged.json"
    inputs = {"command": "merge", "args": f"{example_reports['qwen3']} --json {report}", "report": str(report),
              "fail-on-regression": "true", "github-token": "", "bot-login": "github-actions[bot]", "stamp-key": "",
              "app-slug": "github-actions"}
    gate_bin = shutil.which("gate") or str(Path(sys.executable).parent / "gate")  # the venv's, activated or not
    env = {"PATH": f"{Path(gate_bin).parent}:/usr/bin:/bin",
           "GITHUB_OUTPUT": str(tmp_path / "out"), "GITHUB_STEP_SUMMARY": str(tmp_path / "summary")}
    for name, expression in run_step["env"].items():
        key = re.fullmatch(r"\$\{\{ inputs\.([\w-]+) \}\}", expression)
        env[name] = inputs[key[1]] if key else gate_bin  # GATE_BIN: the installed gate
    result = subprocess.run(["bash", "-c", run_step["run"]], env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "verdict=fail" in (tmp_path / "out").read_text()
    errors = [line for line in result.stdout.splitlines() if line.startswith("::error title=")]  # a FAIL row of the planted regression
    assert any(line.startswith("::error title=ASR gate ") and "FAIL%3A qwen3/asr_en " in line for line in errors)


def test_calibration_measures_main_in_two_separate_jobs_one_after_the_other():
    jobs = load(ROOT / ".github" / "workflows" / "asr-gate-calibration.yml")["jobs"]
    assert "first" in jobs["second"]["needs"] and jobs["first"]["runs-on"] == jobs["second"]["runs-on"]
    runs = [s["with"]["args"] for name in ("first", "second") for s in jobs[name]["steps"]
            if s.get("with", {}).get("command") == "run"]
    assert [r.split("--name ")[1].split()[0] for r in runs] == ["aa-first", "aa-second"]
    store, recalibrate = jobs["store"], jobs["recalibrate"]
    assert store["permissions"] == {"contents": "write"} and store["runs-on"] == "ubuntu-latest"
    [write] = [s for s in store["steps"] if s.get("uses") == "./.gate"]
    assert write["with"]["command"] == "store" and write["with"]["args"].startswith("calibration ")
    assert "permissions" not in recalibrate  # read-only: the gate's code never runs next to the push token
    assert any("gate\" baseline calibrate" in s.get("run", "") for s in recalibrate["steps"])
    caller = load(ROOT / "docs" / "callers" / "asr-gate-calibration-caller.yml")
    triggers = caller[True] if True in caller else caller["on"]  # YAML 1.1 reads `on` as True
    assert "schedule" in triggers and "workflow_dispatch" in triggers


WRITE_TOKEN = "${{ secrets.gate-token || github.token }}"
APP_TOKEN = "${{ steps.app.outputs.token || secrets.gate-token || github.token }}"
CREATE_APP_TOKEN = "actions/create-github-app-token@1b10c78c7865c340bc4f6099eb2f838309f1e8c3"  # v3.1.1
GATE_WORKFLOWS = ["asr-gate-report.yml", "asr-gate-nightly.yml", "asr-gate-calibration.yml"]
STAMP_ENVIRONMENT, GATE_ENVIRONMENT = "${{ inputs.stamp-environment }}", "${{ inputs.gate-environment }}"
APP_KEY_SET, STAMP_KEY_SET = "${{ secrets.ASR_GATE_APP_PRIVATE_KEY != '' }}", "${{ secrets.ASR_GATE_STAMP_KEY != '' }}"
APP_CLIENT_ID, APP_KEY = "${{ secrets.ASR_GATE_APP_CLIENT_ID }}", "${{ secrets.ASR_GATE_APP_PRIVATE_KEY }}"
STAMP_KEY, EXPOSED = "${{ secrets.ASR_GATE_STAMP_KEY }}", "${{ needs.models.outputs.exposed }}"
MINT_IF = "env.GATE_APP_CONFIGURED == 'true'"


def writes(job: dict) -> bool:
    return any(level == "write" for level in (job.get("permissions") or {}).values())


@pytest.mark.parametrize("name", GATE_WORKFLOWS)
def test_every_write_uses_the_app_token_else_the_optional_gate_token(name):
    """Issue 35/50: a job that writes mints the gate App's token when the App is configured and uses it, else
    the optional gate-token, else github.token. Only the artifact downloads of this very run keep the run's own
    token, and a job that only reads (the nightly's branch probe) keeps gate-token or github.token."""
    doc = load(ROOT / ".github" / "workflows" / name)
    secret = doc["on"]["workflow_call"]["secrets"]["gate-token"]
    assert secret["required"] is False
    tokens = []
    for job_id, step in steps(doc):
        for key, value in {**(step.get("with") or {}), **(step.get("env") or {})}.items():
            if isinstance(value, str) and "token" in value and "${{" in value and key != "private-key":
                tokens.append((job_id, step.get("name"), str(step.get("uses", "")), key, value))
    assert tokens
    for job_id, step_name, uses, key, value in tokens:
        minted = writes(doc["jobs"][job_id])
        expected = ("${{ github.token }}" if uses.startswith("actions/download-artifact@")
                    else APP_TOKEN if minted else WRITE_TOKEN)
        assert value == expected, f"{name}:{job_id}:{step_name}: {key}"


@pytest.mark.parametrize("name", GATE_WORKFLOWS)
def test_every_job_that_writes_mints_the_app_token_first_from_its_environment(name):
    """Issue 50: the App's id and private key are secrets of the protected environment (never of the
    repository); the token is minted by create-github-app-token pinned by its full commit, only when the key is
    set, scoped to the job's own write permissions."""
    doc = load(ROOT / ".github" / "workflows" / name)
    secrets = doc["on"]["workflow_call"]["secrets"]
    assert secrets["ASR_GATE_APP_CLIENT_ID"]["required"] is False and secrets["ASR_GATE_APP_PRIVATE_KEY"]["required"] is False
    jobs = [(job_id, job) for job_id, job in doc["jobs"].items() if writes(job)]
    assert jobs
    for job_id, job in jobs:
        assert job["environment"] in (STAMP_ENVIRONMENT, GATE_ENVIRONMENT), job_id
        assert job["env"]["GATE_APP_CONFIGURED"] == APP_KEY_SET, job_id
        mint = job["steps"][0]
        assert mint["id"] == "app" and mint["uses"] == CREATE_APP_TOKEN, job_id
        assert mint["if"] == MINT_IF, job_id
        assert mint["with"]["client-id"] == APP_CLIENT_ID and mint["with"]["private-key"] == APP_KEY
        scoped = {k.removeprefix("permission-"): v for k, v in mint["with"].items() if k.startswith("permission-")}
        granted = {k: v for k, v in job["permissions"].items() if k != "statuses"}  # statuses: the Actions token only
        assert {k: v for k, v in scoped.items() if v == "write"} == {k: v for k, v in granted.items() if v == "write"}, job_id


def test_report_judge_and_not_run_jobs_get_the_stamp_key_and_the_app_from_an_environment():
    doc = load(ROOT / ".github" / "workflows" / "asr-gate-report.yml")
    assert doc["on"]["workflow_call"]["secrets"]["ASR_GATE_STAMP_KEY"]["required"] is False
    for job_id in ("judge", "not-run"):
        job = doc["jobs"][job_id]
        assert job["environment"] == job["env"]["GATE_ENVIRONMENT"] == STAMP_ENVIRONMENT
        assert job["env"]["GATE_EXPOSED_SECRETS"] == EXPOSED
        posts = [s for s in job["steps"] if (s.get("with") or {}).get("command") == "post"]
        assert posts and all(s["with"]["stamp-key"] == STAMP_KEY
                             and s["with"]["app-slug"] == "${{ steps.app.outputs.app-slug || inputs.app-slug }}"
                             for s in posts), job_id
    # The job without an environment sees a gate secret only when it is set at repository or organisation level.
    models = doc["jobs"]["models"]
    assert "environment" not in models
    exposed = next(s for s in models["steps"] if s.get("id") == "exposed")
    assert set(exposed["env"].values()) == {STAMP_KEY_SET, APP_KEY_SET}
    action = load(ACTION)
    run = next(s for s in action["runs"]["steps"] if s.get("id") == "gate")
    assert run["env"]["GATE_STAMP_KEY"] == "${{ inputs.stamp-key }}" and run["env"]["GATE_APP_SLUG"] == "${{ inputs.app-slug }}"


def test_create_github_app_token_is_pinned_to_a_release_commit():
    """The pin names a full commit; the comment names the release it is (checked against the action's tags)."""
    for name in GATE_WORKFLOWS:
        text = (ROOT / ".github" / "workflows" / name).read_text(encoding="utf-8")
        assert f"uses: {CREATE_APP_TOKEN} # v3.1.1" in text and "create-github-app-token@v" not in text


def test_calibration_store_downloads_only_the_recalibrate_jobs_artifacts():
    """Issue 35: merge-multiple over a glob would take any job's artifact of the run; the names are exact."""
    jobs = load(ROOT / ".github" / "workflows" / "asr-gate-calibration.yml")["jobs"]
    upload = next(s for s in jobs["recalibrate"]["steps"] if str(s.get("uses", "")).startswith("actions/upload-artifact@"))
    assert upload["with"]["name"] == "asr-gate-calibrated-${{ matrix.model }}-${{ github.run_id }}-${{ github.run_attempt }}"
    download = next(s for job in jobs.values() for s in job.get("steps", [])
                    if str(s.get("uses", "")).startswith("actions/download-artifact@")
                    and "asr-gate-calibrated" in str((s.get("with") or {}).get("pattern")))
    pattern = download["with"]["pattern"]
    assert "*" not in pattern and "join(fromJSON(needs.plan.outputs.matrix).model, ',')" in pattern
    assert pattern.startswith("${{ format('asr-gate-calibrated-{{{0},{0}}}-{1}-{2}'")
