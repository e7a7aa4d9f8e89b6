"""The baseline branch, written in Python: what a night may store there, and how it gets there.

The branch (default `asr-gate-baselines`) holds `<runner-class>/<model>.json` (one baseline per GPU class and
model) and `history/` (append-only JSONL lines, one per night and workload). Two writers share it (the
nightly and the calibration workflow), so every write is: fetch the tip, apply, commit, push; a rejected
push (another writer got there first) fetches the new tip and applies again, a few times.

What may be written is decided against the branch itself, never against a checkout a workflow step made
(a failed checkout must not look like a first night):
- a model's baseline replaces the stored one only with a report of the same night (its candidate is the
  measured commit) whose verdict is PASS (or with `always`, a maintainer's dispatch); a model with no
  stored baseline yet (the first night) needs no report;
- the new file keeps every calibration entry the stored one had, and no entry's degrees of freedom
  shrink (σ pooled from fewer runs is a silent loss of evidence);
- the drift guard (gate.history.guard, run by the command through `hold`) finds no reason against tonight
  in the branch's own history: no unaccepted worse step on a gated metric, no night off main's level;
- history files are merged line by line (a line already there stays, a new one is appended).

Git runs through an injected collaborator (`Git`), as py-cov-action's storage does, so the rules are
tested against a real local bare repository.
"""
from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Protocol, Sequence

from gate.formats.config import Suite
from gate.formats.errors import GateError

PUSH_ATTEMPTS = 4
BOT_NAME = "github-actions[bot]"
BOT_EMAIL = "41898282+github-actions[bot]@users.noreply.github.com"


class StoreError(GateError):
    """The store refuses a write, or git failed; nothing was pushed."""


class Git(Protocol):
    """The git commands the store needs, in one working directory."""

    def __call__(self, *args: str, check: bool = True) -> subprocess.CompletedProcess: ...


@dataclass
class SubprocessGit:
    """`git` in `cwd`; `config` adds `-c key=value` pairs (an auth header) without writing them to .git/config."""

    cwd: Path
    config: Sequence[str] = ()

    def __call__(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        command = ["git", *(part for pair in self.config for part in ("-c", pair)), *args]
        result = subprocess.run(command, cwd=self.cwd, capture_output=True, text=True, check=False)
        if check and result.returncode != 0:
            detail = " ".join((result.stderr or result.stdout).split())[:300]
            raise StoreError(f"git {args[0]} failed ({result.returncode}): {detail}")
        return result


@dataclass(frozen=True)
class Change:
    """One write to the branch: `apply(root)` edits the checked-out tree (raising StoreError to refuse)."""

    message: str
    apply: Callable[[Path], None]


def write(change: Change, *, remote: str, branch: str, make_git: Callable[[Path], Git],
          log: Callable[[str], None] = lambda _: None) -> str:
    """Apply `change` on the branch's tip and push; on a rejected push fetch again and re-apply.
    Returns "pushed" or "unchanged". The checks inside `apply` run again on every new tip."""
    with tempfile.TemporaryDirectory(prefix="gate-store-") as tmp:
        work = Path(tmp) / "store"
        work.mkdir()
        git = make_git(work)
        git("init", "--quiet")
        git("remote", "add", "origin", remote)
        for attempt in range(1, PUSH_ATTEMPTS + 1):
            _checkout_tip(git, work, branch)
            change.apply(work)
            git("add", "--all", ".")
            if git("diff", "--cached", "--quiet", check=False).returncode == 0:
                log("store: nothing changed")
                return "unchanged"
            git("-c", f"user.name={BOT_NAME}", "-c", f"user.email={BOT_EMAIL}", "commit", "--quiet", "-m",
                change.message)
            pushed = git("push", "--quiet", "origin", f"HEAD:refs/heads/{branch}", check=False)
            if pushed.returncode == 0:
                log(f"store: pushed to {branch} (attempt {attempt})")
                return "pushed"
            log(f"store: push rejected (attempt {attempt}); fetching the new tip and applying again")
        raise StoreError(f"the push to {branch} was rejected {PUSH_ATTEMPTS} times (another writer keeps moving it)")


def _checkout_tip(git: Git, work: Path, branch: str) -> None:
    """The branch's tip as the working tree (an empty orphan when the branch does not exist yet)."""
    found = git("ls-remote", "--exit-code", "--heads", "origin", branch, check=False)
    if found.returncode == 0:
        git("fetch", "--quiet", "--depth=1", "origin", branch)
        git("checkout", "--quiet", "--force", "-B", branch, "FETCH_HEAD")
        git("clean", "-fdxq")
    elif found.returncode == 2:  # no such branch: the first write creates it
        git("checkout", "--quiet", "--orphan", branch)
        git("rm", "-r", "--quiet", "--cached", "--ignore-unmatch", ".")
        git("clean", "-fdxq")
    else:
        detail = " ".join(found.stderr.split())[:300]
        raise StoreError(f"cannot read the baseline branch {branch} ({detail or 'git ls-remote failed'})")


# -- baselines ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class NightVerdict:
    """What tonight's report says, as the store needs it (read by the command through the strict readers)."""

    verdict: str  # "pass", "warn", ...
    commit: str | None  # the report's candidate commit
    models: tuple[str, ...]


@dataclass(frozen=True)
class StoredEntry:
    """One calibration entry of a baseline: its degrees of freedom (σ's df, or the dispersion's)."""

    df: int


def baseline_change(*, runner_class: str, new: Mapping[str, Path], night: NightVerdict | None, sha: str, update: str,
                    entries_of: Callable[[Path, str], dict[tuple[str, str], StoredEntry]],
                    hold: Callable[[Path, str], Sequence[str]] | None = None) -> Change:
    """Tonight's baseline files (model -> file), checked against what the branch holds when applied.

    `entries_of(path, model)` reads a baseline's calibration entries ((workload, metric) -> df) through
    the strict baseline reader; `hold(root, model)` gives the drift guard's reasons against moving the
    model's stored baseline, read from the checked-out branch at `root` (empty: it may move)."""
    if update not in ("on-pass", "always"):
        raise StoreError(f"--update: expected on-pass or always, got {update!r}")
    if not new:
        raise StoreError("no baseline files to store")

    def apply(root: Path) -> None:
        folder = root / runner_class
        for model, path in sorted(new.items()):
            stored = folder / f"{model}.json"
            if stored.is_file():
                _check_night(model, night, sha, update)
                _check_calibration(model, entries_of(stored, model), entries_of(path, model))
                reasons = hold(root, model) if hold is not None else ()
                if reasons:
                    more = f" (and {len(reasons) - 1} more reason(s) in the log)" if len(reasons) > 1 else ""
                    raise StoreError(f"{model}: the drift guard holds the baseline: {reasons[0]}{more}; a maintainer "
                                     "accepts a step on its tracking issue (/asr-gate accept <model> <reason>)")
            folder.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, stored)

    verdict = night.verdict if night is not None else "first night"
    return Change(f"ASR baseline ({runner_class}): main at {sha}, nightly verdict {verdict}", apply)


