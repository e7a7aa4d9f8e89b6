"""GPU noise proxy study (issue 11, item 6): A/A runs of a batched decoding workload, one fresh process per run.

Run it with `python benchmarks/gpu_noise.py`; see its docstring. Modules:
config (the workload's size, no torch), workload (the random-initialised decoder and one measured run; needs torch), analysis (σ_run with a
chi-square CI, first-run and warm-up effects, trend, lag-1 autocorrelation, A/A pairs; numpy/scipy only),
report (JSON and markdown).
"""
