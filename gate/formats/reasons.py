"""Why a row got its verdict, and why a first look extended a model, as codes (issue 49): set where the rule
decides (gate.judging), kept on the report's Row, and put into words once, in gate.render.reasons. Nothing reads a
note's text to learn any of this."""
from __future__ import annotations

from enum import StrEnum


class CannotFail(StrEnum):
    """Why a row can WARN at most: its evidence could not carry a FAIL, whatever the change."""

    # speed: the noise estimate
    NO_CALIBRATION = "no_calibration"  # across jobs without an A/A calibration
    NO_SIGMA = "no_sigma"  # in one job, fewer than two runs in every arm
    FEW_SIGMA_DF = "few_sigma_df"  # σ has fewer degrees of freedom than a FAIL needs (MIN_CALIBRATION_DF)
    SINGLE_RUN = "single_run"  # a side has one run
    ACROSS_JOBS = "across_jobs"  # a whole job running slower cannot be told from a regression
    FEW_CROSS_PAIRS = "few_cross_pairs"  # across jobs: fewer cross-job A/A pairs than advised
    CALIBRATION_STALE = "calibration_stale"  # across jobs: measured on another GPU, driver or package set
    SPREAD_ABOVE_CALIBRATION = "spread_above_calibration"  # across jobs: the sides' own spread is larger
    # speed: the runs
    BETTER_RUN_SET_ASIDE = "better_run_set_aside"  # a candidate run better than the others was set aside
    WORSE_RUNS_SET_ASIDE = "worse_runs_set_aside"  # unstable: candidate runs set aside as worse
    RUNS_SPLIT = "runs_split"  # no longer given (issue 49's third ablation pass); older reports still read it
    INTERMITTENT = "intermittent"  # unstable: some candidate runs far worse than the baseline's median, others not
    OWN_RUNS_DO_NOT_CONFIRM = "own_runs_do_not_confirm"  # the A/B's own runs alone do not reach the level
    SLOWER_ALIKE = "slower_alike"  # candidate runs with every workload slower alike: a whole-server slowdown
    # accuracy: how utterances churn
    NO_CHURN_RECORD = "no_churn_record"  # no A/A dispersion record and too few runs to measure churn from
    GROUP_SPREAD_UNRECORDED = "group_spread_unrecorded"  # a co-moving group whose calibration predates its spread
    RUNS_EXACT_P = "runs_exact_p"  # the runs' exact permutation p is above the row's level
    HIDDEN_GROUP = "hidden_group"  # utterances churn together; a group could split the sides like a change
    # speed, --design duet: the session is the unit
    FEW_DUET_SESSIONS = "few_duet_sessions"  # fewer duet sessions than a FAIL needs (gate.formats.noise_model.FEWEST_RUNS)


UNSTABLE = (CannotFail.WORSE_RUNS_SET_ASIDE, CannotFail.RUNS_SPLIT, CannotFail.INTERMITTENT)  # the kinds a report may name


class WarnCause(StrEnum):
    """What made a row WARN (None on a row that did not)."""

    BEYOND_NOISE = "beyond_noise"  # BH q at most the WARN level, with half the floor
    UNSTABLE = "unstable"  # the candidate's runs are unstable: WARN at least
    NEW_CATASTROPHIC = "new_catastrophic"  # a newly catastrophic utterance: WARN at least
    OVER_FLOOR = "over_floor"  # no noise estimate: the ratio of means reaches the floor


class ExtendCause(StrEnum):
    """Why `gate run`'s first look extends a model with 3+3 more runs (gate.judging.rule.extension), per row."""

    NEAR_FLOOR = "near_floor"  # BH q within its family at most looks.EXTEND_Q, with half the floor
    BLIND = "blind"  # the first look could not have seen a change of three times the floor (SENSITIVITY_FACTOR)
    UNSTABLE = "unstable"  # a candidate run set aside as worse: more runs tell a wild run from an intermittent one
