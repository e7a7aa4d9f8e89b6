"""Paired per-utterance tests for corpus error rates (WER, CER, cpCER): docs/statistics.md

Both sides scored the same utterances, so the natural unit is the utterance and the test is paired:
d_i = ē_i(candidate) − ē_i(baseline), where ē_i is the utterance's error count averaged over a side's
runs (decoding may not be deterministic), and n_i is its reference length (shared by both sides). The change in corpus rate is the
ratio estimator ΔW = Σd_i / Σn_i.

- p-value: one-sided paired sign-flip randomization on T = Σd_i (H0: the side label does not matter;
  H1: the candidate makes more errors). Computed EXACTLY for any number of utterances: the d_i lie on
  a lattice (errors are integers, means over R runs), so the null distribution of Σ s_i|d_i| is a
  convolution of scaled binomials, one per distinct |d_i|. That is deterministic (no seed), which a
  gate needs, and exact for the 20- and 25-session sets as well as for 2020 utterances. When the
  lattice is too wide (huge counts) it falls back to Monte-Carlo flips.
- CI and probability of degradation: paired bootstrap of (d_i, n_i) pairs (Bisani-Ney, as Kaldi's
  compute-wer-bootci), percentile interval; P_deg is the share of resamples with ΔW* > 0.
- Catastrophic utterances: rate > 50% in every candidate run and in no baseline run (seed-tts-eval
  keeps the same "n_higher_than_50"). A paired test cannot see one hallucinated utterance; this guard can.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gate.stats.distributions import binom_half_pmf, binom_sf

CATASTROPHIC_RATE = 0.5
# A newly catastrophic utterance must also have jumped: the candidate's best run has at least this many more
# errors than the baseline's worst run. One word flipping between runs is what nondeterministic decoding does all
# the time; it carries a 3-word utterance across 50%. (A second condition, a jump of at least a quarter of the
# reference, was removed by issue 49: it reached no PR of the noise matrix; docs/statistics.md, "Rule ablation".)
CATASTROPHIC_MIN_JUMP = 2
# Widest lattice (in scaled error units) the exact sign-flip null is computed on; beyond it, Monte Carlo.
MAX_EXACT_LATTICE = 2_000_000
DEFAULT_BOOTSTRAP = 2000
DEFAULT_FLIPS = 20000


@dataclass(frozen=True, eq=False)
class PairedQualityTest:
    """The paired comparison of one error measure on one workload. Rates are fractions."""

    n: int  # utterances paired
    ref_total: int  # Σn_i
    base_rate: float  # corpus rate of the baseline, over the paired utterances
    cand_rate: float
    delta: float  # ΔW = Σd_i / Σn_i (positive: the candidate is worse)
    ci: tuple[float, float]  # paired-bootstrap 95% percentile interval of ΔW
    p_value: float  # one-sided sign-flip p for "the candidate is worse"
    p_method: str  # "exact sign-flip" or "randomization (B flips)" or "identical"
    p_degradation: float  # bootstrap share of ΔW* > 0
    n_worse: int  # utterances with d_i > 0
    n_better: int
    identical: bool  # every d_i is 0: nothing to test
    new_catastrophic: tuple[int, ...]  # positions above CATASTROPHIC_RATE in every candidate run, no baseline run
    fixed_catastrophic: tuple[int, ...]  # the reverse
    catastrophic_sign_p: float | None  # sign test, new vs fixed catastrophic (None when there are none)
    d: np.ndarray  # per-utterance change in mean errors
    base_mean_errors: np.ndarray
    cand_mean_errors: np.ndarray
    n_boot: int

    @property
    def delta_rel(self) -> float | None:
        return None if self.base_rate == 0 else self.delta / self.base_rate


def paired_quality_test(base_errors: np.ndarray, cand_errors: np.ndarray, ref_len: np.ndarray, *,
                        n_boot: int = DEFAULT_BOOTSTRAP, n_flips: int = DEFAULT_FLIPS, seed: int = 0,
                        catastrophic_rate: float = CATASTROPHIC_RATE) -> PairedQualityTest:
    """Compare per-utterance errors of two sides on the same utterances.

    base_errors: (R_base, N) or (N,) error counts; cand_errors: (R_cand, N) or (N,); ref_len: (N,) > 0.
    Rows are runs, columns utterances in the same order on both sides (the caller pairs by id).
    """
    base = np.atleast_2d(np.asarray(base_errors, dtype=float))
    cand = np.atleast_2d(np.asarray(cand_errors, dtype=float))
    n_ref = np.asarray(ref_len, dtype=float)
    if base.shape[1] != n_ref.shape[0] or cand.shape[1] != n_ref.shape[0]:
        raise ValueError("base, candidate and ref_len must describe the same utterances")
    if n_ref.shape[0] == 0 or (n_ref <= 0).any():
        raise ValueError("need at least one utterance, each with a positive reference length")
    base_mean, cand_mean = base.mean(axis=0), cand.mean(axis=0)
    d = cand_mean - base_mean
    d[np.abs(d) < 1e-12] = 0.0
    total = float(n_ref.sum())
    base_rate, cand_rate = float(base_mean.sum()) / total, float(cand_mean.sum()) / total
    new_cat, fixed_cat, cat_p = _catastrophic(base, cand, n_ref, catastrophic_rate)
    common = dict(n=len(n_ref), ref_total=int(round(total)), base_rate=base_rate, cand_rate=cand_rate,
                  n_worse=int((d > 0).sum()), n_better=int((d < 0).sum()), new_catastrophic=new_cat,
                  fixed_catastrophic=fixed_cat, catastrophic_sign_p=cat_p, d=d, base_mean_errors=base_mean,
                  cand_mean_errors=cand_mean)
    if not d.any():
        return PairedQualityTest(delta=0.0, ci=(0.0, 0.0), p_value=1.0, p_method="identical", p_degradation=0.0,
                                 identical=True, n_boot=0, **common)
    p_value, method = sign_flip_p(d, scale=base.shape[0] * cand.shape[0], n_flips=n_flips, seed=seed)
    ci, p_deg = paired_bootstrap(d, n_ref, n_boot=n_boot, seed=seed)
    return PairedQualityTest(delta=float(d.sum()) / total, ci=ci, p_value=p_value, p_method=method,
                             p_degradation=p_deg, identical=False, n_boot=n_boot, **common)


def sign_flip_p(d: np.ndarray, *, scale: int = 1, n_flips: int = DEFAULT_FLIPS, seed: int = 0) -> tuple[float, str]:
    """One-sided p = P(Σ s_i d_i >= Σ d_i) over independent fair signs s_i (docs/statistics.md).

    `scale` makes the d_i integers (R_base × R_cand for means of integer counts); when it does, the
    null is computed exactly, otherwise by `n_flips` random sign vectors with p = (1 + #≥)/(B + 1).
    """
    d = np.asarray(d, dtype=float)
    nonzero = d[d != 0]
    if nonzero.size == 0:
        return 1.0, "identical"
    scaled = nonzero * scale
    lattice = np.rint(scaled)
    if np.allclose(scaled, lattice, atol=1e-6) and np.abs(lattice).sum() <= MAX_EXACT_LATTICE:
        return _exact_sign_flip(lattice.astype(np.int64)), "exact sign-flip"
    return _random_sign_flip(nonzero, n_flips, seed), f"randomization ({n_flips} flips)"


def _exact_sign_flip(values: np.ndarray) -> float:
    # T = Σ s_i a_i with a_i = |d_i| = 2U − S, where U = Σ b_i a_i over fair coins b_i and S = Σ a_i.
    # U is a sum of v·Binomial(m, ½) over each distinct magnitude v with multiplicity m.
    magnitudes = np.abs(values)
    total = int(magnitudes.sum())
    observed = int(values.sum())
    pmf = np.ones(1)
    for v, m in zip(*np.unique(magnitudes, return_counts=True), strict=True):
        spread = np.zeros(int(m) * int(v) + 1)
        spread[:: int(v)] = binom_half_pmf(int(m))
        pmf = _fftconvolve(pmf, spread) if len(pmf) * len(spread) > 50_000 else np.convolve(pmf, spread)
    pmf = np.clip(pmf, 0.0, None)
    threshold = (observed + total) // 2  # T >= observed  <=>  U >= (observed + S) / 2 (same parity)
    p = float(pmf[threshold:].sum() / pmf.sum())
    return min(1.0, max(p, 0.0))


def _fftconvolve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    from scipy.signal import fftconvolve  # here: scipy.signal takes ~1 s to import; few rows are this big

    return np.asarray(fftconvolve(a, b))


def _random_sign_flip(nonzero: np.ndarray, n_flips: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    observed = nonzero.sum()
    hits = 0
    chunk = max(1, 2_000_000 // nonzero.size)
    done = 0
    while done < n_flips:
        size = min(chunk, n_flips - done)
        signs = rng.integers(0, 2, size=(size, nonzero.size), dtype=np.int8) * 2 - 1
        hits += int((signs @ nonzero >= observed - 1e-9).sum())
        done += size
    return (1 + hits) / (n_flips + 1)


def paired_bootstrap(d: np.ndarray, ref_len: np.ndarray, *, n_boot: int = DEFAULT_BOOTSTRAP,
                     seed: int = 0) -> tuple[tuple[float, float], float]:
    """95% percentile CI of ΔW = Σd/Σn over resampled (d_i, n_i) pairs, and P(ΔW* > 0)."""
    d = np.asarray(d, dtype=float)
    n_ref = np.asarray(ref_len, dtype=float)
    rng = np.random.default_rng(seed)
    count = len(d)
    replicates = np.empty(n_boot)
    chunk = max(1, 4_000_000 // count)
    for start in range(0, n_boot, chunk):
        size = min(chunk, n_boot - start)
        idx = rng.integers(0, count, size=(size, count), dtype=np.int32)
        replicates[start:start + size] = d[idx].sum(axis=1) / n_ref[idx].sum(axis=1)
    low, high = np.quantile(replicates, [0.025, 0.975])
    return (float(low), float(high)), float((replicates > 0).mean())


def catastrophic_masks(base_errors: np.ndarray, cand_errors: np.ndarray, ref_len: np.ndarray,
                       threshold: float = CATASTROPHIC_RATE) -> tuple[np.ndarray, np.ndarray]:
    """(newly, no-longer) catastrophic utterances; errors are (..., runs, N), batched over leading axes.

    "New" means above the threshold in EVERY candidate run and in NO baseline run, AND a jump: the
    candidate's fewest errors exceed the baseline's most by CATASTROPHIC_MIN_JUMP. So an utterance that merely flips
    one word around 50% between runs is not news."""
    base, cand = np.asarray(base_errors), np.asarray(cand_errors)
    n_ref = np.asarray(ref_len, dtype=float)
    jump = CATASTROPHIC_MIN_JUMP

    def became(before: np.ndarray, after: np.ndarray) -> np.ndarray:
        return np.asarray(((after / n_ref) > threshold).all(axis=-2) & ~((before / n_ref) > threshold).any(axis=-2)
                          & (after.min(axis=-2) - before.max(axis=-2) >= jump))

    return became(base, cand), became(cand, base)


def _catastrophic(base: np.ndarray, cand: np.ndarray, n_ref: np.ndarray,
                  threshold: float) -> tuple[tuple[int, ...], tuple[int, ...], float | None]:
    """Per-run errors (runs × utterances) -> new and fixed catastrophic positions (worst first), and the sign
    test of new against fixed."""
    new_mask, fixed_mask = catastrophic_masks(base, cand, n_ref, threshold)
    new, fixed = np.flatnonzero(new_mask), np.flatnonzero(fixed_mask)
    change = cand.mean(axis=0) / n_ref - base.mean(axis=0) / n_ref
    new = new[np.argsort(-change[new], kind="stable")]  # worst first: a report that shows a few shows these
    fixed = fixed[np.argsort(change[fixed], kind="stable")]
    if len(new) + len(fixed) == 0:
        return (), (), None
    p = binom_sf(len(new) - 1, len(new) + len(fixed), 0.5)  # the sign test: P(at least this many new of the changed)
    return tuple(int(i) for i in new), tuple(int(i) for i in fixed), float(p)


def sign_flip_p_batch(scaled: np.ndarray) -> np.ndarray:
    """The exact one-sided sign-flip p of `sign_flip_p` for many rows at once: `scaled` is (B, N) integers
    (d_i × R_base·R_cand). Each row's null is Π_i cos(a_i·ω) on a DFT grid wider than 2Σa_i, grouped by
    distinct magnitude; inverting it gives the same exact distribution as the convolution (to ~1e-12)."""
    a = np.abs(np.asarray(scaled, dtype=np.int64))
    observed = np.asarray(scaled, dtype=np.int64).sum(axis=1)
    out = np.ones(a.shape[0])
    if a.size == 0:
        return out
    g = np.gcd.reduce(a, axis=1)
    g[g == 0] = 1
    a //= g[:, None]
    observed //= g
    total = a.sum(axis=1)
    live = total > 0
    if not live.any():
        return out
    top = int(a.max())
    counts = np.stack([np.bincount(row, minlength=top + 1) for row in a[live]])[:, 1:]  # (b, top)
    length = 1 << int(np.ceil(np.log2(2 * int(total[live].max()) + 2)))
    omega = 2 * np.pi * np.arange(length) / length
    cosines = np.cos(np.outer(np.arange(1, top + 1), omega))  # (top, L)
    log_abs = np.log(np.maximum(np.abs(cosines), 1e-300))
    negative = (cosines < 0).astype(float)
    log_phi = counts @ log_abs + 1j * np.pi * (counts @ negative)
    pmf = np.fft.fft(np.exp(log_phi), axis=1).real / length  # pmf[s mod L] of S = Σ s_i a_i
    values = np.arange(length)
    values = np.where(values > length // 2, values - length, values)
    tail = values[None, :] >= observed[live][:, None] - 0.5
    p = np.clip((np.clip(pmf, 0.0, None) * tail).sum(axis=1), 0.0, 1.0)
    out[live] = p
    return out
