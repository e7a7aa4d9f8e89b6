"""Rule ablation (issue 49): every rule of the verdict earns its place, measured on the noise matrix.

    python benchmarks/ablation.py --prs 200 --out benchmarks/results                 # every rule, in RULES' order
    python benchmarks/ablation.py --prs 200 --rules pattern_p,found_p --out /tmp/abl  # a few
    python benchmarks/ablation.py --list                                              # the rules and their switches

Each entry of RULES names one rule of the verdict (a reason, a trigger, an α split, a trim, a set-aside) or a MERGE
of constants, the named constants and functions it consists of, and how to switch it OFF for one simulation run:
the constants are monkeypatched in EVERY loaded module that holds them (`from x import NAME` copies included, found
by identity), functions are replaced by a version that never fires (an alias such as simulate's `slowmode_blocker`
included), and rule.family / rule.extension are wrapped to drop one WARN-at-least rule or one extension cause. Nothing
in gate/ changes: with no patch the run is the committed rule, bit for bit (the on-run is `benchmarks/
verdict_power.py --prs N --chunk N --seed S` on the same cells).

Every configuration judges the SAME simulated PRs as the on-run (the draws do not depend on the rules: each cell's
chunk is drawn once and judged by every configuration). Per cell it reports the no-op cells' FAIL and WARN (any row)
and the power cells' target FAIL (target WARN or FAIL for the intermittent cells), and says which moved beyond the
on-run's Wilson 95% interval; beside that the paired count of PRs whose outcome changed (a McNemar-style count on the
same draws, far more sensitive than two intervals) and the PRs in which ANY row verdict, extension or re-measure
changed (`touched`): a rule whose patch touches no PR in the cell where it is known to act (`sanity`) is reported as
a broken patch, never as "no effect".
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import verdict_power as vp  # noqa: E402
from power import noise as noise_module  # noqa: E402
from power import simulate  # noqa: E402

# --- the cells ------------------------------------------------------------------------------------------------------

# Speed-path cells (cheap: clean accuracy churn) and accuracy-path cells (hostile churn: about 3x the CPU a PR).
SPEED_CELLS = (
    "m-noop-s1-normal", "m-thr-3-s1-normal", "m-noop-s2-t3", "m-thr-5-s2-normal", "m-noop-slow6", "m-noop-slow15",
    "m-noop-drift", "m-thr-3-drift", "m-noop-slowstart-s2", "m-thr-5-slowstart-s1", "m-intermittent-third",
    "m-intermittent-p95", "m-noop-stale-unknown", "m-uncal-noop-s2", "m-noop-nested-h200", "m-cross-noop-s2",
    "m-runbook-noop-s2",
)
ACCURACY_CELLS = (
    "m-noop-s1-normal", "noop-hostile", "m-noop-comoving-hostile", "m-wer-15-comoving", "m-runbook-noop-hostile",
    "m-runbook-wer-15-thr-6", "m-noop-neutral-wer-hostile",
)
ALL_CELLS = tuple(dict.fromkeys(SPEED_CELLS + ACCURACY_CELLS))
DOMAIN_CELLS = {"speed": SPEED_CELLS, "accuracy": ACCURACY_CELLS, "both": ALL_CELLS}

OUT_FIELDS = ("any_fail", "any_warn", "target_thr_fail", "target_thr_warn_or_fail", "target_wer_fail",
              "target_wer_warn_or_fail")


def measures(key: str) -> list[tuple[str, str, int]]:
    """(label, Outcome field, direction) a cell is read on: +1 where up is worse (false alarms), -1 where down is
    worse (power)."""
    if key.startswith("m-intermittent"):
        return [("FAIL", "any_fail", 0), ("target WARN/FAIL", "target_thr_warn_or_fail", -1)]
    if "noop" in key:
        return [("FAIL", "any_fail", +1), ("WARN", "any_warn", +1)]
    target = "target_wer_fail" if "wer" in key else "target_thr_fail"
    out = [("target FAIL", target, -1), ("FAIL", "any_fail", 0)]
    if "wer" in key and "thr" in key:
        out.insert(1, ("target thr FAIL", "target_thr_fail", -1))
    return out


# --- patching -------------------------------------------------------------------------------------------------------

def _modules() -> list[Any]:
    return [m for n, m in list(sys.modules.items())
            if m is not None and (n == "gate" or n.startswith("gate.") or n.startswith("power") or n == "verdict_power"
                                  or n.startswith("benchmarks"))]


@dataclass
class Patch:
    """Replace `home.name` by `value` everywhere it is held: every loaded module attribute that IS the home object
    (same name for plain values, any name for functions, dicts and other objects, e.g. aliases)."""

    home: str
    name: str
    value: Any
    wrap: bool = False  # value is a function of the original: value(original) -> replacement
    only_home: bool = False  # patch the home module's attribute alone (a shared constant, one of its uses)

    def apply(self) -> list[tuple[Any, str, Any]]:
        module = sys.modules[self.home]
        original = getattr(module, self.name)
        new = self.value(original) if self.wrap else self.value
        by_identity = callable(original) or isinstance(original, (dict, list, tuple))
        done = []
        for m in ([module] if self.only_home else _modules()):
            for attr, held in list(vars(m).items()):
                if held is original and (attr == self.name or by_identity):
                    done.append((m, attr, held))
                    setattr(m, attr, new)
        if not done:
            raise RuntimeError(f"{self.home}.{self.name}: held nowhere")
        return done


def _clear_caches() -> None:
    import gate.stats.drift as drift
    import gate.stats.outliers as outliers

    outliers._CHI2_LOW.clear()
    drift._REMEMBERED.clear()


class patched:
    def __init__(self, patches: list[Patch]):
        self.patches, self.undo = patches, []

    def __enter__(self):
        for p in self.patches:
            self.undo += p.apply()
        _clear_caches()
        return self

    def __exit__(self, *exc):
        for m, attr, held in reversed(self.undo):
            setattr(m, attr, held)
        self.undo = []
        _clear_caches()


def _never(shape_from: int = 0, fill: Any = False, dtype: Any = bool) -> Callable:
    """A replacement for a batched predicate: an array shaped like the function's return, all `fill`."""
    def wrap(original: Callable) -> Callable:
        def never(*args: Any, **kwargs: Any) -> Any:
            out = np.asarray(original(*args, **kwargs))
            return np.full(out.shape, fill, dtype=dtype)
        return never
    return wrap


