"""The study's summary (from the raw runs) and its markdown table."""
from __future__ import annotations

import math
from dataclasses import asdict

import numpy as np

from . import analysis

# Metric key in a run's pass result -> label. Throughput is requests/s; tokens/s is the same ratio here
# (every run makes the same tokens), so its σ is identical and is not repeated.
METRICS = {"throughput_rps": "throughput (req/s)", "p95_latency_s": "p95 latency (s)"}
MIN_RUNS = 3


def summarise(runs: list[dict]) -> dict:
    """Analysis of the finished runs, in run order; figures that need more runs than there are are None."""
    done = [r for r in runs if r.get("ok")]
    if len(done) < MIN_RUNS:
        raise ValueError(f"need at least {MIN_RUNS} finished runs, got {len(done)}")
    summary: dict = {"runs_finished": len(done), "runs_failed": len(runs) - len(done), "metrics": {}}
    for key in METRICS:
        scored = [r["scored"][key] for r in done]
        warm = [r["warmup"][key] for r in done]
        figures = _metric_figures(scored)
        figures["warmup_pass_effect"] = _with_percent(
            analysis.mean_shift(np.log(scored) - np.log(warm)))  # scored pass minus warm-up pass, same process
        summary["metrics"][key] = figures
    setup = [r["setup_s"] for r in done]
    wall = [r["wall_s"] for r in done]
    summary["process"] = {"setup_s_median": float(np.median(setup)), "setup_s_first": setup[0],
                          "setup_s_max": float(np.max(setup)), "wall_s_median": float(np.median(wall))}
    first = done[0]["scored"]["request_crc32"]
    vs_run1 = [sum(a != b for a, b in zip(first, r["scored"]["request_crc32"], strict=True)) for r in done[1:]]
    in_process = [r["requests_changed_vs_warmup"] for r in done]
    summary["determinism"] = {
        "requests_per_pass": done[0]["scored"]["requests"],
        "distinct_scored_outputs": len({r["scored"]["token_sha256"] for r in done}),
        "requests_changed_vs_run1_median": float(np.median(vs_run1)),
        "requests_changed_vs_run1_max": int(max(vs_run1)),
        "requests_changed_vs_warmup_median": float(np.median(in_process)),
        "requests_changed_vs_warmup_max": int(max(in_process))}
    return summary


def _metric_figures(values: list[float]) -> dict:
    y = np.log(np.asarray(values, dtype=float))
    scored = y[1:]
    figures: dict = {"n_runs": int(y.size), "n_scored": int(scored.size), "median": float(np.median(values)),
                     "min": float(np.min(values)), "max": float(np.max(values))}
    sigma = analysis.sigma_with_ci(scored)
    figures["sigma_run"] = asdict(sigma)
    figures["sigma_all_runs"] = asdict(analysis.sigma_with_ci(y))
    figures["sigma_run_robust"] = analysis.robust_sigma(scored) if scored.size >= 3 else None
    figures["mde_3v3_percent"] = 100.0 * math.expm1(analysis.MDE_3V3_FACTOR * sigma.sd)
    figures["first_run"] = _with_percent(analysis.first_run_effect(y))
    index = np.arange(1, y.size)
    figures["trend_per_run"] = _with_percent(analysis.trend(scored, index)) if scored.size >= 3 else None
    figures["lag1"] = asdict(analysis.lag1_autocorrelation(scored)) if scored.size >= 3 else None
    if scored.size >= 4:
        pairs = analysis.consecutive_pairs(scored)
        figures["pairs"] = asdict(pairs) | {
            "ratio_to_sigma_run": pairs.sigma_implied / sigma.sd if sigma.sd > 0 else None}
    else:
        figures["pairs"] = None
    return figures


def _with_percent(shift: analysis.Shift) -> dict:
    return asdict(shift) | {"percent": shift.percent}


def _pct(x: float) -> str:
    return f"{x:+.2f}%"


def _sd_pct(sd: float) -> str:
    return f"{100.0 * math.expm1(sd):.2f}%"


