"""One judge: the four entry points that turn trees into a verdict agree on the same trees.

`gate compare` by hand, the trusted `gate post --trees`, the runner's look decision (`gate run --ab`'s
decider) and the trusted plan recompute (`judge.first_look`) all go through gate/judging/judge.py; on an A/B
pair with the runner's own gate-run.json the two reports are byte-identical and the decisions match the
looks the report records (docs/design.md §One judge).
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from gate.cli import cli
from gate.formats import runlog
from gate.formats.config import load_suite
from gate.judging import judge
from gate.judging.look_decider import tree_decider
from gate.stats import looks as rule
from tests.helpers.runs import copy_run
from tests.helpers.shared_trees import quick_start_trees

SUITE = load_suite()
MODELS = ("qwen3", "whisper")


def _ab_log(side: str, models: tuple[str, ...]) -> dict:
    """The gate-run.json `gate run --ab` leaves in each side's tree after a first look that decided every model."""
    runs = {f"{s}/run{r}": "completed" for r in ("warm", "1", "2", "3") for s in ("base", "candidate")}
    made = {s: {m: ["run1", "run2", "run3"] for m in models} for s in ("base", "candidate")}
    log = runlog.skeleton({"base": "/checkouts/base", "candidate": "/checkouts/pr"}, runs, status="completed",
                          started="2026-12-01T02:00:00.000+00:00", scored_runs=made)
    log["plan"] = {"first_look": list(runs), "possible_extension": [], "decider": "decide / decide_pooled",
                   "one_look_because": None, "max_runs_per_model": 14, "outlier_rule": "stats.outliers"}
    log["looks"], log["remeasured"] = {}, []
    log["exit_code"], log["ended"] = 0, "2026-12-01T03:00:00.000+00:00"
    runlog.decode(log, side)  # what the runner writes is what the reader reads
    return log


@pytest.fixture(scope="module")
def ab_trees(tmp_path_factory) -> Path:
    """trees/base and trees/candidate: the example pair, laid out as a benchmark job uploads an A/B run."""
    root = tmp_path_factory.mktemp("one-judge")
    made = quick_start_trees(tmp_path_factory, root / "made")
    base, candidate = made / "baseline", made / "candidate"
    trees = root / "trees"
    for name, tree in (("base", base), ("candidate", candidate)):
        shutil.copytree(tree, trees / name, ignore=shutil.ignore_patterns(".gate-cache", "gate-run.json"))
        (trees / name / "gate-run.json").write_text(json.dumps(_ab_log(name, tuple(SUITE.models))), encoding="utf-8")
    _add_the_second_looks(trees)
    return trees


def _add_the_second_looks(trees: Path) -> None:
    """What `gate run --ab` does for a model its first look leaves undecided: 3+3 more runs of that model
    (here its first three measured again), recorded in the run log."""
    request = judge.Request(base=trees / "base", candidate=trees / "candidate", suite=SUITE,
                            design=judge.Design.TWO_LOOKS)
    extended = {m: judge.first_look(request, m).expected for m in SUITE.models}
    for name in ("base", "candidate"):
        log = json.loads((trees / name / "gate-run.json").read_text(encoding="utf-8"))
        for model, expected in extended.items():
            for run in expected[3:]:
                source, target = trees / name / f"run{int(run[3:]) - 3}", trees / name / run
                copy_run(source / model, target / model)  # measured again: not a copy (gate.reading.copies)
                for record in ("commit.txt", "freeze.txt", "env.json"):
                    if (source / record).is_file() and not (target / record).exists():
                        shutil.copy(source / record, target / record)
                log["runs"][f"{name}/{run}"] = "completed"
            log["scored_runs"][name][model] = list(expected)
        (trees / name / "gate-run.json").write_text(json.dumps(log), encoding="utf-8")


def _compare(trees: Path, model: str, out: Path) -> bytes:
    result = CliRunner().invoke(cli, ["compare", str(trees / "base"), str(trees / "candidate"), "--models", model,
                                      "--json", str(out), "--format", "none", "--no-cache"])
    assert result.exit_code in (0, 1), result.output
    return out.read_bytes()


