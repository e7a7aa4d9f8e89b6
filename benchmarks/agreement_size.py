"""How often the joint F test of `gate.stats.speed.joint_agreement` says a fresh calibration disagrees with the
A/B's own runs when it does not (its size under the null; nominal SCREEN_P).

    python benchmarks/agreement_size.py [--models 20000] [--seed 0]

Each simulated model has 2 workloads, an in-job A/B of 6+6 runs and a calibration of 3 A/A pairs of 3+3 runs, all
at σ 1%, and two gated speed metrics: throughput (the run effect) and p95 latency (the same run effect plus its
own 1%, as benchmarks/power/noise.py draws them), or, for comparison, two metrics independent of each other.
A rejection makes the row fall back to its own runs' σ (`gate.stats.speed.own_noise`), which costs power.
"""
from __future__ import annotations

import argparse

import numpy as np

from gate.stats.levels import SCREEN_P
from gate.stats.outliers import robust_sd
from gate.stats.speed import SpeedNoise, joint_agreement

SIGMA = 0.01
WORKLOADS, AB_RUNS, PAIRS, AA_RUNS = 2, 6, 3, 3


def _metrics(rng: np.random.Generator, shape: tuple, shared: bool) -> tuple[np.ndarray, np.ndarray]:
    run = SIGMA * rng.standard_normal(shape)
    other = run if shared else SIGMA * rng.standard_normal(shape)
    return -run, other + SIGMA * rng.standard_normal(shape)


def size(models: int, seed: int, shared: bool) -> float:
    """The share of no-op models whose joint F test p is below SCREEN_P."""
    rng = np.random.default_rng([seed, int(shared)])
    ab = _metrics(rng, (models, 2 * WORKLOADS, AB_RUNS), shared)
    aa = _metrics(rng, (models, 2 * PAIRS * WORKLOADS, AA_RUNS), shared)
    parts = []
    for own, calibration in zip(ab, aa, strict=True):
        sigma, df, _ = robust_sd(calibration)
        parts.append((own, SpeedNoise(sigma=sigma, sigma_df=df)))
    return float((joint_agreement(parts) < SCREEN_P).mean())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    for shared, label in ((True, "throughput and p95 sharing the run effect"), (False, "independent metrics")):
        print(f"{label}: rejects {size(args.models, args.seed, shared):.1%} of no-op models "
              f"(nominal {SCREEN_P:.0%})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
