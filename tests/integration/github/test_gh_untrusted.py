from __future__ import annotations

import json
import os
import re

import pytest

from gate.commands.action import render_report
from gate.commands.merge import merge_reports
from gate.formats import typedjson
from gate.formats.report import REPORT_SCHEMA_VERSION
from gate.publish.untrusted import (
    UntrustedInputError,
    load_untrusted_meta,
    load_untrusted_report,
)
from gate.render.renderer import COMMENT_MARKER

HOSTILE = ("</details></details><script>alert(1)</script> @everyone @sgl-project/maintainers "
           "```\n::error::injected\n``` | --- | ![x](https://evil.test/x.png) #1 <!-- asr-regression-gate: asr -->")


def report_copy(path):
    return json.loads(path.read_text(encoding="utf-8"))


def write(tmp_path, data, name="report.json"):
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def test_real_report_validates(example_reports):
    report = load_untrusted_report(example_reports["qwen3"])
    assert report.verdict == "fail" and report.models == ("qwen3",)


def test_oversize_report_is_refused_before_parsing(tmp_path, monkeypatch):
    from gate.formats import inputs

    monkeypatch.setattr(inputs, "REPORT", inputs.Kind("report", 1000))
    path = write(tmp_path, "[" + "0," * 600 + "0]")
    with pytest.raises(UntrustedInputError, match=r"1203 bytes; expected a report of at most 1000 bytes"):
        load_untrusted_report(path)


def test_symlink_is_not_followed(tmp_path, example_reports):
    link = tmp_path / "report.json"
    os.symlink(example_reports["qwen3"], link)
    with pytest.raises(UntrustedInputError, match="symbolic link"):
        load_untrusted_report(link)


@pytest.mark.parametrize("text, words", [
    ("{not json", "not valid JSON"),
    ('{"verdict": NaN}', "NaN"),
    ('{"a": 1, "a": 2}', "duplicate key"),
    ("[" * 70 + "]" * 70, "nested deeper than 64"),
    ('{"n": 1' + "0" * 30 + "}", "digits"),  # the one strict reader bounds integers, as the old one did not
    ('{"x": 1e999}', "out of range"),
])
def test_malformed_json_is_one_line(tmp_path, text, words):
    with pytest.raises(UntrustedInputError, match=words) as err:
        load_untrusted_report(write(tmp_path, text))
    assert "\n" not in str(err.value) and str(tmp_path) in str(err.value)


def test_invalid_utf8(tmp_path):
    path = tmp_path / "report.json"
    path.write_bytes(b'{"suite": "\xff"}')
    with pytest.raises(UntrustedInputError, match="UTF-8"):
        load_untrusted_report(path)


def test_hostile_strings_are_neutralised_in_the_rendered_comment(tmp_path, example_reports):
    report = report_copy(example_reports["qwen3"])
    report["candidate"]["name"] = "refs/heads/" + HOSTILE[:180]
    report["candidate"]["commit"] = HOSTILE[:200]
    for row in report["rows"]:
        row["notes"] = [HOSTILE[:600]]
    for utterance in report["utterances"]:
        utterance["candidate_hypothesis"] = HOSTILE[:600]
        utterance["id"] = HOSTILE[:200]
    rendered = render_report(load_untrusted_report(write(tmp_path, report)))
    for text in (rendered.comment, rendered.summary):
        assert "<script>" not in text and "</details></details>" not in text
        assert "@everyone" not in text and "@sgl-project" not in text  # no pings
        assert "\n::error::" not in text  # no workflow command at a line start
        assert "](https://evil.test" not in text  # no image/link from data
        assert text.count("<details>") + text.count("<details ") == text.count("</details>")
    assert rendered.marker == COMMENT_MARKER.format(suite="asr")
    assert rendered.comment.count(rendered.marker) == 1  # the marker cannot be forged
    assert rendered.comment.startswith(rendered.marker)


def test_merge_of_fail_and_pass_is_fail_and_schema_valid(example_reports):
    merged = merge_reports([load_untrusted_report(example_reports[m]) for m in ("qwen3", "whisper")])
    assert merged.verdict == "fail" and sorted(merged.models) == ["qwen3", "whisper"]


