"""Per-utterance error counts computed once per run and reused: a cache beside a result tree.

Scoring every utterance of every run with jiwer is most of what `gate compare` does on a tree, and a
tree does not change once written. `CachedSampleReader` wraps the per-sample reader that
`side_from_tree` calls (its `sample_reader` hook): the first call for a run and workload computes the
counts and stores them in `<tree>/.gate-cache/`; later calls load them.

An entry's key is a SHA-256 of everything the counts depend on: the typed run gate.reading.results read (its
corpus figures, coverage and file paths, and the parsed MOSS payload with its per_sample rows), the
content of the per-sample files the reader opens itself (SeedTTS raw JSONL) and where the run is
(messages name files), the workload's suite entry, the reader's own source code and the versions of
the libraries that score (jiwer, rapidfuzz). Any change to any of them is a miss, never a stale hit.
The result files are not opened again for the key: `gate compare` reads each once (gate.reading.results).
The key does not make an entry trustworthy: whoever wrote the tree could have written its cache too,
so the trusted report job opts out (`gate compare --no-cache`) and scores untrusted trees itself.

The cache is best effort: an entry that cannot be read or does not have the expected shape is a miss,
and a tree that cannot be written to (read-only artifact) is simply not cached.
"""
from __future__ import annotations

import hashlib
import json
import os
import stat
from dataclasses import dataclass, fields
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from gate import __version__
from gate.formats import atomic, result_types
from gate.formats.config import Workload
from gate.formats.errors import OutputError
from gate.formats.result_types import WorkloadRun
from gate.reading import result_files, samples, side
from gate.reading.side import CrossCheck, MeasureSamples

CACHE_DIR = ".gate-cache"
FORMAT = 2  # bump when the entry layout changes (2: one MeasureSamples row per run; old entries are misses)
_EDITS = ("substitutions", "deletions", "insertions")

SampleReader = Callable[[Path, WorkloadRun, Workload], Mapping[str, MeasureSamples]]


def _score(run_dir: Path, run: WorkloadRun, workload: Workload) -> Mapping[str, MeasureSamples]:
    return samples.samples_of_run(run, workload)


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    written: int = 0


class CachedSampleReader:
    """A `sample_reader` for `side_from_tree` that keeps its results in `<tree_root>/.gate-cache/`."""

    def __init__(self, tree_root: str | Path, reader: SampleReader = _score) -> None:
        self.root = Path(tree_root)
        self.directory = self.root / CACHE_DIR
        self.reader = reader
        self.stats = CacheStats()

    def __call__(self, run_dir: Path, run: WorkloadRun, workload: Workload) -> Mapping[str, MeasureSamples]:
        run_dir = Path(run_dir)
        key = _key(run_dir, run, workload)
        entry = self.directory / f"{_slug(run_dir, self.root)}--{_slug_text(workload.id)}--{key[:32]}.json"
        cached = _load(entry, key)
        if cached is not None:
            self.stats.hits += 1
            return cached
        self.stats.misses += 1
        computed = self.reader(run_dir, run, workload)
        if self._store(entry, key, computed):
            self.stats.written += 1
        return computed

    def _store(self, entry: Path, key: str, computed: Mapping[str, MeasureSamples]) -> bool:
        document = {"format": FORMAT, "key": key, "measures": {m: _to_json(e) for m, e in computed.items()}}
        try:
            self.directory.mkdir(exist_ok=True)
            for stale in self.directory.glob(entry.name.rsplit("--", 1)[0] + "--*.json"):
                stale.unlink()  # an older entry for the same run and workload: its files have changed since
            atomic.write_text(entry, json.dumps(document, ensure_ascii=False, separators=(",", ":")), what="cache entry")
        except (OSError, OutputError):
            return False  # a read-only tree or a full disk: not cached (atomic left no temporary file), nothing else changes
        return True


