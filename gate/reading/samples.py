"""Per-utterance error counts, for the paired accuracy tests.

Entry point: `samples_of_run(run, workload) -> {measure: MeasureSamples}` (one row, gate.reading.side), one entry
per per-utterance measure of the workload's accuracy metrics ("wer" for SeedTTS, "cer" and "cp_cer" for
MOSS), from the typed run gate.reading.results already read: its corpus figures, its total, and (MOSS) the parsed
results payload, so no result file is read twice. Use an entry only when `crosscheck.status == MATCH`.
`read_run_samples(run_dir, workload)` reads the run first, for callers that have no tree.

Sources (docs/upstream.md §2.2, §2.4): SeedTTS `--save-raw-dir` JSONL at <run>/<model>/raw_<lang>/conc32_rep1.jsonl
(`ref_norm`/`hyp_norm`, already normalized by the client; ZH is space-separated characters), and
MOSS `per_sample` of transcribe_diarize_results.json (raw texts, cleaned here as in docs/upstream.md §3.2). Errors
are recomputed with jiwer (words for SeedTTS, characters for MOSS CER) and with a Hungarian speaker
assignment for cpCER, then cross-checked against the file's corpus figure: a mismatch means the
normalization differs from the client's, and the per-sample data must not be used.
"""
from __future__ import annotations

import fnmatch
import hashlib
import math
import os
import re
import unicodedata
from collections import OrderedDict
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

import jiwer
import numpy as np
from rapidfuzz.distance import Levenshtein

from gate.formats import inputs
from gate.formats.config import MetricSpec, Workload
from gate.formats.result_types import BAD_SCHEMA, UNREADABLE, WorkloadRun
from gate.reading.result_files import read_workload_run
from gate.reading.side import MATCH, MISMATCH, UNAVAILABLE, CrossCheck, MeasureSamples

# --- MOSS-Transcribe-Diarize text cleaning (docs/upstream.md §3.2) --------------------------------------
# The client scores cleaned text: timestamps dropped, speaker tags canonicalized to [S<n>], bracket
# events dropped, then whitespace and Unicode punctuation (category P) removed and lowercased.

_TIMESTAMP = re.compile(r"\[\d+(?:\.\d+)?\]")
_SPEAKER_TAG = re.compile(r"\[S0*(\d+)\]", re.IGNORECASE)
_CANONICAL_TAG = re.compile(r"\[S\d+\]", re.IGNORECASE)
_BRACKET_EVENT = re.compile(r"\[(?!S\d+\])[^]]+\]", re.IGNORECASE)
_EVENT_MARKUP = (re.compile(r"【[^】]*】"), re.compile(r"<[^>]*>"), re.compile(r"&[^&]{0,40}&"))


class _DropSpaceAndPunctuation(dict):
    """str.translate table that deletes whitespace and category-P characters; filled lazily per character."""

    def __missing__(self, code: int) -> int | None:
        char = chr(code)
        keep = not char.isspace() and not unicodedata.category(char).startswith("P")
        self[code] = code if keep else None
        return self[code]


_DROP_SPACE_AND_PUNCTUATION = _DropSpaceAndPunctuation()


def _preclean(text: str) -> str:
    cleaned = _TIMESTAMP.sub(" ", text or "")
    cleaned = _SPEAKER_TAG.sub(lambda m: f"[S{int(m.group(1))}]", cleaned)
    for markup in _EVENT_MARKUP:
        cleaned = markup.sub(" ", cleaned)
    return _BRACKET_EVENT.sub(" ", cleaned)


def _squeeze(text: str) -> str:
    return text.translate(_DROP_SPACE_AND_PUNCTUATION).lower()


@lru_cache(maxsize=65536)  # texts repeat across runs and trees (same references, mostly same hypotheses)
def clean_no_speaker(text: str) -> str:
    """The string MOSS CER is computed on: cleaned, speaker tags removed."""
    return _squeeze(_CANONICAL_TAG.sub(" ", _preclean(text)))


def has_speaker_tags(text: str) -> bool:
    return bool(_SPEAKER_TAG.search(text or ""))


