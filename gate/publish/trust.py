"""Decisions the trusted report job takes from GitHub's own records, never from an uploaded artifact.

Pure functions over plain records (no PyGithub here: gate.publish.github builds these records from the API), so
every case is testable without a server. The rules (docs/trust-model.md has the table):

- `head_arrival`: when did the measured commit last become the PR's head? Only server times count: a
  `head_ref_force_pushed` event naming it, else the first `pull_request` workflow run on the PR's head
  branch with that head after the last force push. `committed` events are never used for timing (their
  dates are the author's to set). No such record: the head cannot be placed, and the post fails closed.
- `bind_label`: one post is bound to one `labeled` event of a gate label selecting the model, by a user
  with write (maintain, admin) access, after the head arrived and before the benchmark run started,
  the label still on the PR; a label event already judged on this head by another run is a replay.
- `find_acceptance`: a writer accepted a FAIL on this head: the label ACCEPT_LABEL (still present) added
  after the head arrived, or a comment (still there) whose first line is `/asr-gate accept <model|all> <reason>`.
- `Stamp` and `Authority`: the `external_id` the gate writes on its own check runs, and how the trusted job
  proves that it wrote one: an HMAC-SHA256 tag over (head, model, conclusion, run and attempt, label event,
  the judgement's sequence, and digests of the title and summary it shows) with a key only the trusted job
  holds, or a dedicated GitHub App's slug (a workflow token is always the `github-actions` app, which any
  writer's branch workflow can be). A stamp is plain text anyone can copy; only the tag (or the App) tells the
  gate's judgement from a copy, and only the sequence tells the newest judgement from an older genuine one
  re-posted later. Without either, no earlier check run counts.
"""
from __future__ import annotations

import hashlib
import hmac
import re
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Callable, Mapping, Sequence

from gate.formats.acceptance import ACCEPT_LABEL, Acceptance
from gate.formats.config import Suite
from gate.publish.setup import SetupFinding

WRITE_PERMISSIONS = ("admin", "maintain", "write")
# The whole first line of the comment, nothing before the slash: never inside a code block, a quote or HTML.
_ACCEPT_COMMAND = re.compile(r"/asr-gate[ \t]+accept[ \t]+([A-Za-z0-9_]+)[ \t]+(\S.*)")
MAX_REASON_CHARS = 200
STAMP_PREFIX = "asr-gate"
# The app behind every workflow's GITHUB_TOKEN: a writer's branch workflow is this app too, so it proves nothing.
ACTIONS_APP = "github-actions"
_TAG_HEX = 32  # 128 bits of HMAC-SHA256: far beyond guessing, short enough for an external_id
_TAG = re.compile(r"[0-9a-f]{%d}" % _TAG_HEX)
_SEQUENCE = re.compile(r"([0-9]{1,9})\.([0-9]{1,20})\.([0-9]{1,6})")


@dataclass(frozen=True)
class PullInfo:
    """A pull request as GitHub (not an artifact) describes it now."""

    number: int
    head_sha: str
    head_repo: str | None  # None when the fork was deleted
    head_ref: str
    base_repo: str
    labels: tuple[str, ...]
    base_sha: str | None = None

    @property
    def same_repo(self) -> bool:
        return self.head_repo == self.base_repo


@dataclass(frozen=True)
class TimelineEntry:
    """One issue-timeline event, reduced to what the trigger binding needs."""

    event: str  # "labeled", "unlabeled", "committed", "head_ref_force_pushed", "commented", ...
    label: str | None = None
    actor: str | None = None
    sha: str | None = None  # committed: the commit; head_ref_force_pushed: the new head (may be null)
    body: str | None = None  # commented: the comment text
    id: int | None = None  # the event's (or comment's) id; committed events have none
    created_at: datetime | None = None  # server time; committed events have none (their dates are user-set)