def _key(run_dir: Path, run: WorkloadRun, workload: Workload) -> str:
    """What the reader's answer depends on, hashed: never the result files again (gate.reading.results read them)."""
    digest = hashlib.sha256()
    document = json.dumps(run.samples_document, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    raw = Path(run.samples_path) if run.samples_path and workload.format != "moss" else None
    # The run's location is part of the key: messages and cross-checks name the files they read.
    for part in (f"format {FORMAT}", f"gate {__version__}", _code_digest(), repr(workload),
                 str(run_dir.resolve()), repr(run), hashlib.sha256(document.encode("utf-8", "surrogateescape")).hexdigest(),
                 _directory_digest(raw) if raw is not None and raw.is_dir() else "no per-sample directory"):
        digest.update(part.encode("utf-8", "surrogateescape") + b"\0")
    return digest.hexdigest()


def _directory_digest(run_dir: Path) -> str:
    """SHA-256 over every file under `run_dir` (relative path and content); non-regular files by kind only."""
    digest = hashlib.sha256()
    for top, dirs, files in os.walk(run_dir):
        dirs[:] = sorted(d for d in dirs if d != CACHE_DIR)  # a run dir that is the tree root holds the cache
        for name in sorted(files):
            path = Path(top) / name
            digest.update(str(path.relative_to(run_dir)).encode("utf-8", "surrogateescape") + b"\0")
            try:
                info = os.stat(path)
            except OSError:
                digest.update(b"unreadable\0")
                continue
            if not stat.S_ISREG(info.st_mode):  # a FIFO or device is never opened: it would block or never end
                digest.update(f"kind {stat.S_IFMT(info.st_mode)}\0".encode())
                continue
            file_digest = hashlib.sha256()
            try:
                with open(path, "rb") as handle:
                    for block in iter(lambda: handle.read(1 << 20), b""):
                        file_digest.update(block)
            except OSError:
                digest.update(b"unreadable\0")
                continue
            digest.update(file_digest.digest())
    return digest.hexdigest()


_CODE_DIGEST: str | None = None


def _code_digest() -> str:
    """The reader's source (and the typed run's and type's) and the scoring libraries' versions."""
    global _CODE_DIGEST
    if _CODE_DIGEST is None:
        digest = hashlib.sha256()
        for module in (samples, side, result_files, result_types):
            digest.update(Path(module.__file__ or "").read_bytes())
        for package in ("jiwer", "rapidfuzz", "numpy"):
            try:
                digest.update(f"{package} {metadata.version(package)}\0".encode())
            except metadata.PackageNotFoundError:
                digest.update(f"{package} absent\0".encode())
        _CODE_DIGEST = digest.hexdigest()
    return _CODE_DIGEST


def _to_json(errors: MeasureSamples) -> dict[str, Any]:
    return {"measure": errors.measure, "ids": list(errors.ids), "ref_len": errors.ref_len.tolist(),
            "errors": errors.errors.tolist(), "valid": errors.valid.tolist(),
            **{name: None if getattr(errors, name) is None else getattr(errors, name).tolist() for name in _EDITS},
            "texts": [[utt, ref, hyp] for utt, (ref, hyp) in errors.texts.items()],
            "checks": [{f.name: getattr(check, f.name) for f in fields(CrossCheck)} for check in errors.checks]}


def _load(entry: Path, key: str) -> dict[str, MeasureSamples] | None:
    """The cached counts, or None (a miss) when absent, unreadable or not of the expected shape."""
    try:
        info = os.stat(entry)
        if not stat.S_ISREG(info.st_mode):
            return None
        document = json.loads(entry.read_text(encoding="utf-8"))
        if document.get("format") != FORMAT or document.get("key") != key:
            return None
        return {measure: _from_json(item) for measure, item in document["measures"].items()}
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None


def _from_json(item: dict[str, Any]) -> MeasureSamples:
    ids = tuple(str(t) for t in item["ids"])
    checks = tuple(CrossCheck(**{f.name: check[f.name] for f in fields(CrossCheck)}) for check in item["checks"])
    rows = (len(checks), len(ids))

    def array(name: str, dtype: type, shape: tuple[int, ...]) -> np.ndarray:
        value: np.ndarray = np.asarray(item[name], dtype=dtype)
        if value.shape != shape:
            raise ValueError(f"cached {name} does not match the ids")
        return value

    edits = {name: None if item[name] is None else array(name, np.int64, rows) for name in _EDITS}
    texts = {str(utt): (str(ref), str(hyp)) for utt, ref, hyp in item["texts"]}
    if not set(texts) <= set(ids):
        raise ValueError("cached texts name utterances that are not in the ids")
    return MeasureSamples(measure=str(item["measure"]), ids=ids, ref_len=array("ref_len", np.int64, (len(ids),)),
                          errors=array("errors", np.int64, rows), valid=array("valid", bool, rows), texts=texts,
                          checks=checks, **edits)


def _slug(run_dir: Path, root: Path) -> str:
    try:
        relative = str(run_dir.resolve().relative_to(root.resolve()))
    except ValueError:
        relative = run_dir.name
    return _slug_text(relative)


def _slug_text(text: str) -> str:
    return "".join(c if c.isalnum() or c in "._" else "_" for c in text)[:80] or "_"