def split_by_speaker(text: str, *, implicit_single_speaker: bool) -> dict[str, str]:
    """Cleaned text concatenated per canonical speaker tag, in order of first appearance.

    Text before the first tag is dropped (as the client does); a text without any tag is one
    speaker [S1] when `implicit_single_speaker` (the hypothesis side), else nothing.
    """
    cleaned = _preclean(text)
    tags = list(_CANONICAL_TAG.finditer(cleaned))
    if not tags:
        flat = _squeeze(cleaned)
        return {"[S1]": flat} if implicit_single_speaker and flat else {}
    per_speaker: dict[str, str] = {}
    for index, tag in enumerate(tags):
        end = tags[index + 1].start() if index + 1 < len(tags) else len(cleaned)
        content = _squeeze(cleaned[tag.end():end])
        if content:
            per_speaker[tag.group()] = per_speaker.get(tag.group(), "") + content
    return per_speaker


@lru_cache(maxsize=65536)
def cp_cer_counts(reference: str, hypothesis: str) -> tuple[int, int] | None:
    """(errors, reference characters) of the concatenated-minimum-permutation CER; None when not cp-valid.

    Both sides are split per speaker and padded to the same speaker count; the speaker assignment
    minimizes total character edits (Hungarian assignment on the pairwise Levenshtein matrix).
    """
    if not has_speaker_tags(reference):
        return None  # no_ref_speaker_tags
    ref_texts = list(split_by_speaker(reference, implicit_single_speaker=False).values())
    hyp_texts = list(split_by_speaker(hypothesis, implicit_single_speaker=True).values())
    size = max(len(ref_texts), len(hyp_texts))
    ref_texts += [""] * (size - len(ref_texts))
    hyp_texts += [""] * (size - len(hyp_texts))
    ref_chars = sum(len(t) for t in ref_texts)
    if size == 0 or ref_chars == 0:
        return None  # empty_ref_after_clean
    cost = np.array([[Levenshtein.distance(r, h) for h in hyp_texts] for r in ref_texts], dtype=np.int64)
    from scipy.optimize import linear_sum_assignment  # here: scipy.optimize takes ~0.3 s to load; only MOSS-TD needs it

    rows, cols = linear_sum_assignment(cost)
    return int(cost[rows, cols].sum()), ref_chars


# --- loading -------------------------------------------------------------------------------------

class _Invalid(Exception):
    """The per-sample file is malformed; the message names what was expected."""


def read_run_samples(run_dir: str | Path, workload: Workload) -> dict[str, MeasureSamples]:
    """Per-utterance errors of one workload in one run directory (its result files read here), by measure."""
    return samples_of_run(read_workload_run(Path(run_dir), workload), workload)


def samples_of_run(run: WorkloadRun, workload: Workload) -> dict[str, MeasureSamples]:
    """Per-utterance errors of one typed workload run (as gate.reading.results read it), keyed by measure.

    Never raises for bad data: a missing file gives status UNAVAILABLE, a malformed one
    UNAVAILABLE with `invalid=True`, a recomputation that does not reproduce the result file's corpus
    figure MISMATCH. Only the SeedTTS per-sample JSONL is read here; MOSS rows come with the run.
    """
    measures = [m for m in workload.metrics if m.kind == "accuracy" and m.samples]
    if not measures:
        return {}
    reported = {_name(m): run.metrics.get(m.name) for m in measures}
    total = run.coverage.total
    if workload.format == "moss":
        if run.samples_path is None:
            return {_name(m): _unavailable(_name(m), reported[_name(m)], "no MOSS-TD results file") for m in measures}
        return _moss_samples(run, Path(run.samples_path), measures, reported, total)
    source = run.samples_path
    if source is None:
        message = "no per-sample data in this layout (CI SeedTTS artifacts carry none)"
        return {_name(m): _unavailable(_name(m), reported[_name(m)], message) for m in measures}
    path = Path(source)
    repeats = run.provenance.repeats or 1
    if repeats > 1:
        # P timed passes in one server: the first pass's rows, checked against that pass's own corpus figure. The
        # passes score the same utterances in one server, so pooling them would count one start's transcripts P
        # times; the first pass is the one a --repeats 1 run has (rep1), so P = 1 and P > 1 sides pair the same pass.
        first = run.passes.get("corpus_wer")
        reported = {k: (first[0] if first else None) for k in reported}
        total = None if total is None else total // repeats
    try:
        path = _raw_jsonl(path, repeats)
        computed = {"wer": _seedtts_errors(path, total)}
    except FileNotFoundError as exc:
        return {_name(m): _unavailable(_name(m), reported[_name(m)], str(exc), path=str(path)) for m in measures}
    except _Invalid as exc:
        return {_name(m): _unavailable(_name(m), reported[_name(m)], f"invalid per-sample data: {exc}",
                                        path=str(path), invalid=True) for m in measures}
    return {_name(m): _with_crosscheck(computed[_name(m)], reported[_name(m)], str(path)) for m in measures}


