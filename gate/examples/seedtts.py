"""SeedTTS EN/ZH example runs: the client's `--output` JSON (schema_version 2) and its raw `--save-raw-dir` JSONL.

Every aggregate is computed from the per-request rows written beside it: corpus WER is
Σerrors/Σwords of `ref_norm`/`hyp_norm` (recomputable with jiwer); latency and RTF statistics are
those of the per-request latencies.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from rapidfuzz.distance import Levenshtein

from gate.examples.dataset import (
    CJK_NOVEL,
    Dataset,
    Streaming,
    corrupt,
    dataset,
    novel_word,
    run_errors,
    seedtts_shape,
    streaming,
    stretch_tail,
)
from gate.examples.spec import DUPLICATE_IDS, MISSING_IDS, NAN, SYNTHETIC_NOTICE, ExampleSpec, write_json
from gate.formats import result_types
from gate.formats.config import Workload


def write_seedtts(run_dir: Path, workload: Workload, model_id: str, spec: ExampleSpec, rng: np.random.Generator,
                  defect: str | None) -> None:
    """One SeedTTS workload in one run: the raw per-request JSONL and the `--output` JSON (with `defect` planted)."""
    data = dataset(workload.id, workload.expected_samples, workload.format, workload.lang)
    en = workload.lang == "en"
    n = workload.expected_samples - (88 if defect == result_types.WRONG_TOTAL else 0)  # as if run with --max-samples
    errors = run_errors(data, workload.id, spec, rng)[:n]
    failed = np.zeros(n, dtype=bool)
    if defect in (result_types.EVALUATED_NE_TOTAL, result_types.SKIPPED):
        failed[data.order[:5][data.order[:5] < n]] = True
    rows = _transcripts(data, n, errors, en, spec.hallucinate.get(workload.id))
    latency, throughput = _speed(data, workload.id, n, spec, rng)
    measured = _measured(rows, latency, data.durations[:n], throughput, ok=~failed)
    stream = None
    if workload.stream:  # the client's --stream figures, drawn last: the run's other draws stay the same
        stream = streaming(latency[~failed], data.durations[:n][~failed], [int(rng.integers(2**32))],
                           sigma=spec.speed_sigma, ttft_factor=spec.ttft_factor.get(workload.id, 1.0))
        measured.update(stream.figures())
    assert workload.raw_dir is not None, "the suite gives every SeedTTS workload a raw_dir"
    _write_raw(run_dir / workload.raw_dir, data, rows, latency, failed, en, defect, stream)
    document = _seedtts_document(workload, model_id, spec, data, n, int((~failed).sum()), measured)
    if defect == result_types.BAD_SCHEMA:
        document["schema_version"] = 3
    if defect == NAN:
        document["results"][0]["corpus_wer"]["mean"] = float("nan")
    path = run_dir / workload.path
    path.parent.mkdir(parents=True, exist_ok=True)
    if defect != result_types.MISSING_FILE:
        write_json(path, document, truncate=defect == result_types.UNREADABLE)


@dataclass(frozen=True)
class _Transcripts:
    refs: list[list[str]]
    hyps: list[list[str]]
    ref_lens: np.ndarray  # words (EN) or characters (ZH) per reference
    errors: np.ndarray  # exact edit distance per utterance


def _transcripts(data: Dataset, n: int, errors: np.ndarray, en: bool, hallucinated: str | None) -> _Transcripts:
    """Each utterance's reference and the hypothesis with exactly its errors injected."""
    novel = novel_word if en else (lambda k: CJK_NOVEL[k % len(CJK_NOVEL)])
    refs, hyps = [], []
    ref_lens = np.zeros(n, dtype=np.int64)
    err_counts = np.zeros(n, dtype=np.int64)
    for i in range(n):
        ref = list(data.refs[i])
        hyp = corrupt(ref, int(errors[i]), bool(data.deletion_kind[i]), i, novel)
        if data.ids[i] == hallucinated:
            hyp = hyp + [novel(1000 + j) for j in range(40)]
        ref_lens[i] = len(ref)
        err_counts[i] = Levenshtein.distance(ref, hyp)
        refs.append(ref)
        hyps.append(hyp)
    return _Transcripts(refs, hyps, ref_lens, err_counts)


