"""The defects planted in the foundation tests' generated trees (a module, not conftest, so tests can import it)."""
from __future__ import annotations

from gate.examples import DUPLICATE_IDS, MISSING_IDS, NAN
from gate.formats import result_types

# One coverage defect per workload, planted in run1 (tree "defects_a").
DEFECTS_A = {
    "qwen3/asr_en": result_types.SKIPPED,
    "qwen3/asr_zh": result_types.UNREADABLE,
    "whisper/asr_en": result_types.BAD_SCHEMA,
    "whisper/asr_zh": result_types.WRONG_TOTAL,
    "fun/asr_en": result_types.MISSING_FILE,
    "fun/asr_zh": NAN,
    "moss_td/movies800times": result_types.MAX_NEW_TOKENS_SET,
    "moss_td/movies800times_stream": result_types.FAILED_REQUESTS,
    "moss_td/aishell4_long": result_types.ALL_FAILED,
    "moss_td/googletime": result_types.WRONG_TOTAL,
}
# Per-sample defects and the remaining MOSS file defects (tree "defects_b").
DEFECTS_B = {
    "qwen3/asr_en": DUPLICATE_IDS,
    "qwen3/asr_zh": MISSING_IDS,
    "moss_td/movies800times": DUPLICATE_IDS,
    "moss_td/movies800times_stream": result_types.UNREADABLE,
    "moss_td/aishell4_long": MISSING_IDS,
    "moss_td/googletime": result_types.BAD_SCHEMA,
}
