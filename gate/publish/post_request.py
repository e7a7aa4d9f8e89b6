"""What `gate post` was asked to do: its mode, decided once from the options, and a typed request.

Light on purpose (enum, dataclasses, pathlib): the command builds the request, and answers a usage
error, before gate.publish.posting loads PyGithub and scipy.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from gate.formats.errors import InputError


class PostMode(Enum):
    """The one thing a `gate post` publishes (exactly one of --trees, --not-run, --report)."""

    TREES = "trees"  # judge one model's uploaded trees: its check, the overall check, the sticky comment
    NOT_RUN = "not-run"  # the benchmark run measured nothing: the overall check only
    REPORT = "report"  # nightly: main's own merged report -> the tracking issue (with --tracking-issue)
    CHECK_SETUP = "check-setup"  # a maintainer's check of the environment, its branch policy and the secrets


EXACTLY_ONE = ("give exactly one of --trees DIR (with --model), --not-run, --report FILE --tracking-issue, "
               "or --check-setup")


def decide_mode(*, trees: Path | None, not_run: bool, report: Path | None, check_setup: bool = False) -> PostMode:
    """The mode the options ask for; anything but exactly one of them is one usage line (exit 2)."""
    given = [mode for mode, on in ((PostMode.TREES, bool(trees)), (PostMode.NOT_RUN, not_run),
                                   (PostMode.REPORT, bool(report)), (PostMode.CHECK_SETUP, check_setup)) if on]
    if len(given) != 1:
        raise InputError(EXACTLY_ONE)
    return given[0]


@dataclass(frozen=True)
class PostRequest:
    """`gate post`'s options, typed; `mode` says which of trees / report is meant."""

    mode: PostMode
    trees: Path | None = None  # PostMode.TREES: the downloaded (untrusted) trees of one model
    model: str | None = None
    baseline: Path | None = None  # trusted; None: the trees' base/ side (A/B)
    calibration: Path | None = None
    json_path: Path | None = None  # also write the trusted report (and acceptance.json beside it)
    required_paths: tuple[str, ...] = ()  # globs of ASR code paths (PostMode.NOT_RUN)
    report: Path | None = None  # PostMode.REPORT: the nightly's own merged report
    tracking_issue: bool = False
    sha: str | None = None
    pr: int | None = None
    suite_path: Path | None = None
    dry_run: bool = False
    history_dir: Path | None = None
    runner_class: str | None = None

    @classmethod
    def from_options(cls, *, trees: Path | None, not_run: bool, report: Path | None, required_paths: str,
                     model: str | None = None, baseline: Path | None = None, calibration: Path | None = None,
                     json_path: Path | None = None, tracking_issue: bool = False, sha: str | None = None,
                     pr: int | None = None, suite_path: Path | None = None, dry_run: bool = False,
                     history_dir: Path | None = None, runner_class: str | None = None,
                     check_setup: bool = False) -> PostRequest:
        """The request from the command's options; the mode is decided here, once."""
        return cls(mode=decide_mode(trees=trees, not_run=not_run, report=report, check_setup=check_setup),
                   trees=trees, model=model,
                   baseline=baseline, calibration=calibration, json_path=json_path,
                   required_paths=tuple(g.strip() for g in required_paths.split(",") if g.strip()),
                   report=Path(report) if report else None, tracking_issue=tracking_issue, sha=sha, pr=pr,
                   suite_path=suite_path, dry_run=dry_run, history_dir=history_dir, runner_class=runner_class)
