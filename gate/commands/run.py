"""`gate run`: the runbook (Steps 3-6) as code on one GPU.

Exit codes: 0 every run complete; 2 bad input or preflight failure; 3 a run failed (server died or
hung, client failed, coverage incomplete, GPU not freed); 4 another gate holds the GPU;
128+N interrupted by signal N (130 SIGINT, 143 SIGTERM). Completed runs are always kept.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from gate.config import load_suite
from gate.errors import GateError, InputError
from gate.runner.execute import Cancelled, RunRequest, Runner
from gate.runner.gpu import NoGpu, NvmlGpu
from gate.runner.plan import Setup, Side, dry_run_lines


def _csv(value: str | None) -> tuple[str, ...]:
    return tuple(v.strip() for v in (value or "").split(",") if v.strip())


def _default_hf_hub() -> Path:
    # The runbook's HF_HUB; honour HF_HOME like its Step 3 note says. Only this CLI entry reads os.environ.
    if os.environ.get("HF_HUB"):
        return Path(os.environ["HF_HUB"])
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]) / "hub"
    return Path.home() / ".cache" / "huggingface" / "hub"


@click.command("run")
@click.option("--checkout", type=click.Path(path_type=Path), help="sglang-omni checkout to measure (runbook Step 2).")
@click.option("--ab", nargs=2, type=click.Path(path_type=Path), metavar="BASE CANDIDATE",
              help="A/B mode: two checkouts on the same GPU, interleaved warm A, warm B, A, B, B, A, A, B.")
@click.option("--out", required=True, type=click.Path(path_type=Path), help="Results root; runs go to OUT/NAME/run<R>.")
@click.option("--name", default=None, help="Result tree name (runbook NAME); default 'main'.")
@click.option("--names", default=None, help="A/B: the two tree names, 'A,B' (default base,candidate).")
@click.option("--models", default=None, help="Comma-separated model keys (qwen3, whisper, fun, moss_td).")
@click.option("--label", "labels", multiple=True, help="PR label(s) selecting models, e.g. run-qwen3-asr.")
@click.option("--runs", default=None, help="Comma-separated runs in order (default: warm + the suite's scored runs).")
@click.option("--gpu", "gpu_index", type=int, default=None,
              help="NVML index of the GPU to use when several are visible (sets CUDA_VISIBLE_DEVICES for the server).")
@click.option("--no-gpu", is_flag=True, help="Run without a GPU (tests, stand-in): no GPU waits, no telemetry.")
@click.option("--port", type=int, default=None, help="Server port (default: the suite's, 8000).")
@click.option("--hf-hub", type=click.Path(path_type=Path), default=None, help="HF hub cache holding the snapshots (default $HF_HUB, else $HF_HOME/hub, else ~/.cache/huggingface/hub).")
@click.option("--torchinductor-cache", type=click.Path(path_type=Path), default=None,
              help="TORCHINDUCTOR_CACHE_DIR (default OUT/torchinductor).")
@click.option("--python", "python", type=click.Path(path_type=Path), default=None,
              help="The checkout's python (default CHECKOUT/.venv/bin/python); for a prepared environment.")
@click.option("--suite", "suite_path", type=click.Path(path_type=Path), default=None, help="Suite YAML (default: built in).")
@click.option("--resume", is_flag=True, help="Skip runs whose coverage is already complete for the same commit.")
@click.option("--dry-run", is_flag=True, help="Print every command in order and exit.")
@click.option("--lock-dir", type=click.Path(path_type=Path), default=Path("/tmp"), show_default=True,
              help="Where the per-GPU lock file lives.")
@click.option("--lock-wait", type=float, default=0.0, show_default=True,
              help="Seconds to wait for another gate on this GPU before failing.")
@click.option("--port-wait", type=float, default=30.0, show_default=True,
              help="Seconds to wait for a busy port to be released before failing.")
@click.option("--skip-venv-check", is_flag=True,
              help="Do not run the checkout's .github/scripts/verify_omni_installed_pins.py (runbook Step 2).")
@click.option("--no-dataset-fingerprints", is_flag=True, help="Do not record MOSS dataset fingerprints (slow to load).")
def command(checkout, ab, out, name, names, models, labels, runs, gpu_index, no_gpu, port, hf_hub,
            torchinductor_cache, python, suite_path, resume, dry_run, lock_dir, lock_wait, port_wait, skip_venv_check,
            no_dataset_fingerprints):
    """Run the ASR benchmarks of one checkout (or two, --ab) and write the runbook's result tree.

    \b
    Exit codes:
      0    every run complete
      2    bad input or a failed preflight
      3    a run failed (server died or hung, client failed, coverage incomplete, GPU not freed)
      4    another gate holds the GPU
    Completed runs are always kept.

    \b
    Examples:
      gate run --checkout ~/sglang-omni --out results --name main --models qwen3
      gate run --ab ~/omni-base ~/omni-pr --out results --label run-qwen3-asr
      gate run --checkout ~/sglang-omni --out results --models qwen3 --dry-run
    """
    suite = load_suite(suite_path)
    if bool(checkout) == bool(ab):
        raise InputError("give exactly one of --checkout DIR or --ab BASE CANDIDATE")
    if ab:
        tree_names = _csv(names) or ("base", "candidate")
        if len(tree_names) != 2 or tree_names[0] == tree_names[1]:
            raise InputError(f"--names: expected two different names 'A,B', got {names!r}")
        if python:
            raise InputError("--python cannot be used with --ab (each checkout uses its own .venv/bin/python)")
        pairs = list(zip(tree_names, ab))
    else:
        pairs = [(name or "main", checkout)]
    sides = tuple(Side(n, Path(c).resolve(), Path(python).resolve() if python else Path(c).resolve() / ".venv" / "bin" / "python")
                  for n, c in pairs)
    for side in sides:
        if "/" in side.name or side.name in ("", ".", ".."):
            raise InputError(f"--name: {side.name!r} is not a plain directory name")
    selected = _csv(models)
    if labels:
        selected = tuple(dict.fromkeys(selected + suite.models_for_labels(list(labels))))
        if not selected:
            raise InputError(f"--label: none of {', '.join(labels)} selects a model; known labels: "
                             f"{', '.join(suite.labels)}")
    selected = tuple(dict.fromkeys(w.model for w in suite.workloads_for(selected or None)))  # suite order
    run_names = _csv(runs) or (suite.warm_run, *suite.scored_runs)
    bad = [r for r in run_names if not r.replace("_", "").replace("-", "").isalnum()]
    if bad:
        raise InputError(f"--runs: {bad[0]!r} is not a plain run name (like warm, 1, 2); runs go to OUT/NAME/run<R>")
    if len(set(run_names)) != len(run_names):
        raise InputError(f"--runs: duplicate run names in {runs!r}")
    out = Path(out).resolve()
    setup = Setup(out=out, port=port or suite.server.port, hf_hub=Path(hf_hub or _default_hf_hub()).resolve(),
                  torchinductor_cache=Path(torchinductor_cache or out / "torchinductor").resolve())
    request = RunRequest(suite=suite, sides=sides, setup=setup, runs=run_names, models=selected, gpu_index=gpu_index,
                         resume=resume, lock_dir=lock_dir, lock_wait_s=lock_wait,
                         fingerprints=not no_dataset_fingerprints, port_wait_s=port_wait, venv_check=not skip_venv_check, argv=tuple(sys.argv))
    if dry_run:
        for line in dry_run_lines(suite, request.steps()):
            click.echo(line)
        return
    gpu = NoGpu() if no_gpu else NvmlGpu()
    runner = Runner(request, gpu=gpu, base_env=dict(os.environ))
    try:
        outcome = runner.run()
    except Cancelled as exc:
        click.echo(f"gate: interrupted by {exc}; server stopped, completed runs kept "
                   f"(see {out}/<name>/gate-run.json)", err=True)
        sys.exit(exc.exit_code)
    except GateError:
        raise
    done = ", ".join(outcome.completed) or "none"
    skipped = f"; skipped (already complete): {', '.join(outcome.skipped)}" if outcome.skipped else ""
    click.echo(f"gate run: completed {done}{skipped}", err=True)
    for side in sides:
        click.echo(f"gate run: results in {out / side.name}; next: gate summarize {out / side.name}", err=True)
