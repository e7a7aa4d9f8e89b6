"""TEST DOUBLE of benchmarks.tasks.transcribe_diarize: the loader the runbook's Step 3 check calls.

Returns synthetic MOSS-style samples ("[start][S01]text[end]") with the real counts (800 / 20 / 25)
unless the knobs file sets smaller ones; with expected_sample_count given, a different count raises
like upstream.
"""
from __future__ import annotations

from benchmarks import _standin

REPO_TO_DATASET = {"zhaochenyang20/movies800time": "movies800times", "zhaochenyang20/AISHELL4": "aishell4_long",
                   "zhaochenyang20/googletime": "googletime"}


def load_movies800_samples(repo_id, split="validation", audio_column="audio", expected_column="transcription",
                           expected_sample_count=None, max_samples=None):
    dataset = REPO_TO_DATASET.get(repo_id)
    if dataset is None:
        raise FileNotFoundError(f"Couldn't find dataset {repo_id} in the cache (HF_HUB_OFFLINE=1)")
    error = _standin.knobs().get("dataset_errors", {}).get(dataset)
    if error:
        raise ConnectionError(error)
    n = _standin.count(dataset)
    if expected_sample_count is not None and n != expected_sample_count:
        raise ValueError(f"{repo_id}: expected {expected_sample_count} samples, found {n}")
    if max_samples:
        n = min(n, max_samples)
    return [{"sample_id": f"{dataset}_{i:04d}.wav",
             "expected_text": f"[0.00][S01]第{i}句 对话 内容[1.50][1.60][S02]回答 {i}[3.00]"} for i in range(n)]
