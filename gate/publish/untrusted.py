"""Read what crossed a trust boundary (artifacts uploaded by a PR's benchmark job) as data only.

The trusted report job reads raw RESULT TREES, never a verdict: it checks the files (`check_tree_files`:
regular files and directories only, no symlinks, size, count and depth caps) and that the runs match
what the plan asks for (`check_plan`: gate-run.json, read by its one owner gate.formats.runlog, and the run
directories); the one judge
(gate.judging.judge) then reads and judges them.

`check_consistency` then holds the trees to GitHub's own records: the candidate measured the PR head,
the base its merge base, no run is a copy of a run of the other side, and every re-measure under
outliers/ is one the outlier rule asks for.

Reports (`load_untrusted_report`) are still read here for the fan-in and the nightly, which read
reports written by their own workflow: through the one strict reader (gate.formats.inputs: a regular file,
never a link, size-capped, strict JSON), then the strict typed reader (gate.formats.typedjson), which refuses
whatever gate/schemas/report.schema.json refuses. Markdown is never taken from an artifact.
"""
from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Callable, TypeVar

from gate.formats import inputs, runlog, typedjson
from gate.formats.commit_record import FILE as COMMIT_FILE
from gate.formats.commit_record import read_commit
from gate.formats.config import Suite
from gate.formats.errors import GateError, InputError
from gate.formats.report import Report
from gate.formats.typedjson import SchemaMismatch

T = TypeVar("T")

MAX_REPORT_BYTES = inputs.REPORT.max_bytes

# Caps on an uploaded result tree (ten workloads x four runs with raw per-sample JSONL is ~100 MB).
MAX_TREE_BYTES = 2 * 1024**3
MAX_TREE_FILES = 20_000
MAX_TREE_DEPTH = 8

META_SCHEMA_VERSION = 1


@dataclass(frozen=True)
class RunMeta:
    """The small record the benchmark job writes beside its trees (meta.json, by `gate event --write-meta`
    from this type): which PR and labels it ran for. Every field is re-checked against GitHub by `gate post`
    before it is acted on."""

    schema_version: int
    pr: int | None = field(metadata={"min": 1})
    sha: str = field(metadata={"pattern": "[0-9a-f]{40}"})
    labels: tuple[str, ...] = field(metadata={"max_items": 20, "items": {"pattern": "[A-Za-z0-9._/-]{1,50}"}})
    models: tuple[str, ...] = field(metadata={"max_items": 20, "items": {"pattern": "[A-Za-z0-9_]{1,40}"}})


class UntrustedInputError(InputError):
    """An uploaded file is not what the gate accepts; nothing from it was used."""


def load_untrusted_report(path: str | Path) -> Report:
    """The report at `path`, validated; any deviation is one UntrustedInputError line naming the file."""
    data = _load_json(Path(path), inputs.REPORT)
    return _decode(Report.from_json, data, Path(path), what="report")


def load_untrusted_meta(path: str | Path) -> RunMeta:
    data = _load_json(Path(path), inputs.META)
    meta = _decode(partial(typedjson.from_json, RunMeta), data, Path(path), what="run metadata")
    if meta.schema_version != META_SCHEMA_VERSION:
        raise UntrustedInputError(f"run metadata does not match the schema at $.schema_version: expected "
                                  f"{META_SCHEMA_VERSION}", path=path)
    return meta


def check_tree_files(root: str | Path) -> None:
    """Regular files and directories only (no symlinks, devices, FIFOs), within the size/count/depth caps."""
    root = Path(root)
    try:
        info = os.lstat(root)
    except OSError as exc:
        raise UntrustedInputError(f"cannot read the result tree ({exc.strerror})", path=root) from None
    if not stat.S_ISDIR(info.st_mode):
        raise UntrustedInputError("expected the result tree as a directory (symbolic links are not followed)", path=root)
    files = total = 0
    stack = [(root, 0)]
    while stack:
        directory, depth = stack.pop()
        if depth > MAX_TREE_DEPTH:
            raise UntrustedInputError(f"result tree is nested deeper than {MAX_TREE_DEPTH} levels", path=directory)
        try:
            entries = list(os.scandir(directory))
        except OSError as exc:
            raise UntrustedInputError(f"cannot list the result tree ({exc.strerror})", path=directory) from None
        for entry in entries:
            mode = entry.stat(follow_symlinks=False).st_mode
            if stat.S_ISDIR(mode):
                stack.append((Path(entry.path), depth + 1))
            elif stat.S_ISREG(mode):
                files += 1
                total += entry.stat(follow_symlinks=False).st_size
            else:
                kind = "a symbolic link" if stat.S_ISLNK(mode) else "not a regular file"
                raise UntrustedInputError(f"result tree entry is {kind}; only regular files are read", path=entry.path)
            if files > MAX_TREE_FILES:
                raise UntrustedInputError(f"result tree holds more than {MAX_TREE_FILES} files", path=root)
            if total > MAX_TREE_BYTES:
                raise UntrustedInputError(f"result tree is larger than {MAX_TREE_BYTES} bytes", path=root)


