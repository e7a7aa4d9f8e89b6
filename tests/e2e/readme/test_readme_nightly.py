"""README quick start 3, the nightly history of `main`, runs as written on a fresh clone of this commit and ends as the
README says (test_readme_blocks.py has the other blocks; apart so that the two quick starts run on two workers)."""
from __future__ import annotations

import json
import re

import pytest

from tests.helpers.readme import fresh_clone, quick_starts, run_block, sections


@pytest.mark.slow
@pytest.mark.long  # ~2 min: a fresh clone, its venv and pip, then the block
def test_quick_start_3_ends_as_the_readme_says(tmp_path_factory):
    clone = fresh_clone(tmp_path_factory)
    (_, _, block) = [body for _, body in quick_starts()]
    done = run_block(block, clone)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-3000:]
    nights = clone / "example-out" / "nights"
    verdicts = {n: json.loads((nights / f"night-{n:02d}" / "report.json").read_text(encoding="utf-8"))["verdict"]
                for n in range(2, 31)}
    text = " ".join(sections()["Quick start"].split())
    said = "Every night on the step (21–30) WARNs, as do 4 of the 19 no-op nights (03, 13, 15 and 19"
    assert said in text, f"README quick start 3 no longer says {said!r}: update this test with it"
    warned = sorted(n for n, v in verdicts.items() if v == "warn")
    assert warned == [3, 13, 15, 19, *range(21, 31)], verdicts
    assert set(verdicts.values()) == {"pass", "warn"}, verdicts
    step = "qwen3/asr_en throughput `-3.9% worse from 2026-10-21`"
    assert step in text
    assert re.search(r"qwen3/asr_en +throughput_samples_per_s .* -3\.9% worse from 2026-10-21", out), out[-4000:]
    for metric in ("latency_mean_s", "latency_p95_s", "rtf_mean"):  # "with mean and p95 latency and RTF beside it"
        assert re.search(rf"qwen3/asr_en +{metric} .* worse from 2026-10-21", out), metric
    assert "30 nights" in out and (nights / "site" / "index.html").is_file()
