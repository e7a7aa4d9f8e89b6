"""`gate store`: write the nightly's baselines or history to the baseline branch (gate.publish.branch), or refuse."""
from __future__ import annotations

import base64
import os
from pathlib import Path

import click

from gate.commands._options import runner_class_option, suite_option
from gate.formats.config import load_suite
from gate.formats.errors import InputError
from gate.publish.branch import (
    NightVerdict,
    StoredEntry,
    StoreError,
    SubprocessGit,
    baseline_change,
    calibration_change,
    history_change,
    write,
)
from gate.publish.settings import Settings


@click.group("store")
def command() -> None:
    """Write tonight's baselines or history to the baseline branch, or refuse with one line.

    Runs in the trusted nightly/calibration jobs with `contents: write`. The branch is fetched, changed,
    committed and pushed here; a push rejected because another writer moved the branch is applied again
    on the new tip. What may be stored is checked against the branch itself (gate/publish/branch.py).

    \b
    Exit codes:
      0    pushed, or nothing changed
      2    refused (no PASS report of the same night, a calibration dropped or shrunk, a missing input),
           or git failed; nothing was pushed

    \b
    Examples:
      gate store baselines new-baselines --runner-class h200 --sha "$SHA" --report result/report.json
      gate store history history --runner-class h200 --sha "$SHA"
      gate store calibration --calibrated calibrated --history history --runner-class h200 --sha "$SHA"
    """


_REMOTE = click.option("--remote", help="Repository to push to (default: GITHUB_SERVER_URL/GITHUB_REPOSITORY).")
_BRANCH = click.option("--branch", default="asr-gate-baselines", show_default=True, help="The baseline branch.")
_CLASS = runner_class_option("GPU class folder, e.g. h200.", required=True)
_SHA = click.option("--sha", required=True, help="The main commit measured tonight.")


@command.command("baselines")
@click.argument("folder", type=click.Path(path_type=Path))
@_CLASS
@_SHA
@click.option("--report", "report_path", type=click.Path(path_type=Path),
              help="Tonight's merged report. Required (and must be PASS) for every model the branch has a baseline of.")
@click.option("--update", type=click.Choice(["on-pass", "always"]), default="on-pass", show_default=True,
              help="always: a maintainer's dispatch moves the baseline past a WARN/FAIL night or off main's recent "
                   "level (still needs the report; an unaccepted step still holds it).")
@click.option("--tonight", "tonight_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Tonight's result trees (DIR/<artifact>/nightly as download-artifact lays them out, or one tree) "
                   "for the drift guard. Required for every model the branch has a baseline of.")
@_REMOTE
@_BRANCH
@suite_option
def baselines(folder: Path, runner_class: str, sha: str, report_path: Path | None, update: str,
              tonight_dir: Path | None, remote: str | None, branch: str, suite_path: Path | None) -> None:
    """Store FOLDER/<model>.json as <runner-class>/<model>.json on the baseline branch.

    A stored baseline moves only when the drift guard, run on the branch's own history/ with tonight's
    trees, finds no unaccepted worse step on a gated metric (accepted on the step's tracking issue as a
    PR's FAIL is) and, unless --update always, tonight is not off the last nights' level.

    \b
    Exit codes:
      0    pushed, or nothing changed
      2    refused or git failed; nothing was pushed

    \b
    Example:
      gate store baselines new-baselines --runner-class h200 --sha "$SHA" --report result/report.json --tonight trees
    """
    from gate.publish.untrusted import load_untrusted_report
    from gate.reading.baseline_file import read_baseline

    suite = load_suite(suite_path)
    if not folder.is_dir():
        raise InputError("expected tonight's baseline files in this directory (missing)", path=folder)
    new = {p.stem: p for p in sorted(folder.glob("*.json")) if p.is_file()}
    unknown = sorted(set(new) - set(suite.models))
    if unknown:
        raise InputError(f"baseline files for model(s) the suite does not know: {', '.join(unknown)}", path=folder)
    night = None
    if report_path is not None:
        if not report_path.exists():
            raise InputError("tonight's report is missing; nothing is stored without it", path=report_path)
        report = load_untrusted_report(report_path)
        night = NightVerdict(report.verdict.value, report.candidate.commit, tuple(report.models))
    for model, path in new.items():
        read_baseline(path, suite, models=(model,))  # each new file must read back before anything is pushed

    entries_of = _entries_reader(suite)
    tonight = _tonight(tonight_dir, suite, runner_class) if tonight_dir is not None else None
    change = baseline_change(runner_class=runner_class, new=new, night=night, sha=sha, update=update,
                             entries_of=entries_of, hold=_drift_guard(tonight, suite, runner_class, update))
    _write(change, remote, branch)


