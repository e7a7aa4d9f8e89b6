"""The defects planted in the foundation tests' generated trees (a module, not conftest, so tests can import it)."""
from __future__ import annotations

from gate.examples import DUPLICATE_IDS, MISSING_IDS, NAN
from gate.reading import results

# One coverage defect per workload, planted in run1 (tree "defects_a").
DEFECTS_A = {
    "qwen3/asr_en": results.SKIPPED,
    "qwen3/asr_zh": results.UNREADABLE,
    "whisper/asr_en": results.BAD_SCHEMA,
    "whisper/asr_zh": results.WRONG_TOTAL,
    "fun/asr_en": results.MISSING_FILE,
    "fun/asr_zh": NAN,
    "moss_td/movies800times": results.MAX_NEW_TOKENS_SET,
    "moss_td/movies800times_stream": results.FAILED_REQUESTS,
    "moss_td/aishell4_long": results.NO_SPEED,
    "moss_td/googletime": results.WRONG_TOTAL,
}
# Per-sample defects and the remaining MOSS file defects (tree "defects_b").
DEFECTS_B = {
    "qwen3/asr_en": DUPLICATE_IDS,
    "qwen3/asr_zh": MISSING_IDS,
    "moss_td/movies800times": DUPLICATE_IDS,
    "moss_td/movies800times_stream": results.UNREADABLE,
    "moss_td/aishell4_long": MISSING_IDS,
    "moss_td/googletime": results.BAD_SCHEMA,
}
