"""Streamed workloads for tests: a suite with a streamed SeedTTS workload beside MOSS's stream run, small enough to
write in seconds, and the client's streaming fields as the reference gives them (docs/upstream.md §2.1, §2.4)."""
from __future__ import annotations

import re
from pathlib import Path

from gate.formats.config import default_suite_path
from gate.formats.result_types import STREAM_FIELDS

SEEDTTS_STREAM = "qwen3/asr_en_stream"
MOSS_STREAM = "moss_td/movies800times_stream"
MOSS_PLAIN = "moss_td/movies800times"


def stream_suite(dest: Path, *, moss_samples: int = 80, seedtts_samples: int = 60) -> Path:
    """The bundled suite with smaller movies800times sets and one more workload: qwen3's English set, streamed
    (`stream: true` and the client's --stream), as a maintainer would add it."""
    text = default_suite_path().read_text(encoding="utf-8")
    text = re.sub(r"(\{id: moss_td/movies800times(?:_stream)?,.*?expected_samples: )800", rf"\g<1>{moss_samples}", text)
    streamed = ('  - {id: ' + SEEDTTS_STREAM + ', model: qwen3, format: seedtts, lang: en, stream: true, '
                'client_extra_args: ["--stream"], path: qwen3/asr_en_stream.json, raw_dir: qwen3/raw_en_stream, '
                f'expected_samples: {seedtts_samples}, dataset: seedtts, metrics: *seedtts_metrics, '
                'client: *seedtts_client}\n')
    text = text.replace("  - {id: qwen3/asr_zh,", streamed + "  - {id: qwen3/asr_zh,", 1)
    dest = Path(dest)
    dest.write_text(text, encoding="utf-8")
    return dest


def seedtts_stream_values(document: dict) -> dict[str, float]:
    """The streaming means of a SeedTTS --output file, as written (results[0].<field>.mean)."""
    return {k: document["results"][0][k]["mean"] for k in STREAM_FIELDS if k in document["results"][0]}


def moss_stream_values(speed_document: dict) -> dict[str, float]:
    """The streaming figures of a MOSS speed file, as written (speed.<field>)."""
    return {k: speed_document["speed"][k] for k in STREAM_FIELDS if k in speed_document["speed"]}
