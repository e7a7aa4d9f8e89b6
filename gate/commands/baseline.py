"""`gate baseline create|calibrate`: the baseline store (one reviewed JSON file per runner class and model set)."""
from __future__ import annotations

from pathlib import Path

import click

from gate.baseline import calibrate_baseline, carry_calibration, side_from_tree, write_baseline
from gate.config import load_suite
from gate.errors import InputError

_SUITE = click.option("--suite", "suite_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
                      help="Suite YAML (default: the packaged gate/suites/asr.yaml).")


@click.group("baseline")
def command() -> None:
    """Create baselines from result trees and calibrate their noise floor from A/A pairs.

    \b
    Example:
      gate baseline create results/main --out baselines/h200-qwen3.json --models qwen3
      gate baseline calibrate aa/a1 aa/b1 aa/a2 aa/b2 --baseline baselines/h200-qwen3.json
    """


@command.command("create")
@click.argument("tree", type=click.Path(path_type=Path))
@click.option("--out", "out", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The baseline JSON file to write (baselines/<runner>-<models>.json by convention).")
@click.option("--models", "models", multiple=True, help="Only these suite models (repeat or comma-separate).")
@click.option("--keep-calibration", "keep_from", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Carry the A/A calibration over from this earlier baseline file (the one the new file "
                   "replaces); ignored when the file does not exist.")
@_SUITE
def create(tree: Path, out: Path, models: tuple[str, ...], keep_from: Path | None, suite_path: Path | None) -> None:
    """Store result tree TREE as a baseline file: per-run metrics, per-utterance errors, fingerprint.

    \b
    Exit codes:
      0    written (a warning is printed when a workload is incomplete)
      2    unreadable input, or OUT cannot be written

    \b
    Example:
      gate baseline create results/main --out baselines/h200-qwen3.json --models qwen3 \\
        --keep-calibration baselines/h200-qwen3.json
    """
    suite = load_suite(suite_path)
    chosen = tuple(m for item in models for m in item.split(",") if m) or None
    side = side_from_tree(tree, suite, models=chosen)
    source = None
    if keep_from is not None and keep_from.is_file():
        side, source = carry_calibration(side, keep_from, suite, models=chosen)
        click.echo(f"calibration carried over from {keep_from}")
    write_baseline(side, out, calibration_source=source)
    incomplete = [w for w, ws in side.workloads.items() if not ws.complete] + list(side.missing)
    paired = sum(len(ws.samples) for ws in side.workloads.values())
    click.echo(f"baseline {out}: {len(side.workloads)} workloads, {len(side.runs)} runs, "
               f"{paired} per-utterance measures, commit {side.commit or 'unknown'}")
    for workload_id in incomplete:
        click.echo(f"gate: warning: {workload_id} is incomplete in {tree}; comparisons against it will be incomplete",
                   err=True)


@command.command("calibrate")
@click.argument("trees", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--baseline", "baseline_path", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The baseline file to write the calibration into.")
@_SUITE
def calibrate(trees: tuple[Path, ...], baseline_path: Path, suite_path: Path | None) -> None:
    """Estimate run-to-run noise from A/A pairs TREE_A TREE_B [TREE_A2 TREE_B2 ...] (same commit twice).

    Sigma per workload × speed metric is the pooled within-arm SD of ln(value), with its degrees of
    freedom (4 per pair of 3+3 runs); fewer than 4 are stored but not used by `gate compare`.

    \b
    Exit codes:
      0    written
      2    unreadable input, an odd number of trees, or a pair of two commits

    \b
    Example:
      gate baseline calibrate aa/a1 aa/b1 aa/a2 aa/b2 --baseline baselines/h200-qwen3.json
    """
    if len(trees) % 2:
        raise InputError(f"expected pairs of trees (TREE_A TREE_B ...), got {len(trees)} trees")
    suite = load_suite(suite_path)
    sides = [side_from_tree(tree, suite, sample_reader=_no_samples) for tree in trees]
    pairs = list(zip(sides[0::2], sides[1::2]))
    written = calibrate_baseline(baseline_path, pairs, suite)
    for workload_id, metrics in written.items():
        shown = ", ".join(f"{m} σ={c['sigma']:.2%} (df {c['df']})" for m, c in metrics.items())
        click.echo(f"{workload_id}: {shown}")
    click.echo(f"calibration from {len(pairs)} A/A pair(s) written to {baseline_path}")


def _no_samples(run_dir, workload):  # calibration needs speed values only; skip the per-utterance recomputation
    return {}
