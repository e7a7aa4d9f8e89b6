"""Change points on simulated nightly histories: detection delay, placement, false change points.

Each seed simulates 90 nights of every suite workload × gated metric (54 series) with realistic
noise, plus two planted steps, and runs the gate's online detector night by night, exactly as the
nightly would (gate.history.changepoints.detect with the per-metric settings of
gate.history.analysis.detector_for):

- speed (per workload, log scale): a night-to-night offset (σ 1.0%), run noise (σ 1.0% per run, 3
  runs averaged), and a slow night now and then (3% of a model's nights, all its workloads and runs
  6–12% slower); latency mean and RTF move with 1/throughput (+0.3% own noise), p95 too (+1.0%);
- accuracy: corpus WER/CER night offset σ 0.02 pp and run noise σ 0.03 pp (decoding nondeterminism;
  MOSS CER 0.05/0.10 pp, cpCER on 20–25 sessions 0.15/0.30 pp);
- steps: qwen3/asr_en throughput −4% (its latency/RTF/p95 move with it) from a random night in
  30–80, and whisper/asr_zh corpus WER +0.3 pp from another.

Reported per detector variant: share of seeds where each step was reported ≤ 3 nights after it
and placed within ±2 nights; median delay; false change points across all 54 series per 20
nights (a change point that is not one of the planted steps, on any metric; the step workload's
speed metrics near the step count as true). Also how many tracking issues would have been touched
for nothing (false change points grouped per workload and night).

Run: python benchmarks/bench_changepoints.py [--seeds 200] [--jobs 2] [--out benchmarks/results/changepoints.json]
"""
from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path

import numpy as np

from gate.formats.config import load_suite
from gate.history.analysis import detector_for
from gate.history.changepoints import detect

NIGHTS = 90
RUNS = 3
STEP_SPEED = ("qwen3/asr_en", "throughput_samples_per_s", -0.04)
STEP_WER = ("whisper/asr_zh", "corpus_wer", 0.003)
PLACEMENT = 2  # nights either side
MAX_DELAY = 3  # nights after the step
SIGMA_NIGHT, SIGMA_RUN = 0.010, 0.010
SLOW_RATE, SLOW_RANGE = 0.03, (0.06, 0.12)
ACCURACY_NOISE = {"corpus_wer": (0.0002, 0.0003), "cer": (0.0005, 0.0010), "cp_cer": (0.0015, 0.0030)}
ACCURACY_BASE = {"corpus_wer": 0.014, "cer": 0.08, "cp_cer": 0.12}


def simulate(seed: int, suite) -> tuple[dict, dict]:
    """{(workload, metric): per-night values} and the planted steps {(workload, metric): night}."""
    rng = np.random.default_rng(seed)
    steps = {STEP_SPEED[:2]: int(rng.integers(30, 81)), STEP_WER[:2]: int(rng.integers(30, 81))}
    slow = {m: np.where(rng.random(NIGHTS) < SLOW_RATE, -rng.uniform(*SLOW_RANGE, NIGHTS), 0.0) for m in suite.models}
    series = {}
    for workload in suite.workloads:
        night = rng.normal(0, SIGMA_NIGHT, NIGHTS)[:, None]
        run = rng.normal(0, SIGMA_RUN, (NIGHTS, RUNS))
        log_speed = night + run + slow[workload.model][:, None]  # ln(throughput / base)
        if workload.id == STEP_SPEED[0]:
            log_speed[steps[STEP_SPEED[:2]]:] += math.log(1 + STEP_SPEED[2])
        for metric in workload.metrics:
            if metric.kind == "speed":
                if metric.direction == "higher":
                    runs = 100 * np.exp(log_speed)
                else:
                    extra = 0.010 if metric.name == "latency_p95_s" else 0.003
                    runs = 0.3 * np.exp(-log_speed + rng.normal(0, extra, (NIGHTS, RUNS)))
            elif metric.kind == "accuracy":
                sn, sr = ACCURACY_NOISE[metric.name]
                runs = ACCURACY_BASE[metric.name] + rng.normal(0, sn, (NIGHTS, 1)) + rng.normal(0, sr, (NIGHTS, RUNS))
                if (workload.id, metric.name) == STEP_WER[:2]:
                    runs[steps[STEP_WER[:2]]:] += STEP_WER[2]
            else:
                continue
            series[(workload.id, metric.name)] = runs.mean(axis=1)
    return series, steps


