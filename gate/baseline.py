"""The baseline store: one side of a comparison kept as one reviewed JSON file, and its A/A calibration.

A `Side` is everything the verdict needs from a result tree: per workload the per-run metric values,
coverage, per-utterance error arrays, and the fingerprint. `side_from_tree` (gate.tree_side) builds
it from a tree; `write_baseline` / `read_baseline` (gate.baseline_file, the format's one writer and
one reader) keep it in a file (schema below), together with the A/A calibration that
`calibrate_baseline` (gate.baseline_calibration) adds. Either side of `gate compare` may be either.
This module is the store's public face; each concern lives in the module named.

Baseline file, schema_version 1 (gate/baseline_record.py is its shape; baselines/README.md documents it
for reviewers):

    {"schema_version": 1, "kind": "asr-gate-baseline", "suite": "asr", "created": ISO-8601,
     "source": {"path", "commit", "runs": ["run1", ...]},
     "fingerprint": {"gpu", "driver", "packages": {name: version}, "workloads": {id: {fact: value}}},
     "workloads": {id: {"runs": [...], "complete": bool, "problems": ["code: message", ...],
                        "metrics": {name: [value per run]},
                        "samples": {measure: {"ids": [...], "ref_len": [...], "errors": [[per run]],
                                              "invalid": [[indices per run]], "texts": {id: [ref, hyp]}}},
                        "sample_notes": [...], "evaluated": [count per run]}},
     "calibration": {id: {speed metric: {"sigma", "df", "groups", "delta_sd", "delta_df", cross-job sums,
                                         "set_aside", "nights", "night_df", "night_sum_sq", "night_set_aside"},
                          accuracy metric: {"ss_total", "ss_units", "df", "arms", "phi", "identical"}}},
     "calibration_source": {"pairs": [[tree_a, tree_b], ...], "created": ISO-8601,
                            "nights": {"history", "tonight", "kept", "used", "repeated", "created"}} | null}

A speed entry's sigma/df pool the A/A pairs' within-arm spread with the nightly jobs' own runs (the
night_* fields are the nights' share; gate.history.noise computes it, `pool_nights` stores it).
"""
from __future__ import annotations

from gate.baseline_calibration import (
    calibrate_baseline,
    calibration_from_pairs,
    carry_calibration,
    check_independent,
    pool_nights,
    run_hashes,
    with_calibration,
)
from gate.baseline_file import (
    BASELINE_KIND,
    BASELINE_SCHEMA_VERSION,
    MAX_SIGMA,
    MIN_SIGMA,
    read_baseline,
    side_to_dict,
    write_baseline,
)
from gate.side import MeasureSamples, Side, WorkloadSide
from gate.tree_side import TEXT_EXCERPT, SampleReader, side_from_tree

__all__ = [
    "BASELINE_KIND", "BASELINE_SCHEMA_VERSION", "MAX_SIGMA", "MIN_SIGMA", "TEXT_EXCERPT", "MeasureSamples",
    "SampleReader", "Side", "WorkloadSide", "calibrate_baseline", "calibration_from_pairs", "carry_calibration",
    "check_independent", "pool_nights", "read_baseline", "run_hashes", "side_from_tree", "side_to_dict",
    "with_calibration", "write_baseline",
]
