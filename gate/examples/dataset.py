"""The synthetic "datasets" (ids, references, durations, the model's habitual errors) and exact error injection.

A dataset depends only on the workload id, so a baseline and a candidate share ids and references
(paired data). Error injection is exact by construction: an utterance either only loses words
(deletions) or only gets novel tokens substituted or inserted (tokens that never occur in a
reference), so the edit distance equals the number of injected edits.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from gate.examples.spec import ExampleSpec, stable
from gate.formats.config import Workload

EN_WORDS = tuple("""
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
CJK_COMMON = tuple(chr(c) for c in range(0x4E00, 0x4E00 + 900, 3))  # reference characters
CJK_NOVEL = tuple(chr(c) for c in range(0x9000, 0x9000 + 120))  # never in a reference

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




def seedtts_shape(workload_id: str) -> tuple[float, float]:
    return _SEEDTTS_SHAPE.get(workload_id, (0.02, 80.0))  # a workload the runbook does not list


def moss_shape(name: str) -> tuple[float, float, float, int, int, int, float]:
    return _MOSS_SHAPE.get(name, (0.1, 1.0, 10.0, 5, 10, 2, 5.0))


@dataclass(frozen=True)
class Dataset:
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
def dataset(workload_id: str, n: int, fmt: str, lang: str | None) -> Dataset:
    """The workload's utterances and the model's habits on them; draws from one generator, in a fixed order."""
    rng = np.random.default_rng(stable("dataset:" + workload_id))
    if fmt == "seedtts":
        rate = seedtts_shape(workload_id)[0]
        ids, refs, speakers, units, durations = _seedtts_utterances(rng, n, lang)
    else:
        rate = moss_shape(workload_id.split("/", 1)[1])[0]
        ids, refs, speakers, units, durations = _moss_utterances(rng, n, workload_id.split("/", 1)[1])
    # Habitual errors: overdispersed (most utterances clean, a few bad), scaled to the target rate.
    weight = rng.gamma(0.6, 1 / 0.6, n) * units
    base_errors = rng.poisson(rate * weight * units.sum() / max(weight.sum(), 1e-9))
    base_errors = np.minimum(base_errors, np.maximum(units.astype(int) - 1, 0))
    digest = hashlib.sha256()
    for uid, ref in zip(ids, refs, strict=True):
        digest.update(uid.encode("utf-8") + b"\0" + "|".join(ref).encode("utf-8") + b"\n")
    return Dataset(
        ids=tuple(ids), refs=tuple(refs), speakers=tuple(speakers), durations=durations,
        base_errors=base_errors.astype(np.int64), deletion_kind=rng.random(n) < 0.25,
        base_latency=rng.lognormal(0.0, 0.25, n) * (0.6 + 0.4 * durations / max(durations.mean(), 1e-9)),
        order=rng.permutation(n), input_sha256=digest.hexdigest(),
    )


_Utterances = tuple[list[str], list[tuple[str, ...]], list[tuple[int, ...]], np.ndarray, np.ndarray]


def _seedtts_utterances(rng: np.random.Generator, n: int, lang: str | None) -> _Utterances:
    """Common Voice-like ids, word (EN) or character (ZH) references, and durations from their lengths."""
    ids: list[str] = []
    refs: list[tuple[str, ...]] = []
    numbers = 10_000_000 + rng.choice(30_000_000, size=2 * n, replace=False)
    lengths = np.clip(rng.poisson(13 if lang == "en" else 18, size=n), 4, 40)
    for i in range(n):
        if lang == "en":
            ids.append(f"common_voice_en_{numbers[2 * i]}-common_voice_en_{numbers[2 * i + 1]}")
            refs.append(tuple(EN_WORDS[j] for j in rng.integers(0, len(EN_WORDS), lengths[i])))
        else:
            ids.append(f"{numbers[2 * i]:08d}-{numbers[2 * i + 1]:08d}")
            refs.append(tuple(CJK_COMMON[j] for j in rng.integers(0, len(CJK_COMMON), lengths[i])))
    units = lengths.astype(float)
    durations = np.round(units * (0.33 if lang == "en" else 0.24) + rng.uniform(0.4, 1.2, n), 3)
    return ids, refs, [], units, durations