def expected_run_dirs(suite: Suite, scored: tuple[str, ...] | None = None) -> tuple[str, ...]:
    """The run directories the plan asks for on one side: the warm run and every scored run (the
    suite's, or those the two-look plan asks for, as recomputed by gate.judging.judge.first_look)."""
    return (f"run{suite.warm_run}", *(scored or tuple(f"run{r}" for r in suite.scored_runs)))


def check_plan(side_dir: str | Path, suite: Suite, model: str, scored: tuple[str, ...] | None = None) -> None:
    """The runs of the tree that hold `model` are exactly the ones its plan asks for, each recorded as
    completed in gate-run.json. Runs holding only other models (one of them extended, in a multi-model
    A/B) are theirs to answer for: each model's plan is checked by its own post.

    A model with extra runs (best-of-N cherry-picking) or fewer runs is refused, whatever the files say.
    """
    side_dir = Path(side_dir)
    log_path = side_dir / runlog.FILE
    try:
        log = runlog.read(side_dir)
    except InputError as exc:
        raise UntrustedInputError(str(exc)) from None
    if log is None:
        raise UntrustedInputError("missing; expected the run log `gate run` writes beside the runs", path=log_path)
    side = side_dir.name
    recorded = {label.split("/", 1)[1]: status for label, status in log.runs.items()
                if label.split("/", 1)[0] == side and "/" in label}
    planned = expected_run_dirs(suite, scored)
    missing = sorted(set(planned) - set(recorded))
    if missing:
        raise UntrustedInputError(f"run log lists runs {_names(sorted(recorded))} for side {side!r}; the plan of "
                                  f"{model} asks for {_names(planned)}", path=log_path)
    unfinished = sorted(name for name in planned if recorded[name] != "completed")
    if unfinished:
        raise UntrustedInputError(f"run log says {_names(unfinished)} did not complete", path=log_path)
    holding = sorted(p.name for p in side_dir.iterdir()
                     if p.is_dir() and p.name.startswith("run") and (p / model).is_dir())
    if holding != sorted(planned):
        raise UntrustedInputError(f"tree holds {model} in run directories {_names(holding)}; its plan asks for "
                                  f"{_names(planned)}", path=side_dir)
    unlogged = sorted(set(holding) - set(recorded))
    if unlogged:
        raise UntrustedInputError(f"run directories {_names(unlogged)} are not in the run log", path=side_dir)


def check_consistency(trees: Path, suite: Suite, model: str, *, head_sha: str, base_sha: str | None, ab: bool,
                      calibration: Path | None = None) -> None:
    """Hold uploaded trees to what GitHub says was measured; the first mismatch is one UntrustedInputError line.

    - every candidate run holding `model` names the PR head in commit.txt; in A/B mode every base run names
      the merge base (`base_sha`, from the compare API);
    - no scored run of one side is a copy of a run of the other (content hash of the measured values and
      per-utterance errors, as the A/A calibration counts pairs);
    - outliers/run<R>/<model>/ only where the outlier rule, recomputed, picks run<R> of that arm.
    """
    from gate.reading.copies import copies, side_hashes
    from gate.reading.side_loader import load_side

    sides = [("candidate", head_sha)] + ([("base", base_sha)] if ab else [])
    for name, expected in sides:
        if expected is None:
            continue
        for run_dir in _model_runs(trees / name, model):
            commit = _commit_of(run_dir)
            if commit != expected:
                raise UntrustedInputError(f"{name}/{run_dir.name}/{COMMIT_FILE} names {commit or 'nothing'!r}; the "
                                          f"{'PR head' if name == 'candidate' else 'merge base'} is {expected}")
    if not ab:
        return
    # Runs that hold only other models' results measured nothing: gate.reading.copies never compares them.
    labelled = [(name, side_hashes(load_side(trees / name, suite, (model,)))) for name in ("base", "candidate")]
    for copy, original, _digest in copies(labelled):
        raise UntrustedInputError(f"{copy.replace(' ', '/')} measures exactly what {original.replace(' ', '/')} "
                                  "measures (same content hash): a copied run is not a measurement")
    for name in ("base", "candidate"):
        _check_remeasures(trees / name, name, suite, model, calibration)


