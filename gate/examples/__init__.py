"""Deterministic, clearly synthetic result trees in the runbook layout (for the README, tests and demos).

One module per concern: spec.py (ExampleSpec, commits, defect codes), dataset.py (ids, references,
habitual errors, exact error injection), seedtts.py and moss.py (one workload family each, in small
builders), trees.py (a tree, the README's pair, the calibrated baseline file), ci.py (CI artifacts),
nights.py (`gate history example-nights`: nightly trees with a planted step).

Every file is schema-exact (docs/upstream.md §2.1, §2.2, §2.4): the SeedTTS `--output` JSON
(schema_version 2) with its raw `--save-raw-dir` JSONL, and the three MOSS-Transcribe-Diarize
files. The numbers are SYNTHETIC, shaped after the runbook's "Reference results", and every
aggregate is computed from the per-sample rows written beside it: corpus WER is Σerrors/Σwords of
`ref_norm`/`hyp_norm` (recomputable with jiwer), MOSS CER/cpCER follow the docs/upstream.md §3.2 cleaning, latency
and RTF statistics are those of the per-request latencies.

Determinism: the "dataset" (utterance ids, references, durations) and the model's habitual errors
depend only on the workload id, so a baseline and a candidate share ids and references (paired
data). Run-to-run noise depends on (seed, workload, run). The same spec gives byte-identical trees.

Error injection is exact by construction: an utterance either only loses words (deletions) or
only gets novel tokens substituted or inserted (tokens that never occur in a reference), so the
edit distance equals the number of injected edits.
"""
from __future__ import annotations

import importlib
from typing import Any

# Loaded on first use (PEP 562): `gate example --help` and gate.examples.folder must not import numpy.
_WHERE = {"write_example_ci_artifacts": "ci", "utterance_ids": "dataset",
          "write_example_baseline": "trees", "write_example_pair": "trees", "write_example_tree": "trees",
          **{name: "spec" for name in ("AA_PAIRS", "AA_SEEDS_FROM", "BASELINE_COMMIT", "CANDIDATE_COMMIT",
                                       "DEFAULT_FREEZE", "DUPLICATE_IDS", "MISSING_IDS", "MOSS_DEFECTS", "NAN",
                                       "SEEDTTS_DEFECTS", "SYNTHETIC_NOTICE", "ExampleSpec")}}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'gate.examples' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"gate.examples.{_WHERE[name]}"), name)
    globals()[name] = value  # a monkeypatched attribute (tests) stays patched: later lookups find it here
    return value
