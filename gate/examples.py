"""Deterministic, clearly synthetic result trees in the runbook layout (for the README, tests and demos).

Every file is schema-exact (reference §2.1, §2.2, §2.4): the SeedTTS `--output` JSON
(schema_version 2) with its raw `--save-raw-dir` JSONL, and the three MOSS-Transcribe-Diarize
files. The numbers are SYNTHETIC, shaped after the runbook's "Reference results", and every
aggregate is computed from the per-sample rows written beside it: corpus WER is Σerrors/Σwords of
`ref_norm`/`hyp_norm` (recomputable with jiwer), MOSS CER/cpCER follow the §3.2 cleaning, latency
and RTF statistics are those of the per-request latencies.

Determinism: the "dataset" (utterance ids, references, durations) and the model's habitual errors
depend only on the workload id, so a baseline and a candidate share ids and references (paired
data). Run-to-run noise depends on (seed, workload, run). The same spec gives byte-identical trees.

Error injection is exact by construction: an utterance either only loses words (deletions) or
only gets novel tokens substituted or inserted (tokens that never occur in a reference), so the
edit distance equals the number of injected edits.
"""
from __future__ import annotations

import hashlib
import json
import re
import shutil
import zlib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

import numpy as np
from rapidfuzz.distance import Levenshtein

from gate import results
from gate.baseline import calibrate_baseline, side_from_tree, write_baseline
from gate.config import Suite, Workload
from gate.samples import clean_no_speaker, cp_cer_counts

SYNTHETIC_NOTICE = ("SYNTHETIC EXAMPLE DATA written by `gate example` (gate/examples.py). "
                    "Not a measurement of any GPU, model or commit.")

BASELINE_COMMIT = "5b0c1f3e9a7d4c2b8e6f1a3d5c7b9e0f2a4c6e8d"
CANDIDATE_COMMIT = "c41e7a9d2b5f8c0e3a6d9f1b4e7c0a3d6f9b2e5a"
AA_PAIRS = 3  # A/A pairs behind the example baseline's calibration: 4 degrees of freedom each (3 + 3 runs)
AA_SEEDS_FROM = 100  # A/A trees use seeds 100, 101, ...: noise independent of the pair's (0 and 1)
DEFAULT_FREEZE = (
    "aiohttp==3.12.15",
    "datasets==4.1.1",
    "flashinfer-python==0.6.14",
    "huggingface-hub==0.35.3",
    "jiwer==4.0.0",
    "numpy==2.3.4",
    "openai-whisper==20250625",
    "rapidfuzz==3.14.1",
    "scipy==1.16.2",
    "sglang==0.5.16",
    "torch==2.11.0",
    "transformers==5.12.1",
    "zhon==2.1.1",
)

# Coverage defects write_example_tree can plant in run1 (results.py codes plus per-sample ones).
NAN = "nan"  # a metric written as NaN (not valid JSON)
DUPLICATE_IDS = "duplicate_ids"  # per-sample rows: one id twice
MISSING_IDS = "missing_ids"  # per-sample rows: one row dropped
SEEDTTS_DEFECTS = (results.MISSING_FILE, results.UNREADABLE, results.BAD_SCHEMA, results.EVALUATED_NE_TOTAL,
                   results.SKIPPED, results.WRONG_TOTAL, NAN, DUPLICATE_IDS, MISSING_IDS)
MOSS_DEFECTS = (results.MISSING_FILE, results.UNREADABLE, results.BAD_SCHEMA, results.EVALUATED_NE_TOTAL,
                results.WRONG_TOTAL, results.FAILED_REQUESTS, results.NO_SPEED, results.MAX_NEW_TOKENS_SET,
                NAN, DUPLICATE_IDS, MISSING_IDS)


@dataclass(frozen=True)
class ExampleSpec:
    seed: int = 0
    models: tuple[str, ...] | None = None  # None = all four
    runs: tuple[str, ...] = ("warm", "1", "2", "3")
    commit: str = BASELINE_COMMIT
    freeze: tuple[str, ...] = DEFAULT_FREEZE
    speed_sigma: float = 0.01  # per-run multiplicative log-normal noise on speed metrics
    speed_factor: Mapping[str, float] = field(default_factory=dict)  # workload id -> throughput multiplier (latency, RTF divided)
    p95_factor: Mapping[str, float] = field(default_factory=dict)  # workload id -> extra multiplier on latency_p95 only
    extra_errors: Mapping[str, int] = field(default_factory=dict)  # workload id -> utterances with +1 error (same every run)
    hallucinate: Mapping[str, str] = field(default_factory=dict)  # workload id -> utterance id with +40 inserted words/chars
    flip_rate: float = 0.002  # share of utterances whose errors differ by ±1 between runs (nondeterminism)
    defects: Mapping[str, str] = field(default_factory=dict)  # workload id -> defect code, applied to run1


