"""Change points in a nightly series: E-divisive means places a split, a robust Student t test decides it.

The method follows Matteson & James (arXiv 1306.4933) as used for performance CI by MongoDB and
Apache Otava (docs/design.md §History): the split of a window that maximises
the energy-distance statistic q̂(τ) is the candidate change point, and a two-sample Student t test
on the two segments decides it (Otava's choice over permutations: deterministic, which the Hunter
paper names as a requirement for CI). Plain, that test is pulled around by an occasional slow night
(a −8% outlier inflates a segment's variance and mean), so the test used here ("robust") first
  1. replaces lone excursions by their neighbours' median (a Hampel filter, `despike`),
  2. asks that nearly every night of each segment sits nearer its own level than the other's
     (two slow nights among the last four are not a step: `consistent_shift`),
  3. clips each segment at its median ± 3σ (σ from first differences, robust to the step itself).
On the simulated histories of benchmarks/bench_changepoints.py this reported a −4% throughput step
in time in 92.5% of 200 seeds with 0.69 false change points per 20 nights over 54 series; the plain
t test (Otava-like) managed 51% with 1.50, an exact rank-sum test 70.5% with 0.92 (README table).

Online, as the nightly sees it: night by night, the window is the nights since the last reported
change point (at most `window` of them); a change point is reported once the new segment has
`min_size` nights, p ≤ `max_p`, and the shift of the segment means reaches the magnitude floor.
Once reported it stays where it was placed, and the next window starts there. `detect` over a
series is exactly what successive nightlies would have reported, so history view, nightly and
benchmark agree.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

import numpy as np

from gate.stats.distributions import norm_sf, t_ppf, t_sf

DEFAULT_WINDOW = 30  # nights analysed at most (Otava uses 50; 30 keeps the per-night cost tiny)
DEFAULT_MIN_SIZE = 3  # nights on the new level before a change point can be reported
DEFAULT_MAX_P = 0.0001  # two-sided p of the chosen split (Otava: 0.001; 1e-4 here keeps false alarms rare)
WINSOR_K = 3.0  # robust test: clip each segment at median ± 3σ
SPIKE_K = 3.0  # robust test: a night this many σ off its neighbours' median is a lone excursion


@dataclass(frozen=True)
class Detector:
    """How change points are decided; `magnitude` is in the series' own units (log units for speed)."""

    window: int = DEFAULT_WINDOW
    min_size: int = DEFAULT_MIN_SIZE
    max_p: float = DEFAULT_MAX_P
    magnitude: float = 0.0
    test: str = "robust"  # "robust" (winsorized Student t + consistency), "t" (Student, as Otava), "rank" (Mann–Whitney)


@dataclass(frozen=True)
class Split:
    index: int  # first index of the new segment
    reported_at: int  # index of the newest point when it was first reported
    p_value: float
    before: float  # mean of the segment before (series units)
    after: float  # mean of the segment after, up to the night it was reported
    ci: tuple[float, float]  # 95% CI of after - before (Student t, pooled)

    @property
    def shift(self) -> float:
        return self.after - self.before


def energy_statistic(x: np.ndarray, min_size: int) -> np.ndarray:
    """q̂(τ) for every split τ (segments x[:τ], x[τ:]); -inf where a segment is shorter than min_size.

    V-statistic form with α = 1: q̂ = τ(n-τ)/n · (2/(τ(n-τ))·Σ|x_i-y_j| - Σ|x_i-x_k|/τ² - Σ|y_j-y_k|/(n-τ)²),
    all block sums read from one 2-D prefix sum of the distance matrix.
    """
    n = len(x)
    d = np.abs(x[:, None] - x[None, :])
    c = np.zeros((n + 1, n + 1))
    c[1:, 1:] = d.cumsum(0).cumsum(1)
    tau = np.arange(n + 1)
    left = c[tau, tau]  # Σ over [0,τ)²
    rows = c[tau, n]  # Σ over [0,τ) × [0,n)
    right = c[n, n] - 2 * rows + left  # Σ over [τ,n)²
    cross = rows - left  # Σ over [0,τ) × [τ,n)
    q = np.full(n + 1, -np.inf)
    ok = (tau >= min_size) & (n - tau >= min_size)
    t, m = tau[ok].astype(float), (n - tau[ok]).astype(float)
    q[ok] = t * m / n * (2 * cross[ok] / (t * m) - left[ok] / t**2 - right[ok] / m**2)
    return q


