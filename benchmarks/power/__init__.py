"""Verdict power benchmark (issue 6): false alarms and detection power of the gate vs other tools' rules.

Run it with `python benchmarks/verdict_power.py`; see benchmarks/README.md. Modules:
model (the simulated truth and its noise), scenarios (what a PR changes), rules (the competing decision
rules), gate_rule (the gate itself, through load_side + compare), experiment (the replicate loop),
report (table and plot).
"""
