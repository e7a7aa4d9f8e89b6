"""Both looks of `gate run --ab` in the report (issue 11): `gate compare` reads them from the candidate tree's
gate-run.json and every output shows one "Looks" line per model; a one-look tree shows "one look" and why,
a tree that is not an A/B shows none; a log that is not what `gate run` writes is one error line (exit 2)."""
from __future__ import annotations

import json
import re
import shutil

import jsonschema
import pytest
from click.testing import CliRunner

from gate.cli import cli
from gate.examples import CANDIDATE_COMMIT
from gate.render import render_check_summary, render_comment, render_summary, render_terminal
from gate.report import Report, report_schema

MODELS = ("qwen3", "whisper")
HOSTILE = "@team <img src=x> [l](https://evil.test) #4 `tick` | --- |"


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def run_log(sides=("base", "candidate"), *, looks=None, decider="decide / decide_pooled", one_look_because=None):
    """gate-run.json as `gate run --ab` writes it: qwen3 failed at the first look; whisper was extended
    to run4..run6 and passed on the pooled runs."""
    extended = [f"run{r}" for r in range(1, 7)]
    made = {side: {"qwen3": ["run1", "run2", "run3"], "whisper": extended if looks != {} else extended[:3]}
            for side in sides}
    if looks is None:
        looks = {
            "qwen3": {"first": {"action": "fail", "reasons": ["qwen3/asr_en corpus_wer: FAIL at Holm α₁ = 0.001"]},
                      "extended": False, "why_extended": [], "pooled": None, "final": "fail"},
            "whisper": {"first": {"action": "extend", "reasons": [
                "whisper/asr_en throughput_samples_per_s: p = 0.021 ≤ 0.05 with 64% of its floor", HOSTILE]},
                "extended": True, "why_extended": ["..."], "final": "pass",
                "pooled": {"action": "pass", "reasons": ["whisper: no FAIL on the pooled runs"]}},
        }
    runs = {f"{side}/run{r}": "completed" for side in sides
            for r in ("warm", "1", "2", "3", *(("4", "5", "6") if looks else ()))}
    return {"schema_version": 1, "status": "completed", "exit_code": 0, "runs": runs,
            "sides": {side: f"/checkouts/{side}" for side in sides},
            "plan": {"first_look": [], "possible_extension": [], "decider": decider,
                     "one_look_because": one_look_because, "max_runs_per_model": 14},
            "looks": looks, "remeasured": [], "scored_runs": made}


@pytest.fixture(scope="module")
def ab(make_tree, tmp_path_factory):
    """An A/B pair of trees as `gate run --ab` leaves them after two looks (whisper extended)."""
    root = tmp_path_factory.mktemp("ab")
    sources = {"base": make_tree("looks-base", models=MODELS),
               "candidate": make_tree("looks-cand", models=MODELS, seed=1, commit=CANDIDATE_COMMIT)}
    for side, source in sources.items():
        tree = shutil.copytree(source, root / side)
        for new, old in (("run4", "run1"), ("run5", "run2"), ("run6", "run3")):  # whisper's second look
            (tree / new).mkdir()
            shutil.copytree(tree / old / "whisper", tree / new / "whisper")
            for name in ("commit.txt", "freeze.txt"):
                shutil.copy(tree / old / name, tree / new / name)
        (tree / "gate-run.json").write_text(json.dumps(run_log()), encoding="utf-8")
    return root


def compare(base, candidate, tmp_path, *extra):
    out = {name: tmp_path / name for name in ("report.json", "comment.md", "summary.md")}
    result = invoke("compare", base, candidate, "--json", out["report.json"], "--comment", out["comment.md"],
                    "--summary", out["summary.md"], *extra)
    data = json.loads(out["report.json"].read_text(encoding="utf-8"))
    jsonschema.validate(data, report_schema())
    return result, Report.from_json(data), {k: v.read_text(encoding="utf-8") for k, v in out.items() if k != "report.json"}