def _shift_cell(fig: dict | None) -> str:
    if fig is None:
        return "n/a (too few runs)"
    return f"{_pct(fig['percent'])} (t {fig['t']:.2f}, p {fig['p_two_sided']:.3f})"


def markdown(study: dict) -> str:
    env, cfg, summary = study["environment"], study["config"], study["summary"]
    lines = [
        "# GPU noise proxy study (A/A, fresh process per run)",
        "",
        f"Command: `{study['command']}`",
        "",
        f"Device: {env.get('gpu_name') or env.get('device_type')}, driver {env.get('driver', 'n/a')}, "
        f"torch {env.get('torch')} (CUDA {env.get('torch_cuda')}). Workload: {cfg['n_layers']}-layer decoder, "
        f"d {cfg['d_model']}, {cfg['dtype']}, random weights; {cfg['requests']} requests per pass at "
        f"concurrency {cfg['concurrency']}, prompts {cfg['prompt_min']}-{cfg['prompt_max']} and outputs "
        f"{cfg['output_min']}-{cfg['output_max']} tokens, greedy; one unscored warm-up pass then the scored pass "
        f"in each process. {summary['runs_finished']} runs finished, {summary['runs_failed']} failed.",
        "",
        "All figures on ln(metric). σ_run, trend, lag-1 and pairs use runs 2..n (run 1 is the lease's first "
        "process, like the runbook's unscored `warm` run).",
        "",
        "| Metric | Median | σ_run [95% CI] | σ robust (MAD) | Run 1 vs rest | Scored vs warm-up pass | "
        "Trend per run | Lag-1 r (±95% band) | A/A pairs SD(d)/√2 | 3+3 MDE |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for key, label in METRICS.items():
        m = summary["metrics"][key]
        s = m["sigma_run"]
        lag = m["lag1"]
        lag_cell = "n/a" if lag is None else f"{lag['r1']:+.2f} (±{lag['band95']:.2f}, p {lag['p_two_sided']:.2f})"
        pairs = m["pairs"]
        robust = "n/a" if m["sigma_run_robust"] is None else _sd_pct(m["sigma_run_robust"])
        pair_cell = "n/a" if pairs is None else f"{_sd_pct(pairs['sigma_implied'])} ({pairs['n_pairs']} pairs)"
        lines.append(
            f"| {label} | {m['median']:.4g} | {_sd_pct(s['sd'])} [{_sd_pct(s['ci_low'])}, {_sd_pct(s['ci_high'])}]"
            f" (df {s['df']}) | {robust} | {_shift_cell(m['first_run'])} | {_shift_cell(m['warmup_pass_effect'])} | "
            f"{_shift_cell(m['trend_per_run'])} | {lag_cell} | {pair_cell} | {m['mde_3v3_percent']:.1f}% |")
    proc, det = summary["process"], summary["determinism"]
    lines += [
        "",
        f"Process setup (import, model build, first CUDA work): median {proc['setup_s_median']:.2f} s, "
        f"run 1 {proc['setup_s_first']:.2f} s, max {proc['setup_s_max']:.2f} s; median run wall time "
        f"{proc['wall_s_median']:.1f} s.",
        "",
        f"Outputs (greedy, same seed and schedule): {det['distinct_scored_outputs']} distinct scored outputs in "
        f"{summary['runs_finished']} runs; requests (of {det['requests_per_pass']}) whose tokens differ from "
        f"run 1's: median {det['requests_changed_vs_run1_median']:g}, max {det['requests_changed_vs_run1_max']}; "
        f"between the warm-up and scored pass of one process: median "
        f"{det['requests_changed_vs_warmup_median']:g}, max {det['requests_changed_vs_warmup_max']}.",
        "",
        "3+3 MDE: the smallest change 3 + 3 interleaved runs detect at 80% power, one-sided z 3.09, "
        "σ known (3.21·σ_run, docs/statistics.md).",
    ]
    return "\n".join(lines) + "\n"
