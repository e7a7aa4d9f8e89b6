"""`gate run`: the runbook (Steps 3-6) as code on one GPU.

Exit codes: 0 every run complete; 2 bad input or preflight failure (an --out that cannot be created or
written included); 3 a run failed (server died or hung, client failed, coverage incomplete, GPU not freed,
a file under --out could not be written: full disk, named with its errno, once everything is stopped); 4 another gate holds the GPU or the out dir;
128+N interrupted by signal N (130 SIGINT, 143 SIGTERM, 129 SIGHUP, 131 SIGQUIT). Completed runs are always kept.
"""
from __future__ import annotations

import dataclasses
import os
import shlex
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from gate.commands._options import calibration_option, models_option, suite_option
from gate.formats.abplan import DEFAULT_MAX_RUNS, EXTENSION_RUNS
from gate.formats.config import Suite, load_suite
from gate.formats.errors import InputError
from gate.stats.outlier_rule import rule_text as outlier_rule_text

if TYPE_CHECKING:
    from gate.runner.duet import DuetPlan
    from gate.runner.plan import Arm
    from gate.runner.request import RunRequest


def check_out_dir(out: Path) -> None:
    """--out must be a folder the gate can create and write (exit 2 before anything runs, one line)."""
    from gate.runner.outfiles import os_error_text

    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=out, prefix=".gate-write-check.", delete=True)
        probe.close()
    except OSError as exc:
        raise InputError(f"cannot create or write the out dir ({os_error_text(exc)}); expected a writable folder",
                         path=out) from None


def _csv(value: str | None) -> tuple[str, ...]:
    return tuple(v.strip() for v in (value or "").split(",") if v.strip())


def _hf_paths(hf_hub: Path | None, hf_home: Path | None) -> tuple[Path, Path | None]:
    """(hub cache, HF_HOME) for the checkout's processes. Only this CLI entry reads os.environ.

    HF_HOME: --hf-home, else $HF_HOME, else None (inherited). Hub: --hf-hub, else $HF_HUB (the runbook's
    variable), else HF_HOME/hub, else ~/.cache/huggingface/hub (the runbook's Step 3 note)."""
    home = hf_home or (Path(os.environ["HF_HOME"]) if os.environ.get("HF_HOME") else None)
    if hf_hub is None:
        if os.environ.get("HF_HUB"):
            hf_hub = Path(os.environ["HF_HUB"])
        elif home is not None:
            hf_hub = home / "hub"
        else:
            hf_hub = Path.home() / ".cache" / "huggingface" / "hub"
    return hf_hub.resolve(), home.resolve() if home else None


def _with_timeouts(suite: Suite, startup_s: float | None, client_s: float | None) -> Suite:
    """The suite with the start-up and client timeouts given on the command line (no copy of the YAML needed)."""
    if startup_s is not None:
        suite = dataclasses.replace(suite, server=dataclasses.replace(suite.server, startup_timeout_s=startup_s))
    if client_s is not None:
        suite = dataclasses.replace(suite, workloads=tuple(
            dataclasses.replace(w, client=dataclasses.replace(w.client, timeout_s=client_s)) for w in suite.workloads))
    return suite


def _tree_decider(suite: Suite, base: Path, candidate: Path):
    """The real decision functions, built once the runner knows whether the calibration may be used."""
    def make(calibration: Path | None):
        from gate.judging import look_decider
        return look_decider.tree_decider(suite, base, candidate, calibration)
    return make


def _sigma(suite: Suite, models: tuple[str, ...]):
    def make(calibration: Path | None):
        from gate.judging.outliers import calibration_sigma
        from gate.reading.side_loader import load_side
        return calibration_sigma(None if calibration is None else load_side(calibration, suite, models).calibration or {})
    return make