def write_example_tree(root: Path, suite: Suite, spec: ExampleSpec = ExampleSpec()) -> Path:
    """Write one synthetic result tree <root>/run<R>/... and return root."""
    root = Path(root)
    workloads = suite.workloads_for(spec.models)
    _check_spec(spec, suite, workloads)
    root.mkdir(parents=True, exist_ok=True)
    (root / "SYNTHETIC.txt").write_text(SYNTHETIC_NOTICE + "\n", encoding="utf-8")
    for run in spec.runs:
        run_dir = root / f"run{run}"
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "commit.txt").write_text(spec.commit + "\n", encoding="utf-8")
        (run_dir / "freeze.txt").write_text("".join(line + "\n" for line in spec.freeze), encoding="utf-8")
        for workload in workloads:
            defect = spec.defects.get(workload.id) if run == "1" else None
            rng = np.random.default_rng([spec.seed, _stable(workload.id), _stable(run)])
            model_id = suite.models[workload.model].model_id
            if workload.format == "seedtts":
                _write_seedtts(run_dir, workload, model_id, spec, rng, defect)
            else:
                _write_moss(run_dir, workload, model_id, spec, rng, defect)
    return root


def write_example_pair(out: Path, suite: Suite) -> tuple[Path, Path]:
    """out/baseline and out/candidate: same-commit noise everywhere, plus one real-looking regression.

    The candidate's qwen3/asr_en loses 6% throughput (latency and RTF up by the same factor) and
    40 utterances each get one extra word error.
    """
    out = Path(out)
    baseline = write_example_tree(out / "baseline", suite, ExampleSpec(seed=0, commit=BASELINE_COMMIT))
    candidate = write_example_tree(out / "candidate", suite, ExampleSpec(
        seed=1, commit=CANDIDATE_COMMIT, speed_factor={"qwen3/asr_en": 0.94}, extra_errors={"qwen3/asr_en": 40}))
    (out / "README.txt").write_text(
        SYNTHETIC_NOTICE + "\n\n"
        "baseline/   commit " + BASELINE_COMMIT + "\n"
        "candidate/  commit " + CANDIDATE_COMMIT + ": qwen3/asr_en is 6% slower and 40 utterances each have one\n"
        "            extra word error; every other workload differs from the baseline by run-to-run noise only.\n\n"
        "Try: gate compare " + str(baseline) + " " + str(candidate) + "\n", encoding="utf-8")
    return baseline, candidate


def write_example_baseline(out: Path, suite: Suite, *, pairs: int = AA_PAIRS) -> Path:
    """out/baseline.json: out/baseline stored as a baseline file, calibrated from `pairs` A/A pairs.

    Each A/A pair is the baseline's commit written twice with fresh seeds (3 scored runs each; the
    unscored warm-up run is left out), so the calibration measures exactly the run-to-run noise the
    pair was generated with (ExampleSpec.speed_sigma). The A/A trees are written under out/aa/ and
    removed once calibrated: ~27 MB each, and regenerated identically from their seeds.
    """
    out = Path(out)
    baseline_file = write_baseline(side_from_tree(out / "baseline", suite), out / "baseline.json")
    aa_root = out / "aa"
    trees = [write_example_tree(aa_root / f"pair{k // 2 + 1}-{'ab'[k % 2]}", suite,
                                ExampleSpec(seed=AA_SEEDS_FROM + k, commit=BASELINE_COMMIT, runs=("1", "2", "3")))
             for k in range(2 * pairs)]
    sides = [side_from_tree(tree, suite, sample_reader=_speed_only) for tree in trees]
    # Every synthetic tree is generated on its own, as separate jobs would measure them: the pairs count as
    # cross-job pairs, which a comparison against baseline.json (another job) needs before it may FAIL on speed.
    calibrate_baseline(baseline_file, list(zip(sides[0::2], sides[1::2])), suite, cross_job=[True] * pairs)
    shutil.rmtree(aa_root)
    with (out / "README.txt").open("a", encoding="utf-8") as readme:
        readme.write(
            f"\nbaseline.json  baseline/ stored by gate.baseline, with its speed noise floor calibrated from {pairs}\n"
            f"               synthetic A/A pairs (commit {BASELINE_COMMIT[:10]} twice, seeds {AA_SEEDS_FROM}–"
            f"{AA_SEEDS_FROM + 2 * pairs - 1}; the A/A trees\n"
            "               were removed after calibration). Compared against it, speed rows get p-values:\n\n"
            f"Try: gate compare {baseline_file} {out / 'candidate'}\n")
    return baseline_file


def _speed_only(run_dir: Path, workload: Workload) -> dict:  # calibration reads speed values, not per-utterance data
    return {}


def utterance_ids(workload: Workload) -> tuple[str, ...]:
    """The utterance ids the generator writes for a workload (the same in every tree)."""
    return _dataset(workload.id, workload.expected_samples, workload.format, workload.lang).ids


