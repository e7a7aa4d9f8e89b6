"""`gate history example-nights`: synthetic nightly result trees with one planted step, for the quick start.

Built with gate.examples (the same schema-exact writer as `gate example`), two models (qwen3 and
whisper), three scored runs a night. Each night has a night-to-night offset (σ 1%) on top of the
writer's run noise, and from night STEP_NIGHT on qwen3/asr_en is 5% slower (latency and RTF up
with it). Per-utterance raw files are dropped (history needs the summaries only), so a night is
~100 kB. Each run's commit.txt carries the night's time as its modification time: that is where
`gate history import` reads the date from.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import os
import shutil
from pathlib import Path

import numpy as np

from gate.examples.spec import SYNTHETIC_NOTICE, ExampleSpec
from gate.examples.trees import write_example_tree
from gate.formats.config import Suite

MODELS = ("qwen3", "whisper")
STEP_WORKLOAD = "qwen3/asr_en"
STEP_FACTOR = 0.95  # throughput multiplier from STEP_NIGHT on
STEP_NIGHT = 20  # 0-based
NIGHT_SIGMA = 0.01
FIRST_NIGHT = _dt.datetime(2026, 10, 1, 2, 0, tzinfo=_dt.timezone.utc)
NOTICE = SYNTHETIC_NOTICE.replace("`gate example`", "`gate history example-nights`")  # says which command wrote it


def first_night(nights: int) -> _dt.datetime:
    """FIRST_NIGHT, or earlier when that many nights from it would reach past yesterday: the history refuses a
    night in the future (gate.history.records), so the example's last night is never after today."""
    yesterday = _dt.datetime.now(_dt.timezone.utc).replace(hour=2, minute=0, second=0, microsecond=0) \
        - _dt.timedelta(days=1)
    return min(FIRST_NIGHT, yesterday - _dt.timedelta(days=nights - 1))


def night_commit(i: int) -> str:
    return hashlib.sha1(f"synthetic main commit {i}".encode()).hexdigest()


def write_example_nights(out: Path, suite: Suite, *, nights: int = 30) -> list[Path]:
    """out/night-<NN>/ for NN = 01..nights; returns the tree paths, oldest first."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(20261001)
    first = first_night(nights)
    trees = []
    for i in range(nights):
        offsets = {w.id: float(np.exp(rng.normal(0, NIGHT_SIGMA))) for w in suite.workloads_for(MODELS)}
        if i >= STEP_NIGHT:
            offsets[STEP_WORKLOAD] *= STEP_FACTOR
        root = out / f"night-{i + 1:02d}"
        write_example_tree(root, suite, ExampleSpec(seed=1000 + i, models=MODELS, runs=("1", "2", "3"),
                                                    commit=night_commit(i), speed_factor=offsets))
        for raw in root.glob("run*/*/raw_*"):
            shutil.rmtree(raw)
        (root / "SYNTHETIC.txt").write_text(NOTICE + "\n", encoding="utf-8")
        stamp = (first + _dt.timedelta(days=i)).timestamp()
        for commit_file in root.glob("run*/commit.txt"):
            os.utime(commit_file, (stamp, stamp))
        trees.append(root)
    (out / "README.txt").write_text(
        NOTICE + "\n\n" f"{nights} synthetic nights of main (models {', '.join(MODELS)}), one a day from "
        f"{first.date()}. From night {STEP_NIGHT + 1} on, {STEP_WORKLOAD} is "
        f"{round((1 - STEP_FACTOR) * 100)}% slower (throughput; latency and RTF up with it).\n\n"
        f"Try: gate history import --history {out}/history {out}/night-*  &&  gate history --history {out}/history\n",
        encoding="utf-8")
    return trees