def evaluate(seed: int, variant: dict) -> dict:
    suite = load_suite()
    series, steps = simulate(seed, suite)
    out = {"steps": {}, "false": 0, "false_groups": set()}
    for (workload_id, name), values in series.items():
        metric = next(m for m in suite.workload(workload_id).metrics if m.name == name)
        detector, log = detector_for(metric, suite.workload(workload_id))
        detector = replace(detector, **variant)
        found = detect(np.log(values) if log else values, detector)
        true_night = steps.get((workload_id, name))
        if true_night is None and workload_id == STEP_SPEED[0] and metric.kind == "speed":
            true_night = steps[STEP_SPEED[:2]]  # latency, RTF and p95 move with the throughput step
        for cp in found:
            if true_night is not None and abs(cp.index - true_night) <= PLACEMENT:
                if (workload_id, name) in steps and (workload_id, name) not in out["steps"]:
                    out["steps"][(workload_id, name)] = cp.reported_at - true_night
                continue
            out["false"] += 1
            out["false_groups"].add((workload_id, cp.reported_at))
    for key in steps:
        out["steps"].setdefault(key, None)
    return {"seed": seed, "steps": {"/".join(k): v for k, v in out["steps"].items()}, "false": out["false"],
            "false_issues": len(out["false_groups"])}


def _evaluate_many(args: tuple[list[int], dict]) -> list[dict]:
    seeds, variant = args
    return [evaluate(s, variant) for s in seeds]


def summarise(rows: list[dict]) -> dict:
    seeds = len(rows)
    result = {"seeds": seeds}
    for key in ("/".join(STEP_SPEED[:2]), "/".join(STEP_WER[:2])):
        delays = [r["steps"][key] for r in rows]
        ok = [d for d in delays if d is not None and d <= MAX_DELAY]
        result[key] = {"reported_in_time_and_placed": len(ok) / seeds,
                       "found_and_placed": sum(d is not None for d in delays) / seeds,
                       "median_delay": float(np.median([d for d in delays if d is not None])) if any(
                           d is not None for d in delays) else None}
    false = sum(r["false"] for r in rows)
    result["false_per_20_nights"] = false / (seeds * NIGHTS) * 20
    result["false_issues_per_20_nights"] = sum(r["false_issues"] for r in rows) / (seeds * NIGHTS) * 20
    result["false_per_100_nights_per_metric"] = false / (seeds * NIGHTS) * 100 / 54
    return result


VARIANTS = {
    "chosen: despiked, winsorized Student t + consistency, p<=1e-4": {},
    "Otava-like: plain Student t, p<=1e-4": {"test": "t"},
    "exact rank-sum (Mann-Whitney), p<=1e-3": {"test": "rank", "max_p": 1e-3},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--only-chosen", action="store_true", help="measure the chosen detector only")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "changepoints.json")
    args = parser.parse_args()
    variants = dict(list(VARIANTS.items())[:1]) if args.only_chosen else VARIANTS
    results = {}
    started = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for name, variant in variants.items():
            t0 = time.perf_counter()
            chunks = [(list(range(i, args.seeds, args.jobs * 4)), variant) for i in range(args.jobs * 4)]
            rows = [row for part in pool.map(_evaluate_many, chunks) for row in part]
            results[name] = summarise(rows)
            results[name]["seconds"] = round(time.perf_counter() - t0, 1)
            print(f"{name}: {json.dumps(results[name])}", flush=True)
    # Cost of one nightly: re-analyse the recent window of all 54 series once.
    suite = load_suite()
    series, _ = simulate(0, suite)
    t0 = time.perf_counter()
    for (workload_id, name), values in series.items():
        metric = next(m for m in suite.workload(workload_id).metrics if m.name == name)
        detector, log = detector_for(metric, suite.workload(workload_id))
        detect(np.log(values) if log else values, detector, start=NIGHTS - 1)
    nightly_ms = (time.perf_counter() - t0) * 1000
    document = {"command": " ".join(["python", *sys.argv]), "nights": NIGHTS, "series": len(series),
                "total_seconds": round(time.perf_counter() - started, 1), "jobs": args.jobs,
                "one_nightly_all_series_ms": round(nightly_ms, 1), "python": platform.python_version(),
                "variants": results}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    print(f"one nightly, all {len(series)} series: {nightly_ms:.1f} ms; written {args.out}")


if __name__ == "__main__":
    main()
