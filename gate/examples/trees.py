"""Whole example trees: one tree from a spec, the README's baseline/candidate pair, a calibrated baseline file."""
from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np

from gate.examples.dataset import utterance_ids
from gate.examples.moss import write_moss
from gate.examples.seedtts import write_seedtts
from gate.examples.spec import (
    AA_PAIRS,
    AA_SEEDS_FROM,
    BASELINE_COMMIT,
    CANDIDATE_COMMIT,
    MOSS_DEFECTS,
    SEEDTTS_DEFECTS,
    SYNTHETIC_NOTICE,
    ExampleSpec,
    stable,
)
from gate.formats import result_types, runlog
from gate.formats.config import Suite, Workload
from gate.judging.calibration import calibrate_baseline
from gate.reading.baseline_file import write_baseline
from gate.reading.tree_side import side_from_tree


def write_example_tree(root: Path, suite: Suite, spec: ExampleSpec = ExampleSpec()) -> Path:
    """Write one synthetic result tree <root>/run<R>/... and return root."""
    root = Path(root)
    workloads = suite.workloads_for(spec.models)
    _check_spec(spec, suite, workloads)
    root.mkdir(parents=True, exist_ok=True)
    (root / "SYNTHETIC.txt").write_text(SYNTHETIC_NOTICE + "\n", encoding="utf-8")
    for run in spec.runs:
        run_dir = root / f"run{run}"
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "commit.txt").write_text(spec.commit + "\n", encoding="utf-8")
        (run_dir / "freeze.txt").write_text("".join(line + "\n" for line in spec.freeze), encoding="utf-8")
        for workload in workloads:
            defect = spec.defects.get(workload.id) if run == "1" else None
            rng = np.random.default_rng([spec.seed, stable(workload.id), stable(run)])
            model_id = suite.models[workload.model].model_id
            if workload.format == "seedtts":
                write_seedtts(run_dir, workload, model_id, spec, rng, defect)
            else:
                write_moss(run_dir, workload, model_id, spec, rng, defect)
    return root


def write_example_pair(out: Path, suite: Suite, *, shown_as: Path | None = None) -> tuple[Path, Path]:
    """out/baseline and out/candidate: same-commit noise everywhere, plus one real-looking regression.

    The candidate's qwen3/asr_en loses 6% throughput (latency and RTF up by the same factor) and
    40 utterances each get one extra word error. `shown_as` is the folder named in the texts written
    (default `out`): `gate example` builds in a temporary sibling and renames it into place.
    """
    out = Path(out)
    shown = Path(shown_as or out)
    baseline = write_example_tree(out / "baseline", suite, ExampleSpec(seed=0, commit=BASELINE_COMMIT))
    candidate = write_example_tree(out / "candidate", suite, ExampleSpec(
        seed=1, commit=CANDIDATE_COMMIT, speed_factor={"qwen3/asr_en": 0.94}, extra_errors={"qwen3/asr_en": 40}))
    _write_ab_run_log((baseline, candidate), suite)
    (out / "README.txt").write_text(
        SYNTHETIC_NOTICE + "\n\n"
        "baseline/   commit " + BASELINE_COMMIT + "\n"
        "candidate/  commit " + CANDIDATE_COMMIT + ": qwen3/asr_en is 6% slower and 40 utterances each have one\n"
        "            extra word error; every other workload differs from the baseline by run-to-run noise only.\n\n"
        "Try: gate compare " + str(shown / "baseline") + " " + str(shown / "candidate") + "\n", encoding="utf-8")
    return baseline, candidate