def next_commands(out: Path, sides: tuple[Arm, ...], models: tuple[str, ...], suite: Suite,
                  suite_path: Path | None, calibration: Path | None) -> list[str]:
    """The command to run after `gate run`: one that works on exactly what was measured."""
    extra = []
    if set(models) != set(suite.models):
        extra += ["--models", ",".join(models)]
    if suite_path is not None:
        extra += ["--suite", str(suite_path)]
    if len(sides) == 2:
        cal = ["--calibration", str(calibration)] if calibration else []
        return [shlex.join(["gate", "compare", str(out / sides[0].name), str(out / sides[1].name), *extra, *cal])]
    return [shlex.join(["gate", "summarize", str(out / side.name), *extra]) for side in sides]


@click.command("run")
@click.option("--checkout", type=click.Path(path_type=Path), help="sglang-omni checkout to measure (runbook Step 2).")
@click.option("--ab", nargs=2, type=click.Path(path_type=Path), metavar="BASE CANDIDATE",
              help="A/B mode: two checkouts on the same GPU, interleaved warm A, warm B, A, B, B, A, A, B; "
                   "models the first look leaves undecided get 3+3 more runs (B, A, A, B, B, A).")
@click.option("--out", required=True, type=click.Path(path_type=Path), help="Results root; runs go to OUT/NAME/run<R>.")
@click.option("--name", default=None, help="Result tree name (runbook NAME); default 'main'.")
@click.option("--names", default=None, help="A/B: the two tree names, 'A,B' (default base,candidate).")
@models_option("every model of the suite (or those --label selects)")
@click.option("--label", "labels", multiple=True, help="PR label(s) selecting models, e.g. run-qwen3-asr.")
@click.option("--runs", default=None, help="Comma-separated runs in order (default: warm + the suite's scored runs). "
                                            "A/B with --runs: one look, no extension.")
@click.option("--one-look", is_flag=True, help="A/B: stop after the first 3+3 runs (no second look).")
@click.option("--max-runs", type=click.IntRange(min=2), default=DEFAULT_MAX_RUNS, show_default=True,
              help="A/B: most scored runs per model, both sides, re-measures of outlier runs included.")
@click.option("--no-remeasure", is_flag=True, help="A/B: do not re-measure outlier runs.")
@click.option("--design", type=click.Choice(["interleave", "duet"]), default=None,
              help="A/B: interleave (a fresh server per run, sides alternating; the runbook's) or duet (both servers "
                   "resident on one GPU, alternating one-pass blocks, judged per session). Default: the suite's "
                   "`design` of the models (interleave).")
@click.option("--sessions", default="5,10", show_default=True, metavar="K1,K",
              help="--design duet: sessions before the look, and at most for a model the look leaves undecided.")
@click.option("--pairs", type=click.IntRange(min=1, max=20), default=1, show_default=True,
              help="--design duet: block pairs (A B or B A) per session.")
@click.option("--mem-fraction-static", "mem_fraction", type=click.FloatRange(min=0, min_open=True, max=0.5), default=None,
              help="--design duet: each server's --mem-fraction-static (default: half the GPU's free memory less the "
                   "contexts, refused where the model cannot fit twice).")
@click.option("--duet-fallback", is_flag=True,
              help="--design duet: where both servers cannot fit on the GPU, run the interleave instead of failing.")
@calibration_option("A/B: baseline file whose A/A calibration the look decisions and the outlier rule use.",
                    dest="calibration", folder_refused=False)
@click.option("--gpu", "gpu_index", type=int, default=None,
              help="NVML index of the GPU to use when several are visible (sets CUDA_VISIBLE_DEVICES for the server).")
@click.option("--no-gpu", is_flag=True, help="Run without a GPU (tests, stand-in): no GPU waits, no telemetry.")
@click.option("--port", type=int, default=None, help="Server port (default: the suite's, 8000).")
@click.option("--hf-hub", type=click.Path(path_type=Path), default=None,
              help="HF hub cache holding the model snapshots and datasets; the server and clients use it too "
                   "(HF_HUB_CACHE). Default $HF_HUB, else HF_HOME/hub, else ~/.cache/huggingface/hub.")
@click.option("--hf-home", type=click.Path(path_type=Path), default=None,
              help="HF_HOME for the server, clients and dataset check (default $HF_HOME, else inherited).")
