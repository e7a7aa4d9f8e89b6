"""The accuracy null when decoding is not deterministic (docs/statistics.md).

The paired sign-flip test assumes utterances flip independently: under H0 it takes Var(Σd_i) = Σd_i².
When nondeterminism is run-level (batch composition, kernels), many utterances move together and the
variance of the total is larger by the utterances' covariances. They are measured where only noise is
at work, in the runs of same-commit A/A arms of the same workload: per arm with R runs,

    excess per run = Var_r(Σ_i e_ir) − Σ_i Var_r(e_ir)     (0 for independent flips; φ = ratio of the two)

pooled over arms with Σ(R − 1) degrees of freedom. The excess adds to the null variance of Σd, scaled
like any per-run variance by a = 1/R_base + 1/R_cand:

    z = Σd / sqrt(U + a·excess),   df by Satterthwaite (U counted as known),

and `compare` refers z to that t distribution when the excess is positive, keeping the exact sign-flip
p otherwise. U is the utterances' own variance of Σd. In an interleaved A/B (one job, both sides with two
runs or more) it is measured from the runs themselves, U = Σ_i (s²_i,base/R_base + s²_i,cand/R_cand)
(`run_variance`), which a real change does not inflate; otherwise it is the sign-flip's Σd², which also
absorbs what differs between two jobs' outputs, but grows with a real change (d_i² of every changed
utterance): under the benchmark's hostile model, +0.5 pp was caught 90% of the time with Σd², 96% with U
from the runs (and the excess's smaller df, `excess_df`). The excess is added rather than multiplied: a real diffuse change also puts d_i² into Σd²,
and multiplying it by φ would widen the test by the effect itself. Arms whose runs all gave identical errors
record that transcripts are deterministic; with no nondeterminism there is nothing to widen.

Co-moving utterances (issue 21): when a group of utterances gains and loses errors together from run to run
(a batch composition that tips all of them), the widened test pays for the whole group's swing on every
row: under the benchmark's hostile model 33 of 1,088 utterances moving together hid a +0.15 pp change
(WARN or FAIL 8%). `comoving` finds such utterances in the A/A runs, where only noise is at work, and
`from_arms` records them and measures the dispersion of the rest; `compare` tests the rest, holds the floors
to the rest's Δ, and says how many it set aside. What the group hides is then its own 3%, not the whole test. Chosen from A/A runs, never
from the A/B being judged, the set cannot bias the test; an utterance wrongly grouped only costs its share of
power, and one missed stays in the rest, whose dispersion record still widens the test for it.

Each side's own runs (issue 39): without an A/A record, a side that scored the same commit R times is itself an
A/A arm of R runs, and two such sides give Σ(R − 1) degrees of freedom (4 for the runbook's 3 + 3). A real change
moves every run of a side alike, so it does not inflate these spreads: `own_runs` measures the excess from the
two sides being judged, and with OWN_MIN_DF or more the row may FAIL on it. Too few arms to find co-moving
utterances (COMOVE_MIN_ARMS): the widened test pays for any group's swing, which costs power, not validity.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

# An utterance co-moves when its errors changed within at least COMOVE_MIN_ARMS arms and at least
# COMOVE_MIN_GROUP − 1 other such utterances' run-to-run deviations correlate with its own at COMOVE_MIN_CORR or
# more. Two independent coin-flip churners reach 0.8 over 12 degrees of freedom (3 A/A pairs) about once in
# 1,700 pairs, so four such partners by chance are rare (0.06 utterances a set with 435 churners of 1,088, 50
# sets); the benchmark's hostile group of 33 is found whole unless its swing changed within fewer than 3 of the
# 6 arms (about 4% of calibrations). Without the arms rule, utterances that changed once in all the runs paired
# up whenever they changed in the same run (200 such of 1,088 were all "co-moving"). A group over
# COMOVE_MAX_SHARE of the set is not set aside: the run-level effect is then the set's, and the widened test is
# the answer.
COMOVE_MIN_CORR = 0.8
COMOVE_MIN_GROUP = 5
COMOVE_MIN_ARMS = 3
COMOVE_MAX_SHARE = 0.2
# A row may FAIL on its two sides' own runs as A/A evidence from this many degrees of freedom: 3 + 3 runs (the
# runbook's), not 2 + 2 (two df: an excess estimated that loosely leaves the widened t with almost no df).
OWN_MIN_DF = 4


@dataclass(frozen=True)
class Dispersion:
    """Over-dispersion of one accuracy measure, from A/A arms (pooled over a model's workloads by `pooled`)."""

    ss_total: float  # Σ_arms (R − 1)·Var_r(Σ_i e_ir), over the utterances not in `comoving`
    ss_units: float  # Σ_arms (R − 1)·Σ_i Var_r(e_ir), the same
    df: int  # Σ_arms (R − 1)
    arms: int
    comoving: tuple[str, ...] = ()  # utterance ids that churned together in the A/A runs (`comoving`)

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
        return (self.ss_total - self.ss_units) / self.df if self.df else 0.0

    @property
    def excess_df(self) -> float:
        """Degrees of freedom of `excess` as a chi-square: ss_total's df shrunk by how much of it the subtracted
        units' variance was, df·(1 − 1/φ)² (its variance is that of ss_total, relative to a smaller mean)."""
        return float(excess_df(self.ss_total, self.ss_units, self.df))

    @property
    def widens(self) -> bool:
        return not self.identical and self.df > 0 and self.excess > 0

    def to_dict(self) -> dict[str, Any]:
        return {"ss_total": self.ss_total, "ss_units": self.ss_units, "df": self.df, "arms": self.arms,
                "phi": self.phi, "identical": self.identical, "comoving": list(self.comoving)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Dispersion":
        return cls(ss_total=float(data["ss_total"]), ss_units=float(data["ss_units"]), df=int(data["df"]),
                   arms=int(data["arms"]), comoving=tuple(str(i) for i in data.get("comoving", ())))

    @classmethod
    def pooled(cls, items: Sequence["Dispersion | None"]) -> "Dispersion | None":
        found = [d for d in items if d is not None]
        if not found:
            return None
        return cls(ss_total=sum(d.ss_total for d in found), ss_units=sum(d.ss_units for d in found),
                   df=sum(d.df for d in found), arms=sum(d.arms for d in found),
                   comoving=tuple(dict.fromkeys(i for d in found for i in d.comoving)))


def comoving(arms: Sequence[np.ndarray]) -> np.ndarray:
    """Which utterances churned together in same-commit runs: (N,) bool. `arms` are (R, N) error counts with
    the same utterance in each column; arms with fewer than two runs add nothing (see COMOVE_MIN_CORR)."""
    used = [np.asarray(e, dtype=float) for e in arms if np.shape(e)[0] >= 2]
    n = np.shape(arms[0])[1] if len(arms) else 0
    found = np.zeros(n, dtype=bool)
    if len(used) < COMOVE_MIN_ARMS:
        return found
    deviations = np.concatenate([e - e.mean(axis=0) for e in used])  # (Σ R, N), each arm about its own mean
    norm = np.sqrt((deviations ** 2).sum(axis=0))
    arms_changed = np.sum([(e != e[:1]).any(axis=0) for e in used], axis=0)
    churning = np.flatnonzero(arms_changed >= COMOVE_MIN_ARMS)
    if churning.size < COMOVE_MIN_GROUP:
        return found
    unit = deviations[:, churning] / norm[churning]
    partners = ((unit.T @ unit) >= COMOVE_MIN_CORR).sum(axis=1) - 1  # less itself
    found[churning[partners >= COMOVE_MIN_GROUP - 1]] = True
    return found if found.sum() <= COMOVE_MAX_SHARE * n else np.zeros(n, dtype=bool)


def from_arms(arms: Sequence[np.ndarray], ids: Sequence[str] | None = None) -> Dispersion | None:
    """Arms of (R, N) error counts (runs × utterances); arms with fewer than two runs add nothing. With `ids`
    (the columns' utterance ids, the same in every arm) the utterances that co-move are found, named in the
    record and left out of its sums (`comoving`)."""
    rest = np.ones(np.shape(arms[0])[1] if len(arms) else 0, dtype=bool)
    named: tuple[str, ...] = ()
    if ids is not None and len(arms):
        together = comoving(arms)
        rest, named = ~together, tuple(ids[int(k)] for k in np.flatnonzero(together))
    ss_total = ss_units = 0.0
    df = used = 0
    for errors in arms:
        e = np.atleast_2d(np.asarray(errors, dtype=float))
        if e.shape[0] < 2:
            continue
        e = e[:, rest] if ids is not None else e
        ss_total += float(e.sum(axis=1).var(ddof=1)) * (e.shape[0] - 1)
        ss_units += float(e.var(axis=0, ddof=1).sum()) * (e.shape[0] - 1)
        df += e.shape[0] - 1
        used += 1
    return Dispersion(ss_total=ss_total, ss_units=ss_units, df=df, arms=used, comoving=named) if used else None


def own_runs(base_errors: np.ndarray, cand_errors: np.ndarray) -> Dispersion | None:
    """The two sides' own runs, each an A/A arm of the commit it measured (see the module doc); None below
    OWN_MIN_DF degrees of freedom."""
    found = from_arms([np.atleast_2d(base_errors), np.atleast_2d(cand_errors)])
    return found if found is not None and found.df >= OWN_MIN_DF else None


def own_runs_sums(base_runs: ArrayLike, cand_runs: ArrayLike) -> tuple[np.ndarray, np.ndarray, int]:
    """`own_runs` for batches: (..., R, N) error counts per side -> (ss_total, ss_units) of shape (...) and df."""
    total = units = np.zeros(np.shape(base_runs)[:-2])
    df = 0
    for runs in (np.asarray(base_runs, dtype=float), np.asarray(cand_runs, dtype=float)):
        r = runs.shape[-2]
        if r < 2:
            continue
        total = total + runs.sum(axis=-1).var(axis=-1, ddof=1) * (r - 1)
        units = units + runs.var(axis=-2, ddof=1).sum(axis=-1) * (r - 1)
        df += r - 1
    return np.asarray(total), np.asarray(units), df


def excess_df(ss_total: ArrayLike, ss_units: ArrayLike, df: ArrayLike) -> np.ndarray:
    """`Dispersion.excess_df` for batches."""
    total, units = np.asarray(ss_total, dtype=float), np.asarray(ss_units, dtype=float)
    with np.errstate(all="ignore"):
        share = np.where(total > 0, np.clip((total - units) / np.where(total > 0, total, 1.0), 0.0, 1.0), 0.0)
    return np.asarray(np.asarray(df, dtype=float) * share ** 2)


def run_variance(base_errors: ArrayLike, cand_errors: ArrayLike) -> np.ndarray:
    """Σ_i Var(d_i) from the runs of each side, (..., R, N) per side -> (...): s²_i/R summed over
    utterances, both sides. Needs two runs or more on each side."""
    b, c = np.asarray(base_errors, dtype=float), np.asarray(cand_errors, dtype=float)
    return np.asarray(b.var(axis=-2, ddof=1).sum(axis=-1) / b.shape[-2] + c.var(axis=-2, ddof=1).sum(axis=-1) / c.shape[-2])


def widened_p(total: float, units_var: float, dispersion: Dispersion, a: float) -> float:
    """One-sided p of Σd against the utterances' own variance plus `a`·excess (a = 1/R_base + 1/R_cand)."""
    return float(widened_p_arrays(total, units_var, dispersion.excess, dispersion.excess_df, a))


def widened_p_arrays(total: ArrayLike, units_var: ArrayLike, excess: ArrayLike, df: ArrayLike, a: float) -> np.ndarray:
    """`widened_p` for batches (excess and its df, `excess_df`, broadcast against the statistics)."""
    total, units_var = np.asarray(total, dtype=float), np.asarray(units_var, dtype=float)
    extra = a * np.maximum(np.asarray(excess, dtype=float), 0.0)
    var = units_var + extra
    with np.errstate(all="ignore"):
        z = np.where(var > 0, total / np.sqrt(np.where(var > 0, var, 1.0)), 0.0)
        df_eff = np.where(extra > 0, var ** 2 / (extra ** 2 / np.maximum(df, 0.5)), np.inf)
        return np.where(var > 0, stats.t.sf(z, df_eff), 1.0)