def _moss_utterances(rng: np.random.Generator, n: int, name: str) -> _Utterances:
    """Multi-speaker clips: per clip a few segments, each with its speaker; some movies clips have no speech."""
    _, _, _, segments, per_segment, n_speakers, seconds = moss_shape(name)
    english = name == "googletime"
    prefix = {"movies800times": "movie", "movies800times_stream": "movie"}.get(name, name)
    ids: list[str] = []
    refs: list[tuple[str, ...]] = []
    speakers: list[tuple[int, ...]] = []
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
                texts.append(" ".join(EN_WORDS[j] for j in rng.integers(0, len(EN_WORDS), size)))
            else:
                texts.append("".join(CJK_COMMON[j] for j in rng.integers(0, len(CJK_COMMON), size)))
            who.append(int(rng.integers(1, n_speakers + 1)))
        refs.append(tuple(texts))
        speakers.append(tuple(who))
        units[i] = sum(len(t.split(" ")) if english else len(t) for t in texts)  # the tokens errors act on
        durations[i] = round(count * seconds * float(rng.uniform(0.8, 1.2)), 3)
    return ids, refs, speakers, units, durations


def run_errors(data: Dataset, workload_id: str, spec: ExampleSpec, rng: np.random.Generator) -> np.ndarray:
    """Errors per utterance in this run: the model's habit, the spec's extra errors, and ±1 flips."""
    errors = data.base_errors.copy()
    extra = spec.extra_errors.get(workload_id, 0)
    if extra:
        errors[data.order[:extra]] += 1
    flips = rng.random(len(errors)) < spec.flip_rate
    signs = np.where(rng.random(len(errors)) < 0.5, -1, 1)
    signs[errors == 0] = 1
    return errors + np.where(flips, signs, 0)


def novel_word(k: int) -> str:
    return _NOVEL_SYLLABLES[k % 8] + _NOVEL_SYLLABLES[(k // 8) % 8]


def corrupt(tokens: list[str], errors: int, deletion: bool, key: int, novel) -> list[str]:
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


def utterance_ids(workload: Workload) -> tuple[str, ...]:
    """The utterance ids the generator writes for a workload (the same in every tree)."""
    return dataset(workload.id, workload.expected_samples, workload.format, workload.lang).ids


def stretch_tail(latency: np.ndarray, factor: float) -> np.ndarray:
    """Multiply the slowest 10% of requests, which moves the p95 by exactly `factor` (for factor >= 1)."""
    if factor == 1.0:
        return latency
    cut = np.percentile(latency, 90)
    return np.where(latency >= cut, latency * factor, latency)


@dataclass(frozen=True)
class Streaming:
    """A streamed run's per-request time to first text and chunk gaps (the client's --stream), and their aggregates."""

    ttft: np.ndarray  # seconds, one per completed request
    gaps: tuple[np.ndarray, ...]  # seconds between text chunks, one array per completed request

    def figures(self) -> dict[str, float]:
        """The client's streaming aggregates (docs/upstream.md §2.1, §2.4), unrounded."""
        pooled = np.concatenate(self.gaps) if self.gaps else np.zeros(0)
        return {"text_ttft_mean_s": float(self.ttft.mean()), "text_ttft_median_s": float(np.median(self.ttft)),
                "text_ttft_p95_s": float(np.percentile(self.ttft, 95)),
                "text_ttft_p99_s": float(np.percentile(self.ttft, 99)),
                "inter_chunk_mean_s": float(pooled.mean()), "inter_chunk_p95_s": float(np.percentile(pooled, 95)),
                "inter_chunk_p99_s": float(np.percentile(pooled, 99))}


def streaming(latency: np.ndarray, durations: np.ndarray, seed: list[int], *, sigma: float,
              ttft_factor: float = 1.0) -> Streaming:
    """Time to first text (~18% of a request's latency) and the gaps between its text chunks (one every ~1.5 s of
    audio, filling the rest of the latency), each with its own run-level draw of `sigma` (a streamed run's first
    text moves apart from its total latency) and per-request jitter; `ttft_factor` multiplies the time to first
    text only (ExampleSpec.ttft_factor). Drawn from its own generator: the run's other draws stay the same."""
    rng = np.random.default_rng(seed)
    z_first, z_gap = rng.normal(0.0, sigma, 2)
    ttft = latency * 0.18 * np.exp(z_first + rng.normal(0.0, sigma / 3, len(latency))) * ttft_factor
    chunks = np.maximum(2, np.round(durations / 1.5)).astype(int)
    rest = np.maximum(latency - ttft, latency * 0.05)
    gaps = tuple(rest[i] / chunks[i] * np.exp(z_gap + rng.normal(0.0, 0.3, chunks[i] - 1)) for i in range(len(latency)))
    return Streaming(ttft, gaps)
