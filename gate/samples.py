"""Per-utterance error counts, for the paired accuracy tests.

Sources (reference §2.2, §2.4): SeedTTS `--save-raw-dir` JSONL at <run>/<model>/raw_<lang>/conc32_rep1.jsonl;
MOSS `per_sample` of transcribe_diarize_results.json. Errors are recomputed with jiwer on the
normalized strings and cross-checked against the file's corpus figure.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

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