def _family_without(flag: str) -> Callable:
    def wrap(original: Callable) -> Callable:
        def family(*args: Any, **kwargs: Any) -> Any:
            kwargs[flag] = None
            return original(*args, **kwargs)
        return family
    return wrap


def _extension_without(position: int, fill: bool = False) -> Callable:
    """rule.extension(p, half, blind, unstable, failed, *, family) with argument `position` all `fill`."""
    def wrap(original: Callable) -> Callable:
        def extension(*args: Any, **kwargs: Any) -> Any:
            args = list(args)
            args[position] = np.full(np.shape(args[position]), fill, dtype=bool)
            return original(*args, **kwargs)
        return extension
    return wrap


def _own_runs_always_confirms(original: Callable) -> Callable:
    def own_runs_test(*args: Any, **kwargs: Any) -> Any:
        p, se, df = original(*args, **kwargs)
        return np.zeros(np.shape(p)), se, df
    return own_runs_test


def _sigma_itself(original: Callable) -> Callable:
    def flag_sigma(sigma: Any, df: Any) -> np.ndarray:
        return np.asarray(sigma, dtype=float)
    return flag_sigma


def _slow_start_none(original: Callable) -> Callable:
    def deepest_slow_start(depth: Any) -> np.ndarray:
        return np.full(np.shape(depth)[:-1], -1)
    return deepest_slow_start


def _no_remeasure(original: Callable) -> Callable:
    def run_to_remeasure(*args: Any, **kwargs: Any) -> Any:
        run, row = original(*args, **kwargs)
        return np.full(np.shape(run), -1), np.full(np.shape(row), -1)
    return run_to_remeasure


@dataclass
class Rule:
    name: str
    kind: str  # "rule" (switched off) or "merge" (constants set equal) or "value" (a looser value)
    what: str
    constants: str
    off: str  # what "off" means here
    patches: list[Patch]
    domain: str  # "speed", "accuracy", "both": the cells it runs on
    sanity: str  # a cell where the rule is known to act
    rules_hook: Callable[[simulate.Rules], simulate.Rules] | None = None
    removes: int = 0  # verdict-bearing named constants the change would remove
    gone: bool = False  # the constants it patches were since removed or merged in gate/ (issue 49); its results stay


S, OUT, SM, OD, Q, DR, LK, RU, FS = ("gate.stats.speed", "gate.stats.outliers", "gate.stats.slowmode",
                                      "gate.stats.overdispersion", "gate.stats.quality", "gate.stats.drift",
                                      "gate.stats.looks", "gate.judging.rule", "gate.judging.few_sessions")
INF = float("inf")

