"""`gate run` for a newcomer (issue 16, item 7): progress inside a client, an ETA from the previous run,
timeouts as options, one HF cache for models, datasets and server, the preflight in --dry-run, help
examples, and the right next command."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from gate.runner.clients import describe_progress, progress
from gate.stats.outlier_rule import rule_text

REPO = Path(__file__).resolve().parents[3]
GATE_RUN = "import sys\nfrom gate.cli import main\nsys.argv = ['gate', 'run', *sys.argv[1:]]\nmain()\n"


def test_progress_is_read_from_tqdm_lines(tmp_path):
    log = tmp_path / "client.log"
    log.write_text("[standin] start\n\r  0%|          | 0/800 [00:00<?, ?it/s]\r 56%|#####     | 450/800 [00:12<00:09, 36.5it/s]")
    assert progress(log) == (450, 800)
    said = describe_progress(log, elapsed_s=12.0)  # 350 left at 450 per 12 s: ~9 s
    assert said.startswith("450/800 requests (56%, ") and said.endswith(" ~9 s left at this pace)")
    log.write_text("no counter here\n")
    assert progress(log) is None and describe_progress(log).startswith("no progress line")


def test_a_running_client_reports_its_progress(bench):
    bench.knobs({"client": {"request_delay_s": 1.5}})
    done = bench.run("--models", "qwen3", "--runs", "1", "--progress-every", "1")
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if "waiting for client qwen3/asr_en" in line]
    assert lines and any("/6 requests (" in line for line in lines), done.stderr


def test_eta_from_the_previous_run_and_the_next_command(bench):
    assert bench.run("--models", "qwen3", "--runs", "1").returncode == 0
    done = bench.run("--models", "qwen3", "--runs", "1")
    assert done.returncode == 0, done.stderr
    first = next(line for line in done.stderr.splitlines() if "main/run1: starting" in line)
    assert first.startswith("gate run [0/1 cycles") and "ETA ~" in first, first  # before any cycle of this run
    assert f"next: gate summarize {bench.out / 'main'} --models qwen3 --suite {bench.suite_path}" in done.stderr


def test_timeouts_are_options(bench):
    bench.knobs({"server": {"never_healthy": True}})
    done = bench.run("--models", "qwen3", "--runs", "1", "--startup-timeout", "0.7")
    assert done.returncode == 3 and "not healthy after 0.7 s" in done.stderr
    bench.knobs({"client": {"hang": True}})
    done = bench.run("--models", "qwen3", "--runs", "1", "--client-timeout", "1.5")
    assert done.returncode == 3 and "client timed out after 1.5 s" in done.stderr


def test_dry_run_prints_preflight_and_one_hf_cache(bench, tmp_path):
    home = tmp_path / "hf-home"
    args = ["--checkout", str(bench.checkout), "--out", str(bench.out), "--suite", str(bench.suite_path),
            "--hf-home", str(home), "--models", "moss_td", "--dry-run"]
    done = subprocess.run([sys.executable, "-c", GATE_RUN, *args], cwd=REPO, capture_output=True, text=True,
                          env={**bench.env(), "HF_HUB": ""})
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.startswith("# --- preflight (") and "(runbook Steps 2-3)" in out.splitlines()[0]
    assert "verify_omni_installed_pins.py" in out and f"test -f {home}/hub/models--OpenMOSS-Team" in out
    assert f"HF_HUB_CACHE={home}/hub" in out and f"HF_HOME={home}" in out  # dataset check, server and clients alike
    exports = [line for line in out.splitlines() if line.startswith("export ")]
    assert exports and all(f"HF_HUB_CACHE={home}/hub" in line and f"HF_HOME={home}" in line for line in exports)


def test_ab_dry_run_shows_the_possible_extension(bench, tmp_path):
    from tests.standin.build import SMALL_COUNTS, make_checkout

    candidate = make_checkout(tmp_path / "candidate", knobs={"counts": SMALL_COUNTS})  # --ab of one checkout is refused
    done = bench.run("--ab", str(bench.checkout), str(candidate), "--models", "qwen3", "--dry-run",
                     checkout=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    head = lines.index(next(line for line in lines if line.startswith("# --- second look")))
    runs = [line.split(": checkout")[0][6:] for line in lines[head:] if line.startswith("# --- ") and ": checkout" in line]
    assert runs == ["candidate/run4", "base/run4", "base/run5", "candidate/run5", "candidate/run6", "base/run6"]
    rule = [line for line in lines if line.startswith("# --- after each scored run: ")]
    assert rule and all(f": a run more than {rule_text(' sigma')} " in line for line in rule)


def test_help_has_examples_and_exit_codes():
    done = subprocess.run([sys.executable, "-c", GATE_RUN, "--help"], cwd=REPO, capture_output=True, text=True)
    examples = done.stdout.split("Examples:\n", 1)[1]
    assert examples.startswith("    gate run --checkout") and "gate run --ab base candidate" in examples
    assert "130  interrupted by SIGINT" in done.stdout


def test_ab_without_the_judges_libraries_runs_one_look_and_says_why(bench, tmp_path):
    """Found on the H200: a Python without jiwer ran the first look's cycles, then exited 70 at the decision.
    The check before any run now sees it: the A/B is measured with one look, and the warning says why."""
    from tests.standin.build import SMALL_COUNTS, make_checkout
    candidate = make_checkout(tmp_path / "candidate", knobs={"counts": SMALL_COUNTS})
    done = bench.run("--ab", str(bench.checkout), str(candidate), "--names", "base,pr", "--models", "qwen3",
                     checkout=False, python_prelude="import sys\nsys.modules['jiwer'] = None\n", timeout=120)
    assert done.returncode == 0, done.stderr
    assert "judge, which needs jiwer; " in done.stderr and "this A/B runs one look only" in done.stderr
    assert bench.run_log("pr")["looks"] == {}


def test_the_outlier_rule_is_stated_from_its_constants_everywhere():
    """The dry run and gate-run.json's plan generate the rule's text from its constants (rule_text); the prose
    that cannot (docs/reference.md, the statistics notes, the comment's details template, the runner's docstring) states
    exactly that text."""
    from gate.runner import looks
    from gate.stats import outliers

    assert outliers.OUTLIER_MIN_REL == 0.03 and rule_text() == "max(5σ, 3%)"
    for prose in ("docs/reference.md", "docs/statistics.md", "templates/_details.md.j2"):
        assert rule_text() in " ".join((REPO / prose).read_text(encoding="utf-8").split()), prose
    assert rule_text(" sigma") in " ".join((looks.__doc__ or "").split())
