"""Turn tallies into the markdown table, the power-vs-effect PNG and the headline line.

Rates carry 95% Wilson intervals (scipy.stats.binomtest(...).proportion_ci(method="wilson")).
A/A rows report the false-FAIL rate per no-op PR over all gated rows together; every other row reports power:
the share of replicates in which a target row of the scenario was flagged.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from scipy import stats

from power.experiment import Results, Tally

GATE = "gate"  # judge keys the headline looks for
ORACLE = "oracle"
WARN_SUFFIX = "+warn"  # a derived column: the gate's WARN or FAIL


@dataclass(frozen=True)
class Rate:
    k: int
    n: int

    @property
    def value(self) -> float:
        return self.k / self.n if self.n else float("nan")

    @property
    def ci(self) -> tuple[float, float]:
        if not self.n:
            return float("nan"), float("nan")
        interval = stats.binomtest(self.k, self.n).proportion_ci(confidence_level=0.95, method="wilson")
        return float(interval.low), float(interval.high)

    def cell(self) -> str:
        low, high = self.ci
        return f"{100 * self.value:.1f} ({100 * low:.1f}-{100 * high:.1f})"


def rate(tally: Tally, null: bool, warn: bool = False) -> Rate:
    if null:
        return Rate(tally.any_warn_or_fail if warn else tally.any_fail, tally.replicates)
    return Rate(tally.target_warn_or_fail if warn else tally.target_fail, tally.replicates)


def columns(results: Results) -> list[tuple[str, str, bool]]:
    """(header, judge key, warn level) per column; the gate gets a second, WARN-or-FAIL column."""
    cols = []
    for key in results.judges:
        cols.append((results.labels[key], key, False))
        if key.startswith(GATE):
            cols.append((results.labels[key] + " WARN or FAIL", key, True))
    return cols


def markdown_table(results: Results) -> str:
    cols = columns(results)
    header = "| Scenario | " + " | ".join(h for h, _, _ in cols) + " |"
    lines = [header, "|" + "---|" * (len(cols) + 1)]
    for scenario in results.scenarios:
        cells = [rate(results.tally(scenario.key, key), scenario.is_null, warn).cell() for _, key, warn in cols]
        name = f"**{scenario.label}**: false FAIL per PR" if scenario.is_null else scenario.label
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def alternatives_table(results: Results) -> str:
    """Design alternatives of the gate next to the shipped gate and the oracle, on the goal scenarios.
    Empty when none ran. Ends with a blank line so that the headline stays the last line."""
    if not results.alternatives:
        return ""
    scenarios = [s for s in results.scenarios if any(results.has(s.key, j) for j in results.alternatives)]
    judges = [j for j in (GATE, ORACLE) if j in results.judges] + list(results.alternatives)
    header = "| Design | " + " | ".join(
        (f"{s.label}: false FAIL per PR" if s.is_null else f"{s.label}: FAIL \\| WARN or FAIL") for s in scenarios) + " |"
    lines = ["Design alternatives (what each goal costs; same pairs, same A/A calibration):", "", header,
             "|" + "---|" * (len(scenarios) + 1)]
    for judge in judges:
        cells = []
        for s in scenarios:
            if not results.has(s.key, judge):
                cells.append("-")
                continue
            tally = results.tally(s.key, judge)
            fail = rate(tally, s.is_null).cell()
            cells.append(fail if s.is_null else f"{fail} \\| {rate(tally, False, warn=True).cell()}")
        lines.append(f"| {results.labels[judge]} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n\n"


def headline(results: Results) -> str:
    keys = {s.key for s in results.scenarios}

    def get(scenario: str, judge: str, warn: bool = False) -> str:
        if scenario not in keys or judge not in results.judges:
            return "n/a"
        s = next(x for x in results.scenarios if x.key == scenario)
        r = rate(results.tally(scenario, judge), s.is_null, warn)
        low, high = r.ci
        return f"{100 * r.value:.1f}% (95% CI {100 * low:.1f}-{100 * high:.1f})"

    def n(scenario: str) -> int:
        return results.tally(scenario, GATE).replicates if results.has(scenario, GATE) else 0

    return (f"Gate (calibrated), {results.rows} gated rows, {n('aa')} A/A and {n('thr-3')} replicates per "
            f"effect scenario: "
            f"false FAIL per no-op PR {get('aa', GATE)} [goal <= 1%] (WARN, i.e. a confirmation rerun: "
            f"{get('aa', GATE, warn=True)}); "
            f"power for throughput -3% at sigma_run 1% with 3+3 runs: FAIL {get('thr-3', GATE)}, WARN or FAIL "
            f"{get('thr-3', GATE, warn=True)}, vs oracle z-test at the same family alpha {get('thr-3', ORACLE)} "
            f"[goal >= 80%, within 10 pp]; power for +0.15 pp diffuse WER on SeedTTS EN: FAIL {get('wer+0.15', GATE)}, "
            f"WARN or FAIL {get('wer+0.15', GATE, warn=True)} [goal >= 90%].")


# One colour per judge; a judge's WARN-or-FAIL curve shares it, dashed.
COLOURS = {"gate": "tab:blue", "gate_uncal": "tab:green", "oracle": "black", "oracle_floor": "tab:gray",
           "maintainers": "tab:red", "welch": "tab:purple", "asv": "tab:olive", "codspeed": "tab:cyan",
           "gab": "tab:brown", "sglang_ci": "tab:orange"}


def plot(results: Results, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [("throughput", "Throughput drop (%), qwen3 EN, sigma_run 1%", "throughput drop (%)"),
              ("p95", "p95 latency increase (%), qwen3 EN", "p95 increase (%)"),
              ("accuracy", "Diffuse WER increase, SeedTTS EN (qwen3)", "WER increase (pp)"),
              ("sigma", "3% throughput drop vs run-to-run noise", "sigma_run (%)")]
    fig, axes = plt.subplots(2, 2, figsize=(12, 9.5), sharey=True)
    cols = columns(results)
    markers = "os^vD<>phX*P"
    for ax, (family, title, xlabel) in zip(axes.flat, panels):
        chosen = [s for s in results.scenarios if s.family == family]
        if family == "sigma":  # the sigma 1% point is the main throughput curve's -3%
            chosen += [s for s in results.scenarios if s.key == "thr-3"]
        xs_of = {s.key: (1.0 if s.key == "thr-3" and family == "sigma" else s.size) for s in chosen}
        chosen.sort(key=lambda s: xs_of[s.key])
        if not chosen:
            ax.set_visible(False)
            continue
        for index, (header, key, warn) in enumerate(cols):
            rates = [rate(results.tally(s.key, key), False, warn) for s in chosen]
            xs = [xs_of[s.key] for s in chosen]
            ys = [100 * r.value for r in rates]
            err = [[100 * (r.value - r.ci[0]) for r in rates], [100 * (r.ci[1] - r.value) for r in rates]]
            main = key in (GATE, ORACLE)
            ax.errorbar(xs, ys, yerr=err, marker=markers[index % len(markers)], linestyle="--" if warn else "-",
                        linewidth=2.6 if main else 1.2, markersize=6 if main else 4, capsize=2,
                        color=COLOURS.get(key), label=header, zorder=3 if main else 2)
        ax.axhline(80, color="0.6", linewidth=0.8, linestyle=":")
        ax.set_title(title, fontsize=10)
        ax.set_xlabel(xlabel)
        ax.grid(alpha=0.3)
        ax.set_ylim(-3, 103)
    for ax in axes[:, 0]:
        ax.set_ylabel("detection power (%)")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=8.5)
    fig.suptitle("Detection power vs effect size (95% Wilson CI); dotted line: 80%", fontsize=11)
    fig.tight_layout(rect=(0, 0.1, 1, 0.97))
    fig.savefig(path, dpi=100)
    plt.close(fig)


def counts(results: Results, meta: dict | None = None) -> dict:
    """The raw tallies, for anyone who wants other cuts."""
    return {
        **(meta or {}),
        "rows": results.rows,
        "judges": {key: results.labels[key] for key in results.judges},
        "scenarios": [
            {"key": s.key, "label": s.label, "targets": [list(t) for t in s.targets],
             "tallies": {key: vars(results.tally(s.key, key)) for key in results.judges}}
            for s in results.scenarios
        ],
    }


def equivalence_line(checks) -> str:
    """One paragraph: did trees and baseline files give identical rows? (Ends with a blank line.)"""
    same = sum(c.identical for c in checks)
    detail = "; ".join(f"seed {c.seed} {c.scenario}: {c.rows} rows, verdict {c.verdict}"
                       + ("" if c.identical else f", DIFFERENT: {c.differences[0]}") for c in checks)
    return (f"Tree equivalence: {same}/{len(checks)} full result-tree comparisons gave identical rows (verdict, "
            f"p-value, delta) when judged as trees and as the baseline files written from them ({detail}).\n\n")
