"""The per-utterance cache beside a tree: same results as scoring, a miss on any change, opt-out for untrusted trees."""
from __future__ import annotations

import builtins
import collections
import dataclasses
import io
import json
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from gate.cli import cli
from gate.examples import ExampleSpec, write_example_tree
from gate.formats.config import load_suite
from gate.judging import judge
from gate.reading.sample_cache import CACHE_DIR, CachedSampleReader
from gate.reading.tree_side import side_from_tree
from tests.helpers.runs import copy_run


@pytest.fixture(scope="module")
def suite():
    return load_suite()


@pytest.fixture(scope="module")
def made_tree(tmp_path_factory, suite) -> Path:
    # SeedTTS (wer) and MOSS (cer, cp_cer): both per-sample readers; the three planned runs.
    return write_example_tree(tmp_path_factory.mktemp("sample-cache") / "tree", suite,
                              ExampleSpec(models=("qwen3", "moss_td"), runs=("1", "2", "3")))


@pytest.fixture
def tree(made_tree, tmp_path) -> Path:
    """A fresh copy per test (tests plant and damage cache entries); generated once per module."""
    return Path(shutil.copytree(made_tree, tmp_path / "tree"))


def _same_samples(a, b) -> None:
    assert a.workloads.keys() == b.workloads.keys()
    for workload_id, left in a.workloads.items():
        right = b.workloads[workload_id]
        assert left.sample_notes == right.sample_notes
        assert left.samples.keys() == right.samples.keys()
        for measure, x in left.samples.items():
            y = right.samples[measure]
            assert x.ids == y.ids and dict(x.texts) == dict(y.texts)
            for name in ("ref_len", "errors", "valid"):
                assert np.array_equal(getattr(x, name), getattr(y, name)), (workload_id, measure, name)


def test_cold_then_warm_gives_what_scoring_gives(tree, suite):
    scored = side_from_tree(tree, suite)
    cold_reader = CachedSampleReader(tree)
    cold = side_from_tree(tree, suite, sample_reader=cold_reader)
    assert cold_reader.stats.hits == 0 and cold_reader.stats.written == cold_reader.stats.misses > 0
    warm_reader = CachedSampleReader(tree)
    warm = side_from_tree(tree, suite, sample_reader=warm_reader)
    assert warm_reader.stats.misses == 0 and warm_reader.stats.hits == cold_reader.stats.misses
    assert any(w.samples for w in scored.workloads.values())
    _same_samples(scored, cold)
    _same_samples(scored, warm)


def test_a_changed_file_is_a_miss_and_replaces_its_entry(tree, suite):
    side_from_tree(tree, suite, sample_reader=CachedSampleReader(tree))
    entries = sorted((tree / CACHE_DIR).glob("run1--qwen3_asr_en--*.json"))
    assert len(entries) == 1
    raw = next((tree / "run1").rglob("conc32_rep1.jsonl"))
    raw.write_text(raw.read_text().replace('"is_success": true', '"is_success": false', 1))
    reader = CachedSampleReader(tree)
    changed = side_from_tree(tree, suite, sample_reader=reader)
    assert reader.stats.misses >= 1  # the run's files changed: recomputed, never the stale counts
    _same_samples(side_from_tree(tree, suite), changed)
    assert sorted((tree / CACHE_DIR).glob("run1--qwen3_asr_en--*.json")) != entries
    assert len(list((tree / CACHE_DIR).glob("run1--qwen3_asr_en--*.json"))) == 1


def test_a_damaged_entry_is_a_miss(tree, suite):
    side_from_tree(tree, suite, sample_reader=CachedSampleReader(tree))
    for entry in (tree / CACHE_DIR).glob("*.json"):
        entry.write_text('{"format": 2, "key": "not this one"')  # truncated and wrong
    reader = CachedSampleReader(tree)
    _same_samples(side_from_tree(tree, suite), side_from_tree(tree, suite, sample_reader=reader))
    assert reader.stats.hits == 0


