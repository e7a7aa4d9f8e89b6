"""The CI artifact layout (docs/upstream.md §2.3, §2.5), made from runbook-layout example runs."""
from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from gate.examples.spec import SYNTHETIC_NOTICE, ExampleSpec, write_json
from gate.examples.trees import write_example_tree
from gate.formats import result_types
from gate.formats.config import Suite, Workload
from gate.formats.result_types import STREAM_FIELDS

# --- CI artifact layout ----------------------------------------------------------------------------

def write_example_ci_artifacts(root: Path, suite: Suite, spec: ExampleSpec = ExampleSpec(), *, model: str = "qwen3",
                               attempts: int = 2) -> Path:
    """A downloaded CI artifact (docs/upstream.md §2.3, §2.5): stage 1 (MOSS) and stage 2 (one SeedTTS model).

    Files lie under <root>/pytest-of-runner/pytest-<N>/<test>0/, one directory per retry attempt.
    Every attempt but the last has 3 failed MOSS requests and 5 skipped SeedTTS samples (the flaky
    first attempts that a retry hides); the last attempt is the spec's clean run.
    """
    root = Path(root)
    for attempt in range(1, attempts + 1):
        last = attempt == attempts
        defects = dict(spec.defects) if last else {
            **{w.id: result_types.SKIPPED for w in suite.workloads_for((model,))},
            **{w.id: result_types.FAILED_REQUESTS for w in suite.workloads_for(("moss_td",))},
        }
        attempt_spec = ExampleSpec(seed=spec.seed * 100 + attempt, models=(model, "moss_td"), runs=("1",),
                                   commit=spec.commit, freeze=spec.freeze, speed_sigma=spec.speed_sigma,
                                   speed_factor=spec.speed_factor, p95_factor=spec.p95_factor,
                                   extra_errors=spec.extra_errors, hallucinate=spec.hallucinate,
                                   flip_rate=spec.flip_rate, defects=defects)
        with tempfile.TemporaryDirectory() as scratch:
            run = write_example_tree(Path(scratch), suite, attempt_spec) / "run1"
            base = root / "pytest-of-runner" / f"pytest-{attempt}"
            seedtts_dir = base / "test_asr_seedtts0"
            seedtts_dir.mkdir(parents=True, exist_ok=True)
            for workload in suite.workloads_for((model,)):
                path = run / workload.path
                if path.is_file() and workload.raw_dir is not None:
                    ci = _ci_seedtts_document(json.loads(path.read_text(encoding="utf-8")), run / workload.raw_dir,
                                              workload, suite.models[model].model_id, with_router=workload.lang == "en")
                    write_json(seedtts_dir / f"asr_seedtts_{workload.lang}_results.json", ci)
            moss_dir = base / "test_multi_speaker0"
            moss_dir.mkdir(parents=True, exist_ok=True)
            for workload in suite.workloads_for(("moss_td",)):
                path = run / workload.path / result_types.MOSS_RESULTS_FILE
                if path.is_file():
                    payload = json.loads(path.read_text(encoding="utf-8"))
                    payload["router_ready_s"] = 142.7
                    name = {"movies800times": "", "movies800times_stream": "stream_"}.get(workload.name, workload.name + "_")
                    write_json(moss_dir / f"moss_transcribe_diarize_{name}results.json", payload)
    (root / "SYNTHETIC.txt").write_text(SYNTHETIC_NOTICE + "\n", encoding="utf-8")
    return root


def _ci_seedtts_document(document: dict[str, Any], raw_dir: Path, workload: Workload, model_id: str, *,
                         with_router: bool) -> dict[str, Any]:
    """The CI test's asr_seedtts_<lang>_results.json, from a runbook-layout result and its raw rows."""
    r = document["results"][0]
    rows = [json.loads(line) for line in (raw_dir / "conc32_rep1.jsonl").read_text(encoding="utf-8").splitlines()]
    ok = [row for row in rows if row["is_success"]]
    wer = np.array([row["wer"] for row in ok])
    lengths = np.array([len(row["ref_norm"].split()) for row in ok])
    errors = np.rint(wer * lengths)
    below = wer <= 0.5
    latency = np.array([row["latency_s"] for row in ok])
    durations = np.array([row["audio_duration_s"] for row in ok])
    rtf = latency / durations
    mean = {k: r[k]["mean"] for k in ("corpus_wer", "throughput_samples_per_s", "latency_mean_s", "latency_median_s",
                                       "latency_p95_s", "latency_p99_s", "rtf_mean", "rtf_p95", "wall_clock_s", "rtfx")}
    summary = {
        "lang": workload.lang, "total_samples": r["total"], "evaluated": r["evaluated"], "skipped": r["skipped"],
        "wer_corpus": mean["corpus_wer"], "wer_per_sample_mean": float(wer.mean()),
        "wer_per_sample_median": float(np.median(wer)), "wer_per_sample_std": float(wer.std()),
        "wer_per_sample_p95": float(np.percentile(wer, 95)), "wer_per_sample_max": float(wer.max()),
        "wer_below_50_corpus": float(errors[below].sum() / lengths[below].sum()),
        "n_above_50_pct_wer": int((~below).sum()), "pct_above_50_pct_wer": float((~below).mean() * 100),
        "latency_mean_s": mean["latency_mean_s"], "latency_median_s": mean["latency_median_s"],
        "latency_p95_s": mean["latency_p95_s"], "rtf_mean": mean["rtf_mean"],
        "audio_duration_mean_s": float(durations.mean()), "corpus_wer": mean["corpus_wer"],
    }
    speed = {
        "total_samples": r["total"], "evaluated": r["evaluated"], "skipped": r["skipped"],
        "asr_latency_mean_s": mean["latency_mean_s"], "asr_latency_median_s": mean["latency_median_s"],
        "asr_latency_p95_s": mean["latency_p95_s"], "asr_latency_p99_s": mean["latency_p99_s"],
        "asr_total_time_s": mean["wall_clock_s"], "asr_latency_sum_s": float(latency.sum()),
        "asr_throughput_samples_per_s": mean["throughput_samples_per_s"], "asr_rtf_mean": mean["rtf_mean"],
        "asr_rtf_median": float(np.median(rtf)), "asr_audio_processed_s": float(durations.sum()),
        "asr_model": model_id, "asr_concurrency": 32, "asr_rtf_p95": mean["rtf_p95"], "rtfx": mean["rtfx"],
        "throughput_samples_per_s": mean["throughput_samples_per_s"], "latency_mean_s": mean["latency_mean_s"],
        "latency_median_s": mean["latency_median_s"], "latency_p95_s": mean["latency_p95_s"],
        "latency_p99_s": mean["latency_p99_s"], "rtf_mean": mean["rtf_mean"], "rtf_median": float(np.median(rtf)),
        "rtf_p95": mean["rtf_p95"],
        # only with --stream, as the CI test's speed dict holds them (docs/upstream.md §2.3)
        **{k: r[k]["mean"] for k in STREAM_FIELDS if k in r},
    }
    doc: dict[str, Any] = {"model_path": model_id, "summary": summary, "speed": speed}
    if with_router:
        doc["router_ready_s"] = 142.7
    return doc
