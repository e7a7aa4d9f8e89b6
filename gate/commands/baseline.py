"""`gate baseline create|calibrate`: the baseline store (one reviewed JSON file per runner class and model set)."""
from __future__ import annotations

from pathlib import Path

import click

from gate.commands._options import history_dir_option, models_option, runner_class_option, suite_option
from gate.formats import inputs
from gate.formats.config import load_suite
from gate.formats.errors import InputError


@click.group("baseline")
def command() -> None:
    """Create baselines from result trees and calibrate their noise floor from A/A pairs and nights.

    \b
    Example:
      gate baseline create results/main --out baselines/h200-qwen3.json --models qwen3
      gate baseline calibrate aa/a1 aa/b1 aa/a2 aa/b2 --baseline baselines/h200-qwen3.json
      gate baseline nights baselines/h200-qwen3.json --history history --tonight results/nightly
    """


@command.command("create")
@click.argument("tree", type=click.Path(path_type=Path))
@click.option("--out", "out", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The baseline JSON file to write (baselines/<runner>-<models>.json by convention).")
@models_option()
@click.option("--keep-calibration", "keep_from", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Carry the A/A calibration over from this earlier baseline file (the one the new file "
                   "replaces); skipped, with a note, when nothing exists at that path; anything else that is "
                   "not a readable baseline file is an error.")
@click.option("--force", is_flag=True, default=False,
              help="Replace OUT even when it is a calibrated baseline and --keep-calibration is not given "
                   "(its A/A calibration is dropped).")
@suite_option
def create(tree: Path, out: Path, models: tuple[str, ...], keep_from: Path | None, force: bool,
           suite_path: Path | None) -> None:
    """Store result tree TREE as a baseline file: per-run metrics, per-utterance errors, fingerprint.

    \b
    Exit codes:
      0    written (a warning is printed when a workload is incomplete)
      2    unreadable input (also a --keep-calibration path that is not a readable baseline), OUT
           cannot be written, or OUT is a calibrated baseline that would lose its calibration
           (give --keep-calibration OUT to carry it over, or --force to drop it)

    \b
    Example:
      gate baseline create results/main --out baselines/h200-qwen3.json --models qwen3 \\
        --keep-calibration baselines/h200-qwen3.json
    """
    if not tree.exists():  # answered before scipy loads (the usage-error budget)
        raise InputError("no such directory; expected a result tree <tree>/run<R>/...", path=tree)
    from gate.judging.calibration import carry_calibration
    from gate.reading.baseline_file import write_baseline
    from gate.reading.client_settings import refuse_mixed_client_settings
    from gate.reading.results import read_tree
    from gate.reading.tree_side import side_from_tree

    suite = load_suite(suite_path)
    chosen = models or None
    if keep_from is None and not force:
        _refuse_dropping_calibration(out)
    read = read_tree(tree, suite, models=chosen)
    refuse_mixed_client_settings(read)  # a baseline of "32 | 8" would make every later comparison NOT COMPARABLE
    side = side_from_tree(read, suite)
    source = None
    if keep_from is not None and inputs.is_present(keep_from):
        # Anything there is read as a baseline (a FIFO, a device or a link to one is refused, exit 2): a
        # calibration asked for is never dropped quietly. Only an absent file means "none yet".
        side, source = carry_calibration(side, keep_from, suite, models=chosen)
        click.echo(f"calibration carried over from {keep_from}")
    elif keep_from is not None:
        click.echo(f"no baseline at {keep_from} yet: no calibration to carry over")
    write_baseline(side, out, calibration_source=source)
    incomplete = [w for w, ws in side.workloads.items() if not ws.complete] + list(side.missing)
    paired = sum(len(ws.samples) for ws in side.workloads.values())
    click.echo(f"baseline {out}: {len(side.workloads)} workloads, {len(side.runs)} runs, "
               f"{paired} per-utterance measures, commit {side.commit or 'unknown'}")
    for workload_id in incomplete:
        click.echo(f"gate: warning: {workload_id} is incomplete in {tree}; comparisons against it will be incomplete",
                   err=True)


def _refuse_dropping_calibration(out: Path) -> None:
    """A baseline's A/A calibration takes GPU hours to measure: writing over a calibrated file without carrying it
    over is refused, not done quietly. A file at OUT that is no readable baseline is simply replaced."""
    if not inputs.is_present(out):
        return
    from gate.reading.baseline_file import load_document

    try:
        calibration = load_document(out).calibration
    except InputError:
        return  # not a baseline file we can read: nothing calibrated to lose
    if calibration:
        entries = sum(len(metrics) for metrics in calibration.values())
        raise InputError(f"a calibrated baseline (A/A calibration of {entries} workload metrics) that this would "
                         f"replace without its calibration: add --keep-calibration {out} to carry it over, or "
                         f"--force to drop it", path=out)


@command.command("calibrate")
@click.argument("trees", nargs=-1, type=click.Path(path_type=Path))
@click.option("--baseline", "baseline_path", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The baseline file to write the calibration into.")
@click.option("--cross-job", "cross", nargs=2, multiple=True, type=click.Path(path_type=Path),
              help="An A/A pair TREE_A TREE_B whose two arms ran in different jobs (repeatable). Only such "
                   "pairs measure the job-to-job spread a comparison across jobs (against a stored baseline) "
                   "is judged with.")
@suite_option
def calibrate_command(trees: tuple[Path, ...], baseline_path: Path, cross: tuple[tuple[Path, Path], ...],
              suite_path: Path | None) -> None:
    """Estimate run-to-run noise from A/A pairs TREE_A TREE_B [TREE_A2 TREE_B2 ...] (same commit twice, each
    pair measured in one job), plus --cross-job pairs. Use trees from trusted jobs only (nightly and
    calibration runs, never trees a PR job made): they set the noise every PR is judged against.

    Speed: σ per workload × metric, the pooled within-arm SD of ln(value) (4 degrees of freedom per pair
    of 3+3 runs), and from cross-job pairs the spread of their differences. Accuracy: whether same-commit
    transcripts are identical, and if not, how much utterances churn together (gate.stats.overdispersion).
    Duet A/A trees (`gate run --ab X X --design duet`, 3+ sessions) also store the duet's components (σ of a
    session's paired difference, a session's GPU seconds) that `gate run --dry-run --target-change` plans with.
    A tree given twice, or a run byte-identical to another, is refused: only independent pairs count.

    \b
    Exit codes:
      0    written
      2    unreadable input, an odd number of trees, a pair of two commits, or repeated runs

    \b
    Example:
      gate baseline calibrate aa/a1 aa/b1 aa/a2 aa/b2 --cross-job x/a1 x/b1 --baseline baselines/h200-qwen3.json
    """
    if len(trees) % 2:
        raise InputError(f"gate baseline calibrate: expected pairs of trees (TREE_A TREE_B ...), two runs of one "
                         f"commit each, got {len(trees)} trees: give an even number, or --cross-job TREE_A TREE_B")
    if not trees and not cross:
        raise InputError("expected at least one A/A pair (TREE_A TREE_B, or --cross-job TREE_A TREE_B)")
    for tree in (*trees, *(t for pair in cross for t in pair)):
        if not tree.exists():  # answered before scipy loads (the usage-error budget)
            raise InputError("no such directory; expected a result tree <tree>/run<R>/...", path=tree)
    from gate.judging.calibration import calibrate_baseline
    from gate.reading.tree_side import side_from_tree

    suite = load_suite(suite_path)
    within = list(zip(trees[0::2], trees[1::2], strict=True))
    chosen = within + list(cross)
    pairs = [(side_from_tree(a, suite), side_from_tree(b, suite)) for a, b in chosen]
    flags = [False] * len(within) + [True] * len(cross)
    written = calibrate_baseline(baseline_path, pairs, suite, cross_job=flags,
                                 say=lambda line: click.echo(f"gate: note: {line}", err=True))
    for workload_id, metrics in written.items():
        click.echo(f"{workload_id}: " + ", ".join(_describe(m, c) for m, c in metrics.items()))
    from gate.formats.noise_model import SIGMA_FLOOR

    for workload_id, metrics in written.items():
        for metric, entry in metrics.items():
            if "sigma" in entry and entry["sigma"] <= SIGMA_FLOOR:
                click.echo(f"gate: note: {workload_id} {metric} did not vary across the A/A runs (σ 0 as measured, "
                           f"e.g. a value the client rounds): stored as the floor σ {SIGMA_FLOOR:g}", err=True)
    from gate.reading.baseline_file import stored_duet_components

    for model, duet in stored_duet_components(baseline_path).items():
        click.echo(f"{model}: duet components from {duet.sessions} sessions ({duet.workload} {duet.metric}): σ of a "
                   f"session's difference {duet.session_sd:.2%}, a session {duet.session_cost_s:.1f} s of GPU time")
    click.echo(f"calibration from {len(pairs)} independent A/A pair(s) ({len(within)} within one job, {len(cross)} "
               f"across jobs) written to {baseline_path}")


@command.command("nights")
@click.argument("baseline_path", metavar="BASELINE", type=click.Path(dir_okay=False, path_type=Path))
@history_dir_option("History directory (<runner-class>/<YYYY-MM>.jsonl); missing: tonight's tree only.")
@runner_class_option("Only this runner class of the history (default: all).")
@click.option("--tonight", "tonight", multiple=True, type=click.Path(path_type=Path),
              help="Tonight's nightly result tree (repeatable): counted as the newest night.")
@suite_option
def nights(baseline_path: Path, history_dir: Path | None, runner_class: str | None, tonight: tuple[Path, ...],
           suite_path: Path | None) -> None:
    """Pool the nightly job's own run-to-run spread into BASELINE's speed σ, beside its A/A pairs.

    Each night's scored runs of one commit are one more arm: the within-night sum of squares of ln(value)
    and its degrees of freedom (2 for 3 runs; the outlier rule of `calibrate` applies) are added to the A/A
    pairs'. The cross-job part and the accuracy calibration are untouched. Counted: the newest 14 complete
    nights per workload, from the history's records of kind nightly and the --tonight trees; each night
    once (a run already seen, by content hash, is a repeat); never calibration arms (already A/A pairs)
    or accepted PR trees. The nights' part is recomputed each time, never added to: with nothing to pool
    it is emptied and the pairs' part remains. Use trusted trees only (the nightly job on main).

    \b
    Exit codes:
      0    written (also when there was nothing to pool; it says so)
      2    unreadable baseline, history or tree

    \b
    Example:
      gate baseline nights new/qwen3.json --history store/history --runner-class h100 --tonight results/nightly
    """
    from gate.history.importer import records_from_tree
    from gate.history.noise import describe_sigmas, write_calibration
    from gate.history.records import Record
    from gate.history.store import HistoryStore

    suite = load_suite(suite_path)
    records: list[Record] = []
    if history_dir is not None and history_dir.is_dir():
        records += HistoryStore(history_dir).read(runner_class=runner_class).records
    elif history_dir is not None:
        click.echo(f"no history at {history_dir} yet: tonight's runs only")
    for tree in tonight:
        records += records_from_tree(tree, suite, runner_class=runner_class or "default", kind="nightly")
    found, written = write_calibration(baseline_path, records, suite, require=False,
                                       history=str(history_dir) if history_dir is not None else None,
                                       tonight=[str(t) for t in tonight])
    for line in describe_sigmas(written):
        click.echo(line)
    pooled = sum(found.used.values())
    skipped = f"; {found.repeated} repeated night(s) skipped" if found.repeated else ""
    click.echo(f"{pooled} workload-nights pooled into {baseline_path}{skipped}" if pooled else
               f"no complete nightly runs to pool: {baseline_path} keeps the A/A pairs' σ only")


def _describe(metric: str, entry: dict) -> str:
    if "sigma" in entry:
        nights = f", {entry['night_df']} of them from {entry['nights']} nights" if entry.get("night_df") else ""
        return f"{metric} σ={entry['sigma']:.2%} (df {entry['df']}{nights})"
    if entry["identical"]:
        return f"{metric}: identical transcripts"
    return f"{metric}: churn φ={entry['phi']:.2f} (df {entry['df']})"
