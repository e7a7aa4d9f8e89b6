"""TEST DOUBLE of benchmarks.eval.benchmark_asr_transcribe_diarize (docs/upstream.md §1.2, §2.4). Not upstream code.

Accepts the real CLI flags, polls /health like --use-existing-server does, sends real multipart
requests (verbose_json, or json + stream=true), and writes the three files in upstream's order:
transcribe_diarize_asr_results.json, transcribe_diarize_speed_results.json,
transcribe_diarize_results.json. Exits 1 when any request failed (after writing the files), like
upstream. The runbook sets DEFAULT_MAX_NEW_TOKENS = None before main(); that is honoured.
CER is a plain character edit distance on the text without [time][Sxx] tags.

Client knobs: as in benchmark_asr_seedtts (section "client"; exit_code, no_file, hang, delay_s,
request_delay_s, on_call).
"""
from __future__ import annotations

import time as _time

_T0 = _time.time()  # program start, for benchmarks/bench_run_overhead.py

import argparse
import math
import re
import statistics
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from benchmarks import _standin
from benchmarks.tasks.transcribe_diarize import load_movies800_samples

DEFAULT_MAX_NEW_TOKENS = 65536
PRESETS = {"movies800times": "zhaochenyang20/movies800time", "aishell4_long": "zhaochenyang20/AISHELL4",
           "googletime": "zhaochenyang20/googletime"}
_TAGS = re.compile(r"\[[^\]]*\]")


def parse_args(argv):
    p = argparse.ArgumentParser(prog="benchmark_asr_transcribe_diarize")
    p.add_argument("--dataset", choices=tuple(PRESETS), default="movies800times")
    p.add_argument("--repo-id", default=None)
    p.add_argument("--split", default="validation")
    p.add_argument("--audio-column", default="audio")
    p.add_argument("--expected-column", default="transcription")
    p.add_argument("--max-samples", type=int, default=None)
    p.add_argument("--exclude-sample-ids", default="")
    p.add_argument("--output-dir", default=None)
    p.add_argument("--model-path", default="OpenMOSS-Team/MOSS-Transcribe-Diarize")
    p.add_argument("--base-url", default=None)
    p.add_argument("--language", default=None)
    p.add_argument("--concurrency", "--max-concurrency", dest="concurrency", type=int, default=16)
    p.add_argument("--warmup", type=int, default=0)
    p.add_argument("--request-rate", type=float, default=float("inf"))
    p.add_argument("--request-timeout-s", type=float, default=1800)
    p.add_argument("--max-new-tokens", type=int, default=DEFAULT_MAX_NEW_TOKENS)  # read at call time, see main()
    p.add_argument("--stream", action="store_true")
    p.add_argument("--asr-results-file", default="transcribe_diarize_asr_results.json")
    p.add_argument("--speed-results-file", default="transcribe_diarize_speed_results.json")
    p.add_argument("--reuse-asr-results", default=None)
    p.add_argument("--profile-events", action="store_true")
    p.add_argument("--profile-urls", default="")
    p.add_argument("--profile-event-dir", default="/tmp/moss_td_bench_profile")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--server-timeout-s", type=float, default=600)
    p.add_argument("--use-existing-server", action="store_true")
    p.add_argument("--disable-tqdm", action="store_true")
    p.add_argument("--max-running-requests", type=int, default=None)
    p.add_argument("--cuda-graph-max-bs", type=int, default=None)
    p.add_argument("--mem-fraction-static", type=float, default=0.80)
    p.add_argument("--skip-gpu-cleanup", action="store_true")
    p.set_defaults(max_new_tokens=DEFAULT_MAX_NEW_TOKENS)
    return p.parse_args(argv)


