"""The noise the gate measures, as the records its files store: an A/A `Calibration` (run-to-run σ of
ln(metric), within and across jobs), an accuracy measure's `Dispersion` (over-dispersion from A/A arms; both
in a baseline file, gate.formats.baseline_record) and a nested study's `Components` (σ per level and GPU seconds
per start and pass; gate.formats.components).

Plain records that import nothing else of the gate: the formats and readers that store and load them do not
depend on the statistics that compute them (gate.stats.performance.calibrate, gate.stats.overdispersion,
gate.stats.nested), and the statistics import this module only (docs/design.md §Layers).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Sequence

# The least σ a baseline file may hold (its reader refuses less): a metric constant across the A/A runs
# measures σ 0, which is written as this floor, so calibrate never writes a value its reader refuses.
SIGMA_FLOOR = 1e-4

# Fewer replicates than this measure no spread a verdict may rest on (issue 49: one count, written once): the fewest
# runs an arm needs before one can be told to be wild (of two, neither is), the fewest A/A arms an utterance must
# change in to co-move, the fewest duet sessions a FAIL needs (2 df). docs/statistics.md, "Rule ablation".
FEWEST_RUNS = 3
# Below this many degrees of freedom a calibration is not used, nor a row's own runs as A/A evidence: one A/A pair,
# or two sides, of FEWEST_RUNS runs each (3 + 3: 4 df).
MIN_CALIBRATION_DF = 2 * (FEWEST_RUNS - 1)


def sigma_usable(sigma: Any, df: Any) -> Any:
    """Whether a σ may be used: finite, on MIN_CALIBRATION_DF degrees of freedom or more. Elementwise on numpy arrays
    (the power benchmark's batches) as on numbers, without importing numpy."""
    return (df >= MIN_CALIBRATION_DF) & (abs(sigma) < math.inf)


def churn_widens(ss_total: Any, ss_units: Any, df: Any) -> Any:
    """Whether runs' correlated churn widens a paired accuracy test: their totals vary more than their utterances'
    variances allow, on some degrees of freedom (`Dispersion.widens`). Elementwise on arrays as on numbers."""
    return (df > 0) & (ss_total > ss_units)


def churn_excess(ss_total: Any, ss_units: Any, df: Any) -> Any:
    """Σ_{i≠j} Cov(e_i, e_j) per run: what correlated churn adds to one run's total error variance (0 without df).
    `Dispersion.excess`, elementwise on arrays as on numbers (the power benchmark's B A/Bs)."""
    return (ss_total - ss_units) * (df != 0) / (df + (df == 0))


@dataclass(frozen=True)
class Calibration:
    """Run-to-run noise of ln(metric) for one workload × metric, from same-commit (A/A) repeats.

    Within-job noise: the pooled within-arm SD (sigma, df). Between-job noise: the sum of squared log-mean
    differences of A/A pairs whose two arms ran in different jobs, about zero (cross_sum_sq over
    cross_diffs differences; cross_sum_h = Σ(1/n_a + 1/n_b) of those pairs). Runs flagged by
    gate.stats.outliers are left out of both, as `compare` leaves them out.

    The within-job part may also pool the nightly jobs' own runs (gate.history.noise: each night's scored
    runs are one more arm of the same commit): sigma, df, groups and set_aside are then the totals, and
    the night_* fields say how much of each came from nights, so the A/A part can be recovered
    (`without_nights`) and the nights' part replaced without touching the pairs'. The cross-job fields are
    the pairs' alone: a night is one job and says nothing about the job effect.
    """

    sigma: float  # pooled within-arm SD of ln(value)
    df: int  # Σ(n_g − 1)
    groups: int  # arms pooled (2 per A/A pair)
    delta_sd: float | None = None  # RMS of all pairs' log-mean differences about zero (shown; >= 2 pairs)
    delta_df: int | None = None
    within_pairs: int = 0  # pairs whose two arms ran in one job
    cross_pairs: int = 0  # pairs whose two arms ran in different jobs
    cross_diffs: int = 0  # cross-job differences usable here (complete arms)
    cross_sum_sq: float = 0.0
    cross_sum_h: float = 0.0
    set_aside: int = 0  # runs flagged and left out
    nights: int = 0  # of `groups`: nights pooled in (one arm each)
    night_df: int = 0  # of `df`: degrees of freedom from those nights
    night_sum_sq: float = 0.0  # of sigma²·df: their sum of squares
    night_set_aside: int = 0  # of `set_aside`: their runs left out

    @property
    def usable(self) -> bool:
        return bool(sigma_usable(self.sigma, self.df))

    @property
    def pairs(self) -> int:
        """Independent A/A pairs behind this calibration (within one job or across jobs)."""
        return self.within_pairs + self.cross_pairs

    @property
    def pair_df(self) -> int:
        """Degrees of freedom from A/A pairs (the rest are the nights')."""
        return self.df - self.night_df

    def without_nights(self) -> "Calibration | None":
        """The A/A pairs' part alone; None when the nights are all there is."""
        if self.night_df == 0 and self.nights == 0:
            return self
        df = self.df - self.night_df
        if df <= 0:
            return None
        squares = max(self.sigma ** 2 * self.df - self.night_sum_sq, 0.0)
        return replace(self, sigma=math.sqrt(squares / df), df=df, groups=max(self.groups - self.nights, 1),
                       set_aside=max(self.set_aside - self.night_set_aside, 0), nights=0, night_df=0,
                       night_sum_sq=0.0, night_set_aside=0)

    def to_dict(self) -> dict[str, Any]:
        data = {"sigma": max(self.sigma, SIGMA_FLOOR), "df": self.df, "groups": self.groups, "delta_sd": self.delta_sd,
                "delta_df": self.delta_df, "within_pairs": self.within_pairs, "cross_pairs": self.cross_pairs,
                "cross_diffs": self.cross_diffs, "cross_sum_sq": self.cross_sum_sq,
                "cross_sum_h": self.cross_sum_h, "set_aside": self.set_aside}
        if self.nights or self.night_df:
            data.update(nights=self.nights, night_df=self.night_df, night_sum_sq=self.night_sum_sq,
                        night_set_aside=self.night_set_aside)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Calibration":
        """Files written before cross-job pairs were recorded read as within-job only (no cross-job spread)."""
        return cls(sigma=float(data["sigma"]), df=int(data["df"]), groups=int(data["groups"]),
                   delta_sd=None if data.get("delta_sd") is None else float(data["delta_sd"]),
                   delta_df=None if data.get("delta_df") is None else int(data["delta_df"]),
                   within_pairs=int(data.get("within_pairs", 0)), cross_pairs=int(data.get("cross_pairs", 0)),
                   cross_diffs=int(data.get("cross_diffs", 0)), cross_sum_sq=float(data.get("cross_sum_sq", 0.0)),
                   cross_sum_h=float(data.get("cross_sum_h", 0.0)), set_aside=int(data.get("set_aside", 0)),
                   nights=int(data.get("nights", 0)), night_df=int(data.get("night_df", 0)),
                   night_sum_sq=float(data.get("night_sum_sq", 0.0)),
                   night_set_aside=int(data.get("night_set_aside", 0)))


@dataclass(frozen=True)
class Components:
    """σ's of ln(metric) per level, and GPU seconds per start (everything but the timed passes) and per pass."""
    sigma_start: float
    sigma_pass: float
    start_cost_s: float
    pass_cost_s: float

    def __post_init__(self) -> None:
        if min(self.sigma_start, self.sigma_pass) < 0 or self.start_cost_s <= 0 or self.pass_cost_s <= 0:
            raise ValueError("components: σ's must be ≥ 0 and costs > 0")

    def start_mean_sigma(self, passes: int) -> float:
        return math.sqrt(self.sigma_start ** 2 + self.sigma_pass ** 2 / passes)

    def sigma_run(self) -> float:
        """Today's run-to-run σ: one start, one pass."""
        return self.start_mean_sigma(1)


@dataclass(frozen=True)
class Dispersion:
    """Over-dispersion of one accuracy measure, from A/A arms (pooled over a model's workloads by `pooled`)."""

    ss_total: float  # Σ_arms (R − 1)·Var_r(Σ_i e_ir), over the utterances not in `comoving`
    ss_units: float  # Σ_arms (R − 1)·Σ_i Var_r(e_ir), the same
    df: int  # Σ_arms (R − 1)
    arms: int
    comoving: tuple[str, ...] = ()  # utterance ids that churned together in the A/A runs (`comoving`)
    # The co-moving group's own spread (issue 36): Σ_arms (R − 1)·Var_r(Σ_{i in group} e_ir) and its df Σ(R − 1);
    # 0 and 0 in a record written before it was kept (the group's row then WARNs at most)
    group_ss: float = 0.0
    group_df: int = 0

    @property
    def identical(self) -> bool:
        """Every A/A arm's runs gave the same errors on every utterance: decoding is deterministic."""
        return self.ss_units == 0 and self.ss_total == 0

    @property
    def phi(self) -> float:
        return self.ss_total / self.ss_units if self.ss_units > 0 else 1.0

    @property
    def excess(self) -> float:
        """Σ_{i≠j} Cov(e_i, e_j) per run: what correlated churn adds to one run's total error variance."""
        return float(churn_excess(self.ss_total, self.ss_units, self.df))

    @property
    def widens(self) -> bool:
        return bool(churn_widens(self.ss_total, self.ss_units, self.df))

    def to_dict(self) -> dict[str, Any]:
        return {"ss_total": self.ss_total, "ss_units": self.ss_units, "df": self.df, "arms": self.arms,
                "phi": self.phi, "identical": self.identical, "comoving": list(self.comoving),
                "group_ss": self.group_ss, "group_df": self.group_df}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Dispersion":
        return cls(ss_total=float(data["ss_total"]), ss_units=float(data["ss_units"]), df=int(data["df"]),
                   arms=int(data["arms"]), comoving=tuple(str(i) for i in data.get("comoving", ())),
                   group_ss=float(data.get("group_ss", 0.0)), group_df=int(data.get("group_df", 0)))

    @classmethod
    def pooled(cls, items: Sequence["Dispersion | None"]) -> "Dispersion | None":
        found = [d for d in items if d is not None]
        if not found:
            return None
        return cls(ss_total=sum(d.ss_total for d in found), ss_units=sum(d.ss_units for d in found),
                   df=sum(d.df for d in found), arms=sum(d.arms for d in found),
                   comoving=tuple(dict.fromkeys(i for d in found for i in d.comoving)),
                   group_ss=sum(d.group_ss for d in found), group_df=sum(d.group_df for d in found))


@dataclass(frozen=True)
class DuetComponents:
    """What a duet A/A measured: σ of a session's difference, the block pairs' spread within a session, a session's
    GPU seconds."""

    session_sd: float
    session_cost_s: float
    block_sd: float = math.nan

    def __post_init__(self) -> None:
        if not self.session_sd >= 0 or not self.session_cost_s > 0:
            raise ValueError("duet components: σ of a session's difference must be ≥ 0 and a session's cost > 0")