@click.option("--startup-timeout", type=click.FloatRange(min=0, min_open=True), default=None, metavar="SECONDS",
              help="Server start-up timeout (default: the suite's, 1800).")
@click.option("--client-timeout", type=click.FloatRange(min=0, min_open=True), default=None, metavar="SECONDS",
              help="Timeout of every client (default: the suite's per workload, 3600 or 7200).")
@click.option("--torchinductor-cache", type=click.Path(path_type=Path), default=None,
              help="TORCHINDUCTOR_CACHE_DIR (default OUT/torchinductor).")
@click.option("--python", "python", type=click.Path(path_type=Path), default=None,
              help="The checkout's python (default CHECKOUT/.venv/bin/python); for a prepared environment. Kept "
                   "as given: a venv's bin/python link is not resolved to its base interpreter.")
@suite_option
@click.option("--resume", is_flag=True, help="Skip runs the last attempt completed (same commit, coverage complete); "
                                             "a run it left interrupted or failed is redone; an earlier gate-run.json "
                                             "that cannot be read is an error (exit 2), not 'no earlier attempt'.")
@click.option("--dry-run", is_flag=True, help="Print every command in order (preflight included) and exit.")
@click.option("--components", "components_path", type=click.Path(path_type=Path), default=None,
              help="--dry-run: a gate-components/1 file (σ_start, σ_pass, start and pass cost per model); the dry run "
                   "then plans by detectable change. Default: those --calibration's baseline stores (A/A runs with passes).")
@click.option("--target-change", type=click.FloatRange(min=0, min_open=True, max=100), default=3.0, show_default=True,
              metavar="PERCENT", help="--components: the change the plan must detect with 80% power.")
@click.option("--lock-dir", type=click.Path(path_type=Path), default=Path("/tmp"), show_default=True,
              help="Where the per-GPU lock file lives.")
@click.option("--lock-wait", type=float, default=0.0, show_default=True,
              help="Seconds to wait for another gate on this GPU before failing.")
@click.option("--port-wait", type=float, default=30.0, show_default=True,
              help="Seconds to wait for a busy port to be released before failing.")
@click.option("--progress-every", type=click.FloatRange(min=1), default=60.0, show_default=True, metavar="SECONDS",
              help="How often to print a running client's progress.")
@click.option("--skip-venv-check", is_flag=True,
              help="Do not run the checkout's .github/scripts/verify_omni_installed_pins.py (runbook Step 2).")
@click.option("--no-dataset-fingerprints", is_flag=True, help="Do not record MOSS dataset fingerprints (slow to load).")
def command(**options: Any) -> None:
    """Run the ASR benchmarks of one checkout (or two, --ab) and write the runbook's result tree.

    \b
    Examples:
      gate run --checkout ~/sglang-omni --out results --models qwen3
      gate run --checkout ~/sglang-omni --out results --dry-run     # every command, nothing runs
      gate run --checkout ~/sglang-omni --out r --dry-run --components c.json --target-change 3  # + cycles for 3%
      gate run --ab base candidate --out results --models whisper   # A/B on one GPU, two looks
      gate run --ab ~/omni-base ~/omni-pr --out results --label run-qwen3-asr
      gate run --checkout ~/sglang-omni --out results --resume      # after an interruption
      gate run --checkout ~/sglang-omni --out results --hf-home /data/hf --startup-timeout 3600

    \b
    Exit codes:
      0    every run complete (then: gate summarize, or gate compare after --ab)
      2    bad input or a preflight problem (one line each), --out not writable, --resume with an
           earlier gate-run.json that cannot be read
      3    a run failed: server died or hung, client failed, coverage incomplete, GPU not freed,
           or a file under --out could not be written (full disk: path and errno; all stopped first)
      4    another gate run holds this GPU (or this out dir)
      130  interrupted by SIGINT, 143 by SIGTERM, 129 by SIGHUP, 131 by SIGQUIT (the server and
           clients are stopped first)
    Completed runs are always kept.
    """
    _run(RunOptions(**options))