def test_meta_round_trip_and_refusals(tmp_path):
    good = {"schema_version": 1, "pr": 42, "sha": "a" * 40, "labels": ["run-qwen3-asr"], "models": ["qwen3"]}
    meta = load_untrusted_meta(write(tmp_path, good, "meta.json"))
    assert meta.models == ("qwen3",) and typedjson.to_json(meta) == good
    assert load_untrusted_meta(write(tmp_path, {**good, "pr": None}, "meta.json")).pr is None  # a nightly run
    for bad, where in [({**good, "pr": "42; rm -rf /"}, "$.pr"), ({**good, "labels": ["x\ny"]}, "$.labels[0]"),
                       ({**good, "extra": 1}, "$"), ({**good, "sha": "main"}, "$.sha"),
                       ({**good, "sha": "a" * 40 + "\n"}, "$.sha"),  # a trailing newline is not a SHA either
                       ({**good, "pr": 0}, "$.pr"), ({**good, "schema_version": 2}, "$.schema_version"),
                       ({**good, "schema_version": True}, "$.schema_version"),
                       ({**good, "models": ["qwen3"] * 21}, "$.models"), ({**good, "labels": ["l" * 51]}, "$.labels[0]"),
                       ({k: v for k, v in good.items() if k != "labels"}, "$"), ([good], "$")]:
        with pytest.raises(UntrustedInputError, match=re.escape(f"run metadata does not match the schema at {where}:")) as err:
            load_untrusted_meta(write(tmp_path, bad, "meta.json"))
        assert "\n" not in str(err.value) and str(tmp_path / "meta.json") in str(err.value)


# -- strict typed decoding: every kind of violation is one line naming the file, the JSON path and what fits

def _edit(path_and_value):
    """A change to a report: (JSON path as keys/indices, new value); `DROP` deletes the key."""
    keys, value = path_and_value

    def apply(doc):
        node = doc
        for key in keys[:-1]:
            node = node[key]
        if value is DROP:
            del node[keys[-1]]
        else:
            node[keys[-1]] = value
        return doc
    return apply


DROP = object()
VIOLATIONS = {
    "unknown top-level key": ((["comment_markdown"], "<script>"), '$: unexpected key "comment_markdown"'),
    "unknown nested key": ((["rows", 2, "html"], "x"), '$.rows[2]: unexpected key "html"'),
    "hostile unknown key": ((["a\nb: ::error::x"], 1), '$: unexpected key "a\\nb: ::error::x"'),
    "missing key": ((["statistics", "speed_alpha"], DROP), "$.statistics: missing key 'speed_alpha'"),
    "missing key that has a default": ((["rows", 0, "improved"], DROP), "$.rows[0]: missing key 'improved'"),
    "missing derived key": ((["counts"], DROP), "$: missing key 'counts'"),
    "boolean of the wrong type": ((["rows", 0, "improved"], "yes"), "$.rows[0].improved: expected true or false"),
    "integer as a string": ((["coverage", 0, "baseline", "runs_present"], "3"),
                            "$.coverage[0].baseline.runs_present: expected an integer"),
    "integer as a float": ((["baseline", "runs"], 3.0), "$.baseline.runs: expected an integer"),
    "boolean as an integer": ((["statistics", "seed"], True), "$.statistics.seed: expected an integer"),
    "number as a string": ((["statistics", "speed_alpha"], "0.05"), "$.statistics.speed_alpha: expected a finite number"),
    "nullable number as a string": ((["rows", 0, "delta_rel"], "x"), "$.rows[0].delta_rel: expected a finite number or null"),
    "null where none is allowed": ((["suite"], None), "$.suite: expected a string"),
    "enum value unknown": ((["rows", 3, "verdict"], "lgtm"),
                           "$.rows[3].verdict: expected one of incomplete, not_comparable, fail, warn, pass"),
    "enum value of another type": ((["rows", 0, "basis"], 1), "$.rows[0].basis: expected one of paired"),
    "string over its bound": ((["candidate", "name"], "n" * 201),
                              "$.candidate.name: expected a string of at most 200 characters, got 201"),
    "list over its bound": ((["models"], ["qwen3"] * 21), "$.models: expected a list of at most 20 items, got 21"),
    "list item over its bound": ((["rows", 0, "notes"], ["x" * 601]),
                                 "$.rows[0].notes[0]: expected a string of at most 600 characters, got 601"),
    "number under its minimum": ((["coverage", 0, "baseline", "runs_present"], -1),
                                 "$.coverage[0].baseline.runs_present: expected at least 0, got -1"),
    "float under its minimum": ((["utterances", 0, "baseline_errors"], -0.5),
                                "$.utterances[0].baseline_errors: expected at least 0, got -0.5"),
    "pair of the wrong length": ((["rows", 0, "ci"], [0.1, 0.2, 0.3]), "$.rows[0].ci: expected a list of 2 items, got 3"),
    "object where a list belongs": ((["rows"], {}), "$.rows: expected a list"),
    "list where an object belongs": ((["statistics"], []), "$.statistics: expected an object"),
    "coverage reason as a line (schema 3)": ((["coverage", 0, "baseline", "reasons"], ["run1: skipped: skipped 5"]),
                                            "$.coverage[0].baseline.reasons[0]: expected an object"),
    "older schema version": ((["schema_version"], 1), f"$.schema_version: expected {REPORT_SCHEMA_VERSION}"),
    "schema version as a float": ((["schema_version"], float(REPORT_SCHEMA_VERSION)), f"$.schema_version: expected {REPORT_SCHEMA_VERSION}"),
    "exit code of another verdict": ((["exit_code"], 0), "$.exit_code: expected 1, the exit code of verdict 'fail'"),
    "exit code as a string": ((["exit_code"], "1"), "$.exit_code: expected 1"),
    "count that disagrees with the rows": ((["counts", "fail"], 0), "$.counts.fail: expected"),
    "count key unknown": ((["counts", "great"], 1), '$.counts: unexpected key "great"'),
}


