"""False alarms and detection power of the gate's verdicts against the rules other tools use (issue 6).

    python benchmarks/verdict_power.py --replicates 400 --out benchmarks/results     # full run (people)
    python benchmarks/verdict_power.py --smoke --out /tmp/power                      # CI smoke (< 1 min)

Writes <out>/verdict_power.md (the table and the headline, last line), <out>/verdict_power.png (power vs
effect size) and <out>/verdict_power.json (the raw counts). The model, scenarios and rules are documented in
benchmarks/README.md; the code is in benchmarks/power/.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/ holds the `power` package

from gate.config import load_suite  # noqa: E402
from power import experiment, report  # noqa: E402
from power.judges import JudgeFactory  # noqa: E402
from power.model import NoiseModel  # noqa: E402
from power.scenarios import default_scenarios  # noqa: E402

SMOKE_SCENARIOS = ("aa", "thr-3", "thr-10", "wer+0.15")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="directory for the table, plot and counts")
    parser.add_argument("--replicates", type=int, default=400, help="simulated pairs per scenario (default 400)")
    parser.add_argument("--aa-replicates", type=int, default=None,
                        help="replicates of the A/A (no change) scenario, whose false-FAIL rate needs a tight CI "
                             "(default 5 x --replicates; --smoke: = --replicates)")
    parser.add_argument("--seed", type=int, default=20261202)
    parser.add_argument("--calibration-pairs", type=int, default=10,
                        help="A/A pairs the gate's calibration is estimated from, fresh for every replicate")
    parser.add_argument("--oracle-pairs", type=int, default=2000,
                        help="A/A pairs used to compute the oracle's true SD of each row's change")
    parser.add_argument("--scenarios", default=None, help="comma-separated scenario keys (default: all)")
    parser.add_argument("--no-gate", action="store_true", help="competing rules only (the gate is the slow part)")
    parser.add_argument("--no-alternatives", action="store_true", help="skip the gate's design alternatives")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--verify-trees", type=int, default=2, metavar="N",
                        help="also judge N seeds of full result trees both as trees and as baseline files and "
                             "check the rows are identical (default 2; 0 skips)")
    parser.add_argument("--smoke", action="store_true",
                        help=f"CI smoke: scenarios {','.join(SMOKE_SCENARIOS)}, 30 replicates, small oracle/calibration")
    args = parser.parse_args(argv)
    if args.smoke:
        args.replicates = min(args.replicates, 30)
        args.oracle_pairs = min(args.oracle_pairs, 300)
        args.calibration_pairs = min(args.calibration_pairs, 5)
        args.no_alternatives = True
        args.verify_trees = min(args.verify_trees, 1)
        args.scenarios = args.scenarios or ",".join(SMOKE_SCENARIOS)
    if args.aa_replicates is None:
        args.aa_replicates = args.replicates if args.smoke else 5 * args.replicates
    if args.replicates < 1 or args.aa_replicates < 1:
        parser.error("--replicates and --aa-replicates must be at least 1")
    if args.out.exists() and not args.out.is_dir():
        parser.error(f"--out {args.out}: exists and is not a directory")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    suite = load_suite()
    scenarios = default_scenarios()
    if args.scenarios:
        wanted = args.scenarios.split(",")
        unknown = sorted(set(wanted) - {s.key for s in scenarios})
        if unknown:
            print(f"verdict_power: error: unknown scenario(s) {', '.join(unknown)}; known: "
                  f"{', '.join(s.key for s in scenarios)}", file=sys.stderr)
            return 2
        scenarios = tuple(s for s in scenarios if s.key in wanted)
    noise = NoiseModel()
    rows = experiment.gated_rows(suite)
    started = time.monotonic()
    factory = JudgeFactory(seed=args.seed, noise=noise, oracle_pairs=args.oracle_pairs,
                           calibration_pairs=args.calibration_pairs, with_gate=not args.no_gate,
                           alternatives=not args.no_alternatives)

    def progress(message: str) -> None:
        print(f"[{time.monotonic() - started:6.1f}s] {message}", file=sys.stderr, flush=True)

    replicates = {s.key: (args.aa_replicates if s.is_null else args.replicates) for s in scenarios}
    results = experiment.run(scenarios, factory, rows, replicates, args.seed, noise, args.jobs, progress)
    args.out.mkdir(parents=True, exist_ok=True)
    equivalence = ""
    if args.verify_trees and not args.no_gate:
        checks = verify_trees(suite, args.verify_trees, smoke=args.smoke)
        progress(f"tree equivalence: {sum(c.identical for c in checks)}/{len(checks)} identical")
        equivalence = report.equivalence_line(checks)
        if not all(c.identical for c in checks):
            print(equivalence, file=sys.stderr)
            return 1
    table = report.markdown_table(results)
    alternatives = report.alternatives_table(results)
    line = report.headline(results)
    command = "python benchmarks/verdict_power.py " + " ".join(argv if argv is not None else sys.argv[1:])
    (args.out / "verdict_power.md").write_text(
        f"# Verdict power: false alarms and detection power\n\n`{command}` "
        f"({args.replicates} replicates per scenario, {args.aa_replicates} for A/A, seed {args.seed}, "
        f"{time.monotonic() - started:.0f} s on {args.jobs} processes). "
        "Cells: rate in % (95% Wilson CI). A/A row: share of no-op PRs with any gated row failed; "
        "other rows: share of replicates in which the changed row was flagged.\n\n"
        f"{table}\n\n{alternatives}{equivalence}{line}\n", encoding="utf-8")
    report.plot(results, args.out / "verdict_power.png")
    meta = {"command": command, "replicates": args.replicates, "aa_replicates": args.aa_replicates, "seed": args.seed,
            "seconds": round(time.monotonic() - started), "calibration_pairs": args.calibration_pairs,
            "oracle_pairs": args.oracle_pairs}
    (args.out / "verdict_power.json").write_text(json.dumps(report.counts(results, meta), indent=1) + "\n",
                                                 encoding="utf-8")
    print(table)
    print()
    print(alternatives + equivalence + line)
    return 0


def verify_trees(suite, seeds: int, smoke: bool):
    import tempfile

    from power.gate_rule import verify_tree_equivalence

    models = ("qwen3", "moss_td") if smoke else None
    with tempfile.TemporaryDirectory(prefix="verdict-power-trees-") as tmp:
        return verify_tree_equivalence(Path(tmp), suite, tuple(range(1, seeds + 1)),
                                       **({"models": models} if models else {"models": tuple(suite.models)}))


if __name__ == "__main__":
    sys.exit(main())
