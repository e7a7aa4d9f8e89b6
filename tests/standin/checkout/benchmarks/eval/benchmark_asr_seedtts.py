"""TEST DOUBLE of benchmarks.eval.benchmark_asr_seedtts (docs/upstream.md §1.1, §2.1, §2.2). Not upstream code.

Accepts the real CLI flags, sends real multipart requests to the server at --port, and writes the
schema_version 2 --output JSON and the --save-raw-dir JSONL with the exact field names. Like
upstream it exits 0 even when requests fail (they count as skipped), and writes --output only at
the very end. WER is a plain word (EN) / character (ZH) edit distance, not Whisper normalisation.

Client knobs (section "client" of standin-knobs.json; "on_call": N fires on the Nth client call):
exit_code (exit with it after the run, no file), no_file (exit 0 without writing --output),
hang (sleep forever before sending), delay_s (sleep, then run), request_delay_s (slow requests).
Progress goes to stderr in tqdm's format.
"""
from __future__ import annotations

import time as _time

_T0 = _time.time()  # program start, for benchmarks/bench_run_overhead.py

import argparse
import hashlib
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from benchmarks import _standin
from benchmarks.dataset.seedtts import SEEDTTS_DATASET_ID, SEEDTTS_REVISION, load_seedtts_samples


def parse_args(argv):
    p = argparse.ArgumentParser(prog="benchmark_asr_seedtts")
    p.add_argument("--meta", default=SEEDTTS_DATASET_ID)
    p.add_argument("--lang", choices=("en", "zh"), default="en")
    p.add_argument("--max-samples", type=int, default=0)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--concurrencies", default="1,2,4,8,16,32,64")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--model-path", default="Qwen/Qwen3-ASR-1.7B")
    p.add_argument("--model-revision", default=None)
    p.add_argument("--dataset-revision", default=None)
    for flag in ("--dtype", "--quantization", "--attention-backend", "--mm-attention-backend", "--launch-command"):
        p.add_argument(flag, default=None)
    p.add_argument("--cuda-graph", action=argparse.BooleanOptionalAction, default=None)
    p.add_argument("--torch-compile", action=argparse.BooleanOptionalAction, default=None)
    p.add_argument("--max-running-requests", type=int, default=None)
    p.add_argument("--mem-fraction-static", type=float, default=None)
    p.add_argument("--gpu-index", type=int, default=0)
    p.add_argument("--monitor-interval-s", type=float, default=0.2)
    p.add_argument("--gpu-process-pid", dest="gpu_process_pids", type=int, action="append", default=[])
    p.add_argument("--disable-resource-monitor", action="store_true")
    p.add_argument("--warmup", action="store_true")
    p.add_argument("--stream", action="store_true")
    p.add_argument("--output", default="asr_seedtts_results.json")
    p.add_argument("--save-raw-dir", default="")
    p.add_argument("--profile-events", action="store_true")
    p.add_argument("--profile-urls", default="")
    p.add_argument("--profile-event-dir", default="/tmp/asr_bench_profile")
    p.add_argument("--sample-util", action="store_true")
    p.add_argument("--util-gpu-ids", default="")
    p.add_argument("--util-interval", type=float, default=1.0)
    p.add_argument("--fingerprint", action="store_true")
    return p.parse_args(argv)


def _tokens(text: str, lang: str) -> list[str]:
    return list(text.replace(" ", "")) if lang == "zh" else text.lower().split()


def _one(args, sample) -> dict:
    wav = _standin.make_wav(sample["target_text"])
    fields = {"model": args.model_path, "language": args.lang, "response_format": "json"}
    if args.stream:
        fields["stream"] = "true"
    began = time.perf_counter()
    timings: list = []
    status, text = _standin.post_transcription(f"http://{args.host}:{args.port}", fields, wav, sample["wav_name"],
                                               300.0, args.stream, timings)
    latency = time.perf_counter() - began
    ok = status == 200
    ref, hyp = _tokens(sample["target_text"], args.lang), _tokens(text if ok else "", args.lang)
    errors = _standin.edit_distance(ref, hyp) if ok else None
    duration = _standin.read_wav(wav)[1] if ok else 0.0
    return {"id": sample["sample_id"], "is_success": ok, "wer": None if errors is None else errors / max(1, len(ref)),
            "ref_text": sample["target_text"], "hyp_text": text if ok else "",
            "ref_norm": " ".join(ref), "hyp_norm": " ".join(hyp), "audio_duration_s": duration,
            "latency_s": latency if ok else 0.0, "text_ttft_s": timings[0][0] if ok and timings else None,
            "inter_chunk_s": timings[0][1] if ok and timings else [],
            "error": "" if ok else text, "_errors": errors, "_ref_len": len(ref)}


