"""`gate event`: read the GitHub event and print what to run (models, commit, PR) as step outputs."""
from __future__ import annotations

import json
import os
from pathlib import Path

import click

from gate.commands._options import suite_option
from gate.formats import atomic, typedjson
from gate.formats.config import Suite, load_suite
from gate.publish.actions_io import append_file, format_outputs
from gate.publish.event import EventError, Trigger, read_trigger
from gate.publish.settings import Settings


@click.command("event")
@click.option("--event-name", help="Event name (default: GITHUB_EVENT_NAME).")
@click.option("--event-path", type=click.Path(dir_okay=False), help="Payload file (default: GITHUB_EVENT_PATH).")
@suite_option
@click.option("--sha", help="Commit for schedule/dispatch events (default: GITHUB_SHA).")
@click.option("--write-meta", type=click.Path(dir_okay=False),
              help="Also write the run metadata JSON (models run) for the report workflow.")
@click.option("--from-meta", type=click.Path(dir_okay=False),
              help="Trusted report job: the models named by an uploaded run-metadata file (untrusted; validated against "
                   "the suite), as run/models/matrix outputs. Missing file: run=false.")
def command(event_name: str | None, event_path: str | None, suite_path: Path | None, sha: str | None,
            write_meta: str | None, from_meta: str | None) -> None:
    """Print run, reason, models, matrix, sha, base-sha, pr, labels as NAME=VALUE lines.

    The same lines are appended to GITHUB_OUTPUT when it is set, so a workflow step can use
    `steps.<id>.outputs.models` and feed `matrix` to a fan-out job (one model per runner).

    \b
    Exit codes:
      0    printed (run=false is not an error: the event selects nothing to run)
      2    the event payload is missing, unreadable or not of the expected shape

    \b
    Example:
      gate event --event-name pull_request --event-path event.json --write-meta out/meta.json
    """
    settings = Settings.from_environ(os.environ)
    if from_meta:
        _emit(meta_outputs(from_meta, load_suite(suite_path)), settings)
        return
    trigger = read_trigger(
        event_name or settings.require("event_name"),
        event_path or settings.require("event_path"),
        suite=load_suite(suite_path),
        default_sha=sha or settings.sha,
    )
    _emit(trigger_outputs(trigger), settings)
    if write_meta:
        if not trigger.sha:
            raise EventError("no commit to record: the event has none and GITHUB_SHA/--sha is not set")
        from gate.publish.untrusted import META_SCHEMA_VERSION, RunMeta  # the one type its reader decodes

        meta = RunMeta(META_SCHEMA_VERSION, trigger.pr, trigger.sha, tuple(trigger.labels), tuple(trigger.models))
        atomic.write_text(write_meta, json.dumps(typedjson.to_json(meta), indent=2) + "\n", what="run metadata")


def _emit(outputs: dict[str, str], settings: Settings) -> None:
    text = format_outputs(outputs)
    click.echo(text, nl=False)
    if settings.output:
        append_file(settings.output, text, what="step outputs")


def meta_outputs(path: str, suite: Suite) -> dict[str, str]:
    """Which models the benchmark run says it measured. Only picks the report job's matrix: each model's
    post is still bound through the API to a label selecting it on the PR head."""
    from gate.publish.untrusted import load_untrusted_meta  # here: usage errors answer before scipy loads

    if not Path(path).exists():
        return {"run": "false", "reason": "the benchmark run measured nothing (no run metadata)",
                "models": "[]", "matrix": json.dumps({"model": []})}
    meta = load_untrusted_meta(path)
    unknown = [m for m in meta.models if m not in suite.models]
    if unknown:
        raise EventError(f"run metadata names model(s) the suite does not know: {', '.join(unknown)}", path=path)
    models = [m for m in suite.models if m in meta.models]
    return {"run": "true" if models else "false", "reason": f"models measured: {', '.join(models) or 'none'}",
            "models": json.dumps(models), "matrix": json.dumps({"model": models})}


def trigger_outputs(trigger: Trigger) -> dict[str, str]:
    """Step outputs, each one line: lists as JSON, absent values as empty strings."""
    return {
        "run": "true" if trigger.run else "false",
        "reason": " ".join(trigger.reason.split()),
        "models": json.dumps(list(trigger.models)),
        "matrix": json.dumps({"model": list(trigger.models)}),
        "sha": trigger.sha or "",
        "base-sha": trigger.base_sha or "",
        "pr": "" if trigger.pr is None else str(trigger.pr),
        "labels": json.dumps(list(trigger.labels)),
        "same-repo": "" if trigger.same_repo is None else str(trigger.same_repo).lower(),
        "run-id": "" if trigger.run_id is None else str(trigger.run_id),
    }