def test_an_unwritable_cache_folder_is_read_not_cached(tree, suite):
    (tree / CACHE_DIR).write_text("a file where the cache folder would go\n")  # mkdir fails, as on a read-only tree
    reader = CachedSampleReader(tree)
    _same_samples(side_from_tree(tree, suite), side_from_tree(tree, suite, sample_reader=reader))
    assert reader.stats.written == 0 and (tree / CACHE_DIR).is_file()


def test_no_cache_ignores_a_planted_entry(tree, suite):
    """An untrusted tree may carry entries with the right key and forged counts: --no-cache never reads them."""
    side_from_tree(tree, suite, sample_reader=CachedSampleReader(tree))
    entry = next((tree / CACHE_DIR).glob("run1--qwen3_asr_en--*.json"))
    document = json.loads(entry.read_text())
    document["measures"]["wer"]["errors"] = [[0] * len(row) for row in document["measures"]["wer"]["errors"]]
    entry.write_text(json.dumps(document))
    request = judge.Request(base=tree, candidate=tree, suite=suite, models=("qwen3",))
    trusted = judge.read_side(tree, dataclasses.replace(request, cache=False))
    cached = judge.read_side(tree, request)
    assert cached.workloads["qwen3/asr_en"].samples["wer"].errors[0].sum() == 0  # the forged counts, when trusted
    assert trusted.workloads["qwen3/asr_en"].samples["wer"].errors[0].sum() > 0  # scored from the files


def test_compare_no_cache_writes_nothing(tree, tmp_path):
    runner = CliRunner()
    again = copy_run(tree, tmp_path / "again")  # the commit measured again (a tree against itself is refused)
    off = runner.invoke(cli, ["compare", str(tree), str(again), "--models", "qwen3", "--no-cache", "--format", "none"])
    assert off.exit_code == 0, off.stderr
    assert not (tree / CACHE_DIR).exists()
    on = runner.invoke(cli, ["compare", str(tree), str(again), "--models", "qwen3", "--format", "none"])
    assert on.exit_code == 0, on.stderr
    assert list((tree / CACHE_DIR).glob("run1--qwen3_asr_en--*.json"))


RESULT_FILE = re.compile(r"/run\d+/(?:.*/)?(asr_[a-z]+|transcribe_diarize_(speed_)?results)\.json$")


@pytest.mark.parametrize("flags", [(), ("--no-cache",)], ids=["cache", "no-cache"])
def test_one_compare_reads_each_result_file_once(tree, tmp_path, monkeypatch, flags):
    """The per-utterance reader takes the run gate.reading.results parsed (and the cache key hashes that run), so a
    compare opens each result file once, with the cache cold, warm, or off."""
    candidate = copy_run(tree, tmp_path / "candidate")
    opened: collections.Counter[str] = collections.Counter()
    real_open, real_os_open = builtins.open, os.open

    def counting_open(file, *args, **kwargs):
        if isinstance(file, (str, bytes, os.PathLike)):
            opened[os.fsdecode(file)] += bool(RESULT_FILE.search(os.fsdecode(file)))
        return real_open(file, *args, **kwargs)

    def counting_os_open(path, *args, **kwargs):
        opened[os.fsdecode(path)] += bool(RESULT_FILE.search(os.fsdecode(path)))
        return real_os_open(path, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", counting_open)
    monkeypatch.setattr(io, "open", counting_open)
    monkeypatch.setattr(os, "open", counting_os_open)
    for attempt in ("cold", "warm"):
        opened.clear()
        result = CliRunner().invoke(cli, ["compare", str(tree), str(candidate), *flags, "--format", "none"])
        assert result.exit_code in (0, 1), result.output
        read = {path: n for path, n in opened.items() if n}
        expected = {str(p) for side in (tree, candidate) for p in side.rglob("*.json") if RESULT_FILE.search(str(p))}
        assert set(read) == expected, attempt  # every result file of both sides is read ...
        assert max(read.values()) == 1, (attempt, {p: n for p, n in read.items() if n > 1})  # ... once