@dataclass(frozen=True)
class RunOptions:
    """`gate run`'s options, typed (click's parameter names; see each option's --help)."""

    checkout: Path | None
    ab: tuple[Path, Path] | None
    out: Path
    name: str | None
    names: str | None
    models: tuple[str, ...]
    labels: tuple[str, ...]
    runs: str | None
    one_look: bool
    max_runs: int
    no_remeasure: bool
    design: str | None
    sessions: str
    pairs: int
    mem_fraction: float | None
    duet_fallback: bool
    calibration: Path | None
    gpu_index: int | None
    no_gpu: bool
    port: int | None
    hf_hub: Path | None
    hf_home: Path | None
    startup_timeout: float | None
    client_timeout: float | None
    torchinductor_cache: Path | None
    python: Path | None
    suite_path: Path | None
    resume: bool
    dry_run: bool
    components_path: Path | None
    target_change: float
    lock_dir: Path
    lock_wait: float
    port_wait: float
    progress_every: float
    skip_venv_check: bool
    no_dataset_fingerprints: bool


@dataclass(frozen=True)
class _Planned:
    """What the options decide: the runner's request, the sides and models, and whether A/B has two looks."""

    request: RunRequest
    sides: tuple[Arm, ...]
    models: tuple[str, ...]
    two_looks: bool
    duet: DuetPlan | None = None  # --design duet (gate.runner.duet)


def _run(options: RunOptions) -> None:
    # The runner loads here: --help and usage errors answer before httpx and numpy are imported.
    try:
        import gate.runner.cancel
        import gate.runner.execute
        import gate.runner.gpu
        import gate.runner.looks
        import gate.runner.outfiles
        import gate.runner.plan
        import gate.runner.preflight
        import gate.runner.request  # noqa: F401 (all the runner needs, loaded before any check)
    except ModuleNotFoundError as exc:  # the [runner] extra is not installed: one line naming it
        from gate.cli import missing_extra

        raise missing_extra("run", exc) from None
    suite = _with_timeouts(load_suite(options.suite_path), options.startup_timeout, options.client_timeout)
    planned = _plan(options, suite)
    if options.dry_run:
        _print_dry_run(options, suite, planned)
        return
    _execute(options, suite, planned)


def _sides(options: RunOptions) -> tuple[Arm, ...]:
    """One side (--checkout) or two (--ab), each a checkout and its python; bad combinations are one line."""
    from gate.runner.plan import Arm

    checkout, ab, python = options.checkout, options.ab, options.python
    if bool(checkout) == bool(ab):
        raise InputError("give exactly one of --checkout DIR or --ab BASE CANDIDATE")
    if ab:
        tree_names = _csv(options.names) or ("base", "candidate")
        if len(tree_names) != 2 or tree_names[0] == tree_names[1]:
            raise InputError(f"--names: expected two different names 'A,B', got {options.names!r}")
        if python:
            raise InputError("--python cannot be used with --ab (each checkout uses its own .venv/bin/python)")
        pairs = list(zip(tree_names, ab, strict=True))
        base_dir, cand_dir = (Path(c).resolve() for c in ab)
        if base_dir == cand_dir or (base_dir / ".venv").resolve() == (cand_dir / ".venv").resolve():
            # an A/B of one checkout (or one shared .venv) measures the same code twice (README: never share a .venv)
            raise InputError(f"--ab {ab[0]} {ab[1]}: both sides are the same checkout or share one .venv; "
                             "expected two checkouts, each with its own .venv")
    else:
        assert checkout is not None
        pairs = [(options.name or "main", checkout)]
    # --python is made absolute, never resolved: a venv's bin/python is a link to the base interpreter, and
    # only started through the link does Python find the venv (its pyvenv.cfg beside it).
    given = Path(os.path.abspath(python)) if python else None
    sides = tuple(Arm(n, Path(c).resolve(), given or Path(c).resolve() / ".venv" / "bin" / "python") for n, c in pairs)
    for side in sides:
        if "/" in side.name or side.name in ("", ".", ".."):
            raise InputError(f"--name: {side.name!r} is not a plain directory name")
    return sides


