"""gate/suites/README.md's worked example (issue 52): adding a model is configuration. Its YAML, put where it says,
makes a suite that loads, and the gate writes and reads the new model's trees with no code changed."""
from __future__ import annotations

import re
from pathlib import Path

from gate.examples import ExampleSpec, write_example_tree
from gate.formats.config import default_suite_path, load_suite
from gate.reading.results import read_tree

README = Path(__file__).resolve().parents[3] / "gate" / "suites" / "README.md"


def _with_readme_model(dest: Path) -> Path:
    blocks = re.findall(r"```yaml\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)
    model, label, workloads, streamed = blocks
    text = default_suite_path().read_text(encoding="utf-8")
    text = text.replace("\nmodels:\n", "\nmodels:\n" + model, 1).replace("\nlabels:\n", "\nlabels:\n" + label, 1)
    dest.write_text(text.rstrip("\n") + "\n" + workloads + streamed, encoding="utf-8")
    return dest


def test_the_worked_example_is_a_valid_suite_and_its_trees_read(tmp_path):
    suite = load_suite(_with_readme_model(tmp_path / "suite.yaml"))
    assert suite.models_for_labels(["run-nemotron-asr"]) == ("nemotron",)
    workloads = {w.id: w for w in suite.workloads_for(("nemotron",))}
    assert set(workloads) == {"nemotron/asr_en", "nemotron/asr_zh", "nemotron/asr_en_stream"}
    assert workloads["nemotron/asr_en_stream"].stream and not workloads["nemotron/asr_en"].stream
    root = write_example_tree(tmp_path / "tree", suite, ExampleSpec(models=("nemotron",), runs=("1", "2", "3")))
    tree = read_tree(root, suite, models=("nemotron",))
    for workload_id in workloads:
        assert tree.complete(workload_id), [r.coverage.problems for r in tree.workloads[workload_id]]
    assert all(r.metrics["text_ttft_p95_s"] is not None for r in tree.workloads["nemotron/asr_en_stream"])
