"""Do BASE and CANDIDATE of `gate compare` look swapped? A warning only: it never changes the verdict.

Signs, each enough, and each warning names the path that looks like the base:
  - a tree's `gate-run.json` lists the sides of the `gate run --ab` that made it, base first, and the
    tree is the folder of one side: BASE is that run's candidate, or CANDIDATE its base;
  - CANDIDATE's commit is an ancestor of BASE's, by `git merge-base --is-ancestor` in a checkout the
    run log names or `gate compare --checkout` gives (when git and the checkout are there; never for trees
    from an untrusted source);
  - BASE was recorded after CANDIDATE, both trees (`gate-run.json` "started") or both baseline files
    ("created"); two trees from one `gate run --ab` share their start and say nothing;
  - CANDIDATE is a baseline file while BASE is a result tree (baselines are what a tree is judged against);
  - every gated row that was tested improved beyond noise (a real change rarely improves everything).

Files' own times are no sign (issue 51): the runbook interleaves its two commits run by run, so two hand-made
trees' times overlap, and a copy resets them. Two hand-made trees of two commits that no checkout can order say
nothing about their order; `order_unknown` says so plainly instead of staying silent.

The run log and the baseline file are read by their one owners (gate.formats.runlog, gate.reading.baseline_file), as
strictly as the verdict reads them (and from the same memo, for the run log): a file they refuse is the
same one-line InputError here. A run's commit.txt is read by gate.formats.commit_record; one it refuses gives
no commit sign (the verdict names it as an invalid run).
"""
from __future__ import annotations

import datetime as _dt
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from gate.formats import inputs, runlog
from gate.formats.commit_record import FILE as COMMIT_FILE
from gate.formats.commit_record import read_commit

RUN_LOG = runlog.FILE
_GIT_SECONDS = 5


@dataclass(frozen=True)
class Recorded:
    """What a comparison side says about itself: when it was recorded, from what, and its place in a run."""

    kind: str  # "tree" or "baseline"
    when: _dt.datetime | None
    source: str  # "gate-run.json started", "baseline created", or why unknown
    path: str = ""
    role: str | None = None  # "base" or "candidate": the tree's side in the `gate run --ab` that made it
    commit: str | None = None  # the tree's run*/commit.txt
    checkouts: tuple[str, ...] = ()  # git checkouts the run log names (or --checkout gives), for the commit order
    logged: bool = False  # a tree with a gate-run.json (its sides and start tell the order)


@dataclass(frozen=True)
class RowOutcome:
    """What the check needs of one report row."""

    gated: bool  # a row that can fail the gate (accuracy or speed), and was tested (not incomplete)
    improved: bool


def recorded(path: str | Path, *, git: bool = True, checkouts: tuple[str, ...] = ()) -> Recorded:
    """What the tree or baseline file at `path` says about itself; `git=False` leaves out the checkouts
    (trees from an untrusted source could name any folder, and git reads a folder's own config). `checkouts`:
    git checkouts given by hand (`gate compare --checkout`), asked after the ones the run log names."""
    path = Path(path)
    if path.is_dir():
        log = runlog.read(path)
        when = log.started_utc if log is not None else None
        names = list(log.sides) if log is not None else []
        role = None
        if len(names) == 2 and path.resolve().name in names:
            role = ("base", "candidate")[names.index(path.resolve().name)]
        named = tuple(log.sides.values()) if log is not None else ()
        return Recorded("tree", when, f"{RUN_LOG} started" if when else f"no {RUN_LOG}", str(path), role,
                        _tree_commit(path), (*named, *checkouts) if git else (), log is not None)
    from gate.reading.baseline_file import load_document  # numpy: only when a side is a baseline file

    created = load_document(path).created
    when = _time(created)
    return Recorded("baseline", when, "baseline created" if when else "no creation time", str(path))


