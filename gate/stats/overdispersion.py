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
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats


@dataclass(frozen=True)
class Dispersion:
    """Over-dispersion of one accuracy measure, from A/A arms (pooled over a model's workloads by `pooled`)."""

    ss_total: float  # Σ_arms (R − 1)·Var_r(Σ_i e_ir)
    ss_units: float  # Σ_arms (R − 1)·Σ_i Var_r(e_ir)
    df: int  # Σ_arms (R − 1)
    arms: int

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
                "phi": self.phi, "identical": self.identical}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Dispersion":
        return cls(ss_total=float(data["ss_total"]), ss_units=float(data["ss_units"]), df=int(data["df"]),
                   arms=int(data["arms"]))

    @classmethod
    def pooled(cls, items: Sequence["Dispersion | None"]) -> "Dispersion | None":
        found = [d for d in items if d is not None]
        if not found:
            return None
        return cls(ss_total=sum(d.ss_total for d in found), ss_units=sum(d.ss_units for d in found),
                   df=sum(d.df for d in found), arms=sum(d.arms for d in found))


def from_arms(arms: Sequence[np.ndarray]) -> Dispersion | None:
    """Arms of (R, N) error counts (runs × utterances); arms with fewer than two runs add nothing."""
    ss_total = ss_units = 0.0
    df = used = 0
    for errors in arms:
        e = np.atleast_2d(np.asarray(errors, dtype=float))
        if e.shape[0] < 2:
            continue
        ss_total += float(e.sum(axis=1).var(ddof=1)) * (e.shape[0] - 1)
        ss_units += float(e.var(axis=0, ddof=1).sum()) * (e.shape[0] - 1)
        df += e.shape[0] - 1
        used += 1
    return Dispersion(ss_total=ss_total, ss_units=ss_units, df=df, arms=used) if used else None


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