@dataclass(frozen=True)
class HeadRun:
    """A workflow run GitHub created for a pull_request event: server evidence that `head_sha` was the head."""

    id: int
    head_sha: str
    head_branch: str | None
    head_repo: str | None
    event: str
    created_at: datetime


@dataclass(frozen=True)
class BenchmarkRun:
    """The benchmark workflow run whose trees are judged (from the workflow_run payload, which GitHub writes)."""

    id: int
    attempt: int = 1
    created_at: datetime | None = None

    @property
    def key(self) -> str:
        return f"{self.id}.{self.attempt}"


@dataclass(frozen=True)
class CheckState:
    """The latest check run of one name on a commit: what the overall check and the comment rebuild from."""

    name: str
    conclusion: str | None
    title: str
    summary: str
    run_id: int
    external_id: str | None = None
    app: str | None = None  # slug of the GitHub App that created it (GitHub sets it; a job cannot)
    at: datetime | None = None  # when GitHub says it completed (else started)


@dataclass(frozen=True)
class CommitStatus:
    """A commit status on a commit (any writer's workflow can set one with the Actions token): branch protection
    takes one whose context is a required check's name as that check, so the gate names those under its names."""

    context: str
    state: str
    creator: str | None  # the login that set it
    at: datetime | None = None


@dataclass(frozen=True)
class JudgementSeq:
    """Where one judgement stands among the gate's judgements of a head and model: the gate's own counter (one
    more than the newest judgement it could prove), then the report run and attempt that made it (GitHub's run
    ids only grow), as a tiebreak should a listing lag. Inside the authenticated text, so an older genuine
    judgement re-posted later still ranks below the newer one."""

    counter: int = 0
    report_run: int = 0
    report_attempt: int = 0

    def text(self) -> str:
        return f"{self.counter}.{self.report_run}.{self.report_attempt}"

    @staticmethod
    def parse(text: str) -> JudgementSeq | None:
        match = _SEQUENCE.fullmatch(text)
        return JudgementSeq(int(match[1]), int(match[2]), int(match[3])) if match else None


@dataclass(frozen=True)
class NotOurs:
    """A check run (or commit status) under one of the gate's names that the gate did not count, and why (named in
    the overall check and the comment: which app posted it, or for a status which login set it, and when)."""

    name: str
    app: str | None  # the check run's app; a commit status's creator
    at: datetime | None
    why: str  # "unstamped", "unproven", "superseded" (a genuine judgement re-posted after a newer one), "status"


@dataclass(frozen=True)
class CheckStamp:
    """external_id of a check run the gate wrote: `asr-gate:<kind>:<model>:<run>:<event>:<sequence>[:<tag>]`.

    kind: "model" (counts for the overall check), "overall", or "stale" (a result on a commit that was no
    longer the PR head: shown there, never counted). run: the benchmark run and attempt; event: the label
    event's id (0 when none); sequence: `JudgementSeq` (counter.report-run.attempt); tag: the HMAC of
    `Authority.sign` (absent when no key is configured)."""

    kind: str
    model: str
    run: str
    event: int
    tag: str = ""
    sequence: JudgementSeq = JudgementSeq()

    def text(self) -> str:
        base = f"{STAMP_PREFIX}:{self.kind}:{self.model}:{self.run}:{self.event}:{self.sequence.text()}"
        return f"{base}:{self.tag}" if self.tag else base

    @property
    def order(self) -> tuple[int, ...]:
        """Which of two judgements of one model is the later: the gate's sequence first, then the label event,
        the benchmark run and its attempt (all inside the authenticated text, so a copy of an older judgement,
        posted whenever, never outranks a newer one)."""
        run_id, _, attempt = self.run.partition(".")
        sequence = self.sequence
        return (sequence.counter, sequence.report_run, sequence.report_attempt, self.event,
                int(run_id) if run_id.isdigit() else 0, int(attempt) if attempt.isdigit() else 0)

    @staticmethod
    def parse(text: str | None) -> CheckStamp | None:
        parts = (text or "").split(":")
        if len(parts) not in (6, 7) or parts[0] != STAMP_PREFIX or not parts[4].isdigit():
            return None
        sequence = JudgementSeq.parse(parts[5])
        tag = parts[6] if len(parts) == 7 else ""
        if sequence is None or (len(parts) == 7 and not _TAG.fullmatch(tag)):
            return None
        return CheckStamp(parts[1], parts[2], parts[3], int(parts[4]), tag, sequence)


