"""Why a row got its verdict, in words (issue 49): the one table for the codes the rule sets on a row
(gate.formats.reasons: CannotFail, WarnCause; Row.next_step) and on a first look that extends (ExtendCause), and
the first line a non-PASS row opens with: its real cause, the adjusted p or q that decided it, and the next step.
The statistics behind it (the row's notes, its method, its floors) are `statistics_line`, shown folded below.
Nothing here reads a note's text."""
from __future__ import annotations

from gate.formats.acceptance import ACCEPT_COMMAND, ACCEPT_LABEL
from gate.formats.reasons import UNSTABLE, CannotFail, ExtendCause, WarnCause
from gate.formats.report import Basis, NextStep, Row, Statistics
from gate.formats.verdict import Verdict
from gate.render.cells import env_kind, fmt_p

CANNOT_FAIL: dict[CannotFail, str] = {
    CannotFail.NO_CALIBRATION: "no A/A calibration",
    CannotFail.NO_SIGMA: "no σ: fewer than two runs in every arm",
    CannotFail.FEW_SIGMA_DF: "σ rests on too few degrees of freedom",
    CannotFail.SINGLE_RUN: "a side has a single run",
    CannotFail.ACROSS_JOBS: "compared across jobs: only an in-job A/B (gate run --ab) can FAIL on speed",
    CannotFail.FEW_CROSS_PAIRS: "too few cross-job A/A pairs measure the job-to-job spread",
    CannotFail.CALIBRATION_STALE: "the calibration is stale for this GPU, driver or package set",
    CannotFail.SPREAD_ABOVE_CALIBRATION: "the sides' own spread is larger than the calibration's σ",
    CannotFail.BETTER_RUN_SET_ASIDE: "a candidate run better than the others was set aside: its runs disagree",
    CannotFail.WORSE_RUNS_SET_ASIDE: "a third or more of the candidate's runs were set aside as worse",
    CannotFail.RUNS_SPLIT: "the candidate's runs fall in two clusters",
    CannotFail.INTERMITTENT: "a third or more of the candidate's runs are worse than the baseline's median by more "
                             "than the outlier limit, the others are not (intermittent)",
    CannotFail.OWN_RUNS_DO_NOT_CONFIRM: "the A/B's own runs alone do not confirm it (the calibration's σ alone "
                                        "would carry the FAIL)",
    CannotFail.SLOWER_ALIKE: "candidate runs have every workload slower alike: a whole-server slowdown or starts in "
                             "the host's slow mode",
    CannotFail.NO_CHURN_RECORD: "no A/A record of how transcripts churn and too few runs to measure it (correlated "
                                "churn would make the sign-flip test too liberal)",
    CannotFail.GROUP_SPREAD_UNRECORDED: "the calibration predates the co-moving group's own spread",
    CannotFail.RUNS_EXACT_P: "utterances churn together, so the runs' error totals decide, and these few runs "
                             "cannot reach the level",
    CannotFail.HIDDEN_GROUP: "utterances churn together in the model's own runs: a group that stayed put could "
                             "split the sides like a real change",
    CannotFail.FEW_DUET_SESSIONS: "too few duet sessions: the session-to-session spread is not yet measured",
}

EXTEND_CAUSE: dict[ExtendCause, str] = {
    ExtendCause.NEAR_FLOOR: "a row reaches half its floor with a BH q within its family's extension level",
    ExtendCause.BLIND: "a row is blind: it could not have seen three times its floor at the first look",
    ExtendCause.UNSTABLE: "a row is unstable: a candidate run was set aside as worse",
}

NEXT_STEP: dict[NextStep, str] = {
    NextStep.CALIBRATE: "measure the baseline's commit twice more (an A/A pair), store the noise with `gate baseline "
                        "calibrate A B --baseline FILE` and compare with `--calibration FILE`",
    NextStep.AB_RUN: "run `gate run --ab BASE_CHECKOUT CANDIDATE_CHECKOUT`: one job, interleaved, and runs 4-6 are "
                     "added where the first look is undecided",
    NextStep.MORE_SESSIONS: "run more duet sessions: `gate run --ab BASE_CHECKOUT CANDIDATE_CHECKOUT --design duet "
                            "--sessions K1,K` with a larger K (a session is the duet's unit, df sessions − 1), then "
                            "compare again",
}

# The next step of a WARN that names none: what tells its cause from noise.
_WARN_STEP = {
    WarnCause.UNSTABLE: "re-measure (more runs tell one wild run from an intermittent regression): "
                        "add the model's gate label again",
    WarnCause.NEW_CATASTROPHIC: "read that utterance's transcripts (Changed utterances, below): a hallucination that "
                                "repeats in every run is a bug, not noise",
}



def extend_line(causes: tuple[ExtendCause, ...]) -> str:
    """Why a first look extended a model, in words ("" without a cause)."""
    return "; ".join(EXTEND_CAUSE[c] for c in causes)


