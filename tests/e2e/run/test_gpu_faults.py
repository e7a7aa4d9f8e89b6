"""benchmarks/gpu_faults.py (the fault matrix run on the GPU machine) works end to end on CPU: its checks
see a documented exit, the gate's message, and would see a leftover process."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.slow
def test_the_fault_matrix_runs_and_checks_on_cpu(tmp_path):
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / "gpu_faults.py"), "--no-gpu", "--out",
                           str(tmp_path), "--cases", "crash_at_start,port_taken,leave_child,sigint_mid_client"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = {r["case"]: r for r in json.loads((tmp_path / "gpu_faults.json").read_text())["rows"]}
    assert [rows[c]["exit"] for c in ("crash_at_start", "port_taken", "leave_child", "sigint_mid_client")] == [3, 2, 0, 130]
    assert all(r["ok"] and r["leftover_pids"] == [] for r in rows.values())
    assert rows["sigint_mid_client"]["message"].startswith("gate: interrupted by SIGINT")
    assert "4 of 4 cases as documented" in (tmp_path / "gpu_faults.md").read_text()