@dataclass(frozen=True)
class Authority:
    """How the trusted job proves a check run is its own (docs/trust-model.md, "Check runs").

    `key`: the stamp key (an environment secret that only the default branch's jobs get); every model stamp
    carries an HMAC-SHA256 tag over what it claims. `app`: the slug of the GitHub App whose token posts; any app
    but github-actions proves authorship by itself, since only its private key's holder can post as it.
    Neither configured: nothing on GitHub proves authorship, so no earlier check run counts."""

    app: str = ACTIONS_APP
    key: bytes | None = field(default=None, repr=False)
    setup: tuple[SetupFinding, ...] = ()  # what the set-up check found (gate.publish.setup): said on every overall check

    @property
    def configured(self) -> bool:
        return self.key is not None or self.app != ACTIONS_APP

    def _tag(self, stamp: CheckStamp, *, sha: str, conclusion: str | None, title: str, summary: str) -> str:
        assert self.key is not None
        message = "\n".join(("asr-gate-stamp/2", stamp.kind, sha, stamp.model, conclusion or "", stamp.run,
                              str(stamp.event), stamp.sequence.text(), _digest(title), _digest(summary)))
        return hmac.new(self.key, message.encode(), hashlib.sha256).hexdigest()[:_TAG_HEX]

    def sign(self, stamp: CheckStamp, *, sha: str, conclusion: str, title: str = "", summary: str = "") -> CheckStamp:
        """The stamp with its tag (unchanged without a key). `title` and `summary` are exactly what the check run
        shows (publication.fitted), so a copy showing other text does not authenticate."""
        if self.key is None:
            return stamp
        return replace(stamp, tag=self._tag(stamp, sha=sha, conclusion=conclusion, title=title, summary=summary))

    def proves(self, run: CheckState, stamp: CheckStamp, *, sha: str) -> bool:
        """Whether `run`, which carries `stamp`, was written by the trusted job: the expected app, and with a key
        a tag that matches this head, this check's model, conclusion, title and summary, and the run, label event
        and sequence it names."""
        if not self.configured or run.app != self.app:
            return False
        if self.key is None:
            return True  # a dedicated App: GitHub sets `app`, and only the App's key holder posts as it
        return bool(stamp.tag) and hmac.compare_digest(stamp.tag, self._tag(
            stamp, sha=sha, conclusion=run.conclusion, title=run.title, summary=run.summary))


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class OwnChecks:
    """The gate's own latest model check runs on a commit, and what it did not count.

    foreign: gate-named check runs without a model stamp (a workflow job named like the gate), ignored.
    unproven: gate-named check runs that carry a model stamp the trusted job cannot prove it wrote (a copied
    or made-up stamp, or any stamp while no key or App is configured): never counted; while one names a
    model the gate has no proven judgement of (`blocking`), the overall check cannot pass.
    claimed: the latest stamped check per name, proven or not; only ever used to remove a spent label, never to pass.
    others: every check run under a gate name (the overall `ASR gate` included) the gate did not count, with
    its app and time, so the overall check and the comment can name it; a genuine judgement re-posted after a
    newer one is among them ("superseded"), and so is every commit status under a gate name ("status").
    overall: the newest proven overall check, whose counter the next one continues."""

    states: Mapping[str, CheckState]
    foreign: tuple[str, ...] = ()
    unproven: tuple[str, ...] = ()
    claimed: Mapping[str, CheckState] = field(default_factory=dict)
    configured: bool = True
    others: tuple[NotOurs, ...] = ()
    overall: CheckState | None = field(default=None, compare=False)  # the newest proven overall check: its counter only

    @property
    def blocking(self) -> tuple[str, ...]:
        return tuple(name for name in self.unproven if name not in self.states)

    def with_judgement(self, state: CheckState) -> OwnChecks:
        """These checks with the judgement the current run just made (known without reading it back)."""
        return replace(self, states={**self.states, state.name: state})

    def next_counter(self, name: str) -> int:
        """The counter of the next judgement of `name`: one more than the newest the gate can prove."""
        stamp = CheckStamp.parse(self.states[name].external_id) if name in self.states else None
        return stamp.sequence.counter + 1 if stamp is not None else 1

    def next_overall_counter(self) -> int:
        """The counter of the next overall check: one more than the newest proven overall check's."""
        stamp = CheckStamp.parse(self.overall.external_id) if self.overall is not None else None
        return stamp.sequence.counter + 1 if stamp is not None else 1