def _raw_jsonl(raw_dir: Path, repeats: int = 1) -> Path:
    """The scored repeat file conc<C>_rep1.jsonl of the first timed pass, where the client wrote one file per pass
    conc<C>_rep1 .. rep<P> (rep0 is the profiled pass, never scored)."""
    if not os.path.lexists(raw_dir):  # never asked for (--save-raw-dir off): the tolerance test, labelled
        raise FileNotFoundError(f"{raw_dir}: missing; expected the SeedTTS client's --save-raw-dir output")
    # There but unreadable is a broken run, never a quiet switch to the tolerance test (issue 51).
    if not raw_dir.is_dir():
        raise _Invalid(f"{raw_dir}: not a directory; expected the SeedTTS client's --save-raw-dir output")
    try:
        names = os.listdir(raw_dir)
    except OSError as exc:
        raise _Invalid(f"{raw_dir}: cannot be read ({exc.strerror or exc}); expected the SeedTTS client's "
                       "--save-raw-dir output, readable by this user") from None
    scored = [n for n in names if fnmatch.fnmatchcase(n, "conc*_rep*.jsonl") and not n.endswith("_rep0.jsonl")]
    files = sorted(raw_dir / n for n in scored)
    if not files:
        raise FileNotFoundError(f"{raw_dir}: no conc<C>_rep<R>.jsonl file")
    if repeats == 1:
        if len(files) > 1:
            raise _Invalid(f"{raw_dir}: {len(files)} repeat files; expected one (--repeats 1)")
        return files[0]
    concurrencies = {p.name.split("_rep", 1)[0] for p in files}
    wanted = [f"{c}_rep{r}.jsonl" for c in sorted(concurrencies) for r in range(1, repeats + 1)]
    if len(concurrencies) != 1 or sorted(p.name for p in files) != sorted(wanted):
        raise _Invalid(f"{raw_dir}: files {', '.join(p.name for p in files)}; expected conc<C>_rep1.jsonl .. "
                       f"conc<C>_rep{repeats}.jsonl, one per timed pass (--repeats {repeats})")
    return raw_dir / wanted[0]


# (digest of a per-sample file's bytes, rows expected) -> the row read from them. One process reads the same file again
# and again (the trusted job's first looks, pooled look and checks each read both sides; copies of a tree hold the
# same bytes): the row depends on the bytes alone, so each distinct file is parsed once. Only rows read without
# error are kept (an error names the path); their arrays are read-only, as they are shared.
_ROWS_READ: OrderedDict[tuple[bytes, int | None], MeasureSamples] = OrderedDict()
_ROWS_KEPT = 128  # a compare reads ~50 SeedTTS files (two sides, four runs, six workloads)


def _seedtts_errors(path: Path, expected_rows: int | None) -> MeasureSamples:
    try:
        tree = path.parents[min(3, len(path.parents) - 1)]  # <tree>/run<R>/<model>/raw_<lang>/<file>
        raw = inputs.read_bytes(path, inputs.SAMPLES, root=tree)
    except inputs.Unreadable as exc:
        raise _Invalid(str(exc)) from None
    key = (hashlib.blake2b(raw, digest_size=20).digest(), expected_rows)
    if (kept := _ROWS_READ.get(key)) is not None:
        _ROWS_READ.move_to_end(key)
        return kept
    row = _read_only(_seedtts_row(path, raw, expected_rows))
    _ROWS_READ[key] = row
    if len(_ROWS_READ) > _ROWS_KEPT:
        _ROWS_READ.popitem(last=False)
    return row