def _wait_health(base_url: str, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(base_url + "/health", timeout=5) as r:
                if r.status == 200:
                    return True
        except OSError:
            pass
        time.sleep(1.0)
    return False


def _plain(text: str) -> str:
    return _TAGS.sub("", text).replace(" ", "")


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if "--max-new-tokens" not in (sys.argv[1:] if argv is None else argv):
        args.max_new_tokens = DEFAULT_MAX_NEW_TOKENS  # the module global, possibly set to None by the caller
    call = _standin.bump("moss_client_calls")
    section = _standin.knobs().get("client", {})
    faults = section if _standin.fault_active(section, call) else {}
    _standin.client_delays(faults)
    request_delay = float(section.get("request_delay_s", 0))  # every request takes this long (progress tests)
    if not args.use_existing_server:
        print("stand-in: only --use-existing-server is supported", file=sys.stderr)
        return 2
    repo = args.repo_id or PRESETS[args.dataset]
    out_dir = Path(args.output_dir or f"results/moss_transcribe_diarize_{args.dataset}")
    base_url = args.base_url or f"http://{args.host}:{args.port}"
    if not _wait_health(base_url, args.server_timeout_s):
        print(f"Server at {base_url} did not become healthy within {args.server_timeout_s} s", file=sys.stderr)
        return 1
    samples = load_movies800_samples(repo, split=args.split, audio_column=args.audio_column,
                                     expected_column=args.expected_column,
                                     expected_sample_count=None if args.max_samples else _standin.count(args.dataset),
                                     max_samples=args.max_samples)

    def one(sample):
        wav = _standin.make_wav(sample["expected_text"])
        fields = {"model": args.model_path}
        if args.stream:
            fields.update(response_format="json", stream="true")
        else:
            fields["response_format"] = "verbose_json"
        if args.language:
            fields["language"] = args.language
        if args.max_new_tokens is not None:
            fields["max_new_tokens"] = str(args.max_new_tokens)
        began = time.perf_counter()
        timings: list = []
        status, text = _standin.post_transcription(base_url, fields, wav, sample["sample_id"], args.request_timeout_s,
                                                   args.stream, timings)
        latency = time.perf_counter() - began
        duration = _standin.read_wav(wav)[1]
        ok = status == 200
        return {"request_id": sample["sample_id"], "text": text if ok else "", "is_success": ok, "latency_s": latency,
                "audio_duration_s": duration, "rtf": latency / duration if duration else None, "prompt_tokens": None,
                "completion_tokens": None, "engine_time_s": None, "tok_per_s": None, "wav_path": None,
                "error": None if ok else text, "audio_ttfp_s": None,
                "inter_chunk_s": timings[0][1] if timings else [], "chunk_audio_duration_s": None,
                "max_playback_underrun_s": None, "text_ttft_s": timings[0][0] if timings else None,
                "audio_chunk_count": 0,
                "first_audio_payload_bytes": None}

    bar = _standin.TqdmLine(len(samples))

    def counted(sample):
        time.sleep(request_delay)
        row = one(sample)
        if not args.disable_tqdm:
            bar.update()
        return row

    began = time.perf_counter()
    with ThreadPoolExecutor(max_workers=args.concurrency) as pool:
        outputs = list(pool.map(counted, samples))
    wall = time.perf_counter() - began
    if faults.get("exit_code"):
        print(f"[standin] client knob exit_code={faults['exit_code']}", flush=True)
        return int(faults["exit_code"])
    if faults.get("no_file"):
        print("[standin] client knob no_file: not writing results", flush=True)
        return 0
    config = {"dataset": args.dataset, "repo_id": repo, "split": args.split, "audio_column": args.audio_column,
              "expected_column": args.expected_column, "model_path": args.model_path, "base_url": base_url,
              "concurrency": args.concurrency, "warmup": args.warmup,
              "request_rate": "inf" if math.isinf(args.request_rate) else args.request_rate,
              "request_timeout_s": args.request_timeout_s, "max_new_tokens": args.max_new_tokens,
              "max_samples": args.max_samples, "exclude_sample_ids": [], "wall_clock_s": round(wall, 3),
              "timing_scope": "asr_requests_only"}
    _standin.write_json(out_dir / args.asr_results_file, {
        "schema_version": 1, "config": config,
        "samples": [{"sample_id": s["sample_id"], "audio_path": None, "expected_text": s["expected_text"]} for s in samples],
        "outputs": outputs})
    ok = [o for o in outputs if o["is_success"]]
    speed = {"total_requests": len(outputs), "completed_requests": len(ok), "failed_requests": len(outputs) - len(ok)}
    if ok:
        lat = sorted(o["latency_s"] for o in ok)
        rtf = sorted(o["rtf"] for o in ok)
        q = lambda v, p: v[min(len(v) - 1, int(round(p * (len(v) - 1))))]
        speed.update({"latency_mean_s": round(statistics.fmean(lat), 3), "latency_median_s": round(statistics.median(lat), 3),
                      "latency_p95_s": round(q(lat, 0.95), 3), "latency_p99_s": round(q(lat, 0.99), 3),
                      "audio_duration_mean_s": round(statistics.fmean(o["audio_duration_s"] for o in ok), 3),
                      "rtf_mean": round(statistics.fmean(rtf), 4), "rtf_median": round(statistics.median(rtf), 4),
                      "rtf_p95": round(q(rtf, 0.95), 4), "rtf_p99": round(q(rtf, 0.99), 4),
                      "throughput_qps": round(len(ok) / wall, 3) if wall else 0.0,
                      "audio_throughput_s_per_s": round(sum(o["audio_duration_s"] for o in ok) / wall, 3) if wall else 0.0})
        if args.stream:  # upstream adds these only with --stream, rounded to 4 places (docs/upstream.md §2.4)
            figures = _standin.stream_figures([o["text_ttft_s"] for o in ok if o["text_ttft_s"] is not None],
                                              [g for o in ok for g in o["inter_chunk_s"]])
            speed.update({k: round(v, 4) for k, v in figures.items()})
    _standin.write_json(out_dir / args.speed_results_file, {"schema_version": 1, "config": config, "speed": speed})
    per_sample, errors, ref_total = [], 0, 0
    for sample, out in zip(samples, outputs):
        ref, hyp = _plain(sample["expected_text"]), _plain(out["text"])
        cer = _standin.edit_distance(list(ref), list(hyp)) / max(1, len(ref)) if out["is_success"] else None
        if out["is_success"]:
            errors += _standin.edit_distance(list(ref), list(hyp))
            ref_total += len(ref)
        valid = out["is_success"]
        per_sample.append({"id": sample["sample_id"], "audio_path": None, "expected_text": sample["expected_text"],
                           "result_text": out["text"], "expected_normalized": ref, "result_normalized": hyp,
                           "is_exact_match": ref == hyp, "latency_s": out["latency_s"],
                           "audio_duration_s": out["audio_duration_s"], "error": out["error"], "cer_no_spk": cer,
                           "cp_cer": cer, "cer_valid": valid, "cp_cer_valid": valid,
                           "cp_invalid_reason": "" if valid else "request failed",
                           "speaker_timestamp_der_valid": valid, "speaker_timestamp_der_invalid_reason": "",
                           "speaker_timestamp_ref_segments": 2, "speaker_timestamp_pred_segments": 2 if valid else None,
                           "speaker_timestamp_der": 0.0 if valid else None, "speaker_timestamp_der_total_seconds": 2.9,
                           "speaker_timestamp_der_false_alarm": 0.0, "speaker_timestamp_der_missed_detection": 0.0,
                           "speaker_timestamp_der_confusion": 0.0})
    cer_all = errors / ref_total if ref_total else None
    metrics = {"cer_no_spk": cer_all, "cer": cer_all, "cer_no_spk_below_50_corpus": cer_all, "n_above_50_pct_cer": 0,
               "pct_above_50_pct_cer": 0.0, "cp_cer": cer_all, "cer_no_spk_cp_valid": cer_all, "delta_cer": 0.0,
               "cer_valid_samples": len(ok), "cp_cer_valid_samples": len(ok), "speaker_timestamp_der": 0.0 if ok else None,
               "speaker_timestamp_der_collar": 0.0, "speaker_timestamp_der_valid_samples": len(ok),
               "speaker_timestamp_der_skipped": len(outputs) - len(ok), "speaker_timestamp_der_skipped_parse_error": 0,
               "speaker_timestamp_der_skipped_no_ref_segments": 0, "speaker_timestamp_der_skipped_no_pred_segments": 0,
               "speaker_timestamp_der_compute_error": "", "speaker_timestamp_der_total_seconds": 2.9 * len(ok),
               "speaker_timestamp_der_false_alarm": 0.0, "speaker_timestamp_der_missed_detection": 0.0,
               "speaker_timestamp_der_confusion": 0.0, "count": len(ok)}
    percent_keys = ("cer_no_spk", "cer", "cer_no_spk_below_50_corpus", "cp_cer", "cer_no_spk_cp_valid", "delta_cer",
                    "speaker_timestamp_der")
    percent = {k: (v * 100 if k in percent_keys and v is not None else v) for k, v in metrics.items()}
    exact = sum(1 for p in per_sample if p["is_exact_match"])
    _standin.write_json(out_dir / "transcribe_diarize_results.json", {
        "config": {"dataset": args.dataset, "repo_id": repo, "split": args.split, "model_path": args.model_path,
                   "concurrency": args.concurrency, "wall_clock_s": round(wall, 3)},
        "summary": {"total_samples": len(samples), "evaluated": len(ok), "skipped": len(samples) - len(ok),
                    "exact_matches": exact, "mismatches": len(samples) - exact,
                    "exact_match_rate": exact / len(samples) if samples else 0.0},
        "speed": speed, "diarization_metrics": metrics, "diarization_metrics_percent": percent, "per_sample": per_sample})
    print(f"{args.dataset}: evaluated={len(ok)}/{len(samples)} failed_requests={speed['failed_requests']}", flush=True)
    print(_standin.timing_line("client", _T0, time.time()), flush=True)
    if speed["failed_requests"]:
        print(f"Evaluation failed: {speed['failed_requests']} requests failed", flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
