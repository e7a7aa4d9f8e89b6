from __future__ import annotations

import json
import os
import re

import pytest

from gate.untrusted import (
    UntrustedInputError,
    load_untrusted_meta,
    load_untrusted_report,
    merge_reports,
    render_report,
)

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


def test_oversize_report_is_refused_before_parsing(tmp_path):
    path = write(tmp_path, "[" + "0," * 600 + "0]")
    with pytest.raises(UntrustedInputError, match=r"report is 1203 bytes; expected at most 1000"):
        load_untrusted_report(path, max_bytes=1000)


def test_symlink_is_not_followed(tmp_path, example_reports):
    link = tmp_path / "report.json"
    os.symlink(example_reports["qwen3"], link)
    with pytest.raises(UntrustedInputError, match="symbolic link"):
        load_untrusted_report(link)


@pytest.mark.parametrize("text, words", [
    ("{not json", "expected the report as JSON"),
    ('{"verdict": NaN}', "NaN is not allowed"),
    ('{"a": 1, "a": 2}', "duplicate key 'a'"),
    ("[" * 40 + "]" * 40, "nested deeper than 32"),
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


def test_schema_violation_names_the_json_path(tmp_path, example_reports):
    report = report_copy(example_reports["qwen3"])
    report["rows"][3]["verdict"] = "lgtm"
    with pytest.raises(UntrustedInputError, match=r"report does not match the schema at \$\.rows\[3\]\.verdict"):
        load_untrusted_report(write(tmp_path, report))


def test_extra_markdown_field_is_refused(tmp_path, example_reports):
    report = report_copy(example_reports["qwen3"])
    report["comment_markdown"] = "<script>"  # an artifact must not smuggle its own markdown
    with pytest.raises(UntrustedInputError, match="does not match the schema"):
        load_untrusted_report(write(tmp_path, report))


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
    assert rendered.comment.count("<!-- asr-regression-gate: asr -->") == 1  # the marker cannot be forged
    assert rendered.comment.startswith(rendered.marker)


def test_merge_of_fail_and_pass_is_fail_and_schema_valid(example_reports):
    merged = merge_reports([load_untrusted_report(example_reports[m]) for m in ("qwen3", "whisper")])
    assert merged.verdict == "fail" and sorted(merged.models) == ["qwen3", "whisper"]


def test_meta_round_trip_and_refusals(tmp_path):
    good = {"schema_version": 1, "pr": 42, "sha": "a" * 40, "labels": ["run-qwen3-asr"], "models": ["qwen3"]}
    assert load_untrusted_meta(write(tmp_path, good, "meta.json")) == good
    for bad, where in [({**good, "pr": "42; rm -rf /"}, "$.pr"), ({**good, "labels": ["x\ny"]}, "$.labels[0]"),
                       ({**good, "extra": 1}, "$"), ({**good, "sha": "main"}, "$.sha")]:
        with pytest.raises(UntrustedInputError, match=re.escape(f"run metadata does not match the schema at {where}:")):
            load_untrusted_meta(write(tmp_path, bad, "meta.json"))


# -- uploaded result trees ------------------------------------------------------------------------------

def test_tree_with_a_fifo_is_refused(tmp_path):
    from gate.untrusted import check_tree_files

    (tmp_path / "run1").mkdir()
    os.mkfifo(tmp_path / "run1" / "asr_en.json")  # reading it would block the trusted job forever
    with pytest.raises(UntrustedInputError, match="not a regular file"):
        check_tree_files(tmp_path)


def test_tree_caps_on_depth_count_and_size(tmp_path, monkeypatch):
    import gate.untrusted as untrusted

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
    from gate.untrusted import check_tree_files

    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "candidate")
    with pytest.raises(UntrustedInputError, match="symbolic links are not followed"):
        check_tree_files(tmp_path / "candidate")
