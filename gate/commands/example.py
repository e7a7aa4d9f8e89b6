"""`gate example OUT`: write a synthetic baseline/candidate pair of result trees, and a calibrated baseline file.

Rerunnable: OUT is built in a temporary sibling folder and renamed into place, so an interrupted run
leaves nothing half-written, and a folder this command wrote before (it carries MARKER) is replaced.
A folder it did not write is refused, never overwritten.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import click

from gate.config import load_suite
from gate.errors import InputError
from gate.examples import AA_PAIRS, SYNTHETIC_NOTICE, write_example_baseline, write_example_pair

MARKER = ".gate-example"  # written last into OUT; its presence means "gate example wrote this folder"


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
    suite = load_suite(suite_path)
    _check_replaceable(out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.gate-example-", dir=out.parent))
    except OSError as exc:
        raise InputError(f"cannot write ({exc.strerror})", path=exc.filename or out) from None
    try:
        baseline, candidate = write_example_pair(staging, suite, shown_as=out)
        write_example_baseline(staging, suite, shown_as=out)
        (staging / MARKER).write_text("written by `gate example`; `gate example` may replace this folder\n",
                                      encoding="utf-8")
        _move_into_place(staging, out)
    except OSError as exc:
        raise InputError(f"cannot write ({exc.strerror})", path=exc.filename or out) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)  # gone already when the rename succeeded
    click.echo(SYNTHETIC_NOTICE)
    click.echo(f"baseline:  {out / baseline.name}")
    click.echo(f"candidate: {out / candidate.name}")
    click.echo(f"baseline file: {out / 'baseline.json'} (calibrated from {AA_PAIRS} synthetic A/A pairs)")
    click.echo(f"next: gate compare {out / baseline.name} {out / candidate.name} --calibration {out / 'baseline.json'}"
               "   (A/B in one job, as a PR is judged)")
    click.echo(f"  or: gate compare {out / 'baseline.json'} {out / candidate.name}"
               "   (against the stored baseline file, across jobs)")


def _check_replaceable(out: Path) -> None:
    if out.name in ("", ".", ".."):
        raise InputError("expected a folder to create or replace, like example-out (it is built beside itself)",
                         path=out)
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise InputError("exists and is not a directory; expected a new directory or one `gate example` wrote",
                         path=out)
    if out.is_dir() and any(out.iterdir()) and not (out / MARKER).is_file():
        raise InputError(f"exists, is not empty and was not written by `gate example` (no {MARKER} file); "
                         "expected a new or empty directory, or one `gate example` wrote", path=out)


def _move_into_place(staging: Path, out: Path) -> None:
    """Rename the finished folder into place; an earlier example (or empty folder) is set aside, then removed."""
    if not out.exists():
        os.rename(staging, out)
        return
    retired = Path(tempfile.mkdtemp(prefix=f".{out.name}.gate-example-old-", dir=out.parent))
    os.rename(out, retired / out.name)
    try:
        os.rename(staging, out)
    except OSError:
        os.rename(retired / out.name, out)  # put the previous example back: OUT is never left missing
        raise
    finally:
        shutil.rmtree(retired, ignore_errors=True)
