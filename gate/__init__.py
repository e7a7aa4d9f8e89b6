"""ASR regression gate for SGLang-Omni: runs the runbook's benchmarks, judges them against baselines, reports on PRs."""

__version__ = "0.2.0"