def _speed(data: Dataset, workload_id: str, n: int, spec: ExampleSpec,
           rng: np.random.Generator) -> tuple[np.ndarray, float]:
    """Per-request latencies and the run's throughput: one run-level draw moves both; the factor is the spec's."""
    factor = spec.speed_factor.get(workload_id, 1.0)
    z = rng.normal(0.0, spec.speed_sigma)
    nominal = seedtts_shape(workload_id)[1]
    throughput = nominal * np.exp(z) * factor
    latency = data.base_latency[:n] * (32.0 / nominal) * np.exp(-z + rng.normal(0, spec.speed_sigma / 3, n)) / factor
    return stretch_tail(latency, spec.p95_factor.get(workload_id, 1.0)), throughput


def _measured(rows: _Transcripts, latency: np.ndarray, durations: np.ndarray, throughput: float,
              ok: np.ndarray) -> dict[str, float]:
    """The client's aggregates, computed from the per-request rows it writes."""
    evaluated = int(ok.sum())
    wall = evaluated / throughput
    lat_ok, dur_ok = latency[ok], durations[ok]
    rtf = lat_ok / dur_ok
    return {
        "corpus_wer": float(rows.errors[ok].sum() / rows.ref_lens[ok].sum()),
        "per_sample_wer_max": float(np.nanmax(_wer_rows(rows, ok))),
        "wall_clock_s": float(wall),
        "throughput_samples_per_s": float(evaluated / wall),
        "rtfx": round(float(dur_ok.sum() / wall), 3),
        "latency_mean_s": float(lat_ok.mean()),
        "latency_median_s": float(np.median(lat_ok)),
        "latency_p95_s": float(np.percentile(lat_ok, 95)),
        "latency_p99_s": float(np.percentile(lat_ok, 99)),
        "rtf_mean": float(rtf.mean()),
        "rtf_p95": round(float(np.percentile(rtf, 95)), 4),
    }


def _wer_rows(rows: _Transcripts, ok: np.ndarray) -> np.ndarray:
    return np.where(ok, rows.errors / np.maximum(rows.ref_lens, 1), np.nan)


_ENCODE = json.JSONEncoder(ensure_ascii=False).encode  # json.dumps(record, ensure_ascii=False), without a new encoder a line