def accept_line(models: list[str]) -> str:
    """How to accept the FAILs of `models` on a pull request, and how to re-measure them (gate.publish.trust finds
    an acceptance: a writer's, after the head); empty without a FAIL."""
    if not models:
        return ""
    commands = " or ".join(f"`{ACCEPT_COMMAND} {m} <reason>`" for m in models)
    return (f"A FAIL that is intended: a writer comments {commands} (the comment's first line), or adds the label "
            f"`{ACCEPT_LABEL}`, after this head; the check then names who accepted it and why. A FAIL you doubt: add "
            "the model's gate label again to re-measure both sides on this head.")


def next_step(step: NextStep | str, runs: int) -> str:
    """A step in words. More runs are numbered after those the sides have (`runs`, the larger side's): the
    runbook's 3 make them runs 4-6, a pooled 6+6 of `gate run --ab` runs 7-9."""
    step = NextStep(step)
    if step is not NextStep.MORE_RUNS:
        return NEXT_STEP[step]
    first = max(runs, 3) + 1
    numbers = f"{first}, {first + 1} and {first + 2}"
    return (f"score runs {numbers} on both sides with the runbook's own commands (its Step 4 with RUN={numbers}, "
            "then the model blocks), then compare again")


def row_step(row: Row) -> str | None:
    """The row's next step in words, None without one."""
    runs = max(len(row.baseline.values), len(row.candidate.values))
    return None if row.next_step is None else next_step(row.next_step, runs)


def cannot_fail(row: Row) -> str:
    """"can WARN at most: …" from the row's codes (the unstable ones are the WARN's cause, said there)."""
    words = [CANNOT_FAIL[c] for c in row.cannot_fail if c not in UNSTABLE or row.warn_cause is not WarnCause.UNSTABLE]
    return "can WARN at most: " + "; ".join(words) if words else ""


def _size(row: Row) -> str | None:
    """What moved, ± the 95% half-width: "6.0% slower ± 1.5%" or "+0.698 pp ± 0.272 pp"; None without a test."""
    if row.ci is None:
        return None
    half = (row.ci[1] - row.ci[0]) / 2
    if row.kind == "speed" and row.worse_rel is not None:
        moved = row.delta_rel if row.delta_rel is not None else row.worse_rel  # as the Change column shows it
        return f"{abs(moved):.1%} {'slower' if row.worse_rel > 0 else 'faster'} ± {half:.1%}"
    if row.kind == "accuracy" and row.delta_abs is not None:
        return f"{row.delta_abs * 100:+.3f} pp ± {half * 100:.3f} pp"
    return None


def _levels(row: Row, stats: Statistics | None) -> tuple[float | None, float | None]:
    """The FAIL α and the WARN q level of the row's family, as the report's statistics record them."""
    if stats is None:
        return None, None
    if row.kind == "speed":
        return stats.speed_alpha, stats.speed_warn_q if stats.speed_warn_q is not None else stats.warn_q
    return stats.quality_alpha, stats.warn_q


def _against(value: float | None, level: float | None, name: str) -> str:
    """"Holm p 0.0001 ≤ α 0.005": the number that decided, against its level where the report records it."""
    if value is None:
        return ""
    if level is None:
        return f"{name} {fmt_p(value)}"
    return f"{name} {fmt_p(value)} {'≤' if value <= level else '>'} {level:g}"


def _noise(row: Row) -> str:
    return "run-to-run noise" if row.kind == "speed" else "transcript churn"


def _worse(row: Row) -> str:
    return "slower" if row.kind == "speed" else "more errors"


def _fail_line(row: Row, stats: Statistics | None) -> str:
    alpha, _ = _levels(row, stats)
    size = _size(row)
    if row.few_sessions:
        text = _few_sessions(row)
    elif size is not None:
        text = f"{_worse(row)} beyond {_noise(row)}: {size}, {_against(row.p_adjusted, alpha, 'Holm p')}"
    elif row.basis is Basis.FALLBACK and row.delta_abs is not None and row.tolerance is not None:
        text = (f"{row.delta_abs * 100:+.3f} pp, over the maintainers' tolerance of +{row.tolerance * 100:g} pp "
                "(no per-utterance pairing)")
    else:
        text = "worse beyond the rule's levels"
    return f"{text}; if intended, accept it, else re-measure (how: below)"


def _few_sessions(row: Row) -> str:
    """Why the few-session rule (gate.judging.few_sessions) FAILed a row whose Holm p could not reach α."""
    crossed = f"{row.new_catastrophic} sessions newly over 50% errors" if row.new_catastrophic else "a large rise"
    return (f"more errors on few sessions: {crossed} on a set of {row.candidate.n_samples} "
            f"(Δ {(row.delta_abs or 0) * 100:+.2f} pp), and the paired test agrees (p {fmt_p(row.p_value)})")