def _entries_reader(suite):
    """(path, model) -> a baseline's calibration entries ((workload, metric) -> df), through the strict reader."""
    def entries_of(path: Path, model: str) -> dict[tuple[str, str], StoredEntry]:
        from gate.reading.baseline_file import read_baseline

        side = read_baseline(path, suite, models=(model,))
        return {(workload, metric): StoredEntry(int(entry.df))
                for workload, metrics in side.calibration.items() for metric, entry in metrics.items()}

    return entries_of


@command.command("calibration")
@click.option("--calibrated", "calibrated", type=click.Path(path_type=Path),
              help="What the recalibrate jobs uploaded: <runner-class>/<model>.json, its .calibration-stamp.json "
                   "and <runner-class>/calibration/<model>/<pair>/.")
@click.option("--history", "history_dir", type=click.Path(path_type=Path),
              help="The arms' history files (kind calibration), merged line by line into history/.")
@_CLASS
@_SHA
@_REMOTE
@_BRANCH
@suite_option
def calibration(calibrated: Path | None, history_dir: Path | None, runner_class: str, sha: str, remote: str | None,
                branch: str, suite_path: Path | None) -> None:
    """Store the calibration workflow's A/A pairs, recalibrated baselines and history on the baseline branch.

    --calibrated may hold only the files this store owns, named per model and runner class
    (<class>/<model>.json, <class>/<model>.calibration-stamp.json, <class>/calibration/<model>/<pair>/...,
    history/<class>/<YYYY-MM>.jsonl, merged by the history store's merge); anything else is refused, naming it.
    Pairs are only added, never replaced; a recalibrated baseline never drops a calibration entry, and its
    degrees of freedom shrink only when the pairs' stamp changed its content (logged). A baseline the nightly moved
    since recalibrate read it is left as it is (its pair is kept) and the command exits 2 saying so.

    \b
    Exit codes:
      0    pushed, or nothing changed
      2    refused, a missing input, a baseline that moved meanwhile, or git failed

    \b
    Example:
      gate store calibration --calibrated calibrated --history history --runner-class h200 --sha "$SHA"
    """
    suite = load_suite(suite_path)
    given = [p for p in (calibrated, history_dir) if p is not None]
    if not given:
        raise InputError("give --calibrated DIR, --history DIR or both: nothing to store")
    for folder in given:
        if not folder.is_dir():
            raise InputError("expected a directory (missing: an upload or download step failed)", path=folder)
    stale: list[str] = []
    change = calibration_change(runner_class=runner_class, source=calibrated, history=history_dir, sha=sha,
                                entries_of=_entries_reader(suite), log=lambda line: click.echo(f"gate: {line}"),
                                stale=stale, suite=suite)
    _write(change, remote, branch)
    if stale:
        raise StoreError(f"not recalibrated (the nightly moved the baseline meanwhile; their pairs are stored): "
                         f"{', '.join(stale)}")