def test_a_two_look_tree_gives_a_report_whose_looks_match_gate_run_json(ab, tmp_path):
    result, report, outputs = compare(ab / "base", ab / "candidate", tmp_path)
    assert result.exit_code in (0, 1, 3), result.output
    log = json.loads((ab / "candidate" / "gate-run.json").read_text(encoding="utf-8"))
    looks = {m.model: m for m in report.looks}
    assert sorted(looks) == list(MODELS) and all(m.source == "gate-run.json" for m in looks.values())
    for model, record in log["looks"].items():
        m = looks[model]
        assert m.final == record["final"]
        assert m.looks[0].name == "first" and m.looks[0].action == record["first"]["action"]
        assert list(m.looks[0].reasons) == record["first"]["reasons"]
        assert (m.looks[0].base_runs, m.looks[0].candidate_runs) == (3, 3)
        if record["pooled"] is None:
            assert len(m.looks) == 1
        else:
            pooled = m.looks[1]
            assert (pooled.name, pooled.action, list(pooled.reasons)) == ("pooled", record["pooled"]["action"],
                                                                         record["pooled"]["reasons"])
            assert (pooled.base_runs, pooled.candidate_runs) == (6, 6)
    # Every output shows one Looks line per model.
    qwen = "qwen3: first look 3+3 → FAIL (qwen3/asr_en corpus_wer: FAIL at Holm α₁ = 0.001)"
    whisper = ("whisper: first look 3+3 → extend (whisper/asr_en throughput_samples_per_s: p = 0.021 ≤ 0.05 with 64% "
               "of its floor; ")
    assert f"Looks: {qwen}\n" in result.stdout and f"Looks: {whisper}" in result.stdout
    assert "→ pooled 6+6: PASS (whisper: no FAIL on the pooled runs)" in result.stdout
    for text in (*outputs.values(), render_check_summary(report)):
        assert "**Looks**" in text
        assert "- qwen3: first look 3+3 → FAIL (qwen3/asr\\_en corpus\\_wer: FAIL at Holm α₁ = 0.001)" in text
        line = next(line for line in text.splitlines() if line.startswith("- whisper: first look 3+3 → extend ("))
        assert line.endswith("→ pooled 6+6: PASS (whisper: no FAIL on the pooled runs)")
        # The log is outside text: escaped like everything else (no HTML, no link, no mention, no table break).
        assert "<img" not in line and "@team" not in line and "https://" not in line
        assert "&lt;img src=x&gt;" in line and "\\[l\\]" in line and not re.search(r"(?<!\\)\|", line)


def test_looks_survive_the_json_round_trip_and_a_merge(ab, tmp_path):
    _, report, _ = compare(ab / "base", ab / "candidate", tmp_path)
    again = Report.from_json(json.loads(json.dumps(report.to_json())))
    assert again.looks == report.looks
    merged = Report.merge([report, report])
    assert merged.looks == report.looks + report.looks
    jsonschema.validate(merged.to_json(), report_schema())


def test_a_one_look_tree_says_one_look_and_why(ab, tmp_path):
    trees = tmp_path / "trees"
    for side in ("base", "candidate"):
        tree = shutil.copytree(ab / side, trees / side)
        for run in ("run4", "run5", "run6"):
            shutil.rmtree(tree / run)
        (tree / "gate-run.json").write_text(json.dumps(run_log(looks={}, decider=None, one_look_because="--one-look")))
    result, report, outputs = compare(trees / "base", trees / "candidate", tmp_path)
    assert [(m.model, m.looks, m.final, m.note) for m in report.looks] == [
        ("qwen3", (), "one look", "--one-look"), ("whisper", (), "one look", "--one-look")]
    assert "Looks: qwen3: one look (--one-look)\n" in result.stdout
    assert all("- whisper: one look (--one-look)" in text for text in outputs.values())


def test_a_tree_that_is_not_an_ab_shows_no_looks(make_tree, tmp_path):
    result, report, outputs = compare(make_tree("base"), make_tree("base"), tmp_path)
    assert report.looks == () and "Looks" not in result.stdout
    assert all("Looks" not in text for text in outputs.values())
    assert "Looks" not in render_terminal(report) + render_comment(report) + render_summary(report)


def test_an_extension_the_budget_did_not_allow_is_shown_undecided(ab, tmp_path):
    trees = tmp_path / "trees"
    looks = run_log()["looks"]
    looks["whisper"].update(extended=False, pooled=None, final="undecided",
                            not_extended="--max-runs 10: 6 made, the second look needs 6 more")
    for side in ("base", "candidate"):
        tree = shutil.copytree(ab / side, trees / side)
        log = run_log(looks=looks)
        log["scored_runs"][side]["whisper"] = ["run1", "run2", "run3"]
        log["runs"] = {k: v for k, v in log["runs"].items() if not k.endswith(("run4", "run5", "run6"))}
        for run in ("run4", "run5", "run6"):
            shutil.rmtree(tree / run)
        (tree / "gate-run.json").write_text(json.dumps(log))
    result, report, _ = compare(trees / "base", trees / "candidate", tmp_path)
    whisper = next(m for m in report.looks if m.model == "whisper")
    assert whisper.final == "undecided" and len(whisper.looks) == 1
    assert "→ not extended (--max-runs 10: 6 made, the second look needs 6 more): undecided" in result.stdout


@pytest.mark.parametrize("edit, words", [
    (lambda log: log["looks"]["whisper"]["first"].update(action="maybe"),
     "looks.whisper.first.action is 'maybe', expected one of 'pass', 'fail', 'extend'"),
    (lambda log: log["looks"]["qwen3"].update(first={"action": "fail", "reasons": "FAIL"}),
     "looks.qwen3.first.reasons is 'FAIL', expected a list of strings"),
    (lambda log: log.pop("scored_runs"), "scored_runs is missing"),
    (lambda log: log["sides"].update(third="/x"), "sides lists 3 sides, expected the two of an A/B run"),
])
def test_a_malformed_run_log_is_one_error_line(ab, tmp_path, edit, words):
    tree = shutil.copytree(ab / "candidate", tmp_path / "candidate")
    log = run_log()
    edit(log)
    (tree / "gate-run.json").write_text(json.dumps(log))
    result = invoke("compare", ab / "base", tree)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"gate: error: {tree / 'gate-run.json'}: ") and words in lines[0]