def _write_raw(raw_dir: Path, data: Dataset, rows: _Transcripts, latency: np.ndarray, failed: np.ndarray, en: bool,
               defect: str | None, stream: Streaming | None = None) -> None:
    """The raw per-request JSONL (docs/upstream.md §2.2), one line per sample in dataset order (with `stream`, each
    completed request's text_ttft_s and inter_chunk_s)."""
    join = " ".join
    # Python floats once per array (.tolist() gives exactly float(array[i])) and one encoder for every line: the
    # nightly example writes ~560,000 of these lines, and per-element numpy indexing and a json.dumps call each
    # were most of its CPU.
    wer_rows = _wer_rows(rows, ~failed).tolist()
    durations, latencies = data.durations.tolist(), latency.tolist()
    completed = (np.cumsum(~failed) - 1).tolist()  # request i's place among the completed ones
    failed_rows = failed.tolist()
    lines = []
    for i, (ref, hyp) in enumerate(zip(rows.refs, rows.hyps, strict=True)):
        if failed_rows[i]:
            record = {"id": data.ids[i], "is_success": False, "wer": None, "ref_text": _pretty(ref, en), "hyp_text": "",
                      "ref_norm": join(ref), "hyp_norm": "", "audio_duration_s": 0.0, "latency_s": 0.0,
                      "text_ttft_s": None, "inter_chunk_s": [], "error": "HTTP 500: Internal Server Error"}
        else:
            record = {"id": data.ids[i], "is_success": True, "wer": wer_rows[i], "ref_text": _pretty(ref, en),
                      "hyp_text": _pretty(hyp, en), "ref_norm": join(ref), "hyp_norm": join(hyp),
                      "audio_duration_s": durations[i], "latency_s": round(latencies[i], 6),
                      "text_ttft_s": None, "inter_chunk_s": [], "error": ""}
            if stream is not None:
                k = completed[i]
                record.update(text_ttft_s=float(stream.ttft[k]), inter_chunk_s=[float(g) for g in stream.gaps[k]])
        lines.append(_ENCODE(record))
    if defect == DUPLICATE_IDS:
        lines[3] = lines[3].replace(json.dumps(data.ids[3]), json.dumps(data.ids[2]), 1)
    elif defect == MISSING_IDS:
        del lines[3]
    raw_dir.mkdir(parents=True, exist_ok=True)
    (raw_dir / "conc32_rep1.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _pretty(tokens: list[str], en: bool) -> str:
    """A raw transcript as a client would print it: capitalized and punctuated (normalization undoes this)."""
    if not tokens:
        return ""
    if en:
        text = " ".join(tokens)
        return text[0].upper() + text[1:] + "."
    return "".join(tokens) + "。"


def _seedtts_document(workload: Workload, model: str, spec: ExampleSpec, data: Dataset, n: int, evaluated: int,
                      measured: dict[str, float]) -> dict[str, Any]:
    freeze_sha = hashlib.sha256("".join(line + "\n" for line in spec.freeze).encode()).hexdigest()
    packages = {name: _pinned(spec.freeze, name) for name in
                ("torch", "sglang", "sglang-omni", "transformers", "flash-attn-4", "flashinfer-python", "sglang-kernel")}
    declared = {"dtype": None, "quantization": None, "attention_backend": None, "mm_attention_backend": None,
                "cuda_graph": None, "torch_compile": None, "max_running_requests": None, "mem_fraction_static": None}
    input_sha = data.input_sha256 if n == workload.expected_samples else hashlib.sha256(
        (data.input_sha256 + f":first{n}").encode()).hexdigest()
    stat = {k: {"mean": v, "min": v, "max": v, "n": 1} for k, v in measured.items()}
    repeat = {"concurrency": 32, "repeat": 1, "evaluated": evaluated, "total": n, "skipped": n - evaluated,
              **measured, "worker": {},
              "resources": {"available": False, "sample_interval_s": 0.2, "samples": 0,
                            "error": "resource monitoring disabled"}}
    return {
        "schema_version": 2,
        "provenance": {
            "schema_version": 1,
            "repository": {"commit": spec.commit, "branch": None, "dirty": False},
            "host": {"platform": "synthetic", "cpu_model": "synthetic (gate example)", "logical_cpus": 0,
                     "memory_total_kib": "0 kB"},
            "gpu": {"nvidia_smi_csv": "synthetic", "cuda_visible_devices": None, "torch_cuda_build": None,
                    "cudnn_version": None},
            "packages": packages,
            "dependency_inventory": [{"name": line.split("==")[0], "version": line.split("==")[1]}
                                     for line in spec.freeze if "==" in line],
            "dependency_freeze_sha256": freeze_sha,
            "artifacts": {"requested_model_id": model, "declared_model_revision": None,
                          "dataset_id": "zhaochenyang20/seed-tts-eval-arrow",
                          "dataset_revision": "27f4c1adee83b5b29b7c4b375f6b976324bda308",
                          "evaluation_input_sha256": input_sha},
            "launch_command": SYNTHETIC_NOTICE,
            "declared_server_config": declared,
            "normalization": {"en": "whisper.normalizers.EnglishTextNormalizer",
                              "zh": "strip zhon+ASCII punctuation, remove spaces, score characters"},
        },
        "config": {"host": "127.0.0.1", "port": 8000, "meta": "zhaochenyang20/seed-tts-eval-arrow",
                   "lang": workload.lang, "model_path": model, "declared_model_revision": None,
                   "dataset_revision": "27f4c1adee83b5b29b7c4b375f6b976324bda308", "num_samples": n,
                   "concurrencies": [32], "repeats": 1, "warmup": True, "stream": workload.stream,
                   "declared_server": declared,
                   "resource_monitor": {"enabled": False, "gpu_index": 0, "interval_s": 0.2, "gpu_process_pids": []},
                   "profile_events": False, "sample_util": False},
        "results": [{"concurrency": 32, "repeats": 1, "evaluated": evaluated, "total": n, "skipped": n - evaluated,
                     **stat, "resources": {"gpu_memory_used_peak_mib": None, "gpu_memory_used_steady_mib": None,
                                           "gpu_process_memory_peak_mib": None, "power_peak_w": None,
                                           "system_cpu_peak_percent": None, "gpu_process_cpu_peak_percent": None,
                                           "monitor_errors": ["resource monitoring disabled"]},
                     "per_repeat": [repeat]}],
    }


def _pinned(freeze: tuple[str, ...], name: str) -> str | None:
    for line in freeze:
        if line.split("==")[0].lower() == name:
            return line.split("==")[1] if "==" in line else None
    return None
