"""Words for readers: metric display names, coverage problems without codes, env differences, raw-HTML text."""
from __future__ import annotations

from gate.formats.config import load_suite
from gate.formats.report import NO_RESULTS, CoverageProblem
from gate.formats.result_types import BAD_SCHEMA, EVALUATED_NE_TOTAL, MISSING_RUN, RUN_RECORD, SKIPPED
from gate.render.cells import env_item, metric_name, reason_words, summary_text


def test_every_gated_metric_of_the_suite_has_a_display_name():
    suite = load_suite()
    names = {m.name for w in suite.workloads for m in w.metrics if m.kind in ("accuracy", "speed")}
    assert names and all("_" not in metric_name(n) for n in names)
    assert metric_name("throughput_samples_per_s") == "throughput (samples/s)"
    assert metric_name("some_new_metric") == "some new metric"  # unknown ids still read as words


def test_coverage_problems_are_worded_from_their_fields():
    """The code stays in the report; the path shows from inside the run folder on (none for the folder itself).
    The message is data here: the words are "<run>: <path inside the run folder>: <message>"."""
    evaluated = "evaluated 2015 of 2020 samples"
    problem = CoverageProblem(EVALUATED_NE_TOTAL, evaluated, "/abs/tree/run1/qwen3/asr_zh.json", "run1")
    assert reason_words(problem) == f"run1: qwen3/asr_zh.json: {evaluated}"
    missing = "missing; a planned scored run"
    assert reason_words(CoverageProblem(MISSING_RUN, missing, "/abs/tree/run3", "run3")) == f"run3: {missing}"
    assert reason_words(CoverageProblem(SKIPPED, "skipped 5 samples", run="run1")) == "run1: skipped 5 samples"
    problem = CoverageProblem(SKIPPED, "skipped 5 samples", "run1/qwen3/asr_en.json", "run1")
    assert reason_words(problem) == "run1: qwen3/asr_en.json: " + problem.message  # a tree given as "." (relative)
    assert reason_words(CoverageProblem(MISSING_RUN, "missing", "run2", "run2")) == "run2: missing"
    outside = "elsewhere/commit.txt"  # a path outside the run folder shows whole
    assert reason_words(CoverageProblem(RUN_RECORD, "not UTF-8", outside, "run2")) == f"run2: {outside}: not UTF-8"
    assert reason_words(CoverageProblem(NO_RESULTS, "no results for this workload")) == "no results for this workload"
    # A message with ": " and "/" in it is never taken for a path (the old string form split it there).
    tricky = "results[0]: expected a/b: got c"
    assert reason_words(CoverageProblem(BAD_SCHEMA, tricky, "/t/run1/x.json", "run1")) == f"run1: x.json: {tricky}"


def test_env_items_and_raw_html_text():
    assert env_item("gpu", "gpu name") == "GPU name"
    assert env_item("freeze", "torch") == "packages: torch"
    assert summary_text("moss_td <b>@x") == "moss_td &lt;b&gt;@\u200bx"  # no backslash, no tag, no mention
