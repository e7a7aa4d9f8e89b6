"""What an example tree is made of: the spec, the commits, the planted defects, and two shared helpers."""
from __future__ import annotations

import json
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from gate.formats import result_types

SYNTHETIC_NOTICE = ("SYNTHETIC EXAMPLE DATA written by `gate example` (gate/examples/). "
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
SEEDTTS_DEFECTS = (result_types.MISSING_FILE, result_types.UNREADABLE, result_types.BAD_SCHEMA, result_types.EVALUATED_NE_TOTAL,
                   result_types.SKIPPED, result_types.WRONG_TOTAL, NAN, DUPLICATE_IDS, MISSING_IDS)
MOSS_DEFECTS = (result_types.MISSING_FILE, result_types.UNREADABLE, result_types.BAD_SCHEMA, result_types.EVALUATED_NE_TOTAL,
                result_types.WRONG_TOTAL, result_types.FAILED_REQUESTS, result_types.ALL_FAILED, result_types.MAX_NEW_TOKENS_SET,
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
    ttft_factor: Mapping[str, float] = field(default_factory=dict)  # streamed workload id -> multiplier on time to first text
    extra_errors: Mapping[str, int] = field(default_factory=dict)  # workload id -> utterances with +1 error (same every run)
    hallucinate: Mapping[str, str] = field(default_factory=dict)  # workload id -> utterance id with +40 inserted words/chars
    flip_rate: float = 0.002  # share of utterances whose errors differ by ±1 between runs (nondeterminism)
    defects: Mapping[str, str] = field(default_factory=dict)  # workload id -> defect code, applied to run1



def stable(text: str) -> int:
    """A seed part derived from a name: the same in every process (unlike hash())."""
    return zlib.crc32(text.encode("utf-8"))


def write_json(path: Path, document: Any, *, truncate: bool = False) -> None:
    text = json.dumps(document, ensure_ascii=False)  # no indent: keeps json's fast C encoder
    if truncate:
        text = text[: len(text) // 2]  # as if the writer was killed mid-file
    path.write_text(text, encoding="utf-8")