def _post(trees: Path, model: str, out: Path) -> bytes:
    result = CliRunner().invoke(cli, ["post", "--trees", str(trees), "--model", model, "--dry-run", "--json", str(out)])
    assert result.exit_code == 0, result.output
    return out.read_bytes()


@pytest.mark.slow  # four entry points on the A/B trees, with second looks: ~60 s CPU
@pytest.mark.parametrize("model", MODELS)
def test_every_entry_point_gives_the_same_judgement(ab_trees, tmp_path, model):
    by_hand = _compare(ab_trees, model, tmp_path / "compare.json")
    trusted = _post(ab_trees, model, tmp_path / "post.json")
    assert by_hand == trusted  # byte-identical report.json
    report = json.loads(by_hand)
    (looks,) = report["looks"]
    assert looks["source"] == "recomputed" and looks["looks"][0]["name"] == "first"
    request = judge.Request(base=ab_trees / "base", candidate=ab_trees / "candidate", suite=SUITE)
    recomputed = judge.first_look(request, model)
    runner = tree_decider(SUITE, ab_trees / "base", ab_trees / "candidate", None).first(model)
    assert recomputed.problems == ()
    assert recomputed.decision.action == looks["looks"][0]["action"]
    if recomputed.decision.action != "extend":  # the runner decided on these very trees (3+3 runs)
        assert (runner.action, runner.reasons) == (recomputed.decision.action, recomputed.decision.reasons)
    # the report is published at the α of the look that decided, not the family α
    last = rule.Look.POOLED if len(looks["looks"]) == 2 else rule.Look.FIRST
    assert report["statistics"]["speed_alpha"] == last.alpha


@pytest.mark.slow  # the A/B trees with second looks (module fixture, ~25 s CPU)
def test_the_planted_regression_fails_at_the_first_look_everywhere(ab_trees, tmp_path):
    report = json.loads(_compare(ab_trees, "qwen3", tmp_path / "r.json"))
    assert report["verdict"] == "fail" and report["looks"][0]["final"] == "fail"


@pytest.mark.slow  # the A/B trees with second looks (module fixture, ~25 s CPU)
def test_a_tree_without_a_run_log_is_one_final_look(ab_trees, tmp_path):
    """Two trees made by hand with the runbook (no gate-run.json): one look, no looks record; accuracy at the family
    α, speed at what gate run's two looks spend together (one job: gate.judging.judge.one_look_thresholds)."""
    plain = tmp_path / "plain"
    for name in ("base", "candidate"):
        shutil.copytree(ab_trees / name, plain / name, ignore=shutil.ignore_patterns("gate-run.json", ".gate-cache"))
    report = json.loads(_compare(plain, "whisper", tmp_path / "r.json"))
    assert report["looks"] == [] and report["statistics"]["quality_alpha"] == rule.FAMILY_ALPHA
    assert report["statistics"]["speed_alpha"] == pytest.approx(rule.FIRST_ALPHA + rule.POOLED_ALPHA)


@pytest.mark.slow  # the A/B trees with second looks (module fixture, ~25 s CPU)
def test_the_trusted_job_refuses_a_pair_whose_runs_are_not_the_plan(ab_trees, tmp_path):
    """An extra scored run (best-of-N) is refused by the trusted job; by hand the same trees are judged as they
    are and the looks note says the runs differ from the plan."""
    trees = tmp_path / "trees"
    shutil.copytree(ab_trees, trees)
    decided = next(m for m in MODELS if not (trees / "candidate" / "run4" / m).exists())
    copy_run(trees / "candidate" / "run3" / decided, trees / "candidate" / "run4" / decided)
    result = CliRunner().invoke(cli, ["post", "--trees", str(trees), "--model", decided, "--dry-run"])
    assert result.exit_code == 2 and f"{decided} has scored runs run1, run2, run3, run4" in result.output
