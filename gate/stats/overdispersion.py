"""The accuracy null when decoding is not deterministic (statistics.md §9 "Correlated decoding churn").

The paired sign-flip test assumes utterances flip independently: under H0 it takes Var(Σd_i) = Σd_i².
When nondeterminism is run-level (batch composition, kernels), many utterances move together and the
variance of the total is larger. The factor is measured where only noise is at work, in the runs of
same-commit A/A arms: per arm with R runs,

    φ = Var_r(Σ_i e_ir) / Σ_i Var_r(e_ir)

(1 for independent flips), pooled over arms with Σ(R − 1) degrees of freedom. `compare` then refers
z = Σd / sqrt(φ·Σd²) to a t distribution with those degrees of freedom when φ > 1, and keeps the exact
sign-flip p otherwise. Arms whose runs all gave identical errors record that transcripts are
deterministic; with no nondeterminism there is nothing to widen.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
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
    def widens(self) -> bool:
        return not self.identical and self.df > 0 and self.phi > 1.0

    def to_dict(self) -> dict:
        return {"ss_total": self.ss_total, "ss_units": self.ss_units, "df": self.df, "arms": self.arms,
                "phi": self.phi, "identical": self.identical}

    @classmethod
    def from_dict(cls, data: dict) -> "Dispersion":
        return cls(ss_total=float(data["ss_total"]), ss_units=float(data["ss_units"]), df=int(data["df"]),
                   arms=int(data["arms"]))

    @classmethod
    def pooled(cls, items: Sequence["Dispersion | None"]) -> "Dispersion | None":
        items = [d for d in items if d is not None]
        if not items:
            return None
        return cls(ss_total=sum(d.ss_total for d in items), ss_units=sum(d.ss_units for d in items),
                   df=sum(d.df for d in items), arms=sum(d.arms for d in items))


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


def widened_p(total: np.ndarray, sum_sq: np.ndarray, dispersion: Dispersion) -> np.ndarray:
    """One-sided p of Σd against N(0, φ·Σd²) with φ estimated on `dispersion.df` degrees of freedom."""
    total, sum_sq = np.asarray(total, dtype=float), np.asarray(sum_sq, dtype=float)
    with np.errstate(all="ignore"):
        z = np.where(sum_sq > 0, total / np.sqrt(dispersion.phi * np.where(sum_sq > 0, sum_sq, 1.0)), 0.0)
    return np.where(sum_sq > 0, stats.t.sf(z, dispersion.df), 1.0)
