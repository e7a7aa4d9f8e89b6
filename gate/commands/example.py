"""`gate example OUT`: write a synthetic baseline/candidate pair of result trees, and a calibrated baseline file.

Rerunnable: OUT is built in a temporary sibling folder and renamed into place, so an interrupted run
leaves nothing half-written, and a folder this command wrote before (it carries MARKER) is replaced.
A folder it did not write is refused, never overwritten.
"""
from __future__ import annotations

from pathlib import Path

import click

from gate.commands._options import suite_option
from gate.examples.folder import write_replaceable


@click.command("example")
@click.argument("out", type=click.Path(path_type=Path))
@suite_option
def command(out: Path, suite_path: Path | None) -> None:
    """Write OUT/baseline, OUT/candidate (synthetic result trees) and OUT/baseline.json.

    The candidate has one planted regression (qwen3/asr_en: 6% slower, one extra word error in 40
    utterances; the report counts 47 worse and 2 better, the rest being run-to-run churn); everything else differs by run-to-run noise only.
    OUT/baseline.json is OUT/baseline as a baseline file, its speed noise floor calibrated from synthetic same-commit A/A pairs, so
    `gate compare OUT/baseline.json OUT/candidate` tests speed rows against calibrated noise.
    Same output on every call (except the files' creation times). Takes some 11 s of CPU.

    OUT may be new, empty, or a folder `gate example` wrote before (it is replaced); any other
    existing path is refused. An interrupted run leaves OUT as it was.

    \b
    Exit codes:
      0    written
      2    OUT exists and was not written by gate example, or cannot be written

    \b
    Example:
      gate example example-out && gate compare example-out/baseline.json example-out/candidate
    """
    # Imported here: numpy and the suite reader load only once the arguments are known to be good.
    from gate.examples import AA_PAIRS, SYNTHETIC_NOTICE, write_example_baseline, write_example_pair
    from gate.formats.config import load_suite

    suite = load_suite(suite_path)

    def write(staging: Path) -> tuple[Path, Path]:
        pair = write_example_pair(staging, suite, shown_as=out)
        write_example_baseline(staging, suite, shown_as=out)
        return pair

    baseline, candidate = write_replaceable(out, write, command="gate example")
    click.echo(SYNTHETIC_NOTICE)
    click.echo(f"baseline:  {out / baseline.name}")
    click.echo(f"candidate: {out / candidate.name}")
    click.echo(f"baseline file: {out / 'baseline.json'} (calibrated from {AA_PAIRS} synthetic A/A pairs)")
    click.echo(f"next: gate compare {out / baseline.name} {out / candidate.name} --calibration {out / 'baseline.json'}"
               "   (A/B in one job, as a PR is judged)")
    click.echo(f"  or: gate compare {out / 'baseline.json'} {out / candidate.name}"
               "   (against the stored baseline file, across jobs)")