def _read_only(row: MeasureSamples) -> MeasureSamples:
    for array in (row.ref_len, row.errors, row.valid, row.substitutions, row.deletions, row.insertions):
        if array is not None:
            array.flags.writeable = False
    return row


def _seedtts_row(path: Path, raw: bytes, expected_rows: int | None) -> MeasureSamples:
    try:
        rows = inputs.parse_jsonl(inputs.decode(raw, inputs.SAMPLES, source=path), source=path,
                                  what=inputs.SAMPLES.what)
    except inputs.Unreadable as exc:
        raise _Invalid(str(exc)) from None
    ids: list[str] = []
    refs: list[str] = []
    hyps: list[str] = []
    success: list[bool] = []
    seen: dict[str, str] = {}
    for number, row in rows:
        where = f"{path}: line {number}"
        if not isinstance(row, dict):
            raise _Invalid(f"{where}: expected a JSON object")
        uid = _unique_id(row, where, seen, f"line {number}")
        ok = _field(row, "is_success", bool, where)
        ref = _field(row, "ref_norm", str, where)
        hyp = _field(row, "hyp_norm", str, where)
        ids.append(uid)
        refs.append(ref)
        hyps.append(hyp)
        success.append(ok and bool(ref.strip()))
    if not ids:
        raise _Invalid(f"{path}: no rows; expected one JSON line per sample")
    if expected_rows is not None and len(ids) != expected_rows:
        raise _Invalid(f"{path}: {len(ids)} rows, expected {expected_rows} (the result file's total); "
                       f"sample ids are missing or extra")
    valid = np.array(success, dtype=bool)
    ref_len = np.array([len(r.split()) for r in refs], dtype=np.int64)
    # One batched jiwer call over the valid sentences that differ at all (identical ones have no errors).
    subs, dels, ins = _edit_counts(jiwer.process_words, refs, hyps, valid)
    errors = subs + dels + ins
    return _one_run("wer", ids, ref_len, errors, valid, (subs, dels, ins), refs, hyps)


def _moss_samples(run: WorkloadRun, path: Path, measures: list[MetricSpec], reported: Mapping[str, float | None],
                  total: int | None) -> dict[str, MeasureSamples]:
    """MOSS: the results payload holds both the per-sample rows and the corpus figures; gate.reading.results parsed it."""
    def unavailable(message: str, invalid: bool = False) -> dict[str, MeasureSamples]:
        return {_name(m): _unavailable(_name(m), reported.get(_name(m)), message, path=str(path), invalid=invalid)
                for m in measures}

    if run.samples_document is None:
        broken = [p for p in run.coverage.problems if p.path == str(path) and p.code in (UNREADABLE, BAD_SCHEMA)]
        if broken:
            return unavailable(f"invalid per-sample data: {broken[0]}", invalid=True)
        return unavailable(f"{path}: missing; expected the MOSS-TD client's results")
    try:
        computed = _moss_errors(path, run.samples_document, total)
    except _Invalid as exc:
        return unavailable(f"invalid per-sample data: {exc}", invalid=True)
    return {_name(m): _with_crosscheck(computed[_name(m)], reported[_name(m)], str(path)) for m in measures}


def _name(metric: MetricSpec) -> str:
    """The per-utterance measure of an accuracy metric that has one (callers filter on `samples`)."""
    return metric.samples or metric.name


