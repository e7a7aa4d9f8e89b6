"""Whether a gated row may FAIL, over B comparisons at once (issue 49): the reasons it can WARN at most, each as a
mask (B, rows) under its typed reason (gate.formats.reasons.CannotFail). `compare` and its row tests
(gate.judging.speed_rows, accuracy_rows) call these with B = 1 and keep the reasons and their notes on the row; the
power benchmark calls them with thousands (benchmarks/power/simulate.py) and keeps only whether any holds."""
from __future__ import annotations

from dataclasses import dataclass
from functools import reduce

import numpy as np

from gate.formats.reasons import CannotFail
from gate.stats.looks import TWO_LOOKS_ALPHA
from gate.stats.overdispersion import RUN_LEVEL_P, comovement_p, hidden_split_p
from gate.stats.speed import ADVISED_PAIRS


def own_runs_level(alpha: float, rows: int, bonferroni: bool) -> float:
    """The level the A/B's own runs alone must reach for a speed FAIL: the look's α, or α over the model's gated speed
    rows where those runs are few (`gate run`'s first look: Thresholds.own_runs_bonferroni)."""
    return alpha / rows if bonferroni else alpha


def speed_noise_blockers(has_noise: np.ndarray, usable: np.ndarray, fewest_runs: np.ndarray, cross_pairs: np.ndarray,
                         *, cross_job: bool) -> dict[CannotFail, np.ndarray]:
    """A speed row's noise estimate and runs (B, rows): no σ (no calibration across jobs), σ on too few df
    (`usable`: MIN_CALIBRATION_DF), a side of one run; across jobs always, for a whole job running slower (another
    host, a busy neighbour) moves every run of it alike, so one job against another cannot tell it from a regression
    (with 5% of jobs 10% slow, 11% of no-op nights FAILed: benchmarks/verdict_power.py, m-cross-noop-slowjob); the
    in-job A/B cancels it. Across jobs fewer cross-job A/A pairs than advised is named too."""
    has_noise = np.asarray(has_noise, dtype=bool)
    return {CannotFail.NO_CALIBRATION: ~has_noise & cross_job, CannotFail.NO_SIGMA: ~has_noise & (not cross_job),
            CannotFail.FEW_SIGMA_DF: has_noise & ~np.asarray(usable, dtype=bool),
            CannotFail.SINGLE_RUN: np.asarray(fewest_runs) < 2, CannotFail.ACROSS_JOBS: np.full(has_noise.shape, cross_job),
            CannotFail.FEW_CROSS_PAIRS: has_noise & cross_job & (np.asarray(cross_pairs) < ADVISED_PAIRS)}


def speed_run_blockers(favourable_set_aside: np.ndarray, worse_set_aside: np.ndarray,
                       intermittent: np.ndarray) -> dict[CannotFail, np.ndarray]:
    """What the shift test saw in a speed row's runs (gate.stats.speed.shift_test): a better candidate run set aside,
    and, named once in this order, the candidate's runs unstable (reasons.UNSTABLE: the row WARNs at least)."""
    worse = np.asarray(worse_set_aside, dtype=bool)
    return {CannotFail.BETTER_RUN_SET_ASIDE: np.asarray(favourable_set_aside, dtype=bool),
            CannotFail.WORSE_RUNS_SET_ASIDE: worse, CannotFail.INTERMITTENT: np.asarray(intermittent, dtype=bool) & ~worse}


def speed_confirmation_blockers(p: np.ndarray, p_own: np.ndarray, alike: np.ndarray, *, alpha: float,
                                own_level: float | np.ndarray,
                                has_own: np.ndarray | bool = True) -> dict[CannotFail, np.ndarray]:
    """A speed row whose p reaches α and whose runs do not carry it: the A/B's own runs alone (`p_own`, NaN: no
    own-runs σ; `has_own`: where there are such runs) do not reach `own_level` (a calibration that understates σ
    cannot carry a FAIL the runs do not show), or candidate runs have every workload slower alike (`alike`: an escaped
    slow mode, gate.stats.slowmode.fail_blocker)."""
    reached = np.asarray(p, dtype=float) <= alpha
    return {CannotFail.OWN_RUNS_DO_NOT_CONFIRM: reached & ~(np.asarray(p_own, dtype=float) <= own_level) & has_own,
            CannotFail.SLOWER_ALIKE: reached & np.asarray(alike, dtype=bool)}