def _warn_head(row: Row, stats: Statistics | None) -> str:
    """The WARN's cause and the number that decided it."""
    alpha, warn_q = _levels(row, stats)
    size = _size(row)
    cause = row.warn_cause
    if cause is WarnCause.NEW_CATASTROPHIC:
        n = row.new_catastrophic
        found = (f"{n} newly catastrophic utterance{'s' if n != 1 else ''}: over 50% errors in every candidate run "
                 "and in no baseline run")
        return found + (f"; the whole set: {size}, p {fmt_p(row.p_value)}" if size else "")
    if cause is WarnCause.UNSTABLE:
        kinds = "; ".join(CANNOT_FAIL[c] for c in row.cannot_fail if c in UNSTABLE)
        return f"unstable runs: {kinds or 'the candidate runs disagree'}" + (
            f"; {size}, p {fmt_p(row.p_value)}" if size else "")
    if cause is WarnCause.OVER_FLOOR and row.worse_rel is not None:
        moved = row.delta_rel if row.delta_rel is not None else row.worse_rel
        return (f"{abs(moved):.1%} slower by the ratio of means, at or above the {row.tolerance or 0:.0%} floor, "
                "with no noise estimate to test it against")
    if cause is None:  # a report written before causes were kept (not said): its notes say what it recorded
        return "; ".join(([f"{size}, p {fmt_p(row.p_value)}"] if size else []) + list(row.notes)) or "cause not recorded"
    if size is None:
        return "possibly worse"
    text = f"possibly {_worse(row)} beyond {_noise(row)}: {size}, {_against(row.q_value, warn_q, 'BH q')}"
    if not row.cannot_fail and row.p_adjusted is not None and alpha is not None and row.p_adjusted > alpha:
        text += f"; no FAIL: {_against(row.p_adjusted, alpha, 'Holm p')}"
    elif not row.cannot_fail:
        text += "; no FAIL: short of the floor"
    return text


def _blind(row: Row) -> str:
    if not row.blind or row.mde is None:
        return ""
    below = f"{row.mde:.1%}" if row.kind == "speed" else f"{row.mde * 100:.2g} pp"
    return f"blind at this noise: a worsening below {below} is caught less than 80% of the time"


def cause_line(row: Row, stats: Statistics | None = None) -> str:
    """The first visible line of a row that did not pass (issue 49): its real cause, the adjusted p or q that
    decided it, and the step a maintainer takes next (a FAIL: how to accept it, how to re-measure)."""
    if row.verdict in (Verdict.INCOMPLETE, Verdict.NOT_COMPARABLE):
        return statistics_line(row)
    if row.verdict is Verdict.FAIL:
        return "; ".join(p for p in (_fail_line(row, stats), _blind(row)) if p)
    if row.verdict is Verdict.WARN:
        step = (_WARN_STEP.get(row.warn_cause) if row.warn_cause is not None else None) or row_step(row)
        if step is None and row.warn_cause is WarnCause.BEYOND_NOISE:
            step = next_step(NextStep.MORE_RUNS, max(len(row.baseline.values), len(row.candidate.values)))
        parts = (_warn_head(row, stats), cannot_fail(row), _blind(row), f"next: {step}" if step else "")
        return "; ".join(p for p in parts if p)
    return pass_line(row, stats)


def pass_line(row: Row, stats: Statistics | None = None) -> str:
    """A passing row in words: what moved, within what noise, and the q that kept it from a WARN."""
    _, warn_q = _levels(row, stats)
    size = _size(row)
    if row.basis is Basis.IDENTICAL:
        return "identical errors on every utterance"
    if size is None:
        return statistics_line(row)
    text = f"within {_noise(row)}: {size}, {_against(row.q_value, warn_q, 'BH q')}"
    return "; ".join(p for p in (text, cannot_fail(row), _blind(row)) if p)


def statistics_line(row: Row) -> str:
    """Why a row got its verdict, the statistics behind it: the notes, then the method and what it rests on."""
    if row.verdict is Verdict.INCOMPLETE:
        return "not tested: incomplete coverage (see Coverage)"
    if row.verdict is Verdict.NOT_COMPARABLE:  # its test result would not mean anything
        kinds = ", ".join(env_kind(k) for k in row.differs)
        return f"{kinds + ' differ' if kinds else 'the setups differ'} (see Environment)"
    parts = list(row.notes)  # blind or not is the cause line's (cause_line)
    method = row.method
    if row.p_adjusted is not None:
        method += ", Holm"
    parts.append(method)
    if row.n_worse is not None and (row.n_worse or row.n_better):
        parts.append(f"{row.n_worse} worse, {row.n_better} better")
    if row.basis is Basis.PAIRED and row.floor_abs is not None and row.floor_rel is not None:
        parts.append(f"floors {row.floor_abs * 100:.2f} pp and {row.floor_rel:.0%}")
    elif row.basis is Basis.CALIBRATED and row.floor_rel is not None:
        parts.append(f"floor {row.floor_rel:.0%}")
    elif row.tolerance is not None and row.basis is not Basis.UNCALIBRATED:  # its method names the floor already
        parts.append(f"tolerance {row.tolerance * 100:.2f} pp" if row.kind == "accuracy" else f"tolerance {row.tolerance:.0%}")
    return "; ".join(parts)