def _models(options: RunOptions, suite: Suite) -> tuple[str, ...]:
    """--models and the models --label selects, in suite order (all of the suite's when neither is given)."""
    selected = options.models
    if options.labels:
        selected = tuple(dict.fromkeys(selected + suite.models_for_labels(list(options.labels))))
        if not selected:
            raise InputError(f"--label: none of {', '.join(options.labels)} selects a model; known labels: "
                             f"{', '.join(suite.labels)}")
    return tuple(dict.fromkeys(w.model for w in suite.workloads_for(selected or None)))  # suite order


def _run_names(options: RunOptions, suite: Suite) -> tuple[str, ...]:
    run_names = _csv(options.runs) or (suite.warm_run, *suite.scored_runs)
    bad = [r for r in run_names if not r.replace("_", "").replace("-", "").isalnum()]
    if bad:
        raise InputError(f"--runs: {bad[0]!r} is not a plain run name (like warm, 1, 2); runs go to OUT/NAME/run<R>")
    if len(set(run_names)) != len(run_names):
        raise InputError(f"--runs: duplicate run names in {options.runs!r}")
    return run_names


def _check_inputs(options: RunOptions) -> None:
    """--calibration must be a readable file; --components plans a dry run only."""
    from gate.runner.outfiles import os_error_text

    calibration = options.calibration
    if calibration is not None:
        if not Path(calibration).is_file():
            raise InputError("no such file; expected a baseline JSON file with an A/A calibration", path=calibration)
        try:
            Path(calibration).open("rb").close()
        except OSError as exc:
            raise InputError(f"cannot read it ({os_error_text(exc)}); expected a readable baseline JSON file",
                             path=calibration) from None
    if options.components_path is not None and not options.dry_run:
        raise InputError("--components plans a dry run; give --dry-run too")


def _plan(options: RunOptions, suite: Suite) -> _Planned:
    """The runner's request from the options, every check in the documented order (one line each, exit 2)."""
    from gate.runner.looks import LookPlan
    from gate.runner.plan import Setup
    from gate.runner.request import RunRequest

    sides = _sides(options)
    selected = _models(options, suite)
    run_names = _run_names(options, suite)
    _check_inputs(options)
    duet = _duet_plan(options, suite, selected)
    if duet is not None:
        from gate.runner.duet import first_runs
        run_names = first_runs(duet, suite.warm_run)
    out = Path(options.out).resolve()
    hub, home = _hf_paths(options.hf_hub, options.hf_home)
    setup = Setup(out=out, port=options.port or suite.server.port, hf_hub=hub, hf_home=home,
                  torchinductor_cache=Path(options.torchinductor_cache or out / "torchinductor").resolve())
    looks = None
    ab, calibration = bool(options.ab) and duet is None, options.calibration
    two_looks = ab and not options.one_look and options.runs is None and not set(EXTENSION_RUNS) & set(run_names)
    if ab:
        looks = LookPlan(decider=_tree_decider(suite, out / sides[0].name, out / sides[1].name) if two_looks else None,
                         max_runs=options.max_runs, remeasure=not options.no_remeasure, sigma=_sigma(suite, selected),
                         calibration=Path(calibration).resolve() if calibration else None,
                         one_look_because=None if two_looks else ("--one-look" if options.one_look else "--runs given"))
    request = RunRequest(suite=suite, sides=sides, setup=setup, runs=run_names, models=selected,
                         gpu_index=options.gpu_index, resume=options.resume, lock_dir=options.lock_dir,
                         lock_wait_s=options.lock_wait, fingerprints=not options.no_dataset_fingerprints,
                         port_wait_s=options.port_wait, venv_check=not options.skip_venv_check,
                         argv=tuple(sys.argv), progress_every_s=options.progress_every, looks=looks)
    return _Planned(request=request, sides=sides, models=selected, two_looks=two_looks, duet=duet)