RULES: list[Rule] = [
    # --- the many small p-levels, σ multipliers and counts of the speed path --------------------------------------
    Rule("pattern_p", "rule", "a worse-run pattern at a final look must be unlikely on this host's wild-run share",
         "speed.PATTERN_P, speed.host_wild_share", "PATTERN_P = 1 (the host's share is never consulted)",
         [Patch(S, "PATTERN_P", 1.0)], "speed", "m-noop-slow6", removes=1, gone=True),  # now levels.STRONG_P
    Rule("unstable_min_runs", "rule", "unstable at a final look needs 2 worse runs, not 1",
         "speed.UNSTABLE_MIN_RUNS", "UNSTABLE_MIN_RUNS = 1", [Patch(S, "UNSTABLE_MIN_RUNS", 1)], "speed",
         "m-noop-s2-t3", removes=1),
    Rule("unstable_share", "rule", "unstable needs a third or more of the candidate's runs worse",
         "speed.UNSTABLE_SHARE_INV", "UNSTABLE_SHARE_INV = 10⁹ (any share)", [Patch(S, "UNSTABLE_SHARE_INV", 10 ** 9)],
         "speed", "m-noop-slow6", removes=1, gone=True),
    Rule("agreement_low_p", "rule", "a calibration far noisier than the A/B's runs is not pooled",
         "speed.AGREEMENT_LOW_P", "AGREEMENT_LOW_P = 0 (always pooled when the upper test agrees)",
         [Patch(S, "AGREEMENT_LOW_P", 0.0)], "speed", "m-noop-slowstart-s2", removes=1, gone=True),  # now levels.STRONG_P
    Rule("agreement_p", "rule", "a calibration the A/B's runs disagree with (F test) is not pooled",
         "speed.SCREEN_P (was AGREEMENT_P)", "SCREEN_P = 0 in gate.stats.speed (a fresh calibration is always pooled)",
         [Patch(S, "SCREEN_P", 0.0, only_home=True)], "speed", "m-noop-stale-unknown", removes=1),
    Rule("found_p", "rule", "drift / warm-up position terms taken out of σ where found",
         "drift.SCREEN_P (was FOUND_P; drift.TERMS)", "SCREEN_P = −1 in gate.stats.drift (the terms are never taken out)",
         [Patch(DR, "SCREEN_P", -1.0, only_home=True)],
         "speed", "m-thr-3-drift", removes=1),
    Rule("intermittent", "rule", "the intermittent split test (a gap > max(4σ, 3%) with a worse cluster): unstable",
         "speed.INTERMITTENT_SIGMAS, speed._intermittent", "_intermittent never fires",
         [Patch(S, "_intermittent", _never(), wrap=True)], "speed", "m-intermittent-p95", removes=1),
    Rule("split_cand", "rule", "a candidate arm split in two even clusters (split_arms): unstable",
         "outliers.split_arms", "split_arms never fires", [Patch(OUT, "split_arms", _never(), wrap=True)], "speed",
         "m-intermittent-p95", gone=True),  # removed by the third pass: it touched no PR, snapshot 0 differ
    Rule("slow_mode", "rule", "slow-mode server starts set aside in both arms before σ",
         "slowmode.SLOW_MODE_SIGMAS, slowmode.slow_mode_runs", "slow_mode_runs finds none",
         [Patch(SM, "slow_mode_runs", _never(), wrap=True)], "speed", "m-noop-slowstart-s2"),
    Rule("slow_start_remeasure", "rule", "the runner re-measures an arm's deepest slow-mode start",
         "slowmode.remeasure_depth, deepest_slow_start", "deepest_slow_start picks none",
         [Patch(SM, "deepest_slow_start", _slow_start_none, wrap=True)], "speed", "m-noop-slowstart-s2"),
    Rule("slow_fail_blocker", "rule", "whole-model-slower candidate runs (an escaped slow mode) bar a FAIL",
         "slowmode.whole_model_slower, fail_blocker, MIN_RUNS_TO_CHOOSE", "fail_blocker never bars",
         [Patch(SM, "fail_blocker", _never(), wrap=True)], "speed", "m-noop-slowstart-s2", removes=1),
    Rule("mixture_min_runs", "rule", "with < 4 candidate runs every run past the slow limit counts",
         "slowmode.MIXTURE_MIN_RUNS", "MIXTURE_MIN_RUNS = 0", [Patch(SM, "MIXTURE_MIN_RUNS", 0)], "speed",
         "m-thr-5-slowstart-s1", removes=1, gone=True),  # now outliers.MIN_RUNS_TO_CHOOSE
    Rule("outlier_set_aside", "rule", "runs beyond max(5σ, 3%) of their arm's median set aside (and σ trimmed)",
         "outlier_rule.OUTLIER_SIGMAS, OUTLIER_MIN_REL (in outliers)", "no run is ever flagged (limit ∞)",
         [Patch(OUT, "OUTLIER_SIGMAS", INF, only_home=True), Patch(OUT, "OUTLIER_MIN_REL", INF, only_home=True)], "speed", "m-noop-slow15"),
    Rule("outlier_remeasure", "rule", "the runner re-measures a run the outlier rule flags",
         "outliers.run_to_remeasure", "run_to_remeasure picks none",
         [Patch(OUT, "run_to_remeasure", _no_remeasure, wrap=True)], "speed", "m-noop-slow15"),
    Rule("remeasure_own_sigma", "rule", "the runner's re-measure judges a row of unknown σ (no usable calibration, or "
         "one known stale) against the arm's own σ, not the 3% alone (benchmarks/results/noop_level_diagnosis.md)",
         "outliers.own_sigma (in run_to_remeasure)", "own_sigma returns 0 (the 3% alone, the rule before)",
         [Patch(OUT, "own_sigma", _never(fill=0.0, dtype=float), wrap=True)], "speed", "m-uncal-noop-s2"),
    Rule("outlier_min_rel", "rule", "the outlier limit is never below 3%", "outlier_rule.OUTLIER_MIN_REL (in outliers)",
         "OUTLIER_MIN_REL = 0 in the outlier rule (5σ alone)", [Patch(OUT, "OUTLIER_MIN_REL", 0.0, only_home=True)], "speed",
         "m-noop-s1-normal"),
    Rule("flag_sigma", "rule", "runs judged against σ's one-sided 80% upper bound, not σ̂",
         "outliers.FLAG_SIGMA_QUANTILE, flag_sigma", "flag_sigma returns σ̂ itself",
         [Patch(OUT, "flag_sigma", _sigma_itself, wrap=True)], "speed", "m-noop-s2-t3", removes=1),
    Rule("min_runs_to_flag", "rule", "arms of fewer than 3 runs flag nothing", "outliers.MIN_RUNS_TO_FLAG",
         "MIN_RUNS_TO_FLAG = 0", [Patch(OUT, "MIN_RUNS_TO_FLAG", 0)], "speed", "m-noop-slowstart-s2", removes=1,
         gone=True),  # now noise_model.FEWEST_RUNS
    Rule("min_kept", "rule", "flagging never leaves an arm with fewer than 2 runs", "outliers.MIN_KEPT",
         "MIN_KEPT = 1", [Patch(OUT, "MIN_KEPT", 1)], "speed", "m-intermittent-p95", gone=True),  # now FEWEST_RUNS − 1
    Rule("min_runs_to_trim", "rule", "hand-made trees of < 4 runs an arm: σ untrimmed, no slow-mode starts",
         "outliers.MIN_RUNS_TO_TRIM, speed.trims", "MIN_RUNS_TO_TRIM = 0 (always trimmed)",
         [Patch(OUT, "MIN_RUNS_TO_TRIM", 0)], "speed", "m-runbook-noop-s2", removes=1, gone=True),  # now MIN_RUNS_TO_CHOOSE
    Rule("own_runs_confirm", "rule", "a speed FAIL must also hold on σ from the A/B's own runs alone",
         "speed.own_runs_test, Thresholds.own_runs_bonferroni", "own_runs_test always confirms (p 0)",
         [Patch(S, "own_runs_test", _own_runs_always_confirms, wrap=True)], "speed", "m-noop-stale-unknown"),
    Rule("unstable_warn", "rule", "an unstable speed row is WARN at least", "rule.family(unstable=)",
         "rule.family ignores `unstable`", [Patch(RU, "family", _family_without("unstable"), wrap=True)], "speed",
         "m-intermittent-third"),
    Rule("unstable_extends", "rule", "an unstable first look extends the model", "rule.extension(unstable)",
         "the unstable cause never extends", [Patch(RU, "extension", _extension_without(3), wrap=True)], "speed",
         "m-intermittent-third"),
    # --- triggers and α of both families ----------------------------------------------------------------------------
    Rule("blind_extends", "rule", "a blind first look (MDE > 3× floor) extends the model",
         "speed.SENSITIVITY_FACTOR, speed.POWER", "SENSITIVITY_FACTOR = ∞ (never blind)",
         [Patch(S, "SENSITIVITY_FACTOR", INF)], "both", "m-thr-5-s2-normal", removes=2),
    Rule("near_floor_extends", "rule", "a first look near the floor (BH q ≤ EXTEND_Q, half the floor) extends",
         "looks.EXTEND_Q, floors.WARN_SHARE", "EXTEND_Q = 0 for both families (never near)",
         [Patch(LK, "EXTEND_Q", 0.0)], "both", "m-thr-3-s1-normal", removes=3),
    Rule("extend_floor_share", "rule", "near the floor needs half the floor, not only a small q",
         "floors.WARN_SHARE (was looks.EXTEND_FLOOR_SHARE)", "the half-floor condition is always met",
         [Patch(RU, "extension", _extension_without(1, True), wrap=True)], "both", "m-noop-s1-normal", removes=1),
    Rule("catastrophic_warn", "rule", "a newly catastrophic utterance is WARN at least",
         "quality.CATASTROPHIC_RATE, CATASTROPHIC_MIN_JUMP",
         "rule.family ignores `catastrophic`", [Patch(RU, "family", _family_without("catastrophic"), wrap=True)],
         "accuracy", "noop-hostile", removes=3),
    Rule("catastrophic_min_jump", "rule", "a newly catastrophic utterance must jump ≥ 2 errors",
         "quality.CATASTROPHIC_MIN_JUMP", "CATASTROPHIC_MIN_JUMP = 0", [Patch(Q, "CATASTROPHIC_MIN_JUMP", 0)],
         "accuracy", "noop-hostile", removes=1),
    Rule("catastrophic_jump_share", "rule", "... and ≥ a quarter of the reference",
         "quality.CATASTROPHIC_MIN_JUMP_SHARE", "CATASTROPHIC_MIN_JUMP_SHARE = 0",
         [Patch(Q, "CATASTROPHIC_MIN_JUMP_SHARE", 0.0)], "accuracy", "noop-hostile", removes=1, gone=True),
    Rule("comoving_set_aside", "rule", "utterances co-moving in the A/A runs are set aside (and their own row)",
         "overdispersion.COMOVE_MIN_CORR, noise_model.FEWEST_RUNS, comoving", "comoving finds none",
         [Patch(OD, "comoving", _never(), wrap=True)], "accuracy", "m-wer-15-comoving", removes=2),
    Rule("comove_max_share", "rule", "a group over a fifth of the set is not set aside",
         "overdispersion.COMOVE_MAX_SHARE", "COMOVE_MAX_SHARE = 1", [Patch(OD, "COMOVE_MAX_SHARE", 1.0)], "accuracy",
         "m-noop-comoving-hostile", removes=1, gone=True),
    Rule("comove_min_arms", "rule", "a co-moving utterance changed within ≥ 3 arms", "overdispersion.COMOVE_MIN_ARMS",
         "COMOVE_MIN_ARMS = 1", [Patch(OD, "COMOVE_MIN_ARMS", 1)], "accuracy", "m-noop-comoving-hostile", removes=1,
         gone=True),  # now noise_model.FEWEST_RUNS
    Rule("comove_min_group", "rule", "a group needs ≥ 5 utterances", "overdispersion.COMOVE_MIN_GROUP",
         "COMOVE_MIN_GROUP = 2", [Patch(OD, "COMOVE_MIN_GROUP", 2)], "accuracy", "m-noop-comoving-hostile",
         removes=1, gone=True),
    Rule("removals_joint", "rule", "the three removals applied, together: no group size or share limit on co-moving "
         "utterances (COMOVE_MIN_ARMS kept: without it the quickstart's calibration names spurious groups), no "
         "reference share in the catastrophic jump",
         "COMOVE_MIN_GROUP, COMOVE_MAX_SHARE, CATASTROPHIC_MIN_JUMP_SHARE",
         "MIN_GROUP = 2, MAX_SHARE < 1 (the whole set never), JUMP_SHARE = 0",
         [Patch(OD, "COMOVE_MIN_GROUP", 2), Patch(OD, "COMOVE_MAX_SHARE", 1.0 - 1e-9),
          Patch(Q, "CATASTROPHIC_MIN_JUMP_SHARE", 0.0)], "accuracy", "m-noop-comoving-hostile", removes=3, gone=True),
    Rule("comove_min_corr", "value", "co-moving at correlation ≥ 0.8", "overdispersion.COMOVE_MIN_CORR",
         "COMOVE_MIN_CORR = 0.6 (looser)", [Patch(OD, "COMOVE_MIN_CORR", 0.6)], "accuracy", "m-noop-comoving-hostile"),
    Rule("run_level_p", "rule", "the hidden-group bound where the model's own runs churn together",
         "overdispersion.RUN_LEVEL_P, hidden_split_p", "RUN_LEVEL_P = −1 (never seen)",
         [Patch(OD, "RUN_LEVEL_P", -1.0)], "accuracy", "m-runbook-noop-hostile", removes=1),
    Rule("own_min_df", "rule", "a row on its own runs may FAIL from 4 df", "overdispersion.OWN_MIN_DF",
         "OWN_MIN_DF = 0", [Patch(OD, "OWN_MIN_DF", 0)], "accuracy", "m-runbook-noop-hostile", removes=1),  # OWN_MIN_DF = 2·(FEWEST_RUNS − 1)
    Rule("few_sessions", "rule", "the few-session FAIL on sets of ≤ 30 units", "few_sessions.RULE",
         "fires never", [Patch(FS, "fires", _never(), wrap=True)], "accuracy", "noop-hostile"),
    # --- merges: fewer constants, the same rules ---------------------------------------------------------------------
    Rule("one_sigma_4", "merge", "one σ multiplier: outlier 5 → 4, slow mode 3 → 4, intermittent 4",
         "OUTLIER_SIGMAS, SLOW_MODE_SIGMAS, INTERMITTENT_SIGMAS", "all = 4",
         [Patch(OUT, "OUTLIER_SIGMAS", 4.0), Patch(SM, "SLOW_MODE_SIGMAS", 4.0), Patch(S, "INTERMITTENT_SIGMAS", 4.0)],
         "speed", "m-noop-slowstart-s2", removes=2),
    Rule("one_sigma_5", "merge", "one σ multiplier: outlier 5, slow mode 3 → 5, intermittent 4 → 5",
         "OUTLIER_SIGMAS, SLOW_MODE_SIGMAS, INTERMITTENT_SIGMAS", "all = 5",
         [Patch(OUT, "OUTLIER_SIGMAS", 5.0), Patch(SM, "SLOW_MODE_SIGMAS", 5.0), Patch(S, "INTERMITTENT_SIGMAS", 5.0)],
         "speed", "m-noop-slowstart-s2", removes=2),
    Rule("one_diag_p", "merge", "one diagnostic p = 0.05 for AGREEMENT_P, FOUND_P, RUN_LEVEL_P, PATTERN_P",
         "AGREEMENT_P 0.05, FOUND_P 0.05, RUN_LEVEL_P 0.2, PATTERN_P 0.001", "all = 0.05",
         [Patch(S, "AGREEMENT_P", 0.05), Patch(DR, "FOUND_P", 0.05), Patch(OD, "RUN_LEVEL_P", 0.05),
          Patch(S, "PATTERN_P", 0.05)], "both", "m-noop-slow6", removes=3, gone=True),
    Rule("run_level_at_screen_p", "merge", "RUN_LEVEL_P = SCREEN_P (0.05): the hidden-group screen at the level of the "
         "other screens (AGREEMENT_P and FOUND_P are SCREEN_P since issue 49; PATTERN_P must stay at 0.001: one_diag_p)",
         "overdispersion.RUN_LEVEL_P 0.2, levels.SCREEN_P 0.05", "RUN_LEVEL_P = 0.05",
         [Patch(OD, "RUN_LEVEL_P", 0.05)], "accuracy", "m-runbook-noop-hostile", removes=1),
    Rule("extend_q_one_012", "merge", "one EXTEND_Q = 0.12 for both families", "looks.EXTEND_Q",
         "quality 0.1 → 0.12", [Patch(LK, "EXTEND_Q", {"speed": 0.12, "quality": 0.12})], "both",
         "m-wer-15-comoving", removes=1, gone=True),
    Rule("extend_q_one_010", "merge", "one EXTEND_Q = 0.1 for both families", "looks.EXTEND_Q",
         "speed 0.12 → 0.1", [Patch(LK, "EXTEND_Q", 0.1)], "both", "m-thr-3-s1-normal", removes=1),
    Rule("alpha_even_split", "merge", "α₁ = α₂ = 0.0008 (the two looks' 0.0016 split evenly, written once)",
         "looks.FIRST_ALPHA, POOLED_ALPHA", "0.0001 / 0.0015 → 0.0008 / 0.0008",
         [Patch(LK, "FIRST_ALPHA", 0.0008), Patch(LK, "POOLED_ALPHA", 0.0008),
          # the simulator's looks' Thresholds were made from the α's at import: they are patched as well
          *[Patch("power.simulate", look, dataclasses.replace(t, alpha=0.0008, quality_alpha=0.0008), only_home=True)
            for look, t in (("FIRST", simulate.FIRST), ("POOLED", simulate.POOLED))]], "both", "m-thr-3-s1-normal",
         removes=1),
    Rule("one_warn_q", "merge", "one WARN q = 0.005 for both families", "Thresholds.warn_q, speed_warn_q",
         "accuracy warn_q 0.01 → 0.005", [], "both", "noop-hostile",
         rules_hook=lambda r: dataclasses.replace(r, warn_q=r.speed_warn_q), removes=1),
    # The issue's "α of the whole PR's speed family": each look's speed α split over the PR's four models
    # (Bonferroni), or over two; accuracy keeps its own. The looks' Thresholds are the simulator's FIRST and POOLED.
    *[Rule(f"speed_alpha_over_{k}", "value", f"each look's speed α ÷ {k}: the PR's speed family, not each model's",
           "looks.FIRST_ALPHA, POOLED_ALPHA (speed)", f"α₁, α₂ ÷ {k} for speed rows",
           [Patch("power.simulate", look, dataclasses.replace(t, alpha=t.alpha / k), only_home=True)
            for look, t in (("FIRST", simulate.FIRST), ("POOLED", simulate.POOLED))], "speed", "m-thr-5-s2-normal")
      for k in (2, 4)],
]
BY_NAME = {r.name: r for r in RULES}