def write_example_baseline(out: Path, suite: Suite, *, pairs: int = AA_PAIRS, shown_as: Path | None = None) -> Path:
    """out/baseline.json: out/baseline stored as a baseline file, calibrated from `pairs` A/A pairs.

    Each A/A pair is the baseline's commit written twice with fresh seeds (3 scored runs each; the
    unscored warm-up run is left out), so the calibration measures exactly the run-to-run noise the
    pair was generated with (ExampleSpec.speed_sigma). The A/A trees are written under out/aa/ and
    removed once calibrated: ~27 MB each, and regenerated identically from their seeds.
    """
    out = Path(out)
    shown = Path(shown_as or out)
    side = replace(side_from_tree(out / "baseline", suite), path=str(shown / "baseline"))
    baseline_file = write_baseline(side, out / "baseline.json")
    aa_root = out / "aa"
    trees = [write_example_tree(aa_root / f"pair{k // 2 + 1}-{'ab'[k % 2]}", suite,
                                ExampleSpec(seed=AA_SEEDS_FROM + k, commit=BASELINE_COMMIT, runs=("1", "2", "3")))
             for k in range(2 * pairs)]
    sides = [replace(side_from_tree(tree, suite), path=str(shown / tree.relative_to(out)))
             for tree in trees]
    # Every synthetic tree is generated on its own, as separate jobs would measure them: the pairs count as
    # cross-job pairs, the job-to-job spread a comparison against baseline.json (another job) is judged with.
    calibrate_baseline(baseline_file, list(zip(sides[0::2], sides[1::2], strict=True)), suite, cross_job=[True] * len(sides[0::2]))
    shutil.rmtree(aa_root)
    with (out / "README.txt").open("a", encoding="utf-8") as readme:
        readme.write(
            f"\nbaseline.json  baseline/ stored by gate baseline, with its speed noise floor calibrated from {pairs}\n"
            f"               synthetic A/A pairs (commit {BASELINE_COMMIT[:10]} twice, seeds {AA_SEEDS_FROM}–"
            f"{AA_SEEDS_FROM + 2 * pairs - 1}; the A/A trees\n"
            "               were removed after calibration). Compared against it, speed rows get p-values:\n\n"
            f"Try: gate compare {shown / 'baseline.json'} {shown / 'candidate'}\n")
    return baseline_file


# The pair is shaped as one `gate run --ab` job makes it: its run log, in both trees, lists the sides base first.
AB_STARTED = "2026-11-02T03:00:00.000+00:00"
AB_ENDED = "2026-11-02T07:41:12.000+00:00"


def _write_ab_run_log(trees: tuple[Path, Path], suite: Suite) -> None:
    """gate-run.json as `gate run --ab A B --names baseline,candidate` writes it (one look, no steps kept)."""
    runs = (suite.warm_run, *suite.scored_runs)
    names = [tree.name for tree in trees]
    doc = runlog.skeleton({name: f"synthetic-checkout-{name}" for name in names},
                          {f"{name}/run{run}": "completed" for run in runs for name in names},
                          started=AB_STARTED, status="completed", gate_version="synthetic",
                          argv=("gate", "run", "--ab", "checkout-a", "checkout-b", "--names", ",".join(names),
                                "--one-look"),
                          scored_runs={name: {model: [f"run{run}" for run in suite.scored_runs] for model in suite.models}
                                       for name in names})
    doc.update(ended=AB_ENDED, exit_code=0)
    for tree in trees:
        (tree / runlog.FILE).write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")



def _check_spec(spec: ExampleSpec, suite: Suite, workloads: tuple[Workload, ...]) -> None:
    known = {w.id: w for w in suite.workloads}
    for knob in ("speed_factor", "p95_factor", "ttft_factor", "extra_errors", "hallucinate", "defects"):
        for workload_id in getattr(spec, knob):
            if workload_id not in known:
                raise ValueError(f"ExampleSpec.{knob}: unknown workload {workload_id!r}")
    for workload_id in spec.ttft_factor:
        if not known[workload_id].stream:
            raise ValueError(f"ExampleSpec.ttft_factor: {workload_id} is not a streamed workload (suite `stream: true`)")
    for workload_id, utterance in spec.hallucinate.items():
        if utterance not in utterance_ids(known[workload_id]):
            raise ValueError(f"ExampleSpec.hallucinate: {workload_id} has no utterance {utterance!r}")
    for workload_id, defect in spec.defects.items():
        allowed: tuple[str, ...] = SEEDTTS_DEFECTS if known[workload_id].format == "seedtts" else MOSS_DEFECTS
        if defect == result_types.MAX_NEW_TOKENS_SET and not known[workload_id].require_null_max_new_tokens:
            allowed = ()
        if defect not in allowed:
            raise ValueError(f"ExampleSpec.defects: {defect!r} does not apply to {workload_id}")
    if "1" not in spec.runs and spec.defects:
        raise ValueError("ExampleSpec.defects apply to run1, which is not in runs")
