"""Words for readers: metric display names, coverage reasons without codes, env differences, raw-HTML text."""
from __future__ import annotations

from gate.config import load_suite
from gate.render_cells import env_item, html_text, metric_name, reason_words


def test_every_gated_metric_of_the_suite_has_a_display_name():
    suite = load_suite()
    names = {m.name for w in suite.workloads for m in w.metrics if m.kind in ("accuracy", "speed")}
    assert names and all("_" not in metric_name(n) for n in names)
    assert metric_name("throughput_samples_per_s") == "throughput (samples/s)"
    assert metric_name("some_new_metric") == "some new metric"  # unknown ids still read as words


def test_coverage_reasons_lose_their_code_and_the_path_outside_the_run():
    assert reason_words("run1: evaluated_ne_total: /abs/tree/run1/qwen3/asr_zh.json: evaluated 2015 of 2020 samples") \
        == "run1: qwen3/asr_zh.json: evaluated 2015 of 2020 samples"
    assert reason_words("run3: missing_run: /abs/tree/run3: missing; a planned scored run") \
        == "run3: missing; a planned scored run"
    assert reason_words("run1: skipped: skipped 5 samples") == "run1: skipped 5 samples"
    assert reason_words("no results for this workload") == "no results for this workload"  # no code: unchanged


def test_env_items_and_raw_html_text():
    assert env_item("gpu", "gpu name") == "GPU name"
    assert env_item("freeze", "torch") == "packages: torch"
    assert html_text("moss_td <b>@x") == "moss_td &lt;b&gt;@\u200bx"  # no backslash, no tag, no mention
