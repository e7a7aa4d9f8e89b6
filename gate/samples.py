"""Per-utterance error counts, for the paired accuracy tests.

Sources (reference §2.2, §2.4): SeedTTS `--save-raw-dir` JSONL at <run>/<model>/raw_<lang>/conc32_rep1.jsonl;
MOSS `per_sample` of transcribe_diarize_results.json. Errors are recomputed with jiwer on the
normalized strings and cross-checked against the file's corpus figure.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

import numpy as np
from rapidfuzz.distance import Levenshtein
from scipy.optimize import linear_sum_assignment

# Cross-check outcomes.
MATCH = "match"  # recomputed corpus figure equals the file's (to rounding)
MISMATCH = "mismatch"  # it does not: a normalization mismatch; the per-sample data is not used
UNAVAILABLE = "unavailable"  # no per-sample data for this run


@dataclass(frozen=True)
class CrossCheck:
    status: str  # MATCH, MISMATCH or UNAVAILABLE
    recomputed: float | None
    reported: float | None
    message: str


@dataclass(frozen=True, eq=False)
class UtteranceErrors:
    """One error measure (wer, cer or cp_cer) of one workload run, one entry per utterance, in file order.

    `errors[i]` is S+D+I (characters for ZH and MOSS), `ref_len[i]` the reference length in the
    same units. Entries with `valid[i]` False (failed request, empty reference, invalid for cpCER)
    carry errors 0 and are excluded from the corpus figure.
    """

    measure: str
    ids: tuple[str, ...]
    ref_len: np.ndarray  # int64
    errors: np.ndarray  # int64
    valid: np.ndarray  # bool
    substitutions: np.ndarray | None
    deletions: np.ndarray | None
    insertions: np.ndarray | None
    crosscheck: CrossCheck
    hyp_text: tuple[str, ...] = ()  # normalized hypothesis, for reports of changed utterances
    ref_text: tuple[str, ...] = ()  # normalized reference

    @property
    def corpus_rate(self) -> float | None:
        total = int(self.ref_len[self.valid].sum())
        return None if total == 0 else float(self.errors[self.valid].sum()) / total


# --- MOSS-Transcribe-Diarize text cleaning (reference §3.2) --------------------------------------
# The client scores cleaned text: timestamps dropped, speaker tags canonicalized to [S<n>], bracket
# events dropped, then whitespace and Unicode punctuation (category P) removed and lowercased.

_TIMESTAMP = re.compile(r"\[\d+(?:\.\d+)?\]")
_SPEAKER_TAG = re.compile(r"\[S0*(\d+)\]", re.IGNORECASE)
_CANONICAL_TAG = re.compile(r"\[S\d+\]", re.IGNORECASE)
_BRACKET_EVENT = re.compile(r"\[(?!S\d+\])[^]]+\]", re.IGNORECASE)
_EVENT_MARKUP = (re.compile(r"【[^】]*】"), re.compile(r"<[^>]*>"), re.compile(r"&[^&]{0,40}&"))


class _DropSpaceAndPunctuation(dict):
    """str.translate table that deletes whitespace and category-P characters; filled lazily per character."""

    def __missing__(self, code: int) -> int | None:
        char = chr(code)
        keep = not char.isspace() and not unicodedata.category(char).startswith("P")
        self[code] = code if keep else None
        return self[code]


_DROP_SPACE_AND_PUNCTUATION = _DropSpaceAndPunctuation()


def _preclean(text: str) -> str:
    cleaned = _TIMESTAMP.sub(" ", text or "")
    cleaned = _SPEAKER_TAG.sub(lambda m: f"[S{int(m.group(1))}]", cleaned)
    for markup in _EVENT_MARKUP:
        cleaned = markup.sub(" ", cleaned)
    return _BRACKET_EVENT.sub(" ", cleaned)


def _squeeze(text: str) -> str:
    return text.translate(_DROP_SPACE_AND_PUNCTUATION).lower()


def clean_no_speaker(text: str) -> str:
    """The string MOSS CER is computed on: cleaned, speaker tags removed."""
    return _squeeze(_CANONICAL_TAG.sub(" ", _preclean(text)))


def has_speaker_tags(text: str) -> bool:
    return bool(_SPEAKER_TAG.search(text or ""))


def split_by_speaker(text: str, *, implicit_single_speaker: bool) -> dict[str, str]:
    """Cleaned text concatenated per canonical speaker tag, in order of first appearance.

    Text before the first tag is dropped (as the client does); a text without any tag is one
    speaker [S1] when `implicit_single_speaker` (the hypothesis side), else nothing.
    """
    cleaned = _preclean(text)
    tags = list(_CANONICAL_TAG.finditer(cleaned))
    if not tags:
        flat = _squeeze(cleaned)
        return {"[S1]": flat} if implicit_single_speaker and flat else {}
    per_speaker: dict[str, str] = {}
    for index, tag in enumerate(tags):
        end = tags[index + 1].start() if index + 1 < len(tags) else len(cleaned)
        content = _squeeze(cleaned[tag.end():end])
        if content:
            per_speaker[tag.group()] = per_speaker.get(tag.group(), "") + content
    return per_speaker


def cp_cer_counts(reference: str, hypothesis: str) -> tuple[int, int] | None:
    """(errors, reference characters) of the concatenated-minimum-permutation CER; None when not cp-valid.

    Both sides are split per speaker and padded to the same speaker count; the speaker assignment
    minimizes total character edits (Hungarian assignment on the pairwise Levenshtein matrix).
    """
    if not has_speaker_tags(reference):
        return None  # no_ref_speaker_tags
    ref_texts = list(split_by_speaker(reference, implicit_single_speaker=False).values())
    hyp_texts = list(split_by_speaker(hypothesis, implicit_single_speaker=True).values())
    size = max(len(ref_texts), len(hyp_texts))
    ref_texts += [""] * (size - len(ref_texts))
    hyp_texts += [""] * (size - len(hyp_texts))
    ref_chars = sum(len(t) for t in ref_texts)
    if size == 0 or ref_chars == 0:
        return None  # empty_ref_after_clean
    cost = np.array([[Levenshtein.distance(r, h) for h in hyp_texts] for r in ref_texts], dtype=np.int64)
    rows, cols = linear_sum_assignment(cost)
    return int(cost[rows, cols].sum()), ref_chars