def _check_spec(spec: ExampleSpec, suite: Suite, workloads: tuple[Workload, ...]) -> None:
    known = {w.id: w for w in suite.workloads}
    for knob in ("speed_factor", "p95_factor", "extra_errors", "hallucinate", "defects"):
        for workload_id in getattr(spec, knob):
            if workload_id not in known:
                raise ValueError(f"ExampleSpec.{knob}: unknown workload {workload_id!r}")
    for workload_id, utterance in spec.hallucinate.items():
        if utterance not in utterance_ids(known[workload_id]):
            raise ValueError(f"ExampleSpec.hallucinate: {workload_id} has no utterance {utterance!r}")
    for workload_id, defect in spec.defects.items():
        allowed = SEEDTTS_DEFECTS if known[workload_id].format == "seedtts" else MOSS_DEFECTS
        if defect == results.MAX_NEW_TOKENS_SET and not known[workload_id].require_null_max_new_tokens:
            allowed = ()
        if defect not in allowed:
            raise ValueError(f"ExampleSpec.defects: {defect!r} does not apply to {workload_id}")
    if "1" not in spec.runs and spec.defects:
        raise ValueError("ExampleSpec.defects apply to run1, which is not in runs")


def _stable(text: str) -> int:
    return zlib.crc32(text.encode("utf-8"))


# --- synthetic datasets --------------------------------------------------------------------------

_EN_WORDS = tuple("""
the a of and to in is it that was he for on are as with his they at be this from have or by one had
not but what all were when we there can an your which their said if do will each about how up out them
then she many some so these would other into has more her two like him see time could no make than
first been its who now people my made over did down only way find use may water long little very after
words called just where most know get through back much before go good new write our used me man too
any day same right look think also around another came come work three word must because does part
even place well such here take why things help put years different away again off went old number
great tell men say small every found still between name should home big give air line set own under
read last never us left end along while might next sound below saw something thought both few those
always looked show large often together asked house world going want school important until form food
keep children feet land side without boy once animals life enough took sometimes four head above kind
began almost live page got earth need far hand high year mother light parts country father let night
following picture being study second eyes soon times story boys since white days ever paper hard near
sentence better best across during today others however sure means knew its try told young miles sun
ways thing whole hear example heard several change answer room sea against top turned learn point city
play toward five using himself usually money seen car morning open river garden window quiet nothing
""".split())
_NOVEL_SYLLABLES = ("zor", "vek", "qua", "xil", "pom", "dru", "kav", "yeb")  # no English word is made of these
_CJK_COMMON = tuple(chr(c) for c in range(0x4E00, 0x4E00 + 900, 3))  # reference characters
_CJK_NOVEL = tuple(chr(c) for c in range(0x9000, 0x9000 + 120))  # never in a reference
_ZH_PUNCT = "，。？！"
_TIMESTAMP = re.compile(r"\[\d+(?:\.\d+)?\]")
_SPEAKER_TAG = re.compile(r"\[S0*(\d+)\]")
_SPEAKER_SWAP = {"movies800times": 0.045, "movies800times_stream": 0.045, "aishell4_long": 0.012, "googletime": 0.006}

# Per workload: (corpus WER or CER, throughput, latency mean s, p95/mean). SeedTTS latency ≈ 32 / throughput.
_SEEDTTS_SHAPE = {
    "qwen3/asr_en": (0.0122, 97.9), "qwen3/asr_zh": (0.0060, 112.4),
    "whisper/asr_en": (0.0138, 48.6), "whisper/asr_zh": (0.0667, 52.3),
    "fun/asr_en": (0.0171, 127.5), "fun/asr_zh": (0.0135, 167.4),
}
# MOSS: (CER, throughput req/s, latency mean s, segments per sample, units per segment, speakers, seconds per segment)
_MOSS_SHAPE = {
    "movies800times": (0.058, 58.167, 0.273, 3, 9, 2, 3.4),
    "movies800times_stream": (0.057, 56.9, 0.281, 3, 9, 2, 3.4),
    "aishell4_long": (0.14, 0.071, 158.0, 60, 14, 4, 30.0),
    "googletime": (0.33, 0.046, 251.0, 50, 6, 3, 50.0),
}
_EMPTY_MOVIES_REFERENCES = 16  # movies800times clips with no speech: not CER-valid (784 of 800 valid)




def _seedtts_shape(workload_id: str) -> tuple[float, float]:
    return _SEEDTTS_SHAPE.get(workload_id, (0.02, 80.0))  # a workload the runbook does not list


def _moss_shape(name: str) -> tuple[float, float, float, int, int, int, float]:
    return _MOSS_SHAPE.get(name, (0.1, 1.0, 10.0, 5, 10, 2, 5.0))


