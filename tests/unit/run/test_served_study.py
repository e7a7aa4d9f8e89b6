"""The served noise study's analysis (benchmarks/noise/served.py) on the H200 lease it recorded: the table in
served-A.md is what the recorded runs give, and two leases combine into the between-lease table."""
from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "benchmarks"))

from noise import served  # noqa: E402

RESULTS = REPO / "benchmarks" / "noise" / "results"


def test_the_recorded_table_is_what_the_recorded_runs_give():
    study = json.loads((RESULTS / "served-A.json").read_text())
    study["summary"] = served.summarise(study)
    assert served.markdown(study) == (RESULTS / "served-A.md").read_text()
    graphs = study["summary"]["graphs-b32/asr_en"]["throughput"]
    assert graphs["n"] == 4 and 0 < graphs["sigma_pct"] < graphs["sigma_ci_pct"][1]


def test_two_leases_combine(tmp_path):
    study = json.loads((RESULTS / "served-A.json").read_text())
    shifted = json.loads(json.dumps(study))
    shifted["lease"] = "B"
    for config in shifted["configs"]:
        for run in config["runs"]:
            for workload in served.WORKLOADS:
                if isinstance(run.get(workload, {}).get("throughput_samples_per_s"), float):
                    run[workload]["throughput_samples_per_s"] *= 1.10
    (tmp_path / "A.json").write_text(json.dumps(study))
    (tmp_path / "B.json").write_text(json.dumps(shifted))
    text = served.combine([tmp_path / "A.json", tmp_path / "B.json"], tmp_path)
    row = next(line for line in text.splitlines() if line.startswith("| graphs-b32/asr_en"))
    assert "+10.00%" in row