def _pass(args, samples, concurrency, delay: float = 0.0) -> tuple[list[dict], float]:
    began = time.perf_counter()
    bar = _standin.TqdmLine(len(samples))

    def one(sample):
        time.sleep(delay)
        row = _one(args, sample)
        bar.update()
        return row

    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        rows = list(pool.map(one, samples))
    return rows, time.perf_counter() - began


def _pct(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))] if ordered else None


def _repeat_record(rows, wall, concurrency, repeat) -> dict:
    ok = [r for r in rows if r["is_success"]]
    lat = [r["latency_s"] for r in ok]
    rtf = [r["latency_s"] / r["audio_duration_s"] for r in ok if r["audio_duration_s"]]
    audio = sum(r["audio_duration_s"] for r in ok)
    ref_len = sum(r["_ref_len"] for r in ok)
    return {"concurrency": concurrency, "repeat": repeat, "evaluated": len(ok), "total": len(rows),
            "skipped": len(rows) - len(ok),
            "corpus_wer": sum(r["_errors"] for r in ok) / ref_len if ok and ref_len else None,
            "per_sample_wer_max": max(r["wer"] for r in ok) if ok else None,
            "wall_clock_s": wall, "throughput_samples_per_s": len(ok) / wall if wall else 0.0,
            "rtfx": round(audio / wall, 3) if wall else 0.0,
            "latency_mean_s": statistics.fmean(lat) if lat else None,
            "latency_median_s": statistics.median(lat) if lat else None,
            "latency_p95_s": _pct(lat, 0.95), "latency_p99_s": _pct(lat, 0.99),
            "rtf_mean": statistics.fmean(rtf) if rtf else None,
            "rtf_p95": round(_pct(rtf, 0.95), 4) if rtf else None,
            "worker": {},
            "resources": {"available": False, "sample_interval_s": 0.2, "samples": 0,
                          "error": "resource monitoring disabled"},
            # with --stream only: the streaming scalars of this repeat (docs/upstream.md §2.1)
            **_standin.stream_figures([r["text_ttft_s"] for r in ok if r["text_ttft_s"] is not None],
                                      [g for r in ok for g in r["inter_chunk_s"]])}


def _stat(values) -> dict:
    v = [x for x in values if x is not None]
    if not v:
        return {"mean": None, "min": None, "max": None, "n": 0}
    return {"mean": statistics.fmean(v), "min": min(v), "max": max(v), "n": len(v)}