@dataclass(frozen=True)
class _Dataset:
    ids: tuple[str, ...]
    refs: tuple[tuple[str, ...], ...]  # SeedTTS: reference tokens; MOSS: per-segment text (tokens joined later)
    speakers: tuple[tuple[int, ...], ...]  # MOSS: speaker per segment; SeedTTS: ()
    durations: np.ndarray  # seconds
    base_errors: np.ndarray  # the model's habitual errors per utterance (same in every run and tree)
    deletion_kind: np.ndarray  # bool: errors are deletions (else novel substitutions/insertions)
    base_latency: np.ndarray  # relative latency per utterance (mean 1)
    order: np.ndarray  # a fixed permutation: who gets extra errors first
    input_sha256: str


@lru_cache(maxsize=32)
def _dataset(workload_id: str, n: int, fmt: str, lang: str | None) -> _Dataset:
    rng = np.random.default_rng(_stable("dataset:" + workload_id))
    name = workload_id.split("/", 1)[1]
    ids: list[str] = []
    refs: list[tuple[str, ...]] = []
    speakers: list[tuple[int, ...]] = []
    if fmt == "seedtts":
        rate = _seedtts_shape(workload_id)[0]
        numbers = 10_000_000 + rng.choice(30_000_000, size=2 * n, replace=False)
        lengths = np.clip(rng.poisson(13 if lang == "en" else 18, size=n), 4, 40)
        for i in range(n):
            if lang == "en":
                ids.append(f"common_voice_en_{numbers[2 * i]}-common_voice_en_{numbers[2 * i + 1]}")
                refs.append(tuple(_EN_WORDS[j] for j in rng.integers(0, len(_EN_WORDS), lengths[i])))
            else:
                ids.append(f"{numbers[2 * i]:08d}-{numbers[2 * i + 1]:08d}")
                refs.append(tuple(_CJK_COMMON[j] for j in rng.integers(0, len(_CJK_COMMON), lengths[i])))
        units = lengths.astype(float)
        durations = np.round(units * (0.33 if lang == "en" else 0.24) + rng.uniform(0.4, 1.2, n), 3)
    else:
        rate, _, _, segments, per_segment, n_speakers, seconds = _moss_shape(name)
        english = name == "googletime"
        prefix = {"movies800times": "movie", "movies800times_stream": "movie"}.get(name, name)
        units = np.zeros(n)
        durations = np.zeros(n)
        for i in range(n):
            ids.append(f"{prefix}_{i + 1:04d}.wav")
            if name.startswith("movies") and i % 50 == 7 and i // 50 < _EMPTY_MOVIES_REFERENCES:
                refs.append(())
                speakers.append(())
                durations[i] = round(float(rng.uniform(3, 8)), 3)
                continue
            count = max(1, int(rng.poisson(segments)))
            texts, who = [], []
            for _ in range(count):
                size = max(2, int(rng.poisson(per_segment)))
                if english:
                    texts.append(" ".join(_EN_WORDS[j] for j in rng.integers(0, len(_EN_WORDS), size)))
                else:
                    texts.append("".join(_CJK_COMMON[j] for j in rng.integers(0, len(_CJK_COMMON), size)))
                who.append(int(rng.integers(1, n_speakers + 1)))
            refs.append(tuple(texts))
            speakers.append(tuple(who))
            units[i] = sum(len(t.split(" ")) if english else len(t) for t in texts)  # the tokens errors act on
            durations[i] = round(count * seconds * float(rng.uniform(0.8, 1.2)), 3)
    # Habitual errors: overdispersed (most utterances clean, a few bad), scaled to the target rate.
    weight = rng.gamma(0.6, 1 / 0.6, n) * units
    base_errors = rng.poisson(rate * weight * units.sum() / max(weight.sum(), 1e-9))
    base_errors = np.minimum(base_errors, np.maximum(units.astype(int) - 1, 0))
    digest = hashlib.sha256()
    for uid, ref in zip(ids, refs):
        digest.update(uid.encode("utf-8") + b"\0" + "|".join(ref).encode("utf-8") + b"\n")
    return _Dataset(
        ids=tuple(ids), refs=tuple(refs), speakers=tuple(speakers), durations=durations,
        base_errors=base_errors.astype(np.int64), deletion_kind=rng.random(n) < 0.25,
        base_latency=rng.lognormal(0.0, 0.25, n) * (0.6 + 0.4 * durations / max(durations.mean(), 1e-9)),
        order=rng.permutation(n), input_sha256=digest.hexdigest(),
    )


def _run_errors(data: _Dataset, workload_id: str, spec: ExampleSpec, rng: np.random.Generator) -> np.ndarray:
    """Errors per utterance in this run: the model's habit, the spec's extra errors, and ±1 flips."""
    errors = data.base_errors.copy()
    extra = spec.extra_errors.get(workload_id, 0)
    if extra:
        errors[data.order[:extra]] += 1
    flips = rng.random(len(errors)) < spec.flip_rate
    signs = np.where(rng.random(len(errors)) < 0.5, -1, 1)
    signs[errors == 0] = 1
    return errors + np.where(flips, signs, 0)