def swap_warnings(base: Recorded, cand: Recorded, rows: Iterable[RowOutcome]) -> list[str]:
    """One line per sign that BASE and CANDIDATE were given the wrong way round (empty when none)."""
    reasons = []
    if (base.role, cand.role) in (("candidate", "base"), ("candidate", None), (None, "base")):
        told = " and ".join(f"{side.path} is the {side.role} tree" for side in (base, cand) if side.role)
        reasons.append(f"{told} of the `gate run --ab` that made it ({RUN_LOG} lists the base first), "
                       f"so {cand.path} looks like the base")
    order = _commit_order(base, cand)
    if order is not None and order[0]:
        reasons.append(order[1])
    # Times of one kind only: a baseline's "created" is when it was stored, not measured (a nightly refresh
    # stores one after a PR's trees were made).
    if base.kind == cand.kind and base.when and cand.when and base.when > cand.when:
        reasons.append(f"BASE was recorded after CANDIDATE ({base.source} {base.when:%Y-%m-%d %H:%M} UTC, "
                       f"{cand.source} {cand.when:%Y-%m-%d %H:%M} UTC)")
    if cand.kind == "baseline" and base.kind == "tree":
        reasons.append("CANDIDATE is a baseline file and BASE a result tree")
    gated = [row for row in rows if row.gated]
    if len(gated) >= 2 and all(row.improved for row in gated):
        reasons.append(f"all {len(gated)} gated rows improved beyond noise")
    fix = f"gate compare {cand.path} {base.path}" if cand.path and base.path else "gate compare BASE CANDIDATE"
    return [f"arguments may be swapped: {reason}; `gate compare` takes BASE first, then CANDIDATE: {fix} "
            "(the verdict is unchanged)" for reason in reasons]


def order_unknown(base: Recorded, cand: Recorded) -> str | None:
    """One line when nothing in two hand-made trees tells which is the older (no run log, and no checkout that
    git could ask knows both commits), so a swap could not be caught; None when the order is known or moot."""
    if base.kind != "tree" or cand.kind != "tree" or base.logged or cand.logged:
        return None
    if base.commit and base.commit == cand.commit:
        return None  # one commit twice (an A/A pair): no order to get wrong
    if _commit_order(base, cand) is not None:
        return None
    commits = " and ".join(f"{side.path} {side.commit[:10]}" for side in (base, cand) if side.commit) or \
        "neither has a commit.txt"
    return (f"which tree is the base cannot be told from these trees (no {RUN_LOG}; commits: {commits}, in no git "
            f"checkout the gate could ask): BASE is taken to be {base.path}; if that is the newer commit, run "
            f"gate compare {cand.path} {base.path}, or give --checkout DIR (a clone holding both commits) to check")


def _commit_order(base: Recorded, cand: Recorded) -> tuple[bool, str] | None:
    """(swapped, reason) when git, in a checkout a run log names or the user gives, orders the two commits: swapped
    when CANDIDATE's commit is an ancestor of BASE's. None when no checkout can tell."""
    if not base.commit or not cand.commit or base.commit == cand.commit:
        return None
    for checkout in dict.fromkeys((*cand.checkouts, *base.checkouts)):
        if not os.path.isdir(checkout):
            continue
        try:
            done = subprocess.run(["git", "-c", "core.fsmonitor=false", "-C", checkout, "merge-base", "--is-ancestor",
                                   cand.commit, base.commit], capture_output=True, timeout=_GIT_SECONDS,
                                  env={**os.environ, "GIT_TERMINAL_PROMPT": "0"})
        except (OSError, subprocess.SubprocessError):
            return None  # no git: the other signs still count
        if done.returncode == 0:
            return True, (f"CANDIDATE's commit {cand.commit[:10]} is an ancestor of BASE's {base.commit[:10]} "
                          f"(git in {checkout}), so {cand.path} looks like the base")
        if done.returncode == 1:
            return False, ""  # git knows both commits and the order is right (or they are on two branches)
    return None


def _tree_commit(tree: Path) -> str | None:
    """The commit the tree's first scored run with a commit.txt recorded (gate.formats.commit_record). A commit.txt
    it refuses gives no commit sign: this is a warning, and the verdict names that file already (the run
    is invalid, exit 3)."""
    try:
        runs = sorted(p for p in tree.iterdir() if p.name.startswith("run") and p.is_dir() and not p.is_symlink())
    except OSError:
        return None
    for run in runs:
        if not inputs.is_present(run / COMMIT_FILE):
            continue
        try:
            return read_commit(run)
        except inputs.Unreadable:
            return None
    return None


def _time(value: object) -> _dt.datetime | None:
    if not isinstance(value, str):
        return None
    try:
        when = _dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=_dt.timezone.utc)
    return when.astimezone(_dt.timezone.utc)
