"""Both looks of `gate run --ab` in the report: the one judge recomputes them from the trees (never from the
log the tree carries) and every output shows one "Looks" line per model; a one-look A/B shows "one look" and
why, a tree that is not an A/B shows none; a log that is not what `gate run` writes is one error line (exit 2)."""
from __future__ import annotations

import dataclasses
import json
import re
import shutil
from types import SimpleNamespace

import jsonschema
import pytest
from click.testing import CliRunner

from gate.cli import cli
from gate.examples import CANDIDATE_COMMIT
from gate.formats import runlog
from gate.formats.report import LookOutcome, ModelLooks, Report, report_schema
from gate.judging import look_rule
from gate.render.cells import fmt_looks
from gate.render.renderer import render_check_summary, render_comment, render_summary, render_terminal
from gate.stats import looks as rule

MODELS = ("qwen3", "whisper")
HOSTILE = "@team <img src=x> [l](https://evil.test) #4 `tick` | --- |"


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def run_log(side, *, decider="decide / decide_pooled", one_look_because=None, max_runs=14, looks=None):
    """gate-run.json as `gate run --ab` writes it after a first look that decided both models (3+3 runs)."""
    runs = {f"{s}/run{r}": "completed" for s in ("base", "candidate") for r in ("warm", "1", "2", "3")}
    made = {s: {m: ["run1", "run2", "run3"] for m in MODELS} for s in ("base", "candidate")}
    log = runlog.skeleton({"base": "/checkouts/base", "candidate": "/checkouts/pr"}, runs, status="completed",
                          started="2026-12-01T02:00:00.000+00:00", scored_runs=made)
    log["plan"] = {"first_look": list(runs), "possible_extension": [], "decider": decider,
                   "one_look_because": one_look_because, "max_runs_per_model": max_runs, "outlier_rule": "stats.outliers"}
    log["looks"] = looks if looks is not None else {
        m: {"first": {"action": "pass", "reasons": [HOSTILE]}, "extended": False, "why_extended": [], "pooled": None,
            "final": "pass"} for m in MODELS}
    log["remeasured"] = []
    return log


@pytest.fixture(scope="module")
def ab(make_tree, tmp_path_factory):
    """An A/B pair of trees as `gate run --ab` leaves them after its first look."""
    root = tmp_path_factory.mktemp("ab")
    sources = {"base": make_tree("looks-base", models=MODELS),
               "candidate": make_tree("looks-cand", models=MODELS, seed=1, commit=CANDIDATE_COMMIT)}
    for side, source in sources.items():
        tree = shutil.copytree(source, root / side)
        (tree / "gate-run.json").write_text(json.dumps(run_log(side)), encoding="utf-8")
    return root


def with_log(ab, tmp_path, **log_options):
    trees = tmp_path / "trees"
    for side in ("base", "candidate"):
        tree = shutil.copytree(ab / side, trees / side)
        (tree / "gate-run.json").write_text(json.dumps(run_log(side, **log_options)), encoding="utf-8")
    return trees


def compare(base, candidate, tmp_path, *extra):
    out = {name: tmp_path / name for name in ("report.json", "comment.md", "summary.md")}
    result = invoke("compare", base, candidate, "--json", out["report.json"], "--comment", out["comment.md"],
                    "--summary", out["summary.md"], *extra)
    data = json.loads(out["report.json"].read_text(encoding="utf-8"))
    jsonschema.validate(data, report_schema())
    return result, Report.from_json(data), {k: v.read_text(encoding="utf-8") for k, v in out.items() if k != "report.json"}


@pytest.mark.slow  # judges two-look trees end to end
def test_the_looks_are_recomputed_from_the_trees_not_read_from_the_log(ab, tmp_path):
    """The log says both models passed for a hostile reason; the report shows what the judge decides."""
    result, report, outputs = compare(ab / "base", ab / "candidate", tmp_path)
    assert result.exit_code in (0, 1), result.output
    looks = {m.model: m for m in report.looks}
    assert sorted(looks) == list(MODELS) and all(m.source == "recomputed" for m in looks.values())
    for m in looks.values():
        first = m.looks[0]
        assert (first.name, first.base_runs, first.candidate_runs) == ("first", 3, 3)
        assert first.action in ("pass", "fail", "extend") and m.final in ("pass", "fail", "undecided")
        assert HOSTILE not in first.reasons
    assert all(text.count("**Looks**") == 1 and "<img" not in text for text in outputs.values())
    assert sum(line.startswith("Looks: ") for line in result.stdout.splitlines()) == len(MODELS)


