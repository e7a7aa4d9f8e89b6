"""report.json's issue-52 fields: a report written before them reads them as "not said" (above_half None, few_sessions
false); a present value is read strictly."""
from __future__ import annotations

import json

import pytest

from gate.formats.report import Report
from gate.formats.typedjson import SchemaMismatch


def _report(example_report: dict) -> dict:
    return json.loads(json.dumps(example_report))


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    import numpy as np

    from gate.formats.config import load_suite
    from gate.judging.compare import compare
    from tests.helpers.memory_sides import memory_side

    suite = load_suite()
    ids, ref_len = tuple(f"s{i}" for i in range(20)), np.full(20, 100)
    base = np.full((3, 20), 10)
    cand = base.copy()
    cand[:, 0] = 70
    values = {"cer": [0.1] * 3, "cp_cer": [0.1] * 3, "cer_valid_samples": [20.0] * 3,
              "cp_cer_valid_samples": [20.0] * 3, "speaker_timestamp_der": [0.1] * 3,
              "speaker_timestamp_der_skipped_parse_error": [0.0] * 3, "failed_requests": [0.0] * 3,
              "throughput_qps": [1.0, 1.01, 0.99], "latency_mean_s": [1.0] * 3, "latency_p95_s": [2.0, 2.01, 1.99],
              "rtf_mean": [0.1] * 3}
    sides = [memory_side(suite, values={"moss_td/aishell4_long": values}, label=label,
                         samples={"moss_td/aishell4_long": {m: (ids, ref_len, e) for m in ("cer", "cp_cer")}})
             for label, e in (("b", base), ("c", cand))]
    return compare(sides[0], sides[1], suite, models=("moss_td",)).to_json()


def test_a_report_before_issue_52_reads_not_said(written):
    old = _report(written)
    for row in old["rows"]:
        row.pop("above_half", None)
        row.pop("few_sessions", None)
    report = Report.from_json(old)
    assert all(r.above_half is None and not r.few_sessions for r in report.rows)


def test_above_half_round_trips_and_is_read_strictly(written):
    rows = [r for r in Report.from_json(written).rows if r.above_half is not None]
    assert rows and rows[0].above_half == (0.0, 1.0)
    bad = _report(written)
    next(r for r in bad["rows"] if r.get("above_half") is not None)["above_half"] = ["one", 2]
    with pytest.raises(SchemaMismatch):
        Report.from_json(bad)
