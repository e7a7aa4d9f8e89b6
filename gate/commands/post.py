"""`gate post`: the trusted job judges uploaded result trees itself and publishes the result on the PR.

The work is in gate.publish.posting, imported when the command runs (usage errors never load PyGithub or scipy).
"""
from __future__ import annotations

from pathlib import Path

import click

from gate.commands._options import calibration_option, history_dir_option, json_path_option, runner_class_option, suite_option
from gate.publish.post_request import PostRequest


@click.command("post")
@click.option("--trees", "trees", type=click.Path(file_okay=False, path_type=Path),
              help="Downloaded result trees of ONE model (untrusted): candidate/ and, in A/B mode, base/.")
@click.option("--model", help="The model the trees are for.")
@click.option("--baseline", "baseline", type=click.Path(path_type=Path),
              help="Trusted baseline (file on the baseline branch). Default: the trees' base/ side (A/B).")
@calibration_option("Trusted A/A calibration (a baseline file on the baseline branch), for A/B runs.", dest="calibration")
@json_path_option("Also write the trusted report here (an artifact for people and tools).")
@click.option("--not-run", is_flag=True, help="The benchmark run measured nothing: set only the overall check.")
@click.option("--required-paths", "required_paths", default="",
              help="Comma-separated globs of ASR code paths: an unlabelled PR touching one gets 'action required'.")
@click.option("--report", "report_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Nightly only (with --tracking-issue): the nightly's own merged report.")
@click.option("--tracking-issue", is_flag=True, help="Nightly: open/update one issue unless the night passed.")
@click.option("--check-setup", is_flag=True,
              help="Check the set-up for a maintainer: the environment (GATE_ENVIRONMENT, default asr-gate) admits "
                   "only the default branch, the key or App secrets are in it and not in the repository or "
                   "organisation; exit 2 when a branch workflow could read them (docs/github-app.md).")
@click.option("--sha", help="Commit (default: the workflow_run head, else GITHUB_SHA).")
@click.option("--pr", type=int, help="PR number (default: from the workflow_run event, else looked up by head).")
@suite_option
@click.option("--dry-run", is_flag=True, help="Judge and print the model's check as JSON; contact nothing.")
@history_dir_option("The nightly history on the baseline branch (trusted): each non-passing row shows main's "
                    "last nights, where the candidate lands against their band, and an open step's issue.")
@runner_class_option("With --history: only the nights of this GPU class (the class the baseline branch files under).")
def command(trees: Path | None, model: str | None, baseline: Path | None, calibration: Path | None,
            json_path: Path | None, not_run: bool, required_paths: str, report_path: Path | None, tracking_issue: bool,
            sha: str | None, pr: int | None, suite_path: Path | None, dry_run: bool, history_dir: Path | None = None,
            runner_class: str | None = None, check_setup: bool = False) -> None:
    """Judge uploaded result trees and publish the check runs and the one sticky comment.

    Run in the trusted workflow only: the trees are untrusted data and are judged here (their
    per-utterance cache, if any, is never read).

    \b
    Exit codes:
      0    published (a head that moved on: kept on the commit measured)
      2    bad input, an API error, or a post refused (the overall check says why);
           --check-setup: a branch workflow could read the gate's key or the App's key

    \b
    Examples:
      gate post --trees untrusted/qwen3 --model qwen3 --baseline store/h100/qwen3.json
      gate post --trees untrusted/qwen3 --model qwen3 --calibration store/h100/qwen3.json --dry-run
      gate post --report nightly/report.json --tracking-issue
      GITHUB_REPOSITORY=o/r GITHUB_TOKEN=... gate post --check-setup
    """
    request = PostRequest.from_options(  # the mode (exactly one of them) is decided before the library loads
        trees=trees, not_run=not_run, report=report_path, required_paths=required_paths, model=model,
        baseline=baseline, calibration=calibration, json_path=json_path, tracking_issue=tracking_issue, sha=sha,
        pr=pr, suite_path=suite_path, dry_run=dry_run, history_dir=history_dir, runner_class=runner_class,
        check_setup=check_setup)
    from gate.publish.posting import post

    post(request)