STAT_KEYS = ("corpus_wer", "per_sample_wer_max", "wall_clock_s", "throughput_samples_per_s", "rtfx", "latency_mean_s",
             "latency_median_s", "latency_p95_s", "latency_p99_s", "rtf_mean", "rtf_p95")


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    call = _standin.bump("seedtts_client_calls")
    section = _standin.knobs().get("client", {})
    faults = section if _standin.fault_active(section, call) else {}
    _standin.client_delays(faults)
    request_delay = float(section.get("request_delay_s", 0))  # every request takes this long (progress tests)
    revision = args.dataset_revision or (SEEDTTS_REVISION if args.meta == SEEDTTS_DATASET_ID else None)
    samples = load_seedtts_samples(args.meta, split=args.lang, revision=revision)
    if args.max_samples:
        samples = samples[:args.max_samples]
    concurrencies = [int(c) for c in args.concurrencies.split(",")]
    results = []
    for concurrency in concurrencies:
        if args.warmup:
            _pass(args, samples, concurrency, request_delay)
        records = []
        for repeat in range(1, args.repeats + 1):
            rows, wall = _pass(args, samples, concurrency, request_delay)
            records.append(_repeat_record(rows, wall, concurrency, repeat))
            if args.save_raw_dir:
                raw = Path(args.save_raw_dir) / f"conc{concurrency}_rep{repeat}.jsonl"
                raw.parent.mkdir(parents=True, exist_ok=True)
                import json
                raw.write_text("".join(json.dumps({k: v for k, v in r.items() if not k.startswith("_")}) + "\n"
                                       for r in rows))
        aggregate = {"concurrency": concurrency, "repeats": args.repeats,
                     "evaluated": sum(r["evaluated"] for r in records), "total": sum(r["total"] for r in records),
                     "skipped": sum(r["skipped"] for r in records)}
        aggregate.update({k: _stat(r[k] for r in records) for k in STAT_KEYS})
        if args.stream:  # optional stat dicts, --stream only (docs/upstream.md §2.1)
            aggregate.update({k: _stat(r.get(k) for r in records) for k in _standin.STREAM_KEYS})
        aggregate["resources"] = {"gpu_memory_used_peak_mib": None, "gpu_memory_used_steady_mib": None,
                                  "gpu_process_memory_peak_mib": None, "power_peak_w": None,
                                  "system_cpu_peak_percent": None, "gpu_process_cpu_peak_percent": None,
                                  "monitor_errors": ["resource monitoring disabled"]}
        aggregate["per_repeat"] = records
        results.append(aggregate)
        r = records[-1]
        print(f"concurrency={concurrency} corpus_wer={r['corpus_wer']} evaluated={aggregate['evaluated']}/"
              f"{aggregate['total']}", flush=True)
    if faults.get("exit_code"):
        print(f"[standin] client knob exit_code={faults['exit_code']}", flush=True)
        return int(faults["exit_code"])
    if faults.get("no_file"):
        print("[standin] client knob no_file: not writing --output", flush=True)
        return 0
    declared = {k: None for k in ("dtype", "quantization", "attention_backend", "mm_attention_backend", "cuda_graph",
                                  "torch_compile", "max_running_requests", "mem_fraction_static")}
    digest = hashlib.sha256("".join(s["sample_id"] + s["target_text"] for s in samples).encode()).hexdigest()
    doc = {
        "schema_version": 2,
        "provenance": {
            "schema_version": 1,
            "repository": {"commit": None, "branch": None, "dirty": None},
            "host": {"platform": sys.platform, "cpu_model": None, "logical_cpus": None, "memory_total_kib": None},
            "gpu": {"nvidia_smi_csv": None, "cuda_visible_devices": None, "torch_cuda_build": None, "cudnn_version": None},
            "packages": {"torch": None, "sglang": None, "sglang-omni": "standin", "transformers": None,
                         "flash-attn-4": None, "flashinfer-python": None, "sglang-kernel": None},
            "dependency_inventory": [], "dependency_freeze_sha256": None,
            "artifacts": {"requested_model_id": args.model_path, "declared_model_revision": args.model_revision,
                          "dataset_id": args.meta, "dataset_revision": revision, "evaluation_input_sha256": digest},
            "launch_command": args.launch_command, "declared_server_config": declared,
            "normalization": {"en": "whisper.normalizers.EnglishTextNormalizer",
                              "zh": "strip zhon+ASCII punctuation, remove spaces, score characters"},
        },
        "config": {"host": args.host, "port": args.port, "meta": args.meta, "lang": args.lang,
                   "model_path": args.model_path, "declared_model_revision": args.model_revision,
                   "dataset_revision": revision, "num_samples": len(samples), "concurrencies": concurrencies,
                   "repeats": args.repeats, "warmup": args.warmup, "stream": args.stream, "declared_server": declared,
                   "resource_monitor": {"enabled": False, "gpu_index": args.gpu_index,
                                        "interval_s": args.monitor_interval_s, "gpu_process_pids": args.gpu_process_pids},
                   "profile_events": args.profile_events, "sample_util": args.sample_util},
        "results": results,
    }
    _standin.write_json(Path(args.output), doc)
    print(_standin.timing_line("client", _T0, time.time()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