@pytest.mark.parametrize("name", VIOLATIONS)
def test_each_kind_of_violation_is_refused_with_one_line(tmp_path, example_reports, name):
    change, words = VIOLATIONS[name]
    report = _edit(change)(report_copy(example_reports["qwen3"]))
    path = write(tmp_path, report)
    with pytest.raises(UntrustedInputError) as err:
        load_untrusted_report(path)
    line = str(err.value)
    assert "\n" not in line and len(line) < 500, line
    head, rest = line.split(": ", 1)  # the file, then what is wrong with it
    assert head == str(path) and rest.startswith("report does not match ") and "the schema at " in rest, line
    assert words in line, line


@pytest.mark.parametrize("text, words", [
    ('1e999', "the number 1e999 is out of range"),  # Python's parser would read it as inf
    ('-1e999', "the number -1e999 is out of range"),
])
def test_an_overflowing_number_is_refused(tmp_path, example_reports, text, words):
    report = report_copy(example_reports["qwen3"])
    report["rows"][0]["delta_rel"] = 12345.678
    raw = json.dumps(report).replace("12345.678", text, 1)
    with pytest.raises(UntrustedInputError, match=re.escape(words)):
        load_untrusted_report(write(tmp_path, raw))


def test_the_run_log_is_read_strictly_where_the_plan_reads_it(tmp_path):
    """The trusted job reads gate-run.json through its one owner (gate.formats.runlog), links refused, one bounded line."""
    from gate.formats import runlog
    from gate.formats.config import load_suite
    from gate.publish.untrusted import check_plan

    side = tmp_path / "candidate"
    side.mkdir()
    good = runlog.skeleton({"base": "/b", "candidate": "/c"}, {}, started="2026-11-02T03:00:00+00:00", status="completed")
    for bad, words in [({**good, "runs": {"candidate/run1": 3}}, '$.runs["candidate/run1"]: expected one of pending, running'),
                       ({k: v for k, v in good.items() if k != "status"}, "$: missing key 'status'"), (["runs"], "$: expected an object"),
                       (None, "$: expected an object"),
                       ({**good, "runs": {"c": "x" * 41}}, '$.runs.c: expected one of pending, running'),
                       ({**good, "runs": {f"r{i}": "completed" for i in range(401)}}, "$.runs: expected an object of at most 400 keys"),
                       ({**good, "runs": {"run1\n" + "x" * 30: "done"}}, '$.runs["run1\\nxxx'),
                       ({**good, "runs": {"run1\n" + "x" * 300: "done"}}, "expected a key of at most 200 characters")]:
        (side / "gate-run.json").write_text(json.dumps(bad), encoding="utf-8")
        with pytest.raises(UntrustedInputError, match=re.escape(words)) as err:
            check_plan(side, load_suite(), "qwen3")
        assert str(err.value).startswith(f"{side / 'gate-run.json'}: $") and "\n" not in str(err.value)
        assert len(str(err.value)) < 600
    (side / "gate-run.json").unlink()
    with pytest.raises(UntrustedInputError, match="gate-run.json: missing; expected the run log"):
        check_plan(side, load_suite(), "qwen3")
    (tmp_path / "log.json").write_text(json.dumps(good), encoding="utf-8")
    (side / "gate-run.json").symlink_to(tmp_path / "log.json")
    with pytest.raises(UntrustedInputError, match="gate-run.json: a symbolic link"):
        check_plan(side, load_suite(), "qwen3")