@dataclass(frozen=True)
class Binding:
    """Whether to post; `reason` is one line, said in the log and (when refused) in the check."""

    ok: bool
    reason: str
    event: TimelineEntry | None = None
    refusals: tuple[str, ...] = ()  # labels that did not count (who, why)


def own_checks(runs: Sequence[CheckState], *, prefix: str, sha: str, authority: Authority,
               overall: str | None = None, statuses: Sequence[CommitStatus] = ()) -> OwnChecks:
    """Per name, the gate's latest proven judgement on `sha` among `runs` (every check run listed with
    filter=all): "latest" by the sequence the authenticated stamp carries, never by the check run's name, id or
    time, so a look-alike, a copy or an older judgement posted later hides nothing. `overall` (the required
    check's name): check runs of that name the gate did not write are named too, and its proven ones are ranked
    by the same sequence. `statuses`: commit statuses under a gate name never count and are all named."""
    ranked: dict[str, list[tuple[tuple, CheckState]]] = {}  # proven, per name (the overall included)
    claimed: dict[str, tuple[tuple, CheckState]] = {}
    foreign: list[str] = []
    unproven: list[str] = []
    others: list[NotOurs] = []
    for run in runs:
        stamp = CheckStamp.parse(run.external_id)
        if overall is not None and run.name == overall:
            if stamp is None or stamp.kind != "overall" or not authority.proves(run, stamp, sha=sha):
                if stamp is None or stamp.kind != "overall" or authority.configured:  # else it may be the gate's
                    others.append(NotOurs(run.name, run.app, run.at, "unstamped" if stamp is None else "unproven"))
                continue
            # By counter, then posting order: two report runs' overall checks of one counter (racing jobs of two
            # models) are the gate's both, never a re-post; only a lower counter posted later is one.
            ranked.setdefault(run.name, []).append((((stamp.sequence.counter,), run.run_id), run))
            continue
        if not run.name.startswith(prefix):
            continue
        if stamp is None or stamp.kind != "model" or run.name != prefix + stamp.model:
            if stamp is None or stamp.kind == "model":
                others.append(NotOurs(run.name, run.app, run.at, "unstamped"))
                if run.name not in foreign:
                    foreign.append(run.name)
            continue
        rank = (stamp.order, run.run_id)
        if run.name not in claimed or rank > claimed[run.name][0]:
            claimed[run.name] = (rank, run)
        if not authority.proves(run, stamp, sha=sha):
            if authority.configured:  # without a key or App the gate's own earlier checks are unprovable too
                others.append(NotOurs(run.name, run.app, run.at, "unproven"))
            if run.name not in unproven:
                unproven.append(run.name)
            continue
        ranked.setdefault(run.name, []).append((rank, run))
    newest = {name: max(seen, key=lambda item: item[0])[1] for name, seen in ranked.items()}
    # A proven check posted after one that ranks above it is an older judgement re-posted (the gate's own only
    # grow in both), whenever the gate looks: named at every later post, never counted.
    others += [NotOurs(run.name, run.app, run.at, "superseded") for seen in ranked.values() for rank, run in seen
               if any(higher > rank and above.run_id < run.run_id for higher, above in seen)]
    others += [NotOurs(s.context, s.creator, s.at, "status") for s in statuses  # GitHub: contexts ignore case
               if s.context.casefold().startswith(prefix.casefold()) or s.context.casefold() == (overall or "").casefold()]
    return OwnChecks({name: run for name, run in newest.items() if name != overall}, tuple(sorted(foreign)),
                     tuple(sorted(unproven)), {name: run for name, (_, run) in claimed.items()}, authority.configured,
                     tuple(sorted(others, key=lambda o: (o.name, _iso(o.at), o.why))),
                     newest.get(overall) if overall is not None else None)