def _check_night(model: str, night: NightVerdict | None, sha: str, update: str) -> None:
    if night is None:
        raise StoreError(f"{model}: a baseline is stored already and tonight has no report: nothing that was not "
                         "judged replaces it")
    if night.commit != sha:
        raise StoreError(f"{model}: the report is of {night.commit or 'an unknown commit'}, not of tonight's {sha}")
    if model not in night.models:
        raise StoreError(f"{model}: tonight's report does not cover it")
    if update == "on-pass" and night.verdict != "pass":
        raise StoreError(f"{model}: tonight's verdict is {night.verdict}; only a PASS night moves the baseline "
                         "(a maintainer's dispatch with update-baseline: always moves it past an intended change)")


def _check_calibration(model: str, old: Mapping[tuple[str, str], StoredEntry],
                       new: Mapping[tuple[str, str], StoredEntry]) -> None:
    dropped = sorted(key for key in old if key not in new)
    if dropped:
        workload, metric = dropped[0]
        raise StoreError(f"{model}: the new baseline drops the calibration of {workload} {metric} "
                         f"({len(dropped)} entr{'y' if len(dropped) == 1 else 'ies'} in all)")
    shrunk = sorted(key for key in old if new[key].df < old[key].df)
    if shrunk:
        workload, metric = shrunk[0]
        raise StoreError(f"{model}: the calibration of {workload} {metric} would go from df {old[(workload, metric)].df} "
                         f"to {new[(workload, metric)].df}; fewer degrees of freedom are not stored silently")


# -- calibration -------------------------------------------------------------------------------------------

CALIBRATION_KEYS = ("calibration", "calibration_source")  # what recalibration may change in a baseline file