# --- running --------------------------------------------------------------------------------------------------------

def signature(out: simulate.Outcome) -> np.ndarray:
    """(B, k) everything a PR's judgement says: row verdicts at both looks, extensions, scored runs."""
    parts = [np.stack([np.asarray(v) for v in out.rows_first.values()], 1)]
    if out.rows_pooled:
        parts.append(np.stack([np.asarray(v) for v in out.rows_pooled.values()], 1))
    parts += [out.extended.astype(int), out.runs_per_model.astype(int)]
    return np.concatenate(parts, 1)


def judge(chunk, test_sets, rule: Rule | None) -> tuple[dict, np.ndarray, float]:
    rules = simulate.Rules.from_gate()
    started = time.process_time()
    if rule is None:
        out = simulate.judge(chunk, test_sets, rules)
    else:
        with patched(rule.patches):
            rules = simulate.Rules.from_gate()  # the α and q read under the patch
            if rule.rules_hook:
                rules = rule.rules_hook(rules)
            out = simulate.judge(chunk, test_sets, rules)
    cpu = time.process_time() - started
    fields = {f: np.asarray(getattr(out, f), dtype=bool) for f in OUT_FIELDS}
    fields["runs"] = out.runs_per_model.mean(axis=1)
    return fields, signature(out), cpu