def _moss_errors(path: Path, data: Any, expected_rows: int | None) -> dict[str, MeasureSamples]:
    rows = data.get("per_sample") if isinstance(data, dict) else None
    if not isinstance(rows, list):
        raise _Invalid(f"{path}: per_sample is missing or not a list; expected one entry per sample")
    ids: list[str] = []
    refs: list[str] = []
    hyps: list[str] = []
    success: list[bool] = []
    seen: dict[str, str] = {}
    for index, row in enumerate(rows):
        where = f"{path}: per_sample[{index}]"
        if not isinstance(row, dict):
            raise _Invalid(f"{where}: expected an object")
        uid = _unique_id(row, where, seen, f"per_sample[{index}]")
        error = row.get("error")
        if error is not None and not isinstance(error, str):
            raise _Invalid(f"{where}: error is {error!r}; expected a string or null")
        if isinstance(error, str) and error.strip().lower() in ("null", "none"):  # JSON null spelled as text: edited
            raise _Invalid(f"{where}: error is the string {error!r}; expected null (no error) or the error message")
        reference = _field(row, "expected_text", str, where)
        if "result_text" not in row:  # the client writes it for every sample ("" or null when the request failed)
            raise _Invalid(f"{where}: result_text is missing; expected the transcript (a string, or null for a "
                           f"failed request)")
        hypothesis = row["result_text"]
        if hypothesis is None and not error:
            raise _Invalid(f"{where}: result_text is null for a successful request; expected the transcript")
        if hypothesis is not None and not isinstance(hypothesis, str):
            raise _Invalid(f"{where}: result_text is {hypothesis!r}; expected a string")
        hypothesis = hypothesis or ""
        ids.append(uid)
        refs.append(reference)
        hyps.append(hypothesis)
        success.append(not error)
    if expected_rows is not None and len(ids) != expected_rows:
        raise _Invalid(f"{path}: per_sample has {len(ids)} entries, expected {expected_rows} (summary.total_samples); "
                       f"sample ids are missing or extra")
    n = len(ids)
    ok = np.array(success, dtype=bool)
    # CER: cleaned, speaker tags removed, characters; one batched jiwer call over the valid samples.
    ref_clean = [clean_no_speaker(r) for r in refs]
    hyp_clean = [clean_no_speaker(h) for h in hyps]
    cer_len = np.array([len(r) for r in ref_clean], dtype=np.int64)
    cer_valid = ok & (cer_len > 0)
    subs, dels, ins = _edit_counts(jiwer.process_characters, ref_clean, hyp_clean, cer_valid)
    cer = _one_run("cer", ids, cer_len, subs + dels + ins, cer_valid, (subs, dels, ins), ref_clean, hyp_clean)
    # cpCER: per-speaker concatenation with the best speaker assignment.
    cp_len = np.zeros(n, dtype=np.int64)
    cp_err = np.zeros(n, dtype=np.int64)
    cp_valid = np.zeros(n, dtype=bool)
    for k in np.flatnonzero(ok):
        counts = cp_cer_counts(refs[k], hyps[k])
        if counts is not None:
            cp_err[k], cp_len[k] = counts
            cp_valid[k] = True
    cp = _one_run("cp_cer", ids, cp_len, cp_err, cp_valid, None, ref_clean, hyp_clean)
    return {"cer": cer, "cp_cer": cp}


def _one_run(measure: str, ids: list[str], ref_len: np.ndarray, errors: np.ndarray, valid: np.ndarray,
             edits: tuple[np.ndarray, np.ndarray, np.ndarray] | None, refs: list[str], hyps: list[str]) -> MeasureSamples:
    """One run's row, not cross-checked yet; texts kept for the utterances with errors (for reports)."""
    texts = {ids[k]: (refs[k], hyps[k]) for k in np.flatnonzero(errors > 0)}
    subs, dels, ins = (None, None, None) if edits is None else (e[np.newaxis, :] for e in edits)
    return MeasureSamples(measure=measure, ids=tuple(ids), ref_len=ref_len, errors=errors[np.newaxis, :],
                          valid=valid[np.newaxis, :], texts=texts, substitutions=subs, deletions=dels, insertions=ins)


def _with_crosscheck(errors: MeasureSamples, reported: float | None, path: str) -> MeasureSamples:
    recomputed = errors.corpus_rate
    if reported is None or recomputed is None:
        check = CrossCheck(UNAVAILABLE, recomputed, reported,
                           "the result file has no corpus figure to check against" if reported is None
                           else "no valid utterance to recompute from", path=path)
    elif agrees(recomputed, reported):
        check = CrossCheck(MATCH, recomputed, reported, f"recomputed {recomputed:.6f} = reported {reported:.6f}", path=path)
    else:
        check = CrossCheck(MISMATCH, recomputed, reported,
                           f"normalization mismatch: per-sample data gives {errors.measure} {recomputed:.6f}, "
                           f"the result file says {reported:.6f}; per-sample data not used", path=path)
    return replace(errors, checks=(check,))


