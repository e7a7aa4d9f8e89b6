"""What the real SeedTTS client writes, read as the runbook means it (issue 38): a run whose every request
failed is "every request failed" (INCOMPLETE, exit 3) in summarize and compare, never "a broken file"; client
settings that change what is measured (concurrency, stream, warm-up, the rest of `config` the runbook fixes)
make the sides NOT COMPARABLE (exit 4) unless --allow-diff names them."""
from __future__ import annotations

import json
import shutil

from click.testing import CliRunner

from gate.cli import cli

RESULT = "qwen3/asr_en.json"


def _copy(make_tree, tmp_path, name):
    tree = tmp_path / name
    shutil.copytree(make_tree("plain"), tree)
    return tree


def _edit(tree, run, change):
    path = tree / run / RESULT
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data, indent=1))
    return path


def _all_failed(data):
    """What the client writes when every transcription request failed (it still exits 0)."""
    result = data["results"][0]
    result["evaluated"] = 0
    for key, value in list(result.items()):
        if isinstance(value, dict) and "mean" in value:
            result[key] = {"mean": 0.0, "min": 0.0, "max": 0.0, "n": 1} if key in (
                "throughput_samples_per_s", "rtfx", "wall_clock_s") else {"mean": None, "min": None, "max": None, "n": 0}
    result["corpus_wer"] = None


def _invoke(*args):
    result = CliRunner().invoke(cli, [str(a) for a in args])
    return result.exit_code, result.output + (result.stderr if result.stderr_bytes else "")


def test_every_request_failed_is_incomplete_in_summarize_and_compare(make_tree, tmp_path):
    candidate = _copy(make_tree, tmp_path, "candidate")
    _edit(candidate, "run2", _all_failed)
    code, out = _invoke("summarize", candidate, "--json", tmp_path / "summary.json")
    assert code == 3, out
    assert "every request failed" in out and "bad_schema" not in out, out
    summary = (tmp_path / "summary.json").read_text()
    assert "all_requests_failed" in summary and "bad_schema" not in summary
    base = make_tree("seed11", seed=11)
    code, out = _invoke("compare", base, candidate, "--json", tmp_path / "report.json")
    assert code == 3, out
    assert "every request failed" in out and "run2" in out and "bad_schema" not in out, out
    report = (tmp_path / "report.json").read_text()
    assert "all_requests_failed" in report and "bad_schema" not in report


def _config(**settings):
    def change(data):
        for key, value in settings.items():
            if key == "concurrency":
                data["results"][0]["concurrency"] = value
                data["config"]["concurrencies"] = [value]
            else:
                data["config"][key] = value
    return change


def test_a_candidate_measured_at_another_concurrency_is_not_comparable(make_tree, tmp_path):
    base = make_tree("seed11", seed=11)  # another measurement of the same commit (a copy is refused as one)
    candidate = _copy(make_tree, tmp_path, "candidate")
    for run in ("run1", "run2", "run3"):
        _edit(candidate, run, _config(concurrency=8))
    code, out = _invoke("compare", base, candidate)
    assert code == 4, out
    assert "concurrency" in out, out
    code, out = _invoke("compare", base, candidate, "--allow-diff", "client")
    assert code != 4, out


def test_stream_and_warmup_differences_are_not_comparable(make_tree, tmp_path):
    base = make_tree("seed11", seed=11)
    for name, change, allow in (("stream", _config(stream=True), "client"),
                                ("warmup", _config(warmup=False), "client")):
        candidate = _copy(make_tree, tmp_path, name)
        for run in ("run1", "run2", "run3"):
            _edit(candidate, run, change)
        code, out = _invoke("compare", base, candidate)
        assert code == 4, (name, out)
        assert name in out, (name, out)
        code, out = _invoke("compare", base, candidate, "--allow-diff", allow)
        assert code != 4, (name, out)