def run(rule_names: list[str], prs: int, seed: int, out_dir: Path | None, log: Any = print,
        cells: list[str] | None = None) -> dict:
    """Rule by rule (in the order given), cell by cell: each cell drawn afresh from its fixed seed (the draws do not
    depend on the rules) and judged with the rule off; the on-run (committed rule) of a cell is judged once, on the
    same draws, and remembered. `cells`: these cells instead of the rule's domain's (a closer look where 120 PRs
    left the call open)."""
    test_sets = noise_module.draw_test_sets(seed)
    scenarios = {s.key: s for s in vp.all_scenarios()}
    chosen = [BY_NAME[n] for n in rule_names]
    gone = [r.name for r in chosen if r.gone]
    if gone:
        raise SystemExit(f"{', '.join(gone)}: its constants were removed or merged in gate/ (issue 49); run it from the "
                         "commit before that")
    result: dict = {"prs": prs, "seed": seed, "cells": {}, "rules": {r.name: {} for r in chosen}, "cpu": {},
                    "order": rule_names}
    on_cache: dict = {}
    for rule in chosen:
        for cell in cells or DOMAIN_CELLS[rule.domain]:
            rng = np.random.default_rng([seed, vp._key_seed(cell), 0])  # verdict_power's chunk 0 of --chunk prs
            started = time.process_time()
            chunk = simulate.draw_chunk(rng, scenarios[cell], test_sets, prs, simulate.Rules.from_gate().pairs)
            draw_cpu = time.process_time() - started
            if cell not in on_cache:
                on, on_sig, on_cpu = judge(chunk, test_sets, None)
                on_cache[cell] = (on, on_sig)
                result["cells"][cell] = {"counts": {f: int(v.sum()) for f, v in on.items() if f != "runs"},
                                         "runs": float(on["runs"].mean()), "cpu_draw": draw_cpu, "cpu_on": on_cpu}
                log(f"{cell}: on judged in {on_cpu:.1f} s CPU (draw {draw_cpu:.1f} s)")
            on, on_sig = on_cache[cell]
            off, off_sig, cpu = judge(chunk, test_sets, rule)
            touched = (off_sig != on_sig).any(axis=1)
            entry = {"counts": {f: int(v.sum()) for f, v in off.items() if f != "runs"},
                     "runs": float(off["runs"].mean()), "touched": int(touched.sum()), "cpu": cpu + draw_cpu,
                     "flips": {f: [int((off[f] & ~on[f]).sum()), int((~off[f] & on[f]).sum())] for f in OUT_FIELDS}}
            result["rules"][rule.name][cell] = entry
            result["cpu"][rule.name] = result["cpu"].get(rule.name, 0.0) + cpu + draw_cpu
            log(f"  {rule.name} {cell}: touched {entry['touched']}/{prs} PRs, {cpu:.1f} s CPU")
        sanity, call = verdict(result, rule)
        log(f"== {rule.name}: {call} | {sanity}")
        if out_dir is not None:
            write(result, out_dir)
    return result


