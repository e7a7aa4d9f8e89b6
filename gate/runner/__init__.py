"""`gate run`: the runbook (Steps 3-6) as code on one GPU.

plan.py       commands from the suite, run order (A/B interleave), --dry-run text
preflight.py  checks before the GPU is touched (checkout, venv pins, snapshots, datasets offline, GPU, CPU set)
gpu.py        pynvml facts, GPU-free waits, telemetry samples, the per-GPU lock
procgroup.py  process groups the gate starts: new session, tag, TERM-then-KILL, leftovers by tag, subreaper
ledger.py     <out>/gate-processes.json: every group recorded before it starts; leftovers stopped next time
cancel.py     SIGINT/SIGTERM: never abandon a stop; a second signal KILLs at once
boundary.py   named step boundaries (a no-op hook in production; tests signal the gate at each one)
outfiles.py   every file the runner writes under --out: atomic, errno named, exit 3, held during a stop
waits.py      say what a long wait waits for
server.py     port check, server start, /health wait with backoff (fail fast), stop, probe-free log tail
clients.py    one client run with a timeout while the server is watched; progress from its tqdm lines
looks.py      A/B two looks: extension plan, --max-runs, outlier rule, the decider (compare + gate.stats.looks)
stamp.py      where a measurement was made (GPU, driver, packages); stale calibrations
telemetry.py  ~1 Hz GPU and host (load, CPU steal) sampling thread and its summary (telemetry.json)
logbook.py    gate-run.json: every step as it starts and ends, earlier attempts kept
progress.py   progress lines and the ETA (with the second look's runs until it is decided)
cycle.py      ServerCycle: port, spawn under a signal shield, clients, shielded stop, GPU free, coverage
twolooks.py   Looks (A/B): calibration check, outlier re-measures (citing telemetry), the second look
execute.py    Runner, the orchestration: preflight, locks, runs in order, resume, one run's files, the
              outcome; it builds the Logbook, the ServerCycle and the Looks, each handed what it uses
"""