def calibration_change(*, runner_class: str, source: Path | None, history: Path | None, sha: str,
                       entries_of: Callable[[Path, str], dict[tuple[str, str], StoredEntry]],
                       log: Callable[[str], None] = lambda _: None, stale: list[str] | None = None,
                       suite: Suite | None = None) -> Change:
    """The calibration workflow's write: new A/A pairs under <class>/calibration/, each recalibrated baseline and
    its stamp, and the arms' history lines (a union). Checked on the branch's tip when applied:

    - `source` holds only files this store owns, named per model (of the suite) and runner class:
      <class>/<model>.json, <class>/<model>.calibration-stamp.json, <class>/calibration/<model>/<pair>/...,
      and history/<class>/<YYYY-MM>.jsonl, whose records are merged by the history store's own merge; anything
      else is refused, naming it, before anything is written (the folder is several jobs' uploads merged);
    - a pair file already on the branch is never replaced by other content (pairs are only added);
    - a recalibrated baseline replaces the stored one only if its measurements are the stored ones (the
      nightly may have moved the baseline since recalibrate read it: then that model's baseline and stamp
      are left as they are and its name is added to `stale`; its pair is still kept for the next run);
    - no calibration entry is dropped, and no degrees of freedom shrink unless the stamp's content changed
      (pairs measured on another GPU, driver or package set expired): then the shrink is logged, never silent.
      A stamp only reformatted is the same stamp."""
    if source is None and history is None:
        raise StoreError("nothing to store: neither recalibrated files nor history were given")
    for folder in (source, history):
        if folder is not None and not folder.is_dir():
            raise StoreError("expected a directory (missing)", path=folder)
    owned = _owned_calibration_files(source, runner_class, suite) if source is not None else _Owned()
    if source is not None and not (owned.baselines or owned.copies or owned.history):
        raise StoreError("the recalibrated folder holds no file", path=source)
    merge_history = history_change(runner_class=runner_class, source=history, sha=sha, log=log).apply if history else None

    def apply(root: Path) -> None:
        moved: list[str] = []
        for path in owned.baselines:
            model = path.stem
            stored = root / runner_class / path.name
            if not stored.is_file():
                raise StoreError(f"{model}: no stored baseline {runner_class}/{path.name} to recalibrate")
            if _measurements(stored) != _measurements(path):
                log(f"{model}: the baseline moved since recalibrate read it; its pair is kept, the next run "
                    "recalibrates the new one")
                moved.append(model)
                continue
            stamp_changed = _stamp(stored.with_name(f"{model}.calibration-stamp.json")) != \
                _stamp(path.with_name(f"{model}.calibration-stamp.json"))
            _check_recalibration(model, entries_of(stored, model), entries_of(path, model), stamp_changed, log)
        assert source is not None or not owned.copies
        for path in owned.copies:
            relative = path.relative_to(source)  # type: ignore[arg-type]  # copies come from source only
            model = path.name.split(".", 1)[0]
            if len(relative.parts) == 2 and model in moved:  # that model's baseline and stamp stay as they are
                continue
            target = root / relative
            if relative.parts[1:2] == ("calibration",) and target.is_file() and target.read_bytes() != path.read_bytes():
                raise StoreError(f"{relative}: a stored A/A pair file would be replaced by other content")
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
        if owned.history:
            from gate.history.store import HistoryStore

            HistoryStore(root / "history", suite=suite).append(owned.history, warn=None)
        if merge_history is not None:
            merge_history(root)
        if stale is not None:
            stale[:] = moved

    return Change(f"ASR calibration ({runner_class}): A/A pair of main at {sha}, measured in two jobs", apply)


@dataclass
class _Owned:
    """What `--calibrated` may write: baselines (also copied), files copied as they are, history records."""

    baselines: list[Path] = field(default_factory=list)
    copies: list[Path] = field(default_factory=list)
    history: list = field(default_factory=list)