def _tonight(folder: Path, suite, runner_class: str) -> list:
    """Tonight's records from the trees under FOLDER (an unreadable tree is exit 2, before anything is pushed)."""
    from gate.history.importer import records_from_tree

    if not folder.is_dir():
        raise InputError("expected tonight's result trees in this directory (missing)", path=folder)
    trees = sorted(p for p in folder.glob("*/nightly") if p.is_dir()) or [folder]
    records = [r for tree in trees for r in records_from_tree(tree, suite, runner_class=runner_class)]
    if not records:
        raise InputError("tonight's result trees hold no workload", path=folder)
    return records


def _drift_guard(tonight: list | None, suite, runner_class: str, update: str):
    """The `hold` of gate.publish.branch.baseline_change: the drift guard on the branch's history at `root`."""
    def hold(root: Path, model: str) -> list[str]:
        from gate.history.guard import guard
        from gate.history.store import HistoryStore

        if tonight is None:
            return ["tonight's result trees were not given (--tonight): the drift guard cannot run"]
        history = HistoryStore(root / "history", suite=suite).read(runner_class=runner_class) \
            if (root / "history" / runner_class).is_dir() else None
        if history is None or not history.select(runner_class=runner_class):
            click.echo(f"gate: drift guard: no history of {runner_class} on the branch yet; nothing to hold {model} to")
            return []
        findings = guard(history, tonight, suite, runner_class=runner_class, models=(model,),
                         on_issue=_issue_reader(suite), log=lambda line: click.echo(f"gate: drift guard: {line}"))
        if update == "always":  # a maintainer's dispatch moves past a level; a step needs its issue's acceptance
            findings = [f for f in findings if f.kind == "step"]
        for finding in findings:
            click.echo(f"gate: drift guard holds {model}: {finding.text}")
        return [f.text for f in findings]

    return hold


def _issue_reader(suite):
    """Acceptances on the steps' tracking issues, through the API (None without a token: nothing is accepted)."""
    settings = Settings.from_environ(os.environ)
    if not settings.token or not settings.repository:
        return None
    from gate.publish.github import Publisher, connect
    from gate.publish.tracking import step_acceptance

    client = connect(api_url=settings.api_url, token=settings.token)
    publisher = Publisher(client, settings.repository, bot_login=settings.bot_login)
    return step_acceptance(publisher, suite, lambda line: click.echo(f"gate: drift guard: {line}"))


@command.command("history")
@click.argument("folder", type=click.Path(path_type=Path))
@_CLASS
@_SHA
@_REMOTE
@_BRANCH
def history(folder: Path, runner_class: str, sha: str, remote: str | None, branch: str) -> None:
    """Merge FOLDER (tonight's history files) into history/ on the baseline branch, record by record.

    FOLDER is read by the history store's own strict reader: a line it cannot use (torn, not UTF-8, out of
    range) is named and kept out of the push; the merge and the write are the store's (atomic, locked).

    \b
    Exit codes:
      0    pushed, or nothing changed (every line kept out is named)
      2    refused (no history, no readable record, a history file on the branch that is not a regular
           file) or git failed; nothing was pushed

    \b
    Example:
      gate store history history-night --runner-class h200 --sha "$SHA"
    """
    _write(history_change(runner_class=runner_class, source=folder, sha=sha, log=lambda line: click.echo(f"gate: {line}")),
           remote, branch)


def _write(change, remote: str | None, branch: str) -> None:
    settings = Settings.from_environ(os.environ)
    url = remote or f"{settings.server_url}/{settings.require('repository')}.git"
    config: tuple[str, ...] = ()
    if settings.token and url.startswith("https://"):  # the token goes to git's command line, never .git/config
        auth = base64.b64encode(f"x-access-token:{settings.token}".encode()).decode()
        config = (f"http.extraheader=AUTHORIZATION: basic {auth}",)
    done = write(change, remote=url, branch=branch, make_git=lambda cwd: SubprocessGit(cwd, config),
                 log=lambda line: click.echo(f"gate: {line}"))
    click.echo(f"gate: store {done}")
