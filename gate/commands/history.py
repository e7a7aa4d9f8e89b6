"""`gate history`: the nightly history of main: trends, change points, noise, charts and a static site.

    gate history [--history DIR] [--nights N] [--json]   table: last N nights, sparklines, change points
    gate history import TREE...                          store result trees (rerunnable: a night is stored once)
    gate history repair                                  move unreadable lines aside to <file>.rejected
    gate history detect [--track]                        tonight's change points; --track files the issues
    gate history guard TREE...                           may tonight become the baseline? (drift guard)
    gate history noise                                   run-to-run and night-to-night σ since the last change
    gate history plot DIR [--candidate TREE]             SVG charts
    gate history publish OUT                             static dashboard for GitHub Pages
    gate history example-nights OUT                      synthetic nights with a planted step

Exit codes: 0 done; 2 bad input (unreadable history or tree, missing extra, GitHub error).
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import click

from gate.commands._options import json_flag_option, json_path_option, nights_option, runner_class_option, suite_option
from gate.formats.config import load_suite
from gate.formats.errors import InputError

DEFAULT_HISTORY = "history"
_HISTORY = click.option("--history", "history_dir", default=DEFAULT_HISTORY, show_default=True,
                        type=click.Path(file_okay=False, path_type=Path),
                        help="History directory (<runner-class>/<YYYY-MM>.jsonl).")
_CLASS = click.option("--runner-class", default=None, help="Only this runner class (default: all in the history).")


def _read(history_dir: Path, runner_class: str | None, suite=None):
    """The history; every line or file it skips is named on stderr (gate: warning: FILE:LINE: why)."""
    from gate.history.store import HistoryStore

    history = HistoryStore(history_dir, suite=suite).read(runner_class=runner_class)
    if not history.records:
        raise InputError("the history holds no records; expected <runner-class>/<YYYY-MM>.jsonl lines "
                         "(append some with `gate history import TREE...`)", path=history_dir)
    return history


@click.group("history", invoke_without_command=True)
@_HISTORY
@_CLASS
@nights_option(30, 1, 10_000, "Nights shown.")
@json_flag_option("Print the trends and change points as JSON.")
@suite_option
@click.pass_context
def command(ctx: click.Context, history_dir: Path, runner_class: str | None, nights: int, as_json: bool,
            suite_path: Path | None) -> None:
    """The last N nights of main per workload × metric: a sparkline, the latest value, change points.

    \b
    Example:
      gate history --history example-out/nights/history

    \b
    Exit codes:
      0  printed
      2  unreadable history or bad option
    """
    if ctx.invoked_subcommand is not None:
        return
    if not Path(history_dir).is_dir():  # answered before the statistics load
        raise InputError("no such history directory; expected a history store (`gate history import TREE...` makes one)",
                         path=history_dir)
    from gate.history.analysis import LOOKBACK, trends
    from gate.history.views import table, trends_json

    suite = load_suite(suite_path)
    history = _read(history_dir, runner_class, suite)
    found = trends(history, suite, runner_class=runner_class, lookback=max(LOOKBACK, nights))
    if as_json:
        click.echo(json.dumps(trends_json(found, nights=nights, history=str(history_dir)), indent=1))
    else:
        click.echo(table(found, nights=nights, history=str(history_dir)))


@command.command("import")
@click.argument("trees", nargs=-1, required=True, type=click.Path(path_type=Path))
@_HISTORY
@runner_class_option("Runner class the trees ran on.", default="default")
@click.option("--kind", type=click.Choice(["nightly", "calibration", "accepted"]), default="nightly", show_default=True)
@click.option("--report", "report_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="The night's gate report JSON: its per-workload verdicts are stored with the values.")
@click.option("--time", "when", default=None,
              help="ISO-8601 time of the night, for trees that do not record their start in gate-run.json "
                   "(default: their newest commit.txt). Stored in UTC.")
@suite_option
def import_(trees: tuple[Path, ...], history_dir: Path, runner_class: str, kind: str, report_path: Path | None,
            when: str | None, suite_path: Path | None) -> None:
    """Store result trees in the history: one record per night × workload; rerunnable.

    A tree already stored (same measured values) is skipped whatever --time says; a rerun of a night
    (same commit and UTC date, new values) replaces it. Month files are rewritten whole under a lock on
    the store, so a crash or a full disk leaves the previous file and concurrent imports cannot duplicate.

    \b
    Example:
      gate history import --history example-out/nights/history example-out/nights/night-*

    \b
    Exit codes:
      0  appended (or already there)
      2  unreadable tree or history
    """
    from gate.history.importer import records_from_tree, workload_verdicts
    from gate.history.records import utc_time
    from gate.history.store import HistoryStore

    if when is not None and utc_time(when) is None:
        raise InputError(f"--time {when[:60]!r}: expected ISO-8601 with a UTC offset, e.g. 2026-11-03T02:00:00+00:00")
    suite = load_suite(suite_path)
    verdicts = None
    if report_path:
        from gate.publish.untrusted import load_untrusted_report  # the report model pulls in the stats layer

        verdicts = workload_verdicts(load_untrusted_report(report_path))
    records = [r for tree in trees for r in records_from_tree(
        tree, suite, runner_class=runner_class, kind=kind, time=when, verdicts=verdicts,
        warn=lambda line: click.echo(f"gate: warning: {line}", err=True))]
    records.sort(key=lambda r: r.time)
    written = HistoryStore(history_dir, suite=suite).append(records)
    nights = len({r.time for r in records})
    click.echo(f"{history_dir}: {written} new records from {len(trees)} trees ({nights} nights, "
               f"{len(records) - written} already there)")


@command.command("repair")
@_HISTORY
@_CLASS
@suite_option
def repair_(history_dir: Path, runner_class: str | None, suite_path: Path | None) -> None:
    """Move every unreadable line of the history files to <file>.rejected; the files keep the rest.

    A whole file that cannot be read (a FIFO, a device, over the size cap) is named and left alone.

    \b
    Example:
      gate history repair --history history

    \b
    Exit codes:
      0  repaired (or nothing to repair)
      2  no history, or a file that cannot be written
    """
    from gate.history.store import HistoryStore

    if not history_dir.is_dir():
        raise InputError("no such history directory; expected <history>/<runner-class>/<YYYY-MM>.jsonl", path=history_dir)
    moved, unreadable = HistoryStore(history_dir, suite=load_suite(suite_path)).repair(runner_class=runner_class)
    for item in moved:
        click.echo(f"{item.path}:{item.line}: {item.reason}; moved to {Path(item.path).name}.rejected")
    for item in unreadable:
        click.echo(f"gate: warning: {item.path}: {item.reason}; left alone (move or delete it by hand)", err=True)
    click.echo(f"{history_dir}: {len(moved)} unreadable line(s) moved aside" if moved else
               f"{history_dir}: every line is readable; nothing to repair")


@command.command("detect")
@_HISTORY
@_CLASS
@click.option("--recent", default=1, show_default=True, type=click.IntRange(1, 1000),
              help="Change points first reported in the last N nights count as new.")
@json_path_option("Write the new change points here.")
@click.option("--track", is_flag=True,
              help="Open or update one GitHub issue per step (workload) that moved a gated metric, for every "
                   "stored step without one yet (also those a GitHub error kept from being filed before).")
@click.option("--chart-url", default=None,
              help="Base URL of the published dashboard: each issue links <URL>/<model>.html#<workload>.")
@suite_option
def detect_(history_dir: Path, runner_class: str | None, recent: int, json_path: Path | None, track: bool,
            chart_url: str | None, suite_path: Path | None) -> None:
    """Tonight's change points on main; every change point found is stored in the history
    (<runner-class>/change-points.jsonl) and shown from then on, whatever the analysis window.

    \b
    Example:
      gate history detect --history history --runner-class h100 --track

    \b
    Exit codes:
      0  analysed (change points or not)
      2  unreadable history, several runner classes without --runner-class, or a GitHub API error with
         --track (the change points are stored before any issue is filed)
    """
    import dataclasses

    from gate.history.analysis import trends
    from gate.history.steps import format_change
    from gate.history.store import HistoryStore

    suite = load_suite(suite_path)
    history = _read(history_dir, runner_class, suite)
    classes = history.runner_classes()
    if runner_class is None and len(classes) > 1:
        raise InputError(f"the history holds runner classes {', '.join(classes)}; expected --runner-class",
                         path=history_dir)
    cls = runner_class or classes[0]
    found = trends(history, suite, runner_class=cls)
    store = HistoryStore(history_dir, suite=suite)
    stored = store.record_change_points(cls, [cp for t in found for cp in t.change_points])
    nights = sorted({r.time for r in history.select(runner_class=cls)})
    recent_nights = set(nights[-recent:])
    new = [cp for cp in stored if cp.reported in recent_nights]
    for cp in new:
        click.echo(f"change point: {cp.workload} {cp.metric} {format_change(cp)} from {cp.night[:10]} "
                   f"({(cp.previous_commit or '?')[:10]}..{(cp.commit or '?')[:10]}), {'worse' if cp.worse else 'better'}"
                   f"{'' if cp.gated else ' (not gated)'}")
    if not new:
        click.echo(f"no new change point in the last {recent} night(s); {len(stored)} stored")
    if json_path is not None:
        from gate.formats import atomic

        atomic.write_text(json_path, json.dumps([cp.to_json() for cp in new], indent=1) + "\n", what="change points")
    if track:
        from gate.history.steps import group_steps
        from gate.publish.github import Publisher, connect, default_retry
        from gate.publish.settings import Settings
        from gate.publish.tracking import file_steps, step_key

        settings = Settings.from_environ(os.environ)
        publisher = Publisher(connect(api_url=settings.api_url, token=settings.require("token"),
                                      retry=default_retry()), settings.require("repository"),
                              bot_login=settings.bot_login)
        charts = None
        if chart_url:
            charts = {step_key(s): f"{chart_url.rstrip('/')}/{suite.workload(s[0].workload).model}.html"
                                   f"#{s[0].workload.replace('/', '-')}" for s in group_steps(stored)}
        filed, numbers = file_steps(publisher, stored, server_url=settings.server_url, chart_urls=charts,
                                    run_url=settings.run_url)
        if numbers:
            store.record_change_points(cls, [dataclasses.replace(cp, issue=numbers[cp.key]) for cp in stored
                                             if cp.key in numbers])
            stored = [dataclasses.replace(cp, issue=numbers.get(cp.key, cp.issue)) for cp in stored]
        for done in filed:
            click.echo(f"issue {done.action}: {done.key}" + (f" (#{done.number})" if done.number else ""))
        _main_check(publisher, settings, suite, history, stored, cls)


def _main_check(publisher, settings, suite, history, stored, runner_class: str) -> None:
    """Main's nightly check FAILs on tonight's commit while a confirmed worse step is not accepted (issue 39):
    posted after the report job's check of the same name, so the commit's latest nightly check says so."""
    from gate.history.guard import confirmed_steps
    from gate.publish.publication import CHECK_PREFIX
    from gate.publish.tracking import step_acceptance, step_check

    nights = sorted(history.select(runner_class=runner_class), key=lambda r: r.time)
    if not nights or not nights[-1].commit:
        return
    confirmed = confirmed_steps(history, stored, runner_class=runner_class,
                                on_issue=step_acceptance(publisher, suite, lambda line: click.echo(f"gate: {line}")))
    if not confirmed:
        click.echo("main: no confirmed step waits for acceptance")
        return
    title, summary = step_check(confirmed, repository=settings.repository, server_url=settings.server_url)
    result = publisher.publish_check(nights[-1].commit, name=CHECK_PREFIX + " nightly", conclusion="failure",
                                     status_state="failure", title=title, summary=summary,
                                     details_url=settings.run_url)
    click.echo(f"main: nightly check {result.conclusion} on {nights[-1].commit[:10]}: {title}")


@command.command("guard")
@click.argument("trees", nargs=-1, required=True, type=click.Path(path_type=Path))
@_HISTORY
@runner_class_option("Runner class the trees ran on.", default="default")
@nights_option(14, 3, 1000, "Nights of main tonight is compared with.")
@json_path_option('Write {"block": true|false, "findings": [...]} here.')
@suite_option
def guard_(trees: tuple[Path, ...], history_dir: Path, runner_class: str, nights: int, json_path: Path | None,
           suite_path: Path | None) -> None:
    """May tonight's trees become the baseline? Not when a gated metric is worse than main's own recent
    level (beyond the floor and the nights' band), or a worse step on a gated metric is not yet accepted
    (accept with `gate history import --kind accepted TREE`). Prints each reason; --json for the workflow.

    \b
    Example:
      gate history guard results/nightly --history history --runner-class h100 --json guard.json

    \b
    Exit codes:
      0  judged (block or not: see the output)
      2  unreadable history or tree
    """
    from gate.formats import atomic
    from gate.history.guard import guard
    from gate.history.importer import records_from_tree

    suite = load_suite(suite_path)
    history = _read(history_dir, runner_class, suite)
    tonight = [r for tree in trees for r in records_from_tree(tree, suite, runner_class=runner_class)]
    findings = guard(history, tonight, suite, runner_class=runner_class, nights=nights)
    for finding in findings:
        click.echo(f"blocks the baseline move: {finding.text}")
    click.echo("the baseline may move to tonight" if not findings else
               f"{len(findings)} reason(s): the baseline stays until a maintainer accepts")
    if json_path is not None:
        atomic.write_text(json_path, json.dumps({"block": bool(findings), "findings": [f.to_json() for f in findings]},
                                                indent=1) + "\n", what="guard result")


@command.command("noise")
@_HISTORY
@_CLASS
@json_flag_option("Print as JSON.")
@click.option("--write-calibration", "baseline_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Pool the last nights' run-to-run spread into this baseline file's speed σ (its A/A pairs' "
                   "part is kept; see `gate baseline nights`).")
@suite_option
def noise_(history_dir: Path, runner_class: str | None, as_json: bool, baseline_path: Path | None,
           suite_path: Path | None) -> None:
    """Run-to-run and night-to-night σ per workload × metric, over the nights since the last change point.

    With --write-calibration, the newest 14 complete nightly records per workload (each night counted
    once, by content) are pooled into the baseline's within-job σ beside its A/A pairs.

    \b
    Example:
      gate history noise --history history

    \b
    Exit codes:
      0  printed (or written with --write-calibration)
      2  unreadable history or baseline, or no complete nightly runs for the baseline's workloads
    """
    from gate.history.analysis import noise, trends
    from gate.history.views import noise_table

    suite = load_suite(suite_path)
    history = _read(history_dir, runner_class, suite)
    found = [noise(t) for t in trends(history, suite, runner_class=runner_class)]
    if baseline_path is not None:
        from gate.history.noise import describe_sigmas, write_calibration

        _, written = write_calibration(baseline_path, history.records, suite, history=str(history_dir))
        for line in describe_sigmas(written):
            click.echo(line, err=True)
        click.echo(f"calibration of {len(written)} workloads written to {baseline_path} from the history", err=True)
    if as_json:
        click.echo(json.dumps([n.__dict__ for n in found], indent=1))
    else:
        click.echo(noise_table(found))


@command.command("plot")
@click.argument("out", type=click.Path(file_okay=False, path_type=Path))
@_HISTORY
@_CLASS
@nights_option(90, 2, 10_000)
@click.option("--candidate", "candidate", type=click.Path(path_type=Path), default=None,
              help="A PR's result tree: its runs are drawn at the right edge of each chart.")
@suite_option
def plot_(out: Path, history_dir: Path, runner_class: str | None, nights: int, candidate: Path | None,
          suite_path: Path | None) -> None:
    """SVG charts per workload × metric: nightly runs, level and noise band, the gate's floor, change points.

    \b
    Example:
      gate history plot --history history charts/

    \b
    Exit codes:
      0  charts written
      2  unreadable history or candidate, or charts that cannot be written
    """
    from gate.history.analysis import trends
    from gate.history.plot import candidate_values, write_charts

    suite = load_suite(suite_path)
    found = trends(_read(history_dir, runner_class, suite), suite, runner_class=runner_class, lookback=nights)
    cand = candidate_values(candidate, suite) if candidate else None
    written = write_charts(found, out, suite=suite, nights=nights, candidate=cand)
    click.echo(f"{len(written)} charts written to {out}")


@command.command("publish")
@click.argument("out", type=click.Path(file_okay=False, path_type=Path))
@_HISTORY
@_CLASS
@nights_option(90, 2, 10_000)
@click.option("--repository", default=None, help="owner/name for commit links (default: GITHUB_REPOSITORY).")
@suite_option
def publish_(out: Path, history_dir: Path, runner_class: str | None, nights: int, repository: str | None,
             suite_path: Path | None) -> None:
    """A self-contained static site: an overview (status, trend, change points, σ per workload) and one page
    per model (charts with night, commit and value on hover; change points; latest verdicts).

    \b
    Example:
      gate history publish --history history site/

    \b
    Exit codes:
      0  site written
      2  unreadable history, or pages that cannot be written
    """
    from gate.history.analysis import trends
    from gate.history.publish import publish_site
    from gate.publish.settings import Settings

    settings = Settings.from_environ(os.environ)
    suite = load_suite(suite_path)
    found = trends(_read(history_dir, runner_class, suite), suite, runner_class=runner_class, lookback=nights)
    pages = publish_site(found, out, suite=suite, nights=nights, repository=repository or settings.repository,
                         server_url=settings.server_url)
    click.echo(f"{len(pages)} pages written to {out} (open {out / 'index.html'})")


@command.command("example-nights")
@click.argument("out", type=click.Path(file_okay=False, path_type=Path))
@nights_option(30, 2, 365)
@suite_option
def example_nights(out: Path, nights: int, suite_path: Path | None) -> None:
    """Write OUT/night-01 … (synthetic nightly result trees of main, qwen3 and whisper, one planted step).

    \b
    Example:
      gate history example-nights example-out/nights

    \b
    Exit codes:
      0  written
      2  OUT exists, is not empty and was not written by this command, or cannot be written
    """
    from gate.examples import SYNTHETIC_NOTICE
    from gate.examples.folder import write_replaceable  # rerunnable: replaces a folder an example command wrote
    from gate.examples.nights import STEP_NIGHT, STEP_WORKLOAD, write_example_nights

    suite = load_suite(suite_path)
    trees = [out / tree.name for tree in write_replaceable(
        out, lambda staging: write_example_nights(staging, suite, nights=nights), command="gate history example-nights",
        texts=("README.txt",))]
    click.echo(SYNTHETIC_NOTICE)
    click.echo(f"{len(trees)} nights in {out}; {STEP_WORKLOAD} is 5% slower from night {STEP_NIGHT + 1} on")
    click.echo(f"next: gate history import --history {out}/history {out}/night-* && gate history --history {out}/history")
