"""TEST DOUBLE of benchmarks.dataset.seedtts: same names and call shape as upstream, synthetic samples.

`load_seedtts_samples(SEEDTTS_DATASET_ID, split="en"|"zh", revision=...)` returns the real counts
(1088 / 2020) unless the knobs file sets smaller ones; `dataset_errors` makes a split fail to load.
"""
from __future__ import annotations

from benchmarks import _standin

SEEDTTS_DATASET_ID = "zhaochenyang20/seed-tts-eval-arrow"
SEEDTTS_REVISION = "27f4c1adee83b5b29b7c4b375f6b976324bda308"

_EN = ("the quick brown fox jumps over the lazy dog", "we asked over twenty different people",
       "they all said it was his", "a stand in sentence for testing", "numbers like seven and nine")
_ZH = ("今天天气很好", "我们一起去公园", "这是一个测试句子", "语音识别的基准", "谢谢你的帮助")


def load_seedtts_samples(dataset_id=SEEDTTS_DATASET_ID, split="en", revision=None):
    error = _standin.knobs().get("dataset_errors", {}).get(f"seedtts_{split}")
    if error:
        raise ConnectionError(error)
    if split not in ("en", "zh"):
        raise ValueError(f"unknown split {split!r}")
    texts = _EN if split == "en" else _ZH
    n = _standin.count(f"seedtts_{split}")
    return [{"sample_id": f"standin_{split}_{i:05d}", "target_text": texts[i % len(texts)] + ("" if split == "zh" else f" {i}"),
             "wav_name": f"standin_{split}_{i:05d}.wav"} for i in range(n)]
