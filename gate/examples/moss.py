"""MOSS-Transcribe-Diarize example runs: the speed file, the raw requests and the evaluation (per_sample) file.

CER and cpCER follow the client's cleaning (docs/upstream.md §3.2) and are computed from the per-sample texts written;
latency and RTF statistics are those of the per-request latencies. DER is plausible, not derived.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from rapidfuzz.distance import Levenshtein

from gate.examples.dataset import (
    CJK_NOVEL,
    Dataset,
    corrupt,
    dataset,
    moss_shape,
    novel_word,
    run_errors,
    streaming,
    stretch_tail,
)
from gate.examples.spec import DUPLICATE_IDS, MISSING_IDS, NAN, ExampleSpec, write_json
from gate.formats import result_types
from gate.formats.config import Workload
from gate.reading.samples import clean_no_speaker, cp_cer_counts

_ZH_PUNCT = "，。？！"
_TIMESTAMP = re.compile(r"\[\d+(?:\.\d+)?\]")
_SPEAKER_TAG = re.compile(r"\[S0*(\d+)\]")
_SPEAKER_SWAP = {"movies800times": 0.045, "movies800times_stream": 0.045, "aishell4_long": 0.012, "googletime": 0.006}


def write_moss(run_dir: Path, workload: Workload, model_id: str, spec: ExampleSpec, rng: np.random.Generator,
               defect: str | None) -> None:
    """One MOSS workload in one run: its speed, request and evaluation files (with `defect` planted)."""
    name = workload.name
    data = dataset(workload.id, workload.expected_samples, workload.format, workload.lang)
    n = workload.expected_samples - (max(1, workload.expected_samples // 8) if defect == result_types.WRONG_TOTAL else 0)
    errors = run_errors(data, workload.id, spec, rng)[:n]
    failed = np.zeros(n, dtype=bool)
    if defect in (result_types.EVALUATED_NE_TOTAL, result_types.FAILED_REQUESTS):
        failed[data.order[:3][data.order[:3] < n]] = True
    elif defect == result_types.ALL_FAILED:
        failed[:] = True
    # Speed: one run-level draw moves throughput and latency together; the factor is the spec's.
    factor = spec.speed_factor.get(workload.id, 1.0)
    z = rng.normal(0.0, spec.speed_sigma)
    latency = data.base_latency[:n] * moss_shape(name)[2] * np.exp(-z + rng.normal(0, spec.speed_sigma / 3, n)) / factor
    latency = stretch_tail(latency, spec.p95_factor.get(workload.id, 1.0))
    totals = _Totals()
    samples, outputs, per_sample = _requests(data, workload, n, errors, failed, latency, spec, rng, totals)
    completed = int((~failed).sum())
    wall = n / (moss_shape(name)[1] * np.exp(z) * factor)
    speed = _speed_section(n, completed, latency[~failed], data.durations[:n][~failed], wall)
    if workload.stream and completed:  # the client's --stream figures, drawn last: the run's other draws stay the same
        stream = streaming(latency[~failed], data.durations[:n][~failed], [int(rng.integers(2**32))],
                           sigma=spec.speed_sigma, ttft_factor=spec.ttft_factor.get(workload.id, 1.0))
        speed.update({k: round(v, 4) for k, v in stream.figures().items()})
        for k, output in enumerate(o for o in outputs if o["is_success"]):
            output.update(text_ttft_s=round(float(stream.ttft[k]), 6),
                          inter_chunk_s=[round(float(g), 6) for g in stream.gaps[k]])
    config = _config(workload, model_id, n, wall, defect)
    summary = _summary(per_sample, n, completed)
    if defect == DUPLICATE_IDS:
        per_sample[3] = dict(per_sample[3], id=per_sample[2]["id"])
    elif defect == MISSING_IDS:
        del per_sample[3]
    metrics = totals.metrics(completed)
    evaluation: dict[str, Any] = {
        "config": {k: config[k] for k in ("dataset", "repo_id", "split", "model_path", "concurrency", "wall_clock_s")},
        "summary": summary, "speed": speed, "diarization_metrics": metrics,
        "diarization_metrics_percent": _percent(metrics), "per_sample": per_sample,
    }
    if defect == NAN:
        evaluation["diarization_metrics"]["cer"] = float("nan")
    speed_document = {"schema_version": 2 if defect == result_types.BAD_SCHEMA else 1, "config": config, "speed": speed}
    directory = run_dir / workload.path
    directory.mkdir(parents=True, exist_ok=True)
    write_json(directory / result_types.MOSS_SPEED_FILE, speed_document)
    write_json(directory / "transcribe_diarize_asr_results.json",
               {"schema_version": 1, "config": config, "samples": samples, "outputs": outputs})
    if defect != result_types.MISSING_FILE:
        write_json(directory / result_types.MOSS_RESULTS_FILE, evaluation, truncate=defect == result_types.UNREADABLE)


@dataclass
class _Totals:
    """Corpus sums over the scored samples, accumulated in sample order (the client's own order of additions)."""

    cer_err: int = 0
    cer_ref: int = 0
    cp_err: int = 0
    cp_ref: int = 0
    cer_valid: int = 0
    cp_valid: int = 0
    above_50: int = 0
    below_err: int = 0
    below_ref: int = 0
    der_valid: int = 0
    der_skip_noref: int = 0
    der_total: float = 0.0
    der_fa: float = 0.0
    der_md: float = 0.0
    der_conf: float = 0.0

    def add_cer(self, errors: int, ref_len: int, cer: float) -> None:
        self.cer_valid += 1
        self.cer_err += errors
        self.cer_ref += ref_len
        if cer > 0.5:
            self.above_50 += 1
        else:
            self.below_err += errors
            self.below_ref += ref_len

    def add_cp(self, cp: tuple[int, int]) -> None:
        self.cp_valid += 1
        self.cp_err += cp[0]
        self.cp_ref += cp[1]

    def add_der(self, der: tuple[float, float, float, float] | None) -> None:
        if der is None:
            self.der_skip_noref += 1
            return
        self.der_valid += 1
        self.der_total += der[0]
        self.der_fa += der[1]
        self.der_md += der[2]
        self.der_conf += der[3]

    def metrics(self, completed: int) -> dict[str, Any]:
        """The evaluation's diarization_metrics block."""
        cer_total = self.cer_err / self.cer_ref if self.cer_ref else None
        cp_total = self.cp_err / self.cp_ref if self.cp_ref else None
        cer_on_cp = cer_total  # every cp-valid sample here is also cer-valid and vice versa
        return {
            "cer_no_spk": cer_total, "cer": cer_total,
            "cer_no_spk_below_50_corpus": self.below_err / self.below_ref if self.below_ref else None,
            "n_above_50_pct_cer": self.above_50,
            "pct_above_50_pct_cer": self.above_50 / self.cer_valid * 100.0 if self.cer_valid else 0.0,
            "cp_cer": cp_total, "cer_no_spk_cp_valid": cer_on_cp,
            "delta_cer": cp_total - cer_on_cp if cp_total is not None and cer_on_cp is not None else None,
            "cer_valid_samples": self.cer_valid, "cp_cer_valid_samples": self.cp_valid,
            "speaker_timestamp_der": ((self.der_fa + self.der_md + self.der_conf) / self.der_total
                                      if self.der_total else None),
            "speaker_timestamp_der_collar": 0.0, "speaker_timestamp_der_valid_samples": self.der_valid,
            "speaker_timestamp_der_skipped": self.der_skip_noref, "speaker_timestamp_der_skipped_parse_error": 0,
            "speaker_timestamp_der_skipped_no_ref_segments": self.der_skip_noref,
            "speaker_timestamp_der_skipped_no_pred_segments": 0, "speaker_timestamp_der_compute_error": "",
            "speaker_timestamp_der_total_seconds": self.der_total, "speaker_timestamp_der_false_alarm": self.der_fa,
            "speaker_timestamp_der_missed_detection": self.der_md, "speaker_timestamp_der_confusion": self.der_conf,
            "count": completed,
        }


_PERCENT_KEYS = {"cer_no_spk", "cer", "cer_no_spk_below_50_corpus", "cp_cer", "cer_no_spk_cp_valid", "delta_cer",
                 "speaker_timestamp_der"}


def _percent(metrics: dict[str, Any]) -> dict[str, Any]:
    return {k: (v * 100.0 if k in _PERCENT_KEYS and v is not None else v) for k, v in metrics.items()}


def _requests(data: Dataset, workload: Workload, n: int, errors: np.ndarray, failed: np.ndarray, latency: np.ndarray,
              spec: ExampleSpec, rng: np.random.Generator, totals: _Totals) -> tuple[list, list, list]:
    """Per request: the input sample, the client's raw output and the scored per-sample row (totals updated)."""
    name = workload.name
    english = name == "googletime"
    hallucinated = spec.hallucinate.get(workload.id)
    swap_rate = _SPEAKER_SWAP.get(name, 0.01)
    novel = novel_word if english else (lambda k: CJK_NOVEL[k % len(CJK_NOVEL)])
    n_speakers = moss_shape(name)[5]
    samples, outputs, per_sample = [], [], []
    for i in range(n):
        uid, duration = data.ids[i], float(data.durations[i])
        reference, hypothesis = _moss_texts(data, i, int(errors[i]), english, novel, swap_rate, n_speakers,
                                            hallucinate=uid == hallucinated)
        audio_path = f"/tmp/synthetic_{name}/sample_{i:06d}.wav"
        samples.append({"sample_id": uid, "audio_path": audio_path, "expected_text": reference})
        if failed[i]:
            outputs.append(_request_result(uid, "", False, 0.0, 0.0, "HTTP 500: Internal Server Error"))
            per_sample.append(_failed_sample(uid, audio_path, reference))
            continue
        outputs.append(_request_result(uid, hypothesis, True, float(latency[i]), duration, ""))
        per_sample.append(_scored_sample(data, i, reference, hypothesis, audio_path, float(latency[i]), rng, totals))
    return samples, outputs, per_sample


def _scored_sample(data: Dataset, i: int, reference: str, hypothesis: str, audio_path: str, latency: float,
                   rng: np.random.Generator, totals: _Totals) -> dict[str, Any]:
    """One scored per_sample row, as the client computes it (docs/upstream.md §3.2 cleaning for CER and cpCER)."""
    ref_clean, hyp_clean = clean_no_speaker(reference), clean_no_speaker(hypothesis)
    cer_valid = len(ref_clean) > 0
    cer_e = Levenshtein.distance(ref_clean, hyp_clean) if cer_valid else len(hyp_clean)
    cer = (cer_e / len(ref_clean)) if cer_valid else (None if cer_e else 0.0)
    cp = cp_cer_counts(reference, hypothesis)
    if cer is not None and cer_valid:
        totals.add_cer(cer_e, len(ref_clean), cer)
    if cp is not None:
        totals.add_cp(cp)
    der = _synthetic_der(data, i, rng) if data.refs[i] else None
    totals.add_der(der)
    expected_form, result_form = _exact_match_form(reference), _exact_match_form(hypothesis)
    return {
        "id": data.ids[i], "audio_path": audio_path, "expected_text": reference, "result_text": hypothesis,
        "expected_normalized": expected_form, "result_normalized": result_form,
        "is_exact_match": expected_form == result_form,
        "latency_s": round(latency, 3), "audio_duration_s": float(data.durations[i]), "error": None,
        "cer_no_spk": cer, "cp_cer": None if cp is None else cp[0] / cp[1],
        "cer_valid": cer_valid, "cp_cer_valid": cp is not None,
        "cp_invalid_reason": "" if cp is not None else ("no_ref_speaker_tags" if not data.refs[i] else "empty_ref_after_clean"),
        "speaker_timestamp_der_valid": der is not None,
        "speaker_timestamp_der_invalid_reason": "" if der else "no_ref_timestamped_speaker_segments",
        "speaker_timestamp_ref_segments": len(data.refs[i]), "speaker_timestamp_pred_segments": len(data.refs[i]),
        "speaker_timestamp_der": None if der is None else (der[1] + der[2] + der[3]) / der[0],
        "speaker_timestamp_der_total_seconds": der[0] if der else 0.0,
        "speaker_timestamp_der_false_alarm": der[1] if der else 0.0,
        "speaker_timestamp_der_missed_detection": der[2] if der else 0.0,
        "speaker_timestamp_der_confusion": der[3] if der else 0.0,
    }


def _speed_section(n: int, completed: int, lat_ok: np.ndarray, dur_ok: np.ndarray,
                   wall: float) -> dict[str, Any]:
    """The speed file's `speed` block: request counts, latency, RTF and throughput of the completed requests."""
    speed: dict[str, Any] = {"total_requests": n, "completed_requests": completed, "failed_requests": n - completed}
    if not completed:
        return speed
    rtf = lat_ok / dur_ok
    speed.update({
        "latency_mean_s": round(float(lat_ok.mean()), 3), "latency_median_s": round(float(np.median(lat_ok)), 3),
        "latency_p95_s": round(float(np.percentile(lat_ok, 95)), 3),
        "latency_p99_s": round(float(np.percentile(lat_ok, 99)), 3),
        "audio_duration_mean_s": round(float(dur_ok.mean()), 3),
        "rtf_mean": round(float(rtf.mean()), 4), "rtf_median": round(float(np.median(rtf)), 4),
        "rtf_p95": round(float(np.percentile(rtf, 95)), 4), "rtf_p99": round(float(np.percentile(rtf, 99)), 4),
        "throughput_qps": round(float(completed / wall), 3),
        "audio_throughput_s_per_s": round(float(dur_ok.sum() / wall), 3),
    })
    return speed


def _config(workload: Workload, model_id: str, n: int, wall: float, defect: str | None) -> dict[str, Any]:
    """The client's `config` block (the request budget is the one MAX_NEW_TOKENS_SET plants)."""
    name = workload.name
    no_budget = workload.require_null_max_new_tokens and defect != result_types.MAX_NEW_TOKENS_SET
    return {
        "dataset": "movies800times" if name.startswith("movies800times") else name,
        "repo_id": _moss_repo(name), "split": "validation", "audio_column": "audio", "expected_column": "transcription",
        "model_path": model_id, "base_url": "http://127.0.0.1:8000",
        "concurrency": 16, "warmup": 0, "request_rate": "inf",
        "request_timeout_s": 300.0 if workload.require_null_max_new_tokens else 1800.0,
        "max_new_tokens": None if no_budget else 65536,
        "max_samples": n if defect == result_types.WRONG_TOTAL else None,
        "wall_clock_s": round(float(wall), 3), "timing_scope": "asr_requests_only",
    }


def _summary(per_sample: list[dict[str, Any]], n: int, completed: int) -> dict[str, Any]:
    matches = sum(1 for s in per_sample if s.get("is_exact_match"))
    return {"total_samples": n, "evaluated": completed, "skipped": n - completed, "exact_matches": matches,
            "mismatches": completed - matches, "exact_match_rate": (matches / completed) if completed else 0.0}


def _moss_texts(data: Dataset, i: int, errors: int, english: bool, novel, swap_rate: float, n_speakers: int,
                *, hallucinate: bool) -> tuple[str, str]:
    """Reference and hypothesis in MOSS inline markup: [start][S01]text[end] per segment."""
    segments, who = data.refs[i], data.speakers[i]
    if not segments:
        return f"[0.00][{data.durations[i]:.2f}]", ""
    units = [s.split(" ") if english else list(s) for s in segments]
    # Spread the utterance's errors over its segments, front to back, deterministically.
    per_segment = [0] * len(units)
    for k in range(errors):
        per_segment[(i + k) % len(units)] += 1
    relabel = (lambda s: s) if i % 2 == 0 else (lambda s: n_speakers + 1 - s)  # a label permutation cpCER undoes
    seconds = float(data.durations[i]) / len(units)
    ref_parts, hyp_parts = [], []
    for j, (tokens, speaker) in enumerate(zip(units, who, strict=True)):
        start, end = j * seconds, (j + 1) * seconds - 0.2
        hyp_tokens = corrupt(tokens, per_segment[j], bool(data.deletion_kind[i]), i * 31 + j, novel)
        if hallucinate and j == len(units) - 1:  # 40 inserted characters (one 40-character token in English)
            extra = [CJK_NOVEL[k] for k in range(40)]
            hyp_tokens = hyp_tokens + (["".join(extra)] if english else extra)
        sep = " " if english else ""
        punct = "." if english else _ZH_PUNCT[(i + j) % len(_ZH_PUNCT)]
        hyp_speaker = relabel(speaker)
        if (i * 7919 + j * 104729) % 1000 < swap_rate * 1000:  # the model's habitual speaker confusions
            hyp_speaker = relabel(speaker % n_speakers + 1)
        ref_parts.append(f"[{start:.2f}][S{speaker:02d}]{sep.join(tokens)}{punct}[{end:.2f}]")
        hyp_parts.append(f"[{start + 0.04:.2f}][S{hyp_speaker:02d}]{sep.join(hyp_tokens)}{punct}[{end - 0.03:.2f}]")
    return "".join(ref_parts), "".join(hyp_parts)


def _synthetic_der(data: Dataset, i: int, rng: np.random.Generator) -> tuple[float, float, float, float]:
    """(total, false alarm, missed, confusion) seconds: plausible, not derived from the texts (DER is info only)."""
    total = float(data.durations[i]) * 0.9
    fa, md, conf = rng.uniform(0.0, 0.08, 3) * total
    return total, float(fa), float(md), float(conf)


@lru_cache(maxsize=65536)
def _exact_match_form(text: str) -> str:
    """Roughly the client's exact-match normalization (timestamps out, [Sn] tags spaced, casefolded); info only."""
    text = _TIMESTAMP.sub(" ", _SPEAKER_TAG.sub(lambda m: f" [S{int(m.group(1))}] ", text))
    return " ".join(text.split()).casefold()


def _request_result(uid: str, text: str, ok: bool, latency: float, duration: float, error: str) -> dict[str, Any]:
    return {"request_id": uid, "text": text, "is_success": ok, "latency_s": round(latency, 6),
            "audio_duration_s": duration, "rtf": round(latency / duration, 6) if ok and duration else None,
            "prompt_tokens": None, "completion_tokens": None, "engine_time_s": None, "tok_per_s": None,
            "wav_path": None, "error": error, "audio_ttfp_s": None, "inter_chunk_s": [],
            "chunk_audio_duration_s": None, "max_playback_underrun_s": None, "text_ttft_s": None,
            "audio_chunk_count": None, "first_audio_payload_bytes": None}


def _failed_sample(uid: str, audio_path: str, reference: str) -> dict[str, Any]:
    return {"id": uid, "audio_path": audio_path, "expected_text": reference, "result_text": "",
            "expected_normalized": _exact_match_form(reference), "result_normalized": "", "is_exact_match": False,
            "latency_s": 0.0, "audio_duration_s": 0.0, "error": "HTTP 500: Internal Server Error",
            "cer_no_spk": None, "cp_cer": None, "cer_valid": False, "cp_cer_valid": False, "cp_invalid_reason": "",
            "speaker_timestamp_der_valid": False, "speaker_timestamp_der_invalid_reason": "",
            "speaker_timestamp_ref_segments": 0, "speaker_timestamp_pred_segments": 0, "speaker_timestamp_der": None,
            "speaker_timestamp_der_total_seconds": 0.0, "speaker_timestamp_der_false_alarm": 0.0,
            "speaker_timestamp_der_missed_detection": 0.0, "speaker_timestamp_der_confusion": 0.0}


def _moss_repo(name: str) -> str:
    return {"aishell4_long": "zhaochenyang20/AISHELL4", "googletime": "zhaochenyang20/googletime"}.get(
        name, "zhaochenyang20/movies800time")
