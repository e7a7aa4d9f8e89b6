"""Run-to-run spread of the streaming latency figures in the synthetic example runs (issue 52): the σ of ln(value)
over scored runs of one commit, beside p95 latency's, which the suite's 4% floor was set against. The suite's
streaming floors (gate/suites/asr.yaml) are chosen from it.

    python benchmarks/stream_spread.py [--runs 8] [--seeds 3]
"""
from __future__ import annotations

import argparse
import math
import tempfile
from pathlib import Path

import numpy as np

from gate.examples import ExampleSpec, write_example_tree
from gate.formats.config import load_suite
from gate.reading.results import read_tree

WORKLOAD = "moss_td/movies800times_stream"
METRICS = ("latency_p95_s", "text_ttft_p95_s", "inter_chunk_p95_s", "text_ttft_mean_s", "inter_chunk_mean_s")


def spread(runs: int, seeds: int) -> dict[str, float]:
    suite = load_suite()
    logs: dict[str, list[np.ndarray]] = {m: [] for m in METRICS}
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(seeds):
            root = write_example_tree(Path(tmp) / f"s{seed}", suite, ExampleSpec(
                seed=500 + seed, models=("moss_td",), runs=tuple(str(r) for r in range(1, runs + 1))))
            tree = read_tree(root, suite, models=("moss_td",))
            for metric in METRICS:
                logs[metric].append(np.log([r.metrics[metric] for r in tree.workloads[WORKLOAD]]))
    # pooled within-seed (one commit, one job) standard deviation
    return {m: math.sqrt(sum(((a - a.mean()) ** 2).sum() for a in arms) / sum(len(a) - 1 for a in arms))
            for m, arms in logs.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    for metric, sigma in spread(args.runs, args.seeds).items():
        print(f"{metric:20s} σ(ln) {sigma:.2%}  ({args.seeds} trees × {args.runs} runs)")


if __name__ == "__main__":
    main()
