"""Stand-in (test double) of sglang-omni's benchmarks package; see tests/standin/README.md."""
