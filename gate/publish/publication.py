"""What the trusted job publishes for a PR, composed from trusted data only.

Per model: a check run `ASR gate / <model>` whose conclusion comes from the trusted compare's
verdict (or from an acceptance checked through the API). Overall: a check run `ASR gate` whose
conclusion is the worst of the model check runs on that commit, and ONE sticky comment: a table of
every model's latest check run (conclusion and escaped title, read back from the API, never from a
comment's prose) plus the full section of the model just judged. The marker is a constant here,
so nothing in an artifact can address a second comment.

Only the gate's own check runs count (gate.publish.trust.own_checks: stamped with the gate's external_id and
proven by the trusted job's stamp key or a dedicated App); a look-alike, such as a fork's workflow job named
`ASR gate / fun`, is ignored and named once in the overall check, and a stamped check the gate cannot prove
(copied, made up, or any while nothing is configured to prove it) keeps the overall check from passing.
Another model's check-run *summary* is not copied into the comment either; the table links to it instead.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from gate.formats import github_limits
from gate.formats.acceptance import Acceptance
from gate.formats.report import Report
from gate.formats.verdict import Verdict
from gate.publish.setup import SetupFinding, blocking
from gate.publish.trust import ACTIONS_APP, CheckState, NotOurs
from gate.render import escape

STICKY_MARKER = "<!-- asr-regression-gate: sticky -->"
CHECK_PREFIX = "ASR gate"
MODEL_PREFIX = CHECK_PREFIX + " / "
COMMENT_BUDGET = github_limits.COMMENT.limit - 1_536  # characters: a margin under GitHub's limit
SECTION_BUDGET = 56_000  # the judged model's section; the table and header take the rest

# Check-run conclusions, worst first: the overall check takes the worst of the model checks.
_CONCLUSION_ORDER = ("failure", "action_required", "timed_out", "cancelled", "stale", "neutral", "skipped", "success")
_CONCLUSION_ICONS = {"failure": "❌", "action_required": "⛔", "neutral": "⚠️", "success": "✅", "skipped": "➖"}

@dataclass(frozen=True)
class CheckPlan:
    name: str
    conclusion: str
    status_state: str
    title: str
    summary: str


def check_name(model: str) -> str:
    return f"{CHECK_PREFIX} / {model}"


def model_check(model: str, report: Report, section: str, acceptance: Acceptance | None) -> CheckPlan:
    """The check run of one model from the trusted report; an acceptance turns a FAIL into success."""
    verdict = report.verdict
    title = verdict_title(report)
    conclusion, state = verdict.check_conclusion, verdict.status_state
    if acceptance is not None and verdict is Verdict.FAIL:
        title = (f"accepted by @{escape.plain(acceptance.by, 39)} at {escape.plain(acceptance.at, 20)}: "
                 f"{escape.plain(acceptance.reason, 120)} ({title})")
        conclusion = state = "success"
    return CheckPlan(check_name(model), conclusion, state, title[:github_limits.CHECK_TITLE_MAX_CHARS],
                     acceptance_note(acceptance, verdict) + section)


def fitted(plan: CheckPlan) -> CheckPlan:
    """The plan as the check run will show it (GitHub's title and summary limits), which is what a stamp signs."""
    return CheckPlan(plan.name, plan.conclusion, plan.status_state, plan.title[:github_limits.CHECK_TITLE_MAX_CHARS],
                     github_limits.fit(plan.summary, github_limits.CHECK_SUMMARY))


def with_setup(plan: CheckPlan, findings: Sequence[SetupFinding]) -> CheckPlan:
    """The overall check with the set-up check's lines; where the stamp key or the App's key could have been read
    by a branch workflow, nothing it proves can be trusted, so the check cannot pass (fails closed)."""
    if not findings:
        return plan
    lines = "".join(f"- set-up: {escape.md(f.line, 400)}\n" for f in findings)
    if not blocking(findings):
        return CheckPlan(plan.name, plan.conclusion, plan.status_state, plan.title, lines + plan.summary)
    conclusion = plan.conclusion if plan.conclusion == "failure" else "action_required"
    title = f"set-up unsafe (see summary); {plan.title}"[:github_limits.CHECK_TITLE_MAX_CHARS]
    return CheckPlan(plan.name, conclusion, "failure", title, lines + plan.summary)


def refused_section(reason: str) -> str:
    return ("**The uploaded result trees were refused**; nothing from them was judged. "
            f"Reason: {escape.md(reason, 600)}\n")


def refused_check(model: str, reason: str) -> CheckPlan:
    """Trees that do not match the plan or the file rules: a failure, never a pass."""
    return CheckPlan(check_name(model), "failure", "failure", "REFUSED: the result trees do not match the plan",
                     refused_section(reason))


def verdict_title(report: Report) -> str:
    """'FAIL: 2 fail, 1 warn of 30 rows': counted from the typed rows of the trusted report."""
    counts = report.counts
    shown = [f"{counts[v]} {v.word.lower()}" for v in Verdict.by_severity() if v is not Verdict.PASS and counts[v]]
    total = sum(counts.values())
    detail = ", ".join(shown) + f" of {total} rows" if shown else f"{total} rows"
    return f"{report.verdict.word.upper()}: {detail}"


def acceptance_note(acceptance: Acceptance | None, verdict: Verdict) -> str:
    if acceptance is None or verdict is not Verdict.FAIL:
        return ""
    return (f"> **Regression accepted** by @{escape.md(acceptance.by, 39)} ({acceptance.via}, "
            f"{escape.md(acceptance.at, 20)}): {escape.md(acceptance.reason, 200)}. "
            "The failing rows stay listed below.\n\n")


def stale_check(plan: CheckPlan, head: str) -> CheckPlan:
    """A result for a commit that is no longer the PR head: shown on the commit measured, never counted."""
    title = f"not the PR head (now {head[:12]}): {plan.title}"
    return CheckPlan(plan.name, plan.conclusion, plan.status_state, title[:github_limits.CHECK_TITLE_MAX_CHARS],
                     f"_This commit is not the PR head any more (now `{head[:12]}`); the result is kept here for "
                     "the record and does not count for the pull request._\n\n" + plan.summary)


def foreign_note(foreign: Sequence[str]) -> str:
    """One line per look-alike check name: seen, and ignored."""
    return "".join(f"- a check named {escape.md(name, 80)} was not made by the gate; it is ignored\n"
                   for name in foreign)


_WHY = {"unstamped": "it carries no gate stamp",
        "unproven": "it carries a gate stamp the gate cannot authenticate (copied or made up)",
        "superseded": "it re-posts an earlier judgement of the gate after a newer one (a replay)"}


def not_ours_note(others: Sequence[NotOurs], *, gate_app: str) -> str:
    """One line per check under a gate name that the gate did not count (grouped by name, app and why): which
    app posted it and when, and, for the required check's name, the setting that makes branch protection
    ignore it."""
    groups: dict[tuple[str, str, str], list[NotOurs]] = {}
    for other in others:
        groups.setdefault((other.name, other.app or "unknown", other.why), []).append(other)
    lines = []
    for (name, app, why), seen in groups.items():
        times = sorted(o.at.strftime("%Y-%m-%dT%H:%M:%SZ") for o in seen if o.at is not None)
        when = f" at {times[-1]}" if times else ""
        count = f", {len(seen)} times" if len(seen) > 1 else ""
        if why == "status":
            lines.append(_status_line(name, app, when + count))
            continue
        line = (f"- a check named {escape.md(name, 80)} posted by the app {escape.md(app, 60)}{when}{count} "
                f"was not made by the gate ({_WHY.get(why, why)}); it is ignored here")
        if name == CHECK_PREFIX:
            line += "; " + _branch_protection(app, gate_app)
        lines.append(line + "\n")
    return "".join(lines)


def _status_line(name: str, creator: str, when: str) -> str:
    """A commit status under a gate name: never counted; for the required check's name, branch protection takes
    it as that check unless the check's expected source is an App (a status has no app)."""
    line = f"- a commit status `{escape.code(name, 80)}` set by {escape.md(creator, 60)}{when} is not the gate's"
    if name.casefold() == CHECK_PREFIX.casefold():  # GitHub compares a status's context ignoring case
        return line + (": branch protection accepts it unless the required check's expected source is the gate's "
                       "App (docs/github-app.md)\n")
    return line + "; it is ignored\n"


def _branch_protection(app: str, gate_app: str) -> str:
    """The setting that keeps a check named like the required one from satisfying branch protection."""
    if app == gate_app == ACTIONS_APP:
        return ("branch protection cannot tell it from the gate's own while the gate posts with the Actions token: "
                "post with a dedicated GitHub App and set that App as the expected source of the required check "
                f"{CHECK_PREFIX} (docs/github-app.md)")
    source = "GitHub Actions" if gate_app == ACTIONS_APP else f"the App {escape.md(gate_app, 60)}"
    return (f"branch protection ignores it once the required check {CHECK_PREFIX} expects {source} as its source "
            "(branch protection or ruleset: required status checks, source)")


def unproven_note(unproven: Sequence[str], *, configured: bool) -> str:
    """One line per stamped check the gate cannot prove it wrote; without a key or App, one line saying how
    to configure one (docs/use-in-sglang-omni.md)."""
    if not unproven:
        return ""
    if not configured:
        names = ", ".join(escape.md(model_of(name), 60) for name in unproven)
        return (f"- earlier judgement(s) of {names} cannot be authenticated, so only this run's judgement counts: "
                "set the stamp key (secret ASR_GATE_STAMP_KEY in an environment only the default branch may use) "
                "or post with a dedicated GitHub App (docs/use-in-sglang-omni.md)\n")
    return "".join(f"- a check named {escape.md(name, 80)} carries a gate stamp the gate cannot authenticate "
                   "(copied or made up); it is ignored\n" for name in unproven)


def _not_counted(foreign: Sequence[str], unproven: Sequence[str], *, configured: bool, others: Sequence[NotOurs],
                 gate_app: str) -> str:
    """What the gate did not count: each check by app and time (`others`, from own_checks), else by name; and,
    without a key or App, how to configure one."""
    if not others:
        return foreign_note(foreign) + unproven_note(unproven, configured=configured)
    return not_ours_note(others, gate_app=gate_app) + (unproven_note(unproven, configured=False) if not configured
                                                       else "")


def overall_check(states: Mapping[str, CheckState], *, sha: str, expected: Sequence[str] = (),
                  foreign: Sequence[str] = (), notes: Sequence[str] = (), unproven: Sequence[str] = (),
                  configured: bool = True, others: Sequence[NotOurs] = (), gate_app: str = ACTIONS_APP) -> CheckPlan:
    """The required `ASR gate` check: the worst of the gate's own model checks on this commit. A model a label
    asked for that has no check yet (still running, or its results never arrived), or whose only check the gate
    cannot authenticate (`unproven`), keeps it from passing. `notes` (refusals), look-alike and unproven checks
    are listed, one escaped line each."""
    conclusions = [s.conclusion or "neutral" for s in states.values()]
    waiting = [m for m in expected if check_name(m) not in states]
    blocking = [model_of(name) for name in unproven if name not in states]
    if waiting or blocking:
        conclusions.append("action_required")
    worst = min(conclusions, key=_rank) if conclusions else "neutral"
    models = ", ".join(f"{model_of(name)} {states[name].conclusion}" for name in sorted(states))
    title = f"{len(states)} model(s): {models}" if states else "no model was judged"
    if waiting:
        title += f"; not judged (yet): {', '.join(waiting)}"
    if blocking:
        title += f"; not authenticated: {', '.join(escape.plain(m, 60) for m in blocking)}"
    summary = (f"Overall result of the ASR gate on `{sha[:12]}`: the worst of the per-model checks.\n"
               + "".join(f"- {escape.md(note, 300)}\n" for note in notes)
               + _not_counted(foreign, unproven, configured=configured, others=others, gate_app=gate_app))
    return CheckPlan(CHECK_PREFIX, worst, "failure" if worst in ("failure", "action_required") else "success",
                     title[:github_limits.CHECK_TITLE_MAX_CHARS], summary)


def not_run_check(*, reason: str, required: bool, foreign: Sequence[str] = (), unproven: Sequence[str] = (),
                  configured: bool = True, others: Sequence[NotOurs] = (), gate_app: str = ACTIONS_APP) -> CheckPlan:
    """The overall check on a commit the gate did not measure (no label, a push after the last run, or a
    post it refused): `reason` is one escaped line. A stamped check the gate cannot prove makes it required."""
    required = required or bool(unproven)
    conclusion = "action_required" if required else "neutral"
    return CheckPlan(CHECK_PREFIX, conclusion, "failure" if required else "success", escape.plain(reason, 250),
                     escape.md(reason, 600) + "\n"
                     + _not_counted(foreign, unproven, configured=configured, others=others, gate_app=gate_app))


def sticky_body(states: Mapping[str, CheckState], *, sha: str, model: str, section: str,
                expected: Sequence[str] = (), foreign: Sequence[str] = (), unproven: Sequence[str] = (),
                configured: bool = True, others: Sequence[NotOurs] = (), gate_app: str = ACTIONS_APP) -> str:
    """One comment for every model: the table of latest check runs, then the judged model's section."""
    worst = overall_check(states, sha=sha, expected=expected, unproven=unproven).conclusion
    lines = [STICKY_MARKER, f"## {_CONCLUSION_ICONS.get(worst, '⚠️')} ASR regression gate on `{sha[:12]}`", "",
             "| model | check | result |", "|---|---|---|"]
    for name in sorted(states):
        state = states[name]
        icon = _CONCLUSION_ICONS.get(state.conclusion or "", "⚠️")
        conclusion = state.conclusion if state.conclusion in _CONCLUSION_ORDER else "unknown"
        lines.append(f"| {escape.md(model_of(name), 60)} | {icon} {conclusion} | {escape.md(state.title, 200)} |")
    blocking = [name for name in unproven if name not in states]
    for name in blocking:
        lines.append(f"| {escape.md(model_of(name), 60)} | 🔒 not authenticated | a judgement the gate cannot "
                     "prove it made; label again to judge it in a run that can |")
    for waiting in (m for m in expected if check_name(m) not in states and check_name(m) not in blocking):
        lines.append(f"| {escape.md(waiting, 60)} | ⏳ not judged | labelled on this head; no result yet |")
    notes = _not_counted(foreign, unproven, configured=configured, others=others, gate_app=gate_app).rstrip("\n")
    lines += ["", notes, f"### {escape.md(model, 60)} (judged in this run)", ""]
    body = "\n".join(lines) + "\n"
    room = COMMENT_BUDGET - len(body) - 200
    return body + github_limits.fit(section, github_limits.Limit(max(room, 0), "characters"))


def _rank(conclusion: str) -> int:
    return _CONCLUSION_ORDER.index(conclusion) if conclusion in _CONCLUSION_ORDER else 0


def model_of(name: str) -> str:
    return name[len(CHECK_PREFIX) + 3:] if name.startswith(CHECK_PREFIX + " / ") else name