# --- reading --------------------------------------------------------------------------------------------------------

def moved(result: dict, name: str) -> list[dict]:
    """Per cell and measure of this rule: the on and off rates, whether off left the on-run's Wilson 95% interval, the
    paired flips, and whether the move is harmful (more false alarms, less power)."""
    prs = result["prs"]
    rows = []
    for cell, entry in result["rules"][name].items():
        on = result["cells"][cell]
        for label, f, direction in measures(cell):
            k_on, k_off = on["counts"][f], entry["counts"][f]
            _, lo, hi = vp.wilson(k_on, prs)
            rate_off = k_off / prs
            beyond = rate_off < lo or rate_off > hi
            up, down = entry["flips"][f]
            rows.append({"cell": cell, "measure": label, "on": k_on / prs, "lo": lo, "hi": hi, "off": rate_off,
                         "beyond": beyond, "flips_up": up, "flips_down": down, "touched": entry["touched"],
                         "harm": (rate_off - k_on / prs) * direction if direction else 0.0})
    return rows


def verdict(result: dict, rule: Rule) -> tuple[str, str]:
    """(sanity, verdict) from the table: keep where removing the rule moved a cell beyond its interval."""
    entries = result["rules"].get(rule.name, {})
    if not entries:
        return "not run", "—"
    cells_run = set(entries)
    sanity_cell = rule.sanity if rule.sanity in cells_run else next(iter(cells_run))
    touched_total = sum(e["touched"] for e in entries.values())
    if touched_total == 0:
        sanity = f"NO PR TOUCHED in {len(entries)} cells: patch reached nothing, or the rule never acts here"
    elif entries[sanity_cell]["touched"] == 0:
        sanity = f"touched {touched_total} PRs, none in {sanity_cell}"
    else:
        sanity = f"acts: {entries[sanity_cell]['touched']} PRs touched in {sanity_cell} ({touched_total} in all)"
    rows = [r for r in moved(result, rule.name) if r["beyond"]]
    harmful = [r for r in rows if r["harm"] > 0]
    if touched_total == 0:
        call = "no effect measured (see sanity)"
    elif not rows:
        call = ("no cell moved: remove" if rule.kind == "rule" else "no cell moved: merge holds" if rule.kind == "merge"
                else "no cell moved: value not critical")
    elif not harmful:
        call = "cells moved, none for the worse: " + ("remove" if rule.kind == "rule" else "merge holds")
    else:
        call = "keep" if rule.kind == "rule" else "merge fails" if rule.kind == "merge" else "value matters"
    if len(entries) < len(DOMAIN_CELLS[rule.domain]):
        call += f" (partial: {len(entries)} of {len(DOMAIN_CELLS[rule.domain])} cells)"
    return sanity, call


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def markdown(result: dict) -> str:
    prs = result["prs"]
    lines = [f"PRs per cell: {prs}, seed {result['seed']}; the same draws judged with the rule on (committed) and off. "
             "A move is the off-rate outside the on-run's Wilson 95% interval; `flips` are the paired PRs "
             "(+ off only / − on only) on the same draws; `touched`: PRs with any row verdict, extension or "
             "scored-run count changed.", "",
             "| rule | kind | off means | constants | sanity | cells moved beyond the on-interval (on → off) | "
             "verdict | CPU s |", "|---|---|---|---|---|---|---|---|"]
    for rule in RULES:
        if rule.name not in result["rules"] or not result["rules"][rule.name]:
            continue
        sanity, call = verdict(result, rule)
        rows = [r for r in moved(result, rule.name) if r["beyond"]]
        text = "; ".join(f"{r['cell']} {r['measure']} {_pct(r['on'])} → {_pct(r['off'])} "
                         f"({'worse' if r['harm'] > 0 else 'better' if r['harm'] < 0 else 'moved'}, "
                         f"+{r['flips_up']}/−{r['flips_down']})" for r in rows) or "no cell moved"
        lines.append(f"| `{rule.name}` | {rule.kind} | {rule.off} | {rule.constants} | {sanity} | {text} | {call} | "
                     f"{result['cpu'].get(rule.name, 0):.0f} |")
    lines += ["", "Per rule, every measure with a paired change (cell: measure on → off, flips):", ""]
    for rule in RULES:
        if rule.name not in result["rules"] or not result["rules"][rule.name]:
            continue
        rows = [r for r in moved(result, rule.name) if r["flips_up"] or r["flips_down"]]
        body = "; ".join(f"{r['cell']} {r['measure']} {_pct(r['on'])}→{_pct(r['off'])} (+{r['flips_up']}/−"
                         f"{r['flips_down']}){' **beyond**' if r['beyond'] else ''}" for r in rows) or "none"
        touched = ", ".join(f"{c} {e['touched']}" for c, e in result["rules"][rule.name].items() if e["touched"])
        lines.append(f"- `{rule.name}`: {body}. Touched: {touched or 'none'}.")
    lines += ["", "On-run (committed rule) per cell:", "", "| cell | measures | scored runs / model | CPU s |",
              "|---|---|---|---|"]
    for cell, on in result["cells"].items():
        ms = "; ".join(f"{label} {_pct(on['counts'][f] / prs)}" for label, f, _ in measures(cell))
        lines.append(f"| {cell} | {ms} | {on['runs']:.2f} | {on['cpu_on']:.1f} |")
    return "\n".join(lines) + "\n"


