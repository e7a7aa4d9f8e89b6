"""The noise matrix's two tables, rebuilt from a verdict_power.json (benchmarks/verdict_power.py --out DIR).

    python benchmarks/matrix_tables.py benchmarks/results/verdict_power.json --out benchmarks/results/noise_matrix.md

writes (or, without --out, prints) the no-op table (false FAIL and WARN per no-op PR, and the oracle's false FAIL) and the change table (FAIL,
FAIL or WARN, and the oracle's FAIL and the gate's share of it where the cell has one) for every noise-matrix cell
(keys starting "m-") the file holds, in its order. docs/benchmarks.md links the file; no page copies the tables, so
a re-run of the benchmark is a re-run of this script, never a retyping of numbers.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from verdict_power import oracle_share, rate  # noqa: E402  (the benchmark's own rates and oracle share)


def _runs(cell: dict) -> str:
    return f"{cell['runs_mean']:.2f} / {cell['runs_max']:.0f}"


def _label(cell: dict) -> str:
    """A no-op cell's noise: its label less the "no-op" prefix (the design column says whether across jobs)."""
    label = cell["label"]
    for prefix in ("no-op vs stored baseline, ", "no-op, "):
        if label.startswith(prefix):
            return label[len(prefix):]
    return label


def noop_table(cells: list[dict]) -> str:
    """The oracle's FAIL rate on a no-op says where it is a test at its level: where the noise is a mixture (slow
    runs, slow starts) a z test on the bell-shaped σ FAILs no-op PRs, and its power there is no limit to be held to."""
    lines = [f"| noise ({_prs(cells)} PRs a cell, Wilson 95%) | design | false FAIL per no-op PR | WARN per no-op PR | "
             "scored runs a model, mean / max | oracle's false FAIL |", "|---|---|---|---|---|---|"]
    lines += [f"| {_label(c)} | {c['design']} | {rate(c, 'any_fail')} | {rate(c, 'any_warn')} | {_runs(c)} | "
              f"{rate(c, 'target_thr_oracle') if 'target_thr_oracle' in c['counts'] else '—'} |"
              for c in cells if "noop" in c["key"]]
    return "\n".join(lines)


def change_table(cells: list[dict]) -> str:
    lines = [f"| change ({_prs(cells)} PRs a cell, Wilson 95%) | design | FAIL | FAIL or WARN | oracle FAIL (knows σ) | "
             "gate / oracle | scored runs a model |", "|---|---|---|---|---|---|---|"]
    for c in cells:
        if "noop" in c["key"]:
            continue
        wer = "wer" in c["key"]
        fail = rate(c, "target_wer_fail" if wer else "target_thr_fail")
        either = rate(c, "target_wer_warn_or_fail" if wer else "target_thr_warn_or_fail")
        oracle = rate(c, "target_thr_oracle") if "target_thr_oracle" in c["counts"] and not wer else "—"
        share = oracle_share(c)
        share = f"{share:.3f}" if share is not None and not wer else "—"
        lines.append(f"| {c['label']} | {c['design']} | {fail} | {either} | {oracle} | {share} | {_runs(c)} |")
    return "\n".join(lines)


def _prs(cells: list[dict]) -> str:
    counts = sorted({c["prs"] for c in cells})
    return f"{counts[0]:,}" if len(counts) == 1 else f"{counts[0]:,}–{counts[-1]:,}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", type=Path, help="a verdict_power.json")
    parser.add_argument("--out", type=Path, help="the Markdown file to write (default: stdout)")
    args = parser.parse_args(argv)
    try:
        data = json.loads(args.results.read_text(encoding="utf-8"))
        cells = [c for c in data["scenarios"] if c["key"].startswith("m-")]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"{args.results}: expected a verdict_power.json written by benchmarks/verdict_power.py --out ({exc})",
              file=sys.stderr)
        return 2
    tables = noop_table(cells) + "\n\n" + change_table(cells)
    if args.out is None:
        print(tables)
        return 0
    head = (f"# The noise matrix: no-op PRs and changes\n\nWritten by `python benchmarks/matrix_tables.py {args.results.as_posix()} "
            f"--out {args.out.as_posix()}` from the cells whose key starts `m-`; what the cells are and how they were made: "
            "[docs/benchmarks.md](../../docs/benchmarks.md#the-verdict-under-gpu-noise-simulated).\n\n")
    args.out.write_text(head + tables + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
