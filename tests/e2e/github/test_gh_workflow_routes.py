"""Issue 50: the shipped report workflow's judge job, run as GitHub resolves it, against the fake GitHub, by the
App route and by the key route.

The job's expressions are resolved from the parsed YAML (a value the resolver does not know fails the test, so a
changed workflow is noticed), the mint step stands in for create-github-app-token (its outputs: the App's
installation token and slug), and the composite action's own run step executes `gate action` with the env the
action gives it. A forged `ASR gate` from a writer's branch workflow (the Actions token) follows, and the next
post must not count it.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gate.publish.trust import Authority, CheckStamp
from tests.helpers import gh_payloads as p
from tests.helpers.fake_github import REPO, STAMP_KEY, TOKEN
from tests.helpers.gh_trees import make_trees

ROOT = Path(__file__).resolve().parents[3]
GATE_APP = {"id": 99, "slug": "asr-gate-bot", "name": "ASR gate bot"}
KEY = STAMP_KEY.decode()


def load(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def resolve(expression: str, context: dict[str, str]) -> str:
    """The few expression forms the gate's workflows use: `a || b`, `a && b || c`, names, `format('{0}…', x)`,
    `x != ''`, `x == 'y'`."""
    def value(term: str) -> str:
        term = term.strip()
        match = re.fullmatch(r"format\('([^']*)', ([\w.-]+)\)", term)
        if match:
            return match[1].replace("{0}", context[match[2]])
        match = re.fullmatch(r"([\w.-]+) (!=|==) '([^']*)'", term)
        if match:
            return str((context[match[1]] == match[3]) == (match[2] == "==")).lower()
        match = re.fullmatch(r"'([^']*)'", term)
        return match[1] if match else context[term]

    for alternative in expression.split(" || "):
        parts = [value(t) for t in alternative.split(" && ")]
        if all(part not in ("", "false") for part in parts):
            return parts[-1]
    return ""


def substitute(text: str, context: dict[str, str]) -> str:
    return re.sub(r"\$\{\{ (.*?) \}\}", lambda m: resolve(m[1], context), text)


@pytest.fixture(scope="module")
def trees(tmp_path_factory, example_reports):
    return make_trees(tmp_path_factory.mktemp("route-trees"), example_reports, "qwen3")


def run_judge(fake, tmp_path, trees, *, route: str) -> subprocess.CompletedProcess:
    workflow = load(ROOT / ".github" / "workflows" / "asr-gate-report.yml")
    job = workflow["jobs"]["judge"]
    app_route = route == "app"
    context = {
        "inputs.stamp-environment": "asr-gate", "inputs.app-slug": "github-actions",
        "inputs.bot-login": "github-actions[bot]", "inputs.mode": "ab", "matrix.model": "qwen3",
        "needs.models.outputs.exposed": "", "github.token": TOKEN, "secrets.gate-token": "",
        "secrets.ASR_GATE_STAMP_KEY": "" if app_route else KEY,
        "secrets.ASR_GATE_APP_PRIVATE_KEY": "-----BEGIN RSA PRIVATE KEY-----" if app_route else "",
        "secrets.ASR_GATE_APP_CLIENT_ID": "Iv23client" if app_route else "",
    }
    job_env = {name: substitute(str(value), context) for name, value in job["env"].items()}
    context.update({f"env.{name}": value for name, value in job_env.items()})
    mint = job["steps"][0]
    assert resolve(mint["if"], context) == ("true" if app_route else "")
    # create-github-app-token's outputs (the fake serves the App's installation token as TOKEN)
    context["steps.app.outputs.token"] = TOKEN if app_route else ""
    context["steps.app.outputs.app-slug"] = GATE_APP["slug"] if app_route else ""
    step = next(s for s in job["steps"] if s.get("with", {}).get("command") == "post" and "ab" in s.get("if", ""))
    inputs = {key: substitute(str(value), context) for key, value in step["with"].items() if key != "args"}
    args = re.sub(r"\$\{\{ hashFiles\(.*?\}\}", "", step["with"]["args"], flags=re.S)  # no baseline store here
    args = args.replace("${{ runner.temp }}/untrusted/trees", str(trees)).replace("gate-out/", f"{tmp_path}/out/")
    inputs["args"] = " ".join(substitute(args, context).split())
    inputs.update({"report": "", "fail-on-regression": "true", "python": sys.executable})

    action = load(ROOT / "action.yml")
    run_step = next(s for s in action["runs"]["steps"] if s.get("id") == "gate")
    gate_bin = shutil.which("gate") or str(Path(sys.executable).parent / "gate")
    event = tmp_path / "event.json"
    event.write_text(json.dumps(p.workflow_run(conclusion="success", prs=[42])), encoding="utf-8")
    env = {"PATH": f"{Path(gate_bin).parent}:/usr/bin:/bin", **job_env,
           "GITHUB_ACTIONS": "true", "GITHUB_API_URL": fake.base_url, "GITHUB_REPOSITORY": REPO,
           "GITHUB_SERVER_URL": "https://github.test", "GITHUB_EVENT_NAME": "workflow_run",
           "GITHUB_EVENT_PATH": str(event), "GITHUB_RUN_ID": "700", "GITHUB_RUN_ATTEMPT": "1",
           "GITHUB_OUTPUT": str(tmp_path / "out.txt"), "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md")}
    for name, expression in run_step["env"].items():
        key = re.fullmatch(r"\$\{\{ inputs\.([\w-]+) \}\}", expression)
        env[name] = inputs[key[1]] if key else gate_bin  # GATE_BIN: the installed gate
    return subprocess.run(["bash", "-c", run_step["run"]], env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("route", ["app", "key"])
def test_the_report_workflow_posts_by_each_route_and_a_forged_asr_gate_does_not_count(fake, tmp_path, trees, route):
    if route == "app":
        fake.app = GATE_APP  # the token the mint step made is the App's installation token
    fake.add_pull(42, labels=("run-qwen3-asr",))
    fake.add_environment("asr-gate")  # deployment branches: main only
    result = run_judge(fake, tmp_path, trees, route=route)
    assert result.returncode == 0, result.stdout + result.stderr
    runs = fake.check_runs_on(p.HEAD)
    model = next(r for r in runs if r["name"] == "ASR gate / qwen3")
    overall = [r for r in runs if r["name"] == "ASR gate"][-1]
    slug = "asr-gate-bot" if route == "app" else "github-actions"
    assert model["app"]["slug"] == overall["app"]["slug"] == slug
    assert model["conclusion"] == overall["conclusion"] == "failure"
    assert "set-up" not in overall["output"]["summary"]  # a protected environment, no exposed secret
    stamp = CheckStamp.parse(model["external_id"])
    assert stamp.sequence.report_run == 700 and bool(stamp.tag) == (route == "key")
    if route == "key":  # the tag verifies with the key, over what the check shows
        authority = Authority(key=STAMP_KEY)
        assert authority.sign(CheckStamp("model", "qwen3", stamp.run, stamp.event, sequence=stamp.sequence),
                              sha=p.HEAD, conclusion="failure", title=model["output"]["title"],
                              summary=model["output"]["summary"]).tag == stamp.tag
    (comment,) = fake.comments_on(42)
    assert comment["user"] == fake.poster and fake.state.labels[42] == []
    # A writer's branch workflow posts `ASR gate` = success with the Actions token; the gate's next post names it.
    fake.add_check_as(p.HEAD, "ASR gate", "success", external_id=None, title="all green")
    again = run_judge(fake, tmp_path, trees, route=route)  # the report re-run
    assert again.returncode == 0, again.stdout + again.stderr
    latest = [r for r in fake.check_runs_on(p.HEAD) if r["name"] == "ASR gate" and r["app"]["slug"] == slug
              and (r["external_id"] or "").startswith("asr-gate:overall:")][-1]
    forged = "a check named ASR gate posted by the app "
    assert latest["conclusion"] == "failure" and f"{forged}github-actions" in latest["output"]["summary"]