def split_p_value(before: np.ndarray, after: np.ndarray, test: str = "robust", scale: float | None = None) -> float:
    """Two-sided p that the two segments share one level (1.0 when the robust test finds them inconsistent)."""
    if test == "rank":
        return rank_sum_p(before, after)
    if test == "robust":
        if not (consistent_shift(before, after) and consistent_shift(after, before)):
            return 1.0
        before, after = winsorize(before, after, scale)
    return student_p(before, after)


def student_p(before: np.ndarray, after: np.ndarray) -> float:
    """Two-sided pooled Student t p of after - before (Otava's test); 0 or 1 when both segments are flat."""
    n1, n2 = len(before), len(after)
    shift = float(after.mean() - before.mean())
    pooled = (((before - before.mean()) ** 2).sum() + ((after - after.mean()) ** 2).sum()) / (n1 + n2 - 2)
    if pooled <= 1e-24:
        return 1.0 if abs(shift) <= 1e-12 else 0.0
    t = shift / math.sqrt(pooled * (1 / n1 + 1 / n2))
    return float(2 * t_sf(abs(t), n1 + n2 - 2))


def robust_scale(x: np.ndarray) -> float:
    """σ of the noise from first differences (1.4826·MAD/√2): a step or a lone slow night moves few of them."""
    if len(x) < 3:
        return 0.0
    d = np.diff(x)
    return float(1.4826 * np.median(np.abs(d - np.median(d))) / math.sqrt(2))


def winsorize(before: np.ndarray, after: np.ndarray, scale: float | None,
              k: float = WINSOR_K) -> tuple[np.ndarray, np.ndarray]:
    """Clip each segment at its median ± k·σ: a slow night then weighs like a 3σ night, not like a step."""
    if scale is None:
        scale = robust_scale(np.concatenate([before, after]))
    if scale <= 0:
        return before, after
    clip = [np.clip(seg, np.median(seg) - k * scale, np.median(seg) + k * scale) for seg in (before, after)]
    return clip[0], clip[1]


def despike(x: np.ndarray, k: float = SPIKE_K) -> np.ndarray:
    """Replace lone excursions (a slow night) by the median of their ±2 neighbours (a Hampel filter).

    A point is replaced when it is more than k·σ from that median; a step is not, since from its
    third night on the neighbours' median sits on the new level with it.
    """
    n = len(x)
    scale = robust_scale(x)
    if n < 5 or scale <= 0:
        return x
    medians = np.empty(n)
    medians[2:-2] = np.sort(np.lib.stride_tricks.sliding_window_view(x, 5), axis=1)[:, 2]
    for i in (0, 1, n - 2, n - 1):  # the ends have fewer neighbours
        medians[i] = np.median(x[max(0, i - 2): i + 3])
    return np.where(np.abs(x - medians) > k * scale, medians, x)


def consistent_shift(before: np.ndarray, after: np.ndarray) -> bool:
    """A step moves (nearly) every night of `after`: at most ⌊n/4⌋ of them may lie nearer `before`'s level.

    Two slow nights among the last four are not a step: two normal nights sit at the old level.
    Checked both ways, since a short segment can be the first one too.
    """
    old, new = np.median(before), np.median(after)
    nearer_old = np.abs(after - old) < np.abs(after - new)
    return int(nearer_old.sum()) <= len(after) // 4


def rank_sum_p(before: np.ndarray, after: np.ndarray) -> float:
    """Exact two-sided Mann–Whitney p (no ties), else the normal approximation with tie correction."""
    n1, n2 = len(before), len(after)
    greater = (after[:, None] > before[None, :]).sum()
    ties = (after[:, None] == before[None, :]).sum()
    u = float(greater + 0.5 * ties)  # Mann-Whitney U of `after`
    pooled = np.sort(np.concatenate([before, after]))
    if not ties and not (np.diff(pooled) == 0).any():
        counts = _rank_sum_counts(n1 + n2, n2)
        s = int(u)
        total = counts.sum()
        low, high = counts[: s + 1].sum() / total, counts[s:].sum() / total
        return float(min(1.0, 2 * min(low, high)))
    n = n1 + n2
    _, tie_counts = np.unique(pooled, return_counts=True)
    var = n1 * n2 / 12 * ((n + 1) - float((tie_counts**3 - tie_counts).sum()) / (n * (n - 1)))
    if var <= 0:
        return 1.0
    z = (abs(u - n1 * n2 / 2) - 0.5) / math.sqrt(var)
    return float(min(1.0, 2 * norm_sf(max(z, 0.0))))