def _owned_calibration_files(source: Path, runner_class: str, suite: Suite | None) -> _Owned:
    """Sort the uploaded folder into the files the calibration store owns; the first other entry is refused."""
    from gate.history.store import MONTH_FILE, HistoryStore

    if suite is None:
        from gate.formats.config import load_suite

        suite = load_suite()
    models = set(suite.models)
    owned = _Owned()
    months = False
    expected = (f"expected only {runner_class}/<model>.json, {runner_class}/<model>.calibration-stamp.json, "
                f"{runner_class}/calibration/<model>/<pair>/... or history/{runner_class}/<YYYY-MM>.jsonl")
    for path in sorted(source.rglob("*")):
        relative = path.relative_to(source)
        parts = relative.parts
        if path.is_dir() and not path.is_symlink():
            continue
        if not path.is_file() or path.is_symlink():
            raise StoreError(f"{relative}: not a regular file; {expected}", path=source)
        name = parts[-1]
        if len(parts) == 2 and parts[0] == runner_class and name.endswith(".calibration-stamp.json") \
                and name[:-len(".calibration-stamp.json")] in models:
            _stamp(path)  # must parse: it decides whether degrees of freedom may shrink
            owned.copies.append(path)
        elif len(parts) == 2 and parts[0] == runner_class and name.endswith(".json") and name[:-5] in models:
            owned.baselines.append(path)
            owned.copies.append(path)
        elif len(parts) >= 5 and parts[:2] == (runner_class, "calibration") and parts[2] in models:
            owned.copies.append(path)
        elif len(parts) == 3 and parts[:2] == ("history", runner_class) and MONTH_FILE.fullmatch(name):
            months = True
        else:
            raise StoreError(f"{relative}: not a file the calibration store writes; {expected}", path=source)
    if months:
        skipped: list[str] = []
        found = HistoryStore(source / "history", suite=suite).read(runner_class=runner_class, warn=skipped.append)
        if skipped:
            first = skipped[0].replace(f"{source}/", "")  # named inside the folder, never by the runner's path
            raise StoreError(f"history/{runner_class}: the history store cannot read it: {first}", path=source)
        owned.history = list(found.records)
    return owned


def _stamp(path: Path) -> object:
    """A calibration stamp's parsed content (None when there is none): reformatting it changes nothing."""
    import json

    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise StoreError(f"expected the calibration stamp as JSON ({exc})", path=path) from None


def _measurements(path: Path) -> object:
    import json

    data = json.loads(path.read_text(encoding="utf-8"))
    return {k: v for k, v in data.items() if k not in CALIBRATION_KEYS} if isinstance(data, dict) else data


def _check_recalibration(model: str, old: Mapping[tuple[str, str], StoredEntry],
                         new: Mapping[tuple[str, str], StoredEntry], stamp_changed: bool,
                         log: Callable[[str], None]) -> None:
    if not stamp_changed:
        _check_calibration(model, old, new)
        return
    dropped = sorted(key for key in old if key not in new)
    if dropped:
        raise StoreError(f"{model}: the recalibrated baseline drops the calibration of {' '.join(dropped[0])}")
    for key in sorted(key for key in old if new[key].df < old[key].df):
        log(f"{model}: {key[0]} {key[1]} df {old[key].df} -> {new[key].df}: pairs measured on another GPU, "
            "driver or package set expired (the stamp changed)")


# -- history -----------------------------------------------------------------------------------------------

def history_change(*, runner_class: str, source: Path, sha: str, log: Callable[[str], None] = lambda _: None,
                   suite=None) -> Change:
    """Tonight's history merged into history/ on the branch through the history store itself (gate.history.store):
    its strict reader on both sides, its merge (a repeat is a no-op, a rerun replaces) and its atomic writer
    under its lock. A line or file of tonight's that the reader cannot use is named in the log and kept out
    of the push (never a torn or undecodable line pushed); the branch's own unreadable lines are named and kept
    as they are (a writer never deletes what it did not write; `gate history repair` moves them aside)."""
    from gate.history.store import CHANGE_POINTS, HistoryStore

    if not source.is_dir():
        raise StoreError("expected the night's history as a directory", path=source)
    if not any(True for _ in source.rglob("*")):
        raise StoreError("the night's history holds no file", path=source)
    tonight = HistoryStore(source, suite=suite)
    records: list = []
    points: dict[str, tuple] = {}
    for cls, _folder in tonight.class_dirs():
        night = tonight.read(runner_class=cls, warn=lambda line: log(f"store: tonight's history: {line}; "
                                                                      "kept out of the push"))
        records.extend(r for r in night.records if r.runner_class == cls)
        points[cls] = night.change_points
    known = {p for _cls, p in tonight.files()} | {folder / CHANGE_POINTS for _cls, folder in tonight.class_dirs()}
    for path in sorted(source.rglob("*")):
        if path not in known and path.name != ".gitattributes" and not path.is_dir():
            log(f"store: tonight's history: {path}: not a month file (<runner-class>/<YYYY-MM>.jsonl) or "
                f"{CHANGE_POINTS}; not stored")
    if not records and not any(points.values()):
        raise StoreError("the night's history holds no record the history store can read; nothing was stored",
                         path=source)

    def apply(root: Path) -> None:
        branch = HistoryStore(root / "history", suite=suite)
        if records:
            branch.append(records, warn=lambda line: log(f"store: history on the branch: {line}; kept as it is"))
        for cls, found in points.items():
            if found:
                branch.record_change_points(cls, found)

    return Change(f"ASR history ({runner_class}): main at {sha}", apply)
