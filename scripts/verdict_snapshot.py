"""Every row's verdict over a fixed set of synthetic pairs, to prove a refactor of the rule changes no verdict.

Usage:
    python scripts/verdict_snapshot.py OUT            # writes OUT/<case>.json (report.json of `gate compare`)
    python scripts/verdict_snapshot.py --diff A B     # exit 1 when a row's verdict-bearing fields differ

The pairs are the quick start's (`gate example`: one job with its calibration, and across jobs against its
baseline file), its incomplete and other-GPU variants (scripts/render_comment_examples.py), and variants of its
candidate that reach the rule's other branches: a hallucination, a diffuse WER rise, slower runs at three sizes,
a p95-only rise, one and two runs a side, no calibration, identical transcripts. `--diff` compares the fields a
verdict rests on (verdict, p, adjusted p, q, flags, next step) row by row; new fields may differ.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from gate.cli import run
from gate.examples import CANDIDATE_COMMIT, ExampleSpec, write_example_baseline, write_example_pair, write_example_tree
from gate.examples.dataset import utterance_ids
from gate.formats.config import Suite, load_suite

QWEN_EN = "qwen3/asr_en"
COMPARED = ("verdict", "basis", "p_value", "p_adjusted", "q_value", "delta_rel", "worse_rel", "mde", "detects",
            "blind", "unstable", "across_jobs", "next_step", "improved", "family")


def _variants(suite: Suite) -> dict[str, ExampleSpec]:
    two = ("warm", "1", "2")
    return {
        "hallucinate": ExampleSpec(seed=1, commit=CANDIDATE_COMMIT, hallucinate={QWEN_EN: utterance_ids(suite.workload(QWEN_EN))[17]}),
        "diffuse": ExampleSpec(seed=1, commit=CANDIDATE_COMMIT, extra_errors={QWEN_EN: 22}),
        "slower3": ExampleSpec(seed=1, commit=CANDIDATE_COMMIT, speed_factor={QWEN_EN: 0.97}),
        "slower5": ExampleSpec(seed=2, commit=CANDIDATE_COMMIT, speed_factor={QWEN_EN: 0.95, "whisper/asr_zh": 0.96}),
        "slower10": ExampleSpec(seed=3, commit=CANDIDATE_COMMIT, speed_factor={QWEN_EN: 0.90}, speed_sigma=0.03),
        "p95": ExampleSpec(seed=4, commit=CANDIDATE_COMMIT, p95_factor={QWEN_EN: 1.2, "fun/asr_zh": 1.05}),
        "noisy": ExampleSpec(seed=5, commit=CANDIDATE_COMMIT, speed_sigma=0.05),
        "identical": ExampleSpec(seed=6, commit=CANDIDATE_COMMIT, flip_rate=0.0),
        "two_runs": ExampleSpec(seed=7, commit=CANDIDATE_COMMIT, runs=two, speed_factor={QWEN_EN: 0.93}),
        "one_run": ExampleSpec(seed=8, commit=CANDIDATE_COMMIT, runs=("warm", "1"), speed_factor={QWEN_EN: 0.90}),
    }


def write(out: Path) -> int:
    suite = load_suite()
    trees = out / "trees"
    base, regressed = write_example_pair(trees, suite)
    calibration = write_example_baseline(trees, suite)
    cases: dict[str, tuple[list[str], Path]] = {
        "example_one_job": ([str(base), str(regressed), "--calibration", str(calibration)], regressed),
        "example_across_jobs": ([str(calibration), str(regressed)], regressed),
        "example_no_calibration": ([str(base), str(regressed)], regressed),
    }
    for name, spec in _variants(suite).items():
        cand = write_example_tree(trees / name, suite, spec)
        cases[name] = ([str(base), str(cand), "--calibration", str(calibration)], cand)
        cases[name + "_across_jobs"] = ([str(calibration), str(cand)], cand)
    incomplete = write_example_tree(trees / "incomplete", suite, ExampleSpec(
        seed=1, commit=CANDIDATE_COMMIT, defects={"qwen3/asr_zh": "evaluated_ne_total", "moss_td/googletime": "missing_file"}))
    cases["incomplete"] = ([str(base), str(incomplete), "--calibration", str(calibration)], incomplete)
    codes = {}
    for name, (args, _) in cases.items():
        codes[name] = run(["compare", *args, "--json", str(out / f"{name}.json"), "--format", "none", "--no-cache"])
    print(" ".join(f"{name}: exit {code}" for name, code in codes.items()))
    return 0


def _rows(path: Path) -> dict[tuple[str, str], dict]:
    report = json.loads(path.read_text(encoding="utf-8"))
    return {(r["workload"], r["metric"]): {k: r.get(k) for k in COMPARED} for r in report["rows"]}


def diff(before: Path, after: Path) -> int:
    differ = checked = 0
    for old in sorted(before.glob("*.json")):
        new = after / old.name
        a, b = _rows(old), _rows(new)
        for key in sorted(set(a) | set(b)):
            checked += 1
            if a.get(key) != b.get(key):
                differ += 1
                changed = {k: (a.get(key, {}).get(k), b.get(key, {}).get(k)) for k in COMPARED
                           if a.get(key, {}).get(k) != b.get(key, {}).get(k)}
                print(f"{old.stem} {key[0]} {key[1]}: {changed}")
    print(f"{checked} rows over {len(list(before.glob('*.json')))} reports; {differ} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--diff":
        sys.exit(diff(Path(sys.argv[2]), Path(sys.argv[3])))
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(write(Path(sys.argv[1])))