def _duet_plan(options: RunOptions, suite: Suite, models: tuple[str, ...]) -> DuetPlan | None:
    """--design duet (or the suite's `design: duet` for every selected model): the sessions' plan; one line when
    the options do not fit it. None: the interleave."""
    from gate.runner.duet import DuetPlan

    design = options.design
    if design is None:
        designs = {suite.models[m].design for m in models}
        if len(designs) > 1:
            raise InputError("the suite's models use different designs (" + ", ".join(
                f"{m}: {suite.models[m].design}" for m in models) + "); pass --design or select models of one design")
        design = designs.pop() if designs else "interleave"
        if design == "duet" and not options.ab:
            design = "interleave"  # one checkout: nothing to pair
    if design != "duet":
        return None
    if not options.ab:
        raise InputError("--design duet: expected --ab BASE CANDIDATE (two builds to pair)")
    if options.runs is not None:
        raise InputError("--design duet plans sessions, not runs; leave out --runs (use --sessions K1,K)")
    parts = _csv(options.sessions)
    try:
        first, most = (int(parts[0]), int(parts[-1])) if len(parts) in (1, 2) else (0, 0)
    except ValueError:
        first, most = 0, 0
    if not 2 <= first <= most or most > 40:
        raise InputError(f"--sessions: expected K1,K with 2 <= K1 <= K <= 40, got {options.sessions!r}")
    if options.one_look:
        most = first
    return DuetPlan(first_sessions=first, max_sessions=most, pairs=options.pairs, mem_fraction=options.mem_fraction)


def _print_dry_run(options: RunOptions, suite: Suite, planned: _Planned) -> None:
    """--dry-run: every command in order (preflight included), the looks' rules and, with --components, the plan."""
    from gate.runner.plan import dry_run_lines
    from gate.runner.preflight import preflight_lines

    request, looks = planned.request, planned.request.looks
    components, duet = None, None
    if options.components_path is not None:
        from gate.formats.components import load as load_components
        from gate.formats.components import load_duet
        components = load_components(Path(options.components_path))
        duet = load_duet(Path(options.components_path))
    elif options.calibration is not None:  # the baseline's A/A calibration stores them (runs with passes, a duet A/A)
        from gate.reading.baseline_file import stored_components, stored_duet_components
        components = {m: c for m, s in stored_components(Path(options.calibration)).items()
                      if (c := s.components()) is not None} or None
        duet = {m: s.components() for m, s in stored_duet_components(Path(options.calibration)).items()} or None
    for line in preflight_lines(suite, request.steps(), fingerprints=not options.no_dataset_fingerprints,
                                venv_check=not options.skip_venv_check):
        click.echo(line)
    for line in dry_run_lines(suite, request.steps()):
        click.echo(line)
    if looks is not None and looks.remeasure:
        click.echo(f"# --- after each scored run: a run more than {outlier_rule_text(' sigma')} from its arm's median on a gated "
                   "speed metric is re-measured once per arm and model (original kept in outliers/run<R>/)")
    if planned.two_looks:
        click.echo(f"# --- second look, only for models that decide(first look) leaves undecided ('extend'), "
                   f"then decide_pooled on all runs; at most {options.max_runs} scored runs per model")
        for line in dry_run_lines(suite, request.extension_steps(planned.models)):
            click.echo(line)
    if planned.duet is not None:
        from gate.runner.duet import DEPARTURE, block_order, session_runs
        plan = planned.duet
        click.echo(f"# --- {DEPARTURE}")
        click.echo(f"# per model and session: both servers start (base on port {request.setup.port}, candidate on "
                   f"{request.setup.port + 1}, each with --mem-fraction-static sized from the model and the GPU's free "
                   f"memory), one warm-up pass each, then blocks {' '.join(block_order(1, plan.pairs))} (odd sessions) / "
                   f"{' '.join(block_order(2, plan.pairs))} (even), both stopped, GPU free")
        click.echo(f"# sessions 1..{plan.first_sessions} (session S writes run{{{', '.join(session_runs(1, plan.pairs))}}}"
                   f" shifted by {plan.pairs}·(S − 1) on both sides), the look, then up to {plan.max_sessions} for an "
                   "undecided model")
    from gate.runner.plan_by_change import duet_lines
    from gate.runner.plan_by_change import lines as plan_lines
    if components is not None:
        for line in plan_lines(components, planned.models, options.target_change / 100.0, options.max_runs):
            click.echo(line)
    if duet is not None:
        for line in duet_lines(components or {}, duet, planned.models, options.target_change / 100.0,
                               options.max_runs):
            click.echo(line)