# -- parity with the shipped schema: whatever report.schema.json refuses, the strict reader refuses too

KNOWN_STRICTER = ("expected an integer", "$.schema_version: expected", "$.exit_code: expected", "$.counts",
                  "$.models: expected")  # models must name exactly the models of the rows and coverage


def _small_report(example_reports) -> dict:
    """A valid report with one of everything (row with a CI, coverage, env difference, utterance, CI retry), kept
    small."""
    from dataclasses import replace

    from gate.formats.report import CiRetry, EnvDifference, Report

    full = Report.from_json(report_copy(example_reports["qwen3"]))
    difference = EnvDifference(kind="freeze", workload=None, item="torch", baseline="2.5", candidate="2.6", known=True,
                               blocking=True)
    retry = CiRetry(workload=full.coverage[0].workload, run="run1", read="pytest-2", earlier=("pytest-1",))
    small = replace(full, rows=full.rows[:2], coverage=full.coverage[:1], utterances=full.utterances[:1],
                    environment_diff=(difference,), allowed_diff=("gpu",),
                    candidate=replace(full.candidate, retried=(retry,)))
    return json.loads(json.dumps(small.to_json()))


def _mutations(doc):
    """(description, mutated copy) for every node: other JSON types, out-of-range values, extra and missing keys."""
    import copy

    replacements = [None, True, 0, -1, 2.0, 1.5, -0.5, "x", "x" * 2001, [], {}, [0.5, 0.5], [None] * 2001]
    stack = [[]]
    while stack:
        keys = stack.pop()
        node = doc
        for key in keys:
            node = node[key]
        if isinstance(node, dict):
            stack.extend(keys + [k] for k in node)
            yield f"{keys} + extra key", _edit((keys + ["zz_extra"], 1))(copy.deepcopy(doc))
            for key in node:
                yield f"{keys} - {key}", _edit((keys + [key], DROP))(copy.deepcopy(doc))
        elif isinstance(node, list):
            stack.extend(keys + [i] for i in range(len(node)))
            if node:
                yield f"{keys} x2001", _edit((keys, node[:1] * 2001))(copy.deepcopy(doc))
        if keys:
            for value in replacements:
                yield f"{keys} = {str(value)[:20]}", _edit((keys, value))(copy.deepcopy(doc))


# -- uploaded result trees ------------------------------------------------------------------------------

def test_tree_with_a_fifo_is_refused(tmp_path):
    from gate.publish.untrusted import check_tree_files

    (tmp_path / "run1").mkdir()
    os.mkfifo(tmp_path / "run1" / "asr_en.json")  # reading it would block the trusted job forever
    with pytest.raises(UntrustedInputError, match="not a regular file"):
        check_tree_files(tmp_path)


def test_tree_caps_on_depth_count_and_size(tmp_path, monkeypatch):
    import gate.publish.untrusted as untrusted

    deep = tmp_path / "deep"
    (deep / "a" / "b" / "c").mkdir(parents=True)
    monkeypatch.setattr(untrusted, "MAX_TREE_DEPTH", 2)
    with pytest.raises(UntrustedInputError, match="nested deeper than 2 levels"):
        untrusted.check_tree_files(deep)
    many = tmp_path / "many"
    many.mkdir()
    for i in range(4):
        (many / f"f{i}").write_text("x" * 10)
    monkeypatch.setattr(untrusted, "MAX_TREE_FILES", 3)
    with pytest.raises(UntrustedInputError, match="more than 3 files"):
        untrusted.check_tree_files(many)
    monkeypatch.setattr(untrusted, "MAX_TREE_FILES", 100)
    monkeypatch.setattr(untrusted, "MAX_TREE_BYTES", 25)
    with pytest.raises(UntrustedInputError, match="larger than 25 bytes"):
        untrusted.check_tree_files(many)


def test_tree_root_that_is_a_symlink_is_refused(tmp_path):
    from gate.publish.untrusted import check_tree_files

    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "candidate")
    with pytest.raises(UntrustedInputError, match="symbolic links are not followed"):
        check_tree_files(tmp_path / "candidate")
