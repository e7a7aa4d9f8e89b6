"""Result trees shaped like what the benchmark job uploads for one model (built from the synthetic examples)."""
from __future__ import annotations

from tests.helpers.runs import copy_run

HEAD = "a" * 40  # the PR head the fake GitHub serves
MERGE_BASE = "b" * 40  # the merge base its compare API answers
SIDES = {"base": "/checkouts/base", "candidate": "/checkouts/pr"}  # the sides `gate run --ab` records, base first
STARTED = "2026-11-02T03:00:00.000+00:00"


def make_trees(dest, example_reports, model, *, runs=None, head=HEAD, base=MERGE_BASE):
    """The artifact a benchmark job uploads for one model: base/ and candidate/ with gate-run.json each.

    Built from the session's synthetic trees, each run's commit.txt naming the commit that side measured
    (the merge base, the PR head); `runs` overrides the run labels gate-run.json records. When the first
    look (recomputed by the one judge) asks for the second look, run4..run6 are added as `gate run --ab`
    adds them (here: run1..run3 measured again, each side its own), so honest trees follow the plan.
    """
    import json
    import shutil

    from gate.formats import runlog
    from gate.formats.config import load_suite
    from gate.publish.untrusted import expected_run_dirs

    suite = load_suite()
    dest.mkdir(parents=True, exist_ok=True)
    for side, source in zip(("base", "candidate"), example_reports["trees"], strict=True):
        for run_dir in sorted(p for p in source.iterdir() if p.is_dir() and p.name.startswith("run")):
            target = dest / side / run_dir.name
            target.mkdir(parents=True)
            if (run_dir / "freeze.txt").is_file():
                shutil.copy(run_dir / "freeze.txt", target / "freeze.txt")
            (target / "commit.txt").write_text((base if side == "base" else head) + "\n", encoding="utf-8")
            shutil.copytree(run_dir / model, target / model)
        names = runs if runs is not None else expected_run_dirs(suite)
        log = dict(runlog.skeleton(SIDES, {f"{side}/{name}": "completed" for name in names}, started=STARTED,
                                   status="completed"), exit_code=0)
        (dest / side / "gate-run.json").write_text(json.dumps(log), encoding="utf-8")
    if runs is None:
        _add_the_second_look(dest, suite, model)
    return dest


def _add_the_second_look(dest, suite, model):
    import json

    from gate.judging import judge

    request = judge.Request(base=dest / "base", candidate=dest / "candidate", suite=suite, design=judge.Design.TWO_LOOKS)
    first = judge.first_look(request, model)
    extra = [run for run in first.expected if not (dest / "base" / run).exists()]
    for side in ("base", "candidate"):
        for run in extra:
            copy_run(dest / side / f"run{int(run[3:]) - 3}", dest / side / run)  # a new measurement, not a copy
        log_path = dest / side / "gate-run.json"
        log = json.loads(log_path.read_text(encoding="utf-8"))
        log["runs"].update({f"{side}/{run}": "completed" for run in extra})
        log_path.write_text(json.dumps(log), encoding="utf-8")
