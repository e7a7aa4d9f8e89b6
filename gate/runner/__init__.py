"""`gate run`: the runbook (Steps 3-6) as code on one GPU.

plan.py       commands from the suite, run order (A/B interleave), --dry-run text
preflight.py  checks before the GPU is touched (checkout, venv pins, snapshots, datasets offline, GPU, CPU set)
gpu.py        pynvml facts, GPU-free waits, telemetry samples, the per-GPU lock
procgroup.py  process groups the gate starts: new session, tag, TERM-then-KILL, leftovers by record
server.py     port check, server start, /health wait (fail fast), stop
clients.py    one client run with a timeout while the server is watched
telemetry.py  ~1 Hz GPU sampling thread and its summary (telemetry.json)
execute.py    the orchestration: runs, resume, signals, progress, gate-run.json
"""