def agrees(recomputed: float, reported: float) -> bool:
    """Equal to rounding: within float noise, or within half a unit of the reported value's last decimal."""
    if math.isclose(recomputed, reported, rel_tol=1e-9, abs_tol=1e-12):
        return True
    decimals = _decimals(reported)
    return decimals is not None and decimals <= 6 and abs(recomputed - reported) <= 0.5 * 10 ** -decimals + 1e-12


def _decimals(value: float) -> int | None:
    text = repr(float(value))
    if "e" in text or "E" in text:
        return None
    return len(text.split(".")[1]) if "." in text else 0


def _unavailable(measure: str, reported: float | None, message: str, *, path: str | None = None,
                 invalid: bool = False) -> MeasureSamples:
    return MeasureSamples(measure=measure, ids=(), ref_len=np.zeros(0, dtype=np.int64),
                          errors=np.zeros((1, 0), dtype=np.int64), valid=np.zeros((1, 0), dtype=bool),
                          checks=(CrossCheck(UNAVAILABLE, None, reported, message, invalid=invalid, path=path),))


def _field(row: Mapping[str, Any], name: str, kind: type, where: str) -> Any:
    if name not in row:
        raise _Invalid(f"{where}: {name} is missing")
    value = row[name]
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise _Invalid(f"{where}: {name} is {value!r}; expected a {kind.__name__}")
    return value


# (process, reference, hypothesis) -> (substitutions, deletions, insertions). A pair's counts depend on that pair
# alone, and pairs repeat: across runs and trees most utterances carry the same habitual errors (the example's
# eight seedtts runs: 16,566 differing pairs, 2,201 distinct), so each distinct pair is aligned once.
_EDITS: dict[tuple[object, str, str], tuple[int, int, int]] = {}
_EDITS_KEPT = 1 << 18  # bounded: a long-lived process (the test suite) starts over past this


def _edit_counts(process, refs: list[str], hyps: list[str], valid: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Substitutions, deletions and insertions per entry, from one batched jiwer call (`process` is
    jiwer.process_words or jiwer.process_characters) over the valid entries whose texts differ and whose
    pair was not aligned before."""
    n = len(refs)
    subs, dels, ins = (np.zeros(n, dtype=np.int64) for _ in range(3))
    keep = [k for k in np.flatnonzero(valid) if refs[k] != hyps[k]]
    if len(_EDITS) > _EDITS_KEPT:
        _EDITS.clear()
    new = [pair for pair in dict.fromkeys((refs[k], hyps[k]) for k in keep) if (process, *pair) not in _EDITS]
    if new:
        out = process([ref for ref, _ in new], [hyp for _, hyp in new])
        for (ref, hyp), alignment in zip(new, out.alignments, strict=True):
            counts = [0, 0, 0]
            for chunk in alignment:
                if chunk.type == "substitute":
                    counts[0] += chunk.ref_end_idx - chunk.ref_start_idx
                elif chunk.type == "delete":
                    counts[1] += chunk.ref_end_idx - chunk.ref_start_idx
                elif chunk.type == "insert":
                    counts[2] += chunk.hyp_end_idx - chunk.hyp_start_idx
            _EDITS[(process, ref, hyp)] = (counts[0], counts[1], counts[2])
    for k in keep:
        subs[k], dels[k], ins[k] = _EDITS[(process, refs[k], hyps[k])]
    return subs, dels, ins


def _unique_id(row: dict, where: str, seen: dict[str, str], position: str) -> str:
    """The row's non-empty sample id, recorded in `seen` (id -> where it first stood); a repeat is invalid."""
    uid = _field(row, "id", str, where)
    if not uid:
        raise _Invalid(f"{where}: id is empty; expected a sample id")
    if uid in seen:
        raise _Invalid(f"{where}: duplicate id {uid!r} (first at {seen[uid]}); expected each sample once")
    seen[uid] = position
    return uid