def cannot_fail(*found: dict[CannotFail, np.ndarray]) -> np.ndarray:
    """Where any of these reasons holds: the row can WARN at most."""
    return np.asarray(reduce(np.logical_or, [mask for reasons in found for mask in reasons.values()]))


@dataclass(frozen=True)
class HiddenGroups:
    p: np.ndarray  # (B,) do utterances churn together in the model's own runs (overdispersion.comovement_p)
    split: np.ndarray  # (B, rows) how likely a group that stayed put within each side splits them (hidden_split_p)
    blockers: dict[CannotFail, np.ndarray]  # {HIDDEN_GROUP: (B, rows)}
    exact: np.ndarray  # (B, rows) rows whose FAIL also needs the runs' exact permutation p at their level


def hidden_groups(ss_total: np.ndarray, ss_units: np.ndarray, df: np.ndarray, own: np.ndarray, base_runs: np.ndarray,
                  cand_runs: np.ndarray, *, alpha: float) -> HiddenGroups:
    """One model's accuracy rows judged on each side's own runs (B, rows; `own`: those whose runs are the churn
    evidence, their sums pooled by comovement_p): where the runs show utterances churning together (p at most
    RUN_LEVEL_P), a group that stayed put within each side could split them like a real change. Where that is more
    likely than α the row cannot FAIL (HIDDEN_GROUP); where it is not, its FAIL also needs the runs' exact p
    (`exact`: gate.judging.compare._hidden_groups says why)."""
    own = np.asarray(own, dtype=bool)
    p = comovement_p(np.where(own, ss_total, 0.0), np.where(own, ss_units, 0.0), df)
    seen = (p <= RUN_LEVEL_P)[..., None] & own
    split = np.vectorize(hidden_split_p, otypes=[float])(base_runs, cand_runs)
    fails = split <= alpha
    return HiddenGroups(p=p, split=np.broadcast_to(split, seen.shape), blockers={CannotFail.HIDDEN_GROUP: seen & ~fails},
                        exact=seen & fails)


def churn_blockers(recorded: np.ndarray, churn_possible: np.ndarray, own_measured: np.ndarray) -> dict[CannotFail, np.ndarray]:
    """An accuracy row (B, rows) without an A/A dispersion record (`recorded`) whose runs may churn (`churn_possible`:
    a side of one run, or same-commit runs that differ) and too few of them to measure the churn from
    (`own_measured`: gate.stats.overdispersion.own_runs): the sign-flip's independence is an assumption there."""
    return {CannotFail.NO_CHURN_RECORD: ~np.asarray(recorded, dtype=bool) & np.asarray(churn_possible, dtype=bool)
            & ~np.asarray(own_measured, dtype=bool)}


def quality_weights(n: np.ndarray, group_n: np.ndarray, group_tested: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each accuracy measure (B, measures) holds weight 1 in its model's family; where its co-moving group has its own
    row (`group_tested`, of `group_n` of its `n` utterances) the weight is split between the rest and the group by
    their numbers of utterances. Returns (the measure's row's weight, its group row's)."""
    n, group_n = np.asarray(n, dtype=float), np.asarray(group_n, dtype=float)
    split = np.asarray(group_tested, dtype=bool) & (n > group_n) & (group_n > 0)
    with np.errstate(all="ignore"):
        return np.where(split, (n - group_n) / n, 1.0), np.where(split, group_n / n, 0.0)


@dataclass(frozen=True)
class ExactP:
    level: np.ndarray  # (B, rows) the level the runs' exact permutation p must reach
    blockers: dict[CannotFail, np.ndarray]  # {RUNS_EXACT_P: (B, rows)}


def exact_p_blockers(p_exact: np.ndarray, weight: np.ndarray, total: np.ndarray | float, own_runs: np.ndarray, *,
                     alpha: float) -> ExactP:
    """Rows (B, rows) whose FAIL also needs the runs' exact permutation p (`p_exact`; NaN where none is needed: a
    co-moving group's row, a row on its own runs that churn together) at the row's own Holm first step,
    α·weight/total (`total`: the weight its model's family holds); a row on its own runs (`own_runs`) at most at
    what `gate run`'s two looks spend (gate.judging.compare._hidden_groups says why). Above it: WARN at most."""
    level = np.where(own_runs, min(alpha, TWO_LOOKS_ALPHA), alpha) * np.asarray(weight, dtype=float) / total
    return ExactP(level=level, blockers={CannotFail.RUNS_EXACT_P: np.asarray(p_exact, dtype=float) > level})
