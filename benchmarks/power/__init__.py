"""The verdict power benchmark (issue 10): a vectorised simulator of gate/stats's rules, checked against
`gate.judging.compare.compare` on shared replicates. Entry point: benchmarks/verdict_power.py."""