def _check_remeasures(tree: Path, side: str, suite: Suite, model: str, calibration: Path | None) -> None:
    """Each outliers/run<R>/<model>/ holds the original run the outlier rule set aside: at most one per arm,
    non-empty, and picked by find_outlier on the arm with the original put back (at the moment it was made), or
    the arm's deepest slow-mode start at a look's end (slow_starts_to_remeasure over both arms, 3+3 or 6+6 runs)."""
    from gate.judging.freshness import calibration_for_plan
    from gate.judging.outliers import calibration_sigma, find_outlier, speed_directions, speed_values
    from gate.reading.results import runs_with_model
    from gate.reading.side_loader import load_side

    folder = tree / "outliers"
    if not folder.is_dir():
        return
    originals = sorted(p.name for p in folder.iterdir() if p.is_dir() and (p / model).is_dir())
    if not originals:
        return
    if len(originals) > 1:
        raise UntrustedInputError(f"{side}/outliers holds {len(originals)} re-measures of {model}; the runner makes "
                                  "at most one per arm")
    run = originals[0]
    if not any(p.is_file() for p in (folder / run / model).rglob("*")):
        raise UntrustedInputError(f"{side}/outliers/{run}/{model} is empty: no original run was set aside")
    scored = runs_with_model(tree, suite, model)
    if run not in scored:
        raise UntrustedInputError(f"{side}/outliers/{run}/{model}: {run} is not a scored run of {model}")
    try:
        aa = calibration_for_plan(calibration, tree.parent / "base", suite)
        sigma = calibration_sigma(None if aa is None else load_side(aa, suite, (model,)).calibration or {})
        values = {r: speed_values((folder if r == run else tree) / r, suite, model) for r in scored}
    except GateError as exc:
        raise UntrustedInputError(f"{side}/outliers/{run}/{model} cannot be read ({exc})") from None
    for end in range(scored.index(run) + 1, len(scored) + 1):  # the arm after each scored run, as the runner saw it
        arm = {r: values[r] for r in scored[:end]}
        outlier = find_outlier(arm, sigma, speed_directions(suite, model))
        if outlier is not None:
            if outlier.run == run:
                return
            break  # the rule picked another run first: this one was not the re-measure
    if _slow_start_remeasure(tree, side, suite, model, run, values):
        return
    raise UntrustedInputError(f"{side}/outliers/{run}/{model}: the outlier rule does not set {run} aside; a "
                              "re-measure nobody asked for is refused")


def _slow_start_remeasure(tree: Path, side: str, suite: Suite, model: str, run: str,
                          values: dict[str, dict[tuple[str, str], float]]) -> bool:
    """Whether `run` (its original in `values`) was the arm's deepest slow-mode start at a look's end, 3+3 or 6+6
    runs (gate.runner.twolooks: both arms alike), the other arm's runs as uploaded or with its own re-measure's
    original put back (it may have come after)."""
    from gate.judging.outliers import slow_starts_to_remeasure, speed_values
    from gate.reading.results import runs_with_model

    other = "candidate" if side == "base" else "base"
    other_tree = tree.parent / other
    try:
        other_runs = runs_with_model(other_tree, suite, model)
        now = {r: speed_values(other_tree / r, suite, model) for r in other_runs}
        folder = other_tree / "outliers"
        kept = [p.name for p in folder.iterdir() if p.is_dir() and (p / model).is_dir()] if folder.is_dir() else []
        before = {**now, **{r: speed_values(folder / r, suite, model) for r in kept if r in now}}
    except (GateError, OSError):
        return False
    order = lambda made: sorted(made, key=lambda r: int(r[3:]))  # noqa: E731
    for end in (3, 6):
        mine, theirs = order(values)[:end], order(now)[:end]
        if run not in mine or len(mine) != end or len(theirs) != end:
            continue
        for seen in (now, before):
            arms = {side: {r: values[r] for r in mine}, other: {r: seen[r] for r in theirs}}
            found = slow_starts_to_remeasure(arms, suite, model).get(side)
            if found is not None and found.run == run:
                return True
    return False


def _model_runs(side_dir: Path, model: str) -> list[Path]:
    if not side_dir.is_dir():
        return []
    return sorted(p for p in side_dir.iterdir() if p.is_dir() and p.name.startswith("run") and (p / model).is_dir())


def _commit_of(run_dir: Path) -> str | None:
    """The run's commit (gate.formats.commit_record); None when it has no commit.txt. One it refuses is an
    UntrustedInputError naming the file: nothing from the tree is used."""
    try:
        return read_commit(run_dir)
    except inputs.Unreadable as exc:
        raise UntrustedInputError(exc.reason, path=exc.path) from None


def _names(names) -> str:
    shown = ", ".join(str(n)[:40] for n in list(names)[:12])
    return f"[{shown}{', ...' if len(list(names)) > 12 else ''}]"


def _load_json(path: Path, kind: inputs.Kind) -> Any:
    """The one strict reader (gate.formats.inputs), never following a link; its refusal as an UntrustedInputError."""
    try:
        return inputs.load_json(path, kind, follow_links=False)
    except inputs.Unreadable as exc:
        raise UntrustedInputError(exc.reason, path=path) from None


def _decode(read: Callable[[Any], T], data: Any, path: Path, *, what: str) -> T:
    """`read(data)` (a strict typed decoder), its SchemaMismatch as one UntrustedInputError line."""
    try:
        return read(data)
    except SchemaMismatch as exc:
        # Both parts can echo keys and values from the file: one line, bounded length.
        where = " ".join(exc.where.split())[:160]
        message = " ".join(exc.expected.split())
        if len(message) > 200:
            message = message[:200] + "..."
        raise UntrustedInputError(f"{what} does not match the schema at {where}: {message}", path=path) from None