def head_arrival(sha: str, pull: PullInfo, timeline: Sequence[TimelineEntry],
                 runs: Sequence[HeadRun]) -> tuple[datetime | None, str]:
    """The server time by which `sha` had last become the head (a bound at or after the true moment), or
    None and why it cannot be placed."""
    pushes = [e for e in timeline if e.event == "head_ref_force_pushed"]
    if any(e.created_at is None for e in pushes):
        return None, "a force push in the PR timeline carries no time"
    last = max(pushes, key=lambda e: e.created_at or datetime.min) if pushes else None
    if last is not None and last.sha == sha:
        return last.created_at, f"{sha[:12]} was force-pushed at {_iso(last.created_at)}"
    if pull.head_repo is None:
        return None, f"the head commit {sha[:12]} cannot be placed: the fork was deleted"
    after = last.created_at if last is not None else None
    seen = [r.created_at for r in runs if r.head_sha == sha and r.event == "pull_request"
            and r.head_branch == pull.head_ref and r.head_repo == pull.head_repo
            and (after is None or r.created_at > after)]
    if not seen:
        since = f" since the force push at {_iso(after)}" if after is not None else ""
        return None, (f"the head commit {sha[:12]} cannot be placed in time: no force push names it and no "
                      f"pull_request workflow run on its branch shows it{since}")
    first = min(seen)
    return first, f"{sha[:12]} was the head by {_iso(first)}"


def bind_label(*, pull: PullInfo, timeline: Sequence[TimelineEntry], arrival: datetime, model: str, suite: Suite,
               permission_of: Callable[[str], str], run: BenchmarkRun | None,
               own: Mapping[str, CheckState], check_name: str,
               claimed: Mapping[str, CheckState] | None = None) -> Binding:
    """The one label event this post is bound to (the latest that counts), or why none counts.

    `own`: the gate's proven judgements (a replay is refused only on their evidence); `claimed`: stamped checks
    nothing proves (no key or App), used only to recognise a re-post of this same run after its label was
    spent, never to refuse: a planted stamp must not make the honest post refuse itself."""
    selecting = {label for label, models in suite.labels.items() if model in models}
    refusals: list[str] = []
    chosen: tuple[int, TimelineEntry] | None = None
    for index in range(len(timeline) - 1, -1, -1):
        entry = timeline[index]
        if entry.event != "labeled" or entry.label not in selecting or entry.created_at is None:
            continue
        if entry.created_at <= arrival:
            continue  # a label for an earlier head
        if run is not None and run.created_at is not None and entry.created_at > run.created_at:
            continue  # added after this benchmark run started: it asked for another run
        if not entry.actor or entry.actor.endswith("[bot]"):  # bots never bind a run label (as they never accept)
            refusals.append(f"label {entry.label} by @{entry.actor or 'ghost'} does not count: bots cannot ask for a run")
            continue
        permission = permission_of(entry.actor)
        if permission not in WRITE_PERMISSIONS:
            refusals.append(f"label {entry.label} by @{entry.actor} ({permission}) does not count: write access is needed")
            continue
        chosen = (index, entry)
        break
    if chosen is None:
        why = refusals[0] if refusals else "no gate label selecting it was added after the head commit arrived"
        return Binding(False, f"not bound: {model} on {pull.head_sha[:12]}: {why}", refusals=tuple(refusals))
    index, event = chosen
    run_key = run.key if run is not None else "local"
    stamp = CheckStamp.parse(own[check_name].external_id) if check_name in own else None
    same_run = stamp is not None and stamp.event == event.id and stamp.run == run_key
    if not same_run and claimed and check_name in claimed:
        other = CheckStamp.parse(claimed[check_name].external_id)
        same_run = other is not None and other.event == event.id and other.run == run_key
    if stamp is not None and stamp.event == event.id and not same_run:
        return Binding(False, f"replay: label event {event.id} ({event.label}) was already judged on "
                              f"{pull.head_sha[:12]} by run {stamp.run}; add the label again to measure again",
                       event, tuple(refusals))
    removed = any(e.event == "unlabeled" and e.label == event.label for e in timeline[index + 1:])
    if (removed or event.label not in pull.labels) and not same_run:
        return Binding(False, f"revoked: the label {event.label} was removed before its result was judged",
                       event, tuple(refusals))
    return Binding(True, f"PR #{pull.number} at {pull.head_sha[:12]}: {model} bound to label event {event.id} "
                         f"({event.label} by @{event.actor})", event, tuple(refusals))