@lru_cache(maxsize=512)
def _rank_sum_counts(n: int, k: int) -> np.ndarray:
    """How many k-subsets of ranks 1..n have each U = rank sum - k(k+1)/2 (0 .. k(n-k)); exact, by DP."""
    width = k * (n - k) + 1
    # dp[j][u]: subsets of size j among the items seen so far with U = u, where items are taken in order
    # and U counts, for each chosen item, the unchosen items before it.
    dp = np.zeros((k + 1, width), dtype=np.float64)
    dp[0, 0] = 1.0
    for i in range(n):  # item i: i items before it, of which (i - j) unchosen when j were chosen
        new = dp.copy()
        for j in range(min(i, k - 1), -1, -1):
            shift = i - j
            if shift < width:
                new[j + 1, shift:] += dp[j, : width - shift]
        dp = new
    return dp[k]


def largest_mean_shift(x: np.ndarray, min_size: int) -> float:
    """max over splits of |mean(x[τ:]) - mean(x[:τ])|, both segments at least min_size long (O(n))."""
    n = len(x)
    if n < 2 * min_size:
        return 0.0
    c = np.concatenate([[0.0], np.cumsum(x)])
    tau = np.arange(min_size, n - min_size + 1)
    return float(np.max(np.abs((c[n] - c[tau]) / (n - tau) - c[tau] / tau)))


def best_split(x: np.ndarray, detector: Detector) -> tuple[int, float] | None:
    """(τ, p) of the energy-maximising split of x, or None when x is too short for two segments."""
    if len(x) < 2 * detector.min_size:
        return None
    q = energy_statistic(x, detector.min_size)
    tau = int(np.argmax(q))
    if not np.isfinite(q[tau]):
        return None
    return tau, split_p_value(x[:tau], x[tau:], detector.test)


def _mean_ci(before: np.ndarray, after: np.ndarray) -> tuple[float, float]:
    n1, n2 = len(before), len(after)
    dof = n1 + n2 - 2
    pooled = ((n1 - 1) * before.var(ddof=1) + (n2 - 1) * after.var(ddof=1)) / dof if dof > 0 else 0.0
    half = float(t_ppf(0.975, max(dof, 1)) * math.sqrt(pooled * (1 / n1 + 1 / n2)))
    shift = float(after.mean() - before.mean())
    return shift - half, shift + half


def detect(values: Sequence[float], detector: Detector = Detector(), *, start: int = 0,
           known: Sequence[Split] = ()) -> list[Split]:
    """Every change point successive nightlies would have reported on `values` (NaN = no value that night).

    `start`/`known` let a nightly resume after what it already reported instead of re-walking years.
    """
    x_all = np.asarray(values, dtype=float)
    present = np.flatnonzero(np.isfinite(x_all))  # nights with a value; positions below index into it
    x = x_all[present]
    found = list(known)
    seg_start = int(np.searchsorted(present, found[-1].index)) if found else 0
    first = max(int(np.searchsorted(present, start)), 2 * detector.min_size - 1)
    for end in range(first, len(x)):
        lo = max(seg_start, end + 1 - detector.window)
        window = x[lo: end + 1]
        if detector.magnitude > 0 and largest_mean_shift(window, detector.min_size) < detector.magnitude / 2:
            continue  # no split moves the mean by half the floor: nothing to test tonight (the common case)
        if detector.test == "robust":
            window = despike(window)
        result = best_split(window, detector)
        if result is None:
            continue
        tau, p = result
        before, after = window[:tau], window[tau:]
        if detector.test == "robust":
            before, after = winsorize(before, after, None)
        if p > detector.max_p or abs(after.mean() - before.mean()) < detector.magnitude:
            continue
        found.append(Split(index=int(present[lo + tau]), reported_at=int(present[end]), p_value=p,
                           before=float(before.mean()), after=float(after.mean()), ci=_mean_ci(before, after)))
        seg_start = lo + tau
    return found