def _runner(planned: _Planned, request: RunRequest, gpu: Any, out: Path) -> Any:
    """The interleave's runner, or the duet's (its look decided by the one judge on the sessions so far)."""
    from gate.runner.execute import Runner

    if planned.duet is None:
        return Runner(request, gpu=gpu, base_env=dict(os.environ))
    from gate.runner.duet import DuetRunner

    base, cand = (out / side.name for side in planned.sides)
    suite = request.suite

    def decider():
        from gate.judging import look_decider
        return look_decider.tree_decider(suite, base, cand, None)
    plan = planned.duet
    return DuetRunner(request, plan, gpu=gpu, base_env=dict(os.environ),
                      decider=decider if plan.max_sessions > plan.first_sessions else None)


def _execute(options: RunOptions, suite: Suite, planned: _Planned) -> None:
    """Measure: the runner under the GPU lock, then the outcome (or the interruption) in one line each."""
    from gate.runner.cancel import Cancelled
    from gate.runner.gpu import NoGpu, NvmlGpu

    request, sides, out = planned.request, planned.sides, planned.request.setup.out
    if planned.two_looks:
        from gate.judging import look_decider
        missing = look_decider.decisions_missing()
        if missing and request.looks is not None:  # measure anyway (one look, in gate-run.json), not waste the GPU job
            click.echo(f"gate run: warning: {missing}; this A/B runs one look only", err=True)
            request = dataclasses.replace(request, looks=dataclasses.replace(
                request.looks, decider=None, one_look_because=missing))
    check_out_dir(out)
    gpu = NoGpu() if options.no_gpu else NvmlGpu()
    if planned.duet is not None and options.duet_fallback:
        from gate.runner.duet import duet_fits
        why = duet_fits(gpu, options.gpu_index or 0, {m.model: m.snapshot for s in request.steps() for m in s.models})
        if why is not None:
            click.echo(f"gate run: {why.splitlines()[-1]}; --duet-fallback: measuring with the interleave", err=True)
            _execute(dataclasses.replace(options, design="interleave", duet_fallback=False), suite,
                     _plan(dataclasses.replace(options, design="interleave"), suite))
            return
    runner = _runner(planned, request, gpu, out)
    try:
        outcome = runner.run()
    except Cancelled as exc:
        try:
            if not runner.log.opened:  # preflight or the locks: nothing started, no gate-run.json of this attempt
                click.echo(f"gate: interrupted by {exc} before any run started (nothing to stop)", err=True)
            else:
                logs = ", ".join(str(out / side.name / "gate-run.json") for side in sides)
                click.echo(f"gate: interrupted by {exc}; server and clients stopped, completed runs kept (see {logs})",
                           err=True)
        except OSError:  # the terminal hung up (SIGHUP); the exit code still says what happened
            pass
        sys.exit(exc.exit_code)
    done = ", ".join(outcome.completed) or "none"
    skipped = f"; skipped (already complete): {', '.join(outcome.skipped)}" if outcome.skipped else ""
    click.echo(f"gate run: completed {done}{skipped}", err=True)
    if outcome.remeasured:
        click.echo(f"gate run: re-measured outlier runs: {', '.join(outcome.remeasured)} (originals in outliers/)",
                   err=True)
    for model, action in outcome.decisions.items():
        click.echo(f"gate run: {model}: {action} (two-look decision; the verdict is gate compare's)", err=True)
    click.echo(f"gate run: results in {', '.join(str(out / side.name) for side in sides)}", err=True)
    for line in next_commands(out, sides, planned.models, suite, options.suite_path, options.calibration):
        click.echo(f"gate run: next: {line}", err=True)