def write(result: dict, out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "ablation.json").write_text(json.dumps(result, indent=1), encoding="utf-8")
    (out_dir / "ablation-table.md").write_text("# Rule ablation (benchmarks/ablation.py)\n\n" + markdown(result),
                                               encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prs", type=int, default=200)
    parser.add_argument("--seed", type=int, default=4949)
    parser.add_argument("--rules", default="", help="comma-separated rule names (default: all, in RULES' order)")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--cells", default="", help="comma-separated cells (default: each rule's domain's)")
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args(argv)
    if args.list:
        for r in RULES:
            print(f"{r.name:24} {r.kind:6} {r.domain:8} off: {r.off}  [{r.constants}]{'  (constants since removed or merged)' if r.gone else ''}")
        return 0
    names = args.rules.split(",") if args.rules else [r.name for r in RULES]
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        parser.error(f"unknown rule {unknown[0]!r}")
    cells = args.cells.split(",") if args.cells else None
    strange = [c for c in cells or () if c not in {s.key for s in vp.all_scenarios()}]
    if strange:
        parser.error(f"unknown cell {strange[0]!r}")
    started, cpu = time.perf_counter(), time.process_time()
    result = run(names, args.prs, args.seed, args.out, log=lambda s: print(s, flush=True), cells=cells)
    result["wall_s"], result["cpu_s"] = time.perf_counter() - started, time.process_time() - cpu
    if args.out:
        write(result, args.out)
    print(markdown(result))
    print(f"wall {result['wall_s']:.0f} s, CPU {result['cpu_s']:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