def labelled_models(pull: PullInfo, timeline: Sequence[TimelineEntry], arrival: datetime | None,
                    suite: Suite) -> tuple[str, ...]:
    """Models whose gate label was added after the head arrived and is still on the PR: a result is expected
    (the overall check waits for them). Suite order."""
    if arrival is None:
        return ()
    labels = {e.label for e in timeline if e.event == "labeled" and e.label in suite.labels
              and e.created_at is not None and e.created_at > arrival and e.label in pull.labels}
    return suite.models_for_labels(sorted(label for label in labels if label))


def find_acceptance(timeline: Sequence[TimelineEntry], *, arrival: datetime, model: str, labels_now: Sequence[str],
                    permission_of: Callable[[str], str]) -> tuple[Acceptance | None, list[str]]:
    """The latest acceptance of `model` on this head by a user with write access, and the refusals seen.

    A comment deleted since is no longer in the timeline; the label counts only while it is on the PR.
    Refusals (someone without write access) are returned so the job can log them; they change nothing.
    """
    found: Acceptance | None = None
    refused: list[str] = []
    for index, entry in enumerate(timeline):
        if entry.created_at is None or entry.created_at <= arrival:
            continue
        candidate = _acceptance_in(entry, model)
        if candidate is None:
            continue
        if candidate.via == "label" and (ACCEPT_LABEL not in labels_now or any(
                e.event == "unlabeled" and e.label == ACCEPT_LABEL for e in timeline[index + 1:])):
            continue  # withdrawn
        permission = permission_of(candidate.by)
        if permission in WRITE_PERMISSIONS:
            found = candidate
        else:
            refused.append(f"@{candidate.by} ({permission}) cannot accept a regression: write access is needed")
    return found, refused


def _acceptance_in(entry: TimelineEntry, model: str) -> Acceptance | None:
    if not entry.actor or entry.actor.endswith("[bot]"):  # bots (the gate's own comments included) never accept
        return None
    at = _iso(entry.created_at)
    if entry.event == "labeled" and entry.label == ACCEPT_LABEL:
        return Acceptance(by=entry.actor, reason=f"label {ACCEPT_LABEL}", via="label", at=at)
    if entry.event == "commented" and entry.body:
        first = entry.body.replace("\r\n", "\n").split("\n", 1)[0].rstrip()
        match = _ACCEPT_COMMAND.fullmatch(first)
        if match and match[1] in (model, "all"):
            return Acceptance(by=entry.actor, reason=match[2].strip()[:MAX_REASON_CHARS], via="comment", at=at)
    return None


def _iso(when: datetime | None) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ") if when is not None else "unknown"
