"""`gate example OUT`: write a synthetic baseline/candidate pair of result trees, and a calibrated baseline file."""
from __future__ import annotations

from pathlib import Path

import click

from gate.atomic import remove_on_failure
from gate.config import load_suite
from gate.errors import InputError
from gate.examples import AA_PAIRS, SYNTHETIC_NOTICE, write_example_baseline, write_example_pair


@click.command("example")
@click.argument("out", type=click.Path(path_type=Path))
@click.option("--suite", "suite_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Suite YAML (default: the packaged gate/suites/asr.yaml).")
def command(out: Path, suite_path: Path | None) -> None:
    """Write OUT/baseline, OUT/candidate (synthetic result trees) and OUT/baseline.json.

    The candidate has one planted regression (qwen3/asr_en: 6% slower, 40 utterances with an extra
    word error); everything else differs by run-to-run noise only. OUT/baseline.json is OUT/baseline
    as a baseline file, its speed noise floor calibrated from synthetic same-commit A/A pairs, so
    `gate compare OUT/baseline.json OUT/candidate` tests speed rows against calibrated noise.
    Same output on every call (except the files' creation times). About 8 s on two cores.
    Exit 0 on success, 2 when OUT cannot be written.
    """
    suite = load_suite(suite_path)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise InputError("already exists and is not an empty directory; expected a new or empty directory", path=out)
    with remove_on_failure(out):  # no half-written example is left behind (a full disk, Ctrl-C, a bug)
        try:
            baseline, candidate = write_example_pair(out, suite)
            baseline_file = write_example_baseline(out, suite)
        except OSError as exc:
            raise InputError(f"cannot write ({exc.strerror})", path=exc.filename or out) from None
    click.echo(SYNTHETIC_NOTICE)
    click.echo(f"baseline:  {baseline}")
    click.echo(f"candidate: {candidate}")
    click.echo(f"baseline file: {baseline_file} (calibrated from {AA_PAIRS} synthetic A/A pairs)")
    click.echo(f"next: gate compare {baseline_file} {candidate}")
