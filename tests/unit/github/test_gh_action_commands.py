"""Every `command:` a workflow passes to the gate's own action is one the action runs (the nightly's
`command: baseline` was refused by the action until this test existed)."""
from __future__ import annotations

from pathlib import Path

import yaml

from gate.commands.action import ACTION_COMMANDS

WORKFLOWS = Path(__file__).resolve().parents[3] / ".github" / "workflows"


def _action_commands():
    for path in sorted(WORKFLOWS.glob("*.yml")):
        for job_name, job in (yaml.safe_load(path.read_text(encoding="utf-8")).get("jobs") or {}).items():
            for step in job.get("steps") or []:
                if str(step.get("uses", "")).startswith("./") and "command" in (step.get("with") or {}):
                    yield path.name, job_name, step["with"]["command"]


def test_workflows_call_the_action_only_with_commands_it_runs():
    found = list(_action_commands())
    assert len(found) >= 5  # the PR, report and nightly workflows all call the action
    unknown = [(name, job, cmd) for name, job, cmd in found if cmd not in ACTION_COMMANDS]
    assert not unknown, unknown