def _novel_word(k: int) -> str:
    return _NOVEL_SYLLABLES[k % 8] + _NOVEL_SYLLABLES[(k // 8) % 8]


def _corrupt(tokens: list[str], errors: int, deletion: bool, key: int, novel) -> list[str]:
    """Apply exactly `errors` edits: deletions only, or novel-token substitutions and insertions only."""
    n = len(tokens)
    if errors <= 0 or n == 0:
        return list(tokens)
    step = 7 if n % 7 else 5  # a fixed stride visits distinct positions (n is never a multiple of both)
    if deletion and errors < n:
        drop = {(key + i * step) % n for i in range(errors)}
        if len(drop) == errors:
            return [t for i, t in enumerate(tokens) if i not in drop]
    out = list(tokens)
    substitutions = min(errors - errors // 4, n)
    positions = sorted({(key + i * step) % n for i in range(substitutions)})
    for j, pos in enumerate(positions):
        out[pos] = novel(key + j)
    for j in range(errors - len(positions)):
        out.insert((key * 3 + j * 5) % (len(out) + 1), novel(key + 100 + j))
    return out


# --- SeedTTS -------------------------------------------------------------------------------------

def _write_seedtts(run_dir: Path, workload: Workload, model_id: str, spec: ExampleSpec, rng: np.random.Generator,
                   defect: str | None) -> None:
    data = _dataset(workload.id, workload.expected_samples, workload.format, workload.lang)
    en = workload.lang == "en"
    n = workload.expected_samples
    if defect == results.WRONG_TOTAL:
        n = n - 88  # as if run with --max-samples
    errors = _run_errors(data, workload.id, spec, rng)[:n]
    failed = np.zeros(n, dtype=bool)
    if defect in (results.EVALUATED_NE_TOTAL, results.SKIPPED):
        failed[data.order[:5][data.order[:5] < n]] = True
    hallucinated = spec.hallucinate.get(workload.id)
    novel = _novel_word if en else (lambda k: _CJK_NOVEL[k % len(_CJK_NOVEL)])
    join = " ".join
    rows = []
    ref_lens = np.zeros(n, dtype=np.int64)
    err_counts = np.zeros(n, dtype=np.int64)
    for i in range(n):
        ref = list(data.refs[i])
        hyp = _corrupt(ref, int(errors[i]), bool(data.deletion_kind[i]), i, novel)
        if data.ids[i] == hallucinated:
            hyp = hyp + [novel(1000 + j) for j in range(40)]
        ref_lens[i] = len(ref)
        err_counts[i] = Levenshtein.distance(ref, hyp)
        rows.append((ref, hyp))
    # Speed: one run-level draw moves throughput and latency together; the factor is the spec's.
    factor = spec.speed_factor.get(workload.id, 1.0)
    z = rng.normal(0.0, spec.speed_sigma)
    throughput_target = _seedtts_shape(workload.id)[1] * np.exp(z) * factor
    latency = data.base_latency[:n] * (32.0 / _seedtts_shape(workload.id)[1]) * np.exp(-z + rng.normal(0, spec.speed_sigma / 3, n)) / factor
    latency = _stretch_tail(latency, spec.p95_factor.get(workload.id, 1.0))
    ok = ~failed
    evaluated = int(ok.sum())
    wall = evaluated / throughput_target
    lat_ok, dur_ok = latency[ok], data.durations[:n][ok]
    rtf = lat_ok / dur_ok
    wer_rows = np.where(ok, err_counts / np.maximum(ref_lens, 1), np.nan)
    corpus_wer = float(err_counts[ok].sum() / ref_lens[ok].sum())
    measured = {
        "corpus_wer": corpus_wer,
        "per_sample_wer_max": float(np.nanmax(wer_rows)),
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
    # Raw per-request JSONL (reference §2.2), one line per sample in dataset order.
    lines = []
    for i in range(n):
        ref, hyp = rows[i]
        if failed[i]:
            record = {"id": data.ids[i], "is_success": False, "wer": None, "ref_text": _pretty(ref, en), "hyp_text": "",
                      "ref_norm": join(ref), "hyp_norm": "", "audio_duration_s": 0.0, "latency_s": 0.0,
                      "text_ttft_s": None, "inter_chunk_s": [], "error": "HTTP 500: Internal Server Error"}
        else:
            record = {"id": data.ids[i], "is_success": True, "wer": float(wer_rows[i]), "ref_text": _pretty(ref, en),
                      "hyp_text": _pretty(hyp, en), "ref_norm": join(ref), "hyp_norm": join(hyp),
                      "audio_duration_s": float(data.durations[i]), "latency_s": round(float(latency[i]), 6),
                      "text_ttft_s": None, "inter_chunk_s": [], "error": ""}
        lines.append(json.dumps(record, ensure_ascii=False))
    if defect == DUPLICATE_IDS:
        lines[3] = lines[3].replace(json.dumps(data.ids[3]), json.dumps(data.ids[2]), 1)
    elif defect == MISSING_IDS:
        del lines[3]
    raw_dir = run_dir / workload.raw_dir
    raw_dir.mkdir(parents=True, exist_ok=True)
    (raw_dir / "conc32_rep1.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")

    document = _seedtts_document(workload, model_id, spec, data, n, evaluated, measured)
    if defect == results.BAD_SCHEMA:
        document["schema_version"] = 3
    if defect == NAN:
        document["results"][0]["corpus_wer"]["mean"] = float("nan")
    path = run_dir / workload.path
    path.parent.mkdir(parents=True, exist_ok=True)
    if defect == results.MISSING_FILE:
        return
    _write_json(path, document, truncate=defect == results.UNREADABLE)


def _pretty(tokens: list[str], en: bool) -> str:
    """A raw transcript as a client would print it: capitalized and punctuated (normalization undoes this)."""
    if not tokens:
        return ""
    if en:
        text = " ".join(tokens)
        return text[0].upper() + text[1:] + "."
    return "".join(tokens) + "。"


def _stretch_tail(latency: np.ndarray, factor: float) -> np.ndarray:
    """Multiply the slowest 10% of requests, which moves the p95 by exactly `factor` (for factor >= 1)."""
    if factor == 1.0:
        return latency
    cut = np.percentile(latency, 90)
    return np.where(latency >= cut, latency * factor, latency)


def _seedtts_document(workload: Workload, model: str, spec: ExampleSpec, data: _Dataset, n: int, evaluated: int,
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
                   "concurrencies": [32], "repeats": 1, "warmup": True, "stream": False,
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


# --- MOSS-Transcribe-Diarize ---------------------------------------------------------------------

def _write_moss(run_dir: Path, workload: Workload, model_id: str, spec: ExampleSpec, rng: np.random.Generator,
                defect: str | None) -> None:
    name = workload.name
    data = _dataset(workload.id, workload.expected_samples, workload.format, workload.lang)
    english = name == "googletime"
    n = workload.expected_samples - (max(1, workload.expected_samples // 8) if defect == results.WRONG_TOTAL else 0)
    errors = _run_errors(data, workload.id, spec, rng)[:n]
    failed = np.zeros(n, dtype=bool)
    if defect in (results.EVALUATED_NE_TOTAL, results.FAILED_REQUESTS):
        failed[data.order[:3][data.order[:3] < n]] = True
    elif defect == results.NO_SPEED:
        failed[:] = True
    hallucinated = spec.hallucinate.get(workload.id)
    swap_rate = _SPEAKER_SWAP.get(name, 0.01)
    novel = _novel_word if english else (lambda k: _CJK_NOVEL[k % len(_CJK_NOVEL)])
    n_speakers = _moss_shape(name)[5]

    per_sample, outputs, samples = [], [], []
    cer_err = cer_ref = cp_err = cp_ref = 0
    cer_valid_n = cp_valid_n = 0
    above_50 = 0
    below_err = below_ref = 0
    der_valid = der_skip_noref = 0
    der_total = der_fa = der_md = der_conf = 0.0
    factor = spec.speed_factor.get(workload.id, 1.0)
    z = rng.normal(0.0, spec.speed_sigma)
    latency = data.base_latency[:n] * _moss_shape(name)[2] * np.exp(-z + rng.normal(0, spec.speed_sigma / 3, n)) / factor
    latency = _stretch_tail(latency, spec.p95_factor.get(workload.id, 1.0))
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
        ref_clean, hyp_clean = clean_no_speaker(reference), clean_no_speaker(hypothesis)
        cer_valid = len(ref_clean) > 0
        cer_e = Levenshtein.distance(ref_clean, hyp_clean) if cer_valid else len(hyp_clean)
        cer = (cer_e / len(ref_clean)) if cer_valid else (None if cer_e else 0.0)
        cp = cp_cer_counts(reference, hypothesis)
        if cer_valid:
            cer_valid_n += 1
            cer_err += cer_e
            cer_ref += len(ref_clean)
            if cer > 0.5:
                above_50 += 1
            else:
                below_err += cer_e
                below_ref += len(ref_clean)
        if cp is not None:
            cp_valid_n += 1
            cp_err += cp[0]
            cp_ref += cp[1]
        der = _synthetic_der(data, i, rng) if data.refs[i] else None
        expected_form, result_form = _exact_match_form(reference), _exact_match_form(hypothesis)
        if der is None:
            der_skip_noref += 1
        else:
            der_valid += 1
            der_total += der[0]
            der_fa += der[1]
            der_md += der[2]
            der_conf += der[3]
        per_sample.append({
            "id": uid, "audio_path": audio_path, "expected_text": reference, "result_text": hypothesis,
            "expected_normalized": expected_form, "result_normalized": result_form,
            "is_exact_match": expected_form == result_form,
            "latency_s": round(float(latency[i]), 3), "audio_duration_s": duration, "error": None,
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
        })
    ok = ~failed
    completed = int(ok.sum())
    cer_total = cer_err / cer_ref if cer_ref else None
    cp_total = cp_err / cp_ref if cp_ref else None
    cer_on_cp = cer_total  # every cp-valid sample here is also cer-valid and vice versa
    metrics = {
        "cer_no_spk": cer_total, "cer": cer_total,
        "cer_no_spk_below_50_corpus": below_err / below_ref if below_ref else None,
        "n_above_50_pct_cer": above_50, "pct_above_50_pct_cer": above_50 / cer_valid_n * 100.0 if cer_valid_n else 0.0,
        "cp_cer": cp_total, "cer_no_spk_cp_valid": cer_on_cp,
        "delta_cer": cp_total - cer_on_cp if cp_total is not None and cer_on_cp is not None else None,
        "cer_valid_samples": cer_valid_n, "cp_cer_valid_samples": cp_valid_n,
        "speaker_timestamp_der": (der_fa + der_md + der_conf) / der_total if der_total else None,
        "speaker_timestamp_der_collar": 0.0, "speaker_timestamp_der_valid_samples": der_valid,
        "speaker_timestamp_der_skipped": der_skip_noref, "speaker_timestamp_der_skipped_parse_error": 0,
        "speaker_timestamp_der_skipped_no_ref_segments": der_skip_noref,
        "speaker_timestamp_der_skipped_no_pred_segments": 0, "speaker_timestamp_der_compute_error": "",
        "speaker_timestamp_der_total_seconds": der_total, "speaker_timestamp_der_false_alarm": der_fa,
        "speaker_timestamp_der_missed_detection": der_md, "speaker_timestamp_der_confusion": der_conf,
        "count": completed,
    }
    percent_keys = {"cer_no_spk", "cer", "cer_no_spk_below_50_corpus", "cp_cer", "cer_no_spk_cp_valid", "delta_cer",
                    "speaker_timestamp_der"}
    metrics_percent = {k: (v * 100.0 if k in percent_keys and v is not None else v) for k, v in metrics.items()}

    throughput = _moss_shape(name)[1] * np.exp(z) * factor
    wall = n / throughput
    speed: dict[str, Any] = {"total_requests": n, "completed_requests": completed, "failed_requests": n - completed}
    if completed:
        lat_ok, dur_ok = latency[ok], data.durations[:n][ok]
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
        if name.endswith("_stream"):
            ttft = lat_ok * 0.18
            speed.update({"text_ttft_mean_s": round(float(ttft.mean()), 4),
                          "text_ttft_median_s": round(float(np.median(ttft)), 4),
                          "text_ttft_p95_s": round(float(np.percentile(ttft, 95)), 4),
                          "text_ttft_p99_s": round(float(np.percentile(ttft, 99)), 4),
                          "inter_chunk_mean_s": round(float(lat_ok.mean() * 0.09), 4),
                          "inter_chunk_p95_s": round(float(lat_ok.mean() * 0.2), 4),
                          "inter_chunk_p99_s": round(float(lat_ok.mean() * 0.3), 4)})
    no_budget = workload.require_null_max_new_tokens and defect != results.MAX_NEW_TOKENS_SET
    config = {
        "dataset": "movies800times" if name.startswith("movies800times") else name,
        "repo_id": _moss_repo(name), "split": "validation", "audio_column": "audio", "expected_column": "transcription",
        "model_path": model_id, "base_url": "http://127.0.0.1:8000",
        "concurrency": 16, "warmup": 0, "request_rate": "inf",
        "request_timeout_s": 300.0 if workload.require_null_max_new_tokens else 1800.0,
        "max_new_tokens": None if no_budget else 65536,
        "max_samples": n if defect == results.WRONG_TOTAL else None,
        "wall_clock_s": round(float(wall), 3), "timing_scope": "asr_requests_only",
    }
    summary = {"total_samples": n, "evaluated": completed, "skipped": n - completed,
               "exact_matches": sum(1 for s in per_sample if s.get("is_exact_match")),
               "mismatches": completed - sum(1 for s in per_sample if s.get("is_exact_match")),
               "exact_match_rate": (sum(1 for s in per_sample if s.get("is_exact_match")) / completed) if completed else 0.0}
    if defect == DUPLICATE_IDS:
        per_sample[3] = dict(per_sample[3], id=per_sample[2]["id"])
    elif defect == MISSING_IDS:
        del per_sample[3]
    evaluation = {
        "config": {k: config[k] for k in ("dataset", "repo_id", "split", "model_path", "concurrency", "wall_clock_s")},
        "summary": summary, "speed": speed, "diarization_metrics": metrics,
        "diarization_metrics_percent": metrics_percent, "per_sample": per_sample,
    }
    if defect == NAN:
        evaluation["diarization_metrics"]["cer"] = float("nan")
    speed_document = {"schema_version": 2 if defect == results.BAD_SCHEMA else 1, "config": config, "speed": speed}
    directory = run_dir / workload.path
    directory.mkdir(parents=True, exist_ok=True)
    _write_json(directory / results.MOSS_SPEED_FILE, speed_document)
    _write_json(directory / "transcribe_diarize_asr_results.json",
                {"schema_version": 1, "config": config, "samples": samples, "outputs": outputs})
    if defect != results.MISSING_FILE:
        _write_json(directory / results.MOSS_RESULTS_FILE, evaluation, truncate=defect == results.UNREADABLE)


def _moss_texts(data: _Dataset, i: int, errors: int, english: bool, novel, swap_rate: float, n_speakers: int,
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
    for j, (tokens, speaker) in enumerate(zip(units, who)):
        start, end = j * seconds, (j + 1) * seconds - 0.2
        hyp_tokens = _corrupt(tokens, per_segment[j], bool(data.deletion_kind[i]), i * 31 + j, novel)
        if hallucinate and j == len(units) - 1:  # 40 inserted characters (one 40-character token in English)
            extra = [_CJK_NOVEL[k] for k in range(40)]
            hyp_tokens = hyp_tokens + (["".join(extra)] if english else extra)
        sep = " " if english else ""
        punct = "." if english else _ZH_PUNCT[(i + j) % len(_ZH_PUNCT)]
        hyp_speaker = relabel(speaker)
        if (i * 7919 + j * 104729) % 1000 < swap_rate * 1000:  # the model's habitual speaker confusions
            hyp_speaker = relabel(speaker % n_speakers + 1)
        ref_parts.append(f"[{start:.2f}][S{speaker:02d}]{sep.join(tokens)}{punct}[{end:.2f}]")
        hyp_parts.append(f"[{start + 0.04:.2f}][S{hyp_speaker:02d}]{sep.join(hyp_tokens)}{punct}[{end - 0.03:.2f}]")
    return "".join(ref_parts), "".join(hyp_parts)


def _synthetic_der(data: _Dataset, i: int, rng: np.random.Generator) -> tuple[float, float, float, float]:
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


def _write_json(path: Path, document: Any, *, truncate: bool = False) -> None:
    text = json.dumps(document, ensure_ascii=False)  # no indent: keeps json's fast C encoder
    if truncate:
        text = text[: len(text) // 2]  # as if the writer was killed mid-file
    path.write_text(text, encoding="utf-8")


__all__ = ["ExampleSpec", "write_example_tree", "write_example_pair", "write_example_ci_artifacts", "utterance_ids",
           "SYNTHETIC_NOTICE",
           "SEEDTTS_DEFECTS", "MOSS_DEFECTS", "NAN", "DUPLICATE_IDS", "MISSING_IDS"]


# --- CI artifact layout ----------------------------------------------------------------------------

def write_example_ci_artifacts(root: Path, suite: Suite, spec: ExampleSpec = ExampleSpec(), *, model: str = "qwen3",
                               attempts: int = 2) -> Path:
    """A downloaded CI artifact (reference §2.3, §2.5): stage 1 (MOSS) and stage 2 (one SeedTTS model).

    Files lie under <root>/pytest-of-runner/pytest-<N>/<test>0/, one directory per retry attempt.
    Every attempt but the last has 3 failed MOSS requests and 5 skipped SeedTTS samples (the flaky
    first attempts that a retry hides); the last attempt is the spec's clean run.
    """
    import tempfile

    root = Path(root)
    for attempt in range(1, attempts + 1):
        last = attempt == attempts
        defects = dict(spec.defects) if last else {
            **{w.id: results.SKIPPED for w in suite.workloads_for((model,))},
            **{w.id: results.FAILED_REQUESTS for w in suite.workloads_for(("moss_td",))},
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
                if path.is_file():
                    ci = _ci_seedtts_document(json.loads(path.read_text(encoding="utf-8")), run / workload.raw_dir,
                                              workload, suite.models[model].model_id, with_router=workload.lang == "en")
                    _write_json(seedtts_dir / f"asr_seedtts_{workload.lang}_results.json", ci)
            moss_dir = base / "test_multi_speaker0"
            moss_dir.mkdir(parents=True, exist_ok=True)
            for workload in suite.workloads_for(("moss_td",)):
                path = run / workload.path / results.MOSS_RESULTS_FILE
                if path.is_file():
                    payload = json.loads(path.read_text(encoding="utf-8"))
                    payload["router_ready_s"] = 142.7
                    name = {"movies800times": "", "movies800times_stream": "stream_"}.get(workload.name, workload.name + "_")
                    _write_json(moss_dir / f"moss_transcribe_diarize_{name}results.json", payload)
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
    }
    doc = {"model_path": model_id, "summary": summary, "speed": speed}
    if with_router:
        doc["router_ready_s"] = 142.7
    return doc