@pytest.mark.slow  # judges two-look trees end to end
def test_looks_lines_are_escaped_in_every_output(ab, tmp_path):
    _, report, _ = compare(ab / "base", ab / "candidate", tmp_path)
    pooled = "whisper: no FAIL on the pooled runs"
    hostile = dataclasses.replace(report, looks=(
        ModelLooks("whisper", "recomputed", (LookOutcome("first", "extend", (HOSTILE,), 3, 3),
                                             LookOutcome("pooled", "pass", (pooled,), 6, 6)),
                   "pass"),))
    assert any(line.startswith("Looks: whisper: ") and "first look 3+3 → extend (" in line
               for line in render_terminal(hostile).splitlines())
    for text in (render_comment(hostile), render_summary(hostile), render_check_summary(hostile)):
        line = next(line for line in text.splitlines() if line.startswith("- whisper: first look 3+3 → "))
        assert "3+3 → extend (" in line and line.endswith(f"→ pooled 6+6: PASS ({pooled}) · recomputed from the trees")
        # outside text is escaped like everything else (no HTML, no link, no mention, no table break)
        assert "<img" not in line and "@team" not in line and "https://" not in line
        assert "&lt;img src=x&gt;" in line and "\\[l\\]" in line and not re.search(r"(?<!\\)\|", line)


@pytest.mark.slow  # judges two-look trees end to end
def test_looks_survive_the_json_round_trip_and_a_merge(ab, tmp_path):
    _, report, _ = compare(ab / "base", ab / "candidate", tmp_path)
    again = Report.from_json(json.loads(json.dumps(report.to_json())))
    assert again.looks == report.looks
    merged = Report.merge([report, report])
    assert merged.looks == report.looks + report.looks
    jsonschema.validate(merged.to_json(), report_schema())


def test_a_one_look_ab_says_one_look_and_why(ab, tmp_path):
    trees = with_log(ab, tmp_path, decider=None, one_look_because="--one-look", looks={})
    result, report, outputs = compare(trees / "base", trees / "candidate", tmp_path)
    assert [(m.model, m.looks, m.final, m.note) for m in report.looks] == [
        ("qwen3", (), "one look", "--one-look"), ("whisper", (), "one look", "--one-look")]
    assert report.statistics.speed_alpha == rule.FAMILY_ALPHA
    assert all(f"Looks: {fmt_looks(m)}\n" in result.stdout for m in report.looks)
    assert all(f"- {fmt_looks(report.looks[1])}" in text for text in outputs.values())


def test_a_tree_that_is_not_an_ab_shows_no_looks(make_tree, tmp_path):
    result, report, outputs = compare(make_tree("base"), make_tree("base-again", seed=2), tmp_path)
    assert report.looks == () and "Looks" not in result.stdout
    assert all("Looks" not in text for text in outputs.values())
    assert "Looks" not in render_terminal(report) + render_comment(report) + render_summary(report)


@pytest.mark.slow  # judges two-look trees end to end
def test_an_extension_the_budget_did_not_allow_is_shown_undecided(ab, tmp_path, monkeypatch):
    """A first look that asks for more runs than the A/B's --max-runs allowed: the model is undecided, judged on
    its 3+3 runs at α₁, and the report says why it was not extended."""
    real = look_rule.decide
    monkeypatch.setattr(look_rule, "decide", lambda report, model: SimpleNamespace(action="extend", reasons=("near",))
                        if model == "whisper" else real(report, model))
    trees = with_log(ab, tmp_path, max_runs=10)
    result, report, _ = compare(trees / "base", trees / "candidate", tmp_path)
    whisper = next(m for m in report.looks if m.model == "whisper")
    assert whisper.final == "undecided" and len(whisper.looks) == 1
    assert whisper.note.startswith("--max-runs 10: 6 made") and whisper.note.endswith("second look needs 6 more")
    assert f"→ not extended ({whisper.note}): undecided" in result.stdout


@pytest.mark.parametrize("edit, words", [
    (lambda log: log["looks"]["whisper"]["first"].update(action="maybe"),
     "$.looks.whisper.first.action: expected one of pass, fail, extend"),
    (lambda log: log["looks"]["qwen3"].update(first={"action": "fail", "reasons": "FAIL"}),
     "$.looks.qwen3.first.reasons: expected a list"),
    (lambda log: log.pop("status"), "$: missing key 'status'"),
    (lambda log: log["sides"].update(third="/x"), "$.sides: expected an object of at most 2 keys, got 3"),
    (lambda log: log.update(started="2026-12-01T02:00:00"), "$.started: expected a string matching"),
])
@pytest.mark.slow  # one full compare per malformed log
def test_a_malformed_run_log_is_one_error_line(ab, tmp_path, edit, words):
    tree = shutil.copytree(ab / "candidate", tmp_path / "candidate")
    log = run_log("candidate")
    edit(log)
    (tree / "gate-run.json").write_text(json.dumps(log))
    result = invoke("compare", ab / "base", tree)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"gate: error: {tree / 'gate-run.json'}: ") and words in lines[0]
