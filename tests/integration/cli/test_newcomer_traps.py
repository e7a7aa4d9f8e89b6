"""The traps a newcomer hit on a fresh clone (issue 51, "Traps"): each is made with the command the issue names, and
must end in the verdict a user expects or one `gate: error:` line with its documented exit code."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from gate import cli as cli_module
from gate.examples import (
    ExampleSpec,
    write_example_ci_artifacts,
    write_example_tree,
)
from gate.formats.config import load_suite
from gate.formats.errors import EXIT_FAIL, EXIT_INCOMPLETE, EXIT_INPUT, EXIT_OK
from gate.formats.noise_model import SIGMA_FLOOR
from gate.formats.report import CiRetry, Report
from gate.formats.result_types import ALL_FAILED
from tests.helpers.shared_trees import quick_start_trees
from tests.helpers.unprivileged import as_a_user


@pytest.fixture(scope="module")
def ex(tmp_path_factory) -> Path:
    """The quick start's trees: ex/baseline, ex/candidate (all four models) and the calibrated ex/baseline.json."""
    root = tmp_path_factory.mktemp("traps")
    quick_start_trees(tmp_path_factory, root / "ex")
    return root


def _gate(capsys, *argv: str | Path) -> tuple[int, str, str]:
    code = cli_module.run([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def _error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("gate: error: ")]
    assert len(lines) == 1, err
    return lines[0]


def _calibration_entries(path: Path) -> int:
    return sum(len(metrics) for metrics in json.loads(path.read_text(encoding="utf-8"))["calibration"].values())


def test_baseline_create_over_a_calibrated_baseline_refuses_to_drop_it(ex, tmp_path, capsys):
    """`gate baseline create … --out FILE` over a calibrated FILE dropped its calibration without a word."""
    out = tmp_path / "baseline.json"
    out.write_bytes((ex / "ex" / "baseline.json").read_bytes())
    entries = _calibration_entries(out)
    assert entries > 0
    code, _, err = _gate(capsys, "baseline", "create", ex / "ex" / "baseline", "--out", out)
    assert code == EXIT_INPUT
    line = _error_line(err)
    assert str(out) in line and "--keep-calibration" in line and "--force" in line
    assert _calibration_entries(out) == entries  # nothing was written
    code, _, _ = _gate(capsys, "baseline", "create", ex / "ex" / "baseline", "--out", out, "--keep-calibration", out)
    assert code == EXIT_OK and _calibration_entries(out) == entries
    code, _, _ = _gate(capsys, "baseline", "create", ex / "ex" / "baseline", "--out", out, "--force")
    assert code == EXIT_OK and _calibration_entries(out) == 0
    # an uncalibrated baseline is simply replaced
    code, _, _ = _gate(capsys, "baseline", "create", ex / "ex" / "baseline", "--out", out)
    assert code == EXIT_OK


def _aa_pair(root: Path) -> tuple[Path, Path]:
    """Two same-commit qwen3 trees (an A/A pair) whose rtf_mean is one value in every run."""
    suite = load_suite()
    trees = tuple(write_example_tree(root / arm, suite, ExampleSpec(seed=seed, models=("qwen3",)))
                  for seed, arm in ((1, "a"), (2, "b")))
    for path in root.glob("*/run*/qwen3/asr_*.json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        data["results"][0]["rtf_mean"]["mean"] = 0.05
        path.write_text(json.dumps(data), encoding="utf-8")
    return trees[0], trees[1]


def test_calibrate_never_writes_what_compare_refuses(tmp_path, capsys):
    """`gate baseline calibrate` wrote σ = 0.0 for a metric constant across the A/A runs; compare refused the file."""
    a, b = _aa_pair(tmp_path / "aa")
    baseline = tmp_path / "s0.json"
    assert _gate(capsys, "baseline", "create", a, "--out", baseline, "--models", "qwen3")[0] == EXIT_OK
    code, _, err = _gate(capsys, "baseline", "calibrate", a, b, "--baseline", baseline)
    assert code == EXIT_OK
    notes = [line for line in err.splitlines() if line.startswith("gate: note: ") and "rtf_mean" in line]
    assert len(notes) == 2 and all("did not vary" in n and "floor σ 0.0001" in n for n in notes)
    stored = json.loads(baseline.read_text(encoding="utf-8"))["calibration"]
    assert stored["qwen3/asr_en"]["rtf_mean"]["sigma"] == SIGMA_FLOOR
    assert stored["qwen3/asr_en"]["throughput_samples_per_s"]["sigma"] > SIGMA_FLOOR  # a varying metric keeps its σ
    code, _, err = _gate(capsys, "compare", baseline, b, "--format", "none")
    assert code == EXIT_OK and "gate: error" not in err


def test_a_per_model_baseline_against_a_tree_of_every_model_judges_its_models(ex, tmp_path, capsys, monkeypatch):
    """`gate compare baselines/h200-qwen3.json CANDIDATE_TREE` with all four models in the tree ended exit 2, "share
    no workload of model(s) whisper"; it judges qwen3 and names the models left out."""
    monkeypatch.chdir(ex)
    (ex / "baselines").mkdir(exist_ok=True)
    assert _gate(capsys, "baseline", "create", "ex/baseline", "--out", "baselines/h200-qwen3.json",
                 "--models", "qwen3")[0] == EXIT_OK
    json_out = tmp_path / "report.json"
    code, _, err = _gate(capsys, "compare", "baselines/h200-qwen3.json", "ex/candidate", "--json", json_out,
                         "--format", "none")
    report = json.loads(json_out.read_text(encoding="utf-8"))
    assert report["models"] == ["qwen3"] and code == report["exit_code"] == EXIT_FAIL  # the example's qwen3 regression
    assert "gate: error" not in err
    note = next(line for line in err.splitlines() if line.startswith("gate: note: "))
    assert "whisper, fun, moss_td not judged" in note and "holds qwen3 only" in note
    # --models still chooses: a model the baseline lacks is the plain error it was
    code, _, err = _gate(capsys, "compare", "baselines/h200-qwen3.json", "ex/candidate", "--models", "whisper",
                         "--format", "none")
    assert code == EXIT_INPUT and "share no workload" in _error_line(err) and "whisper" in _error_line(err)


def _all_failed_moss(root: Path) -> Path:
    """A MOSS-only tree in which every request of every run failed (each run as the client writes it then)."""
    suite = load_suite()
    failed = {w.id: ALL_FAILED for w in suite.workloads_for(("moss_td",))}
    tree = write_example_tree(root, suite, ExampleSpec(models=("moss_td",), defects=failed))
    for run in ("run2", "run3"):  # an all-failed run writes only counts: every run's files read alike
        shutil.rmtree(tree / run / "moss_td")
        shutil.copytree(tree / "run1" / "moss_td", tree / run / "moss_td")
    return tree


def test_a_moss_tree_whose_every_request_failed_reads_as_failed_not_copied(tmp_path, capsys):
    """All-null runs hashed alike: "a copied run is not a measurement" (exit 2) instead of every request failed (3)."""
    tree = _all_failed_moss(tmp_path / "moss")
    code, out, err = _gate(capsys, "summarize", tree)
    assert code == EXIT_INCOMPLETE and "gate: error" not in err
    assert "every request failed" in out and "(800 of 800)" in out and "copied" not in out + err
    other = shutil.copytree(tree, tmp_path / "moss-again")
    code, out, err = _gate(capsys, "compare", tree, other, "--format", "terminal", "--all")
    assert code == EXIT_INCOMPLETE and "gate: error" not in err
    row = next(line for line in out.splitlines() if line.strip().startswith("moss_td/movies800times:"))
    assert row.split("incomplete: ", 1)[1].split(": ", 2)[2].startswith("every request failed")  # the cause first


def test_gate_run_python_keeps_the_venv(tmp_path, capsys, monkeypatch):
    """`gate run --python VENV/bin/python` resolved the venv's link to the base interpreter: clients and server
    ran outside the venv."""
    monkeypatch.chdir(tmp_path)
    venv.create(tmp_path / "venv", with_pip=False, symlinks=True)
    assert (tmp_path / "venv" / "bin" / "python").is_symlink()
    (tmp_path / "co").mkdir()
    code, out, _ = _gate(capsys, "run", "--checkout", "co", "--out", "res", "--models", "qwen3",
                         "--python", "venv/bin/python", "--dry-run", "--no-gpu")
    assert code == EXIT_OK
    kept = str(tmp_path / "venv" / "bin" / "python")
    clients = [line for line in out.splitlines() if "-m benchmarks.eval.benchmark_asr_seedtts" in line]
    assert clients and all(line.startswith(kept + " ") for line in clients)
    assert f"setsid {tmp_path / 'venv' / 'bin' / 'sgl-omni'} serve" in out
    base = os.path.realpath(kept)
    assert base != kept and base not in out  # the base interpreter is never named
    prefix = subprocess.run([kept, "-c", "import sys; print(sys.prefix)"], capture_output=True, text=True, check=True)
    assert prefix.stdout.strip() == str(tmp_path / "venv")  # the link is what makes it the venv


def test_a_tree_mixing_client_settings_is_refused_where_it_is_made(tmp_path, capsys):
    """`gate summarize` and `gate baseline create` took a tree whose run2 ran at concurrency 8 and the others at 32;
    the baseline then stored "32 | 8" and every later PR was NOT COMPARABLE."""
    tree = write_example_tree(tmp_path / "main", load_suite(), ExampleSpec(models=("qwen3",)))
    for path in (tree / "run2" / "qwen3").glob("asr_*.json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        data["config"]["concurrencies"] = [8]
        data["results"][0]["concurrency"] = 8
        path.write_text(json.dumps(data), encoding="utf-8")
    out = tmp_path / "baseline.json"
    for argv in (("summarize", tree), ("baseline", "create", tree, "--out", out)):
        code, _, err = _gate(capsys, *argv)
        assert code == EXIT_INPUT, argv
        line = _error_line(err)
        # the run, the workload, both settings and the fix, named in the one line
        assert all(fact in line for fact in ("run2 ran qwen3/asr_en", "concurrency 8", "run1 and run3", "concurrency 32",
                                             "measure run2 again"))
    assert not out.exists()


def test_a_run_log_omitting_the_candidates_run3_is_checked_per_side(ex, tmp_path, capsys):
    """A run log that omits `candidate/run3` in a tree named candidate was judged on 2 runs (PASS, exit 0): the
    base's run3 filled the "listed" set of both sides."""
    for side in ("baseline", "candidate"):
        shutil.copytree(ex / "ex" / side, tmp_path / side, ignore=shutil.ignore_patterns(".gate-cache"))
    log_path = tmp_path / "candidate" / "gate-run.json"
    log = json.loads(log_path.read_text(encoding="utf-8"))
    del log["runs"]["candidate/run3"]
    log_path.write_text(json.dumps(log), encoding="utf-8")
    code, _, err = _gate(capsys, "compare", tmp_path / "baseline", tmp_path / "candidate", "--models", "qwen3",
                         "--format", "none")
    assert code == EXIT_INPUT
    line = _error_line(err)
    assert f"{log_path}: " in line and "but not run3" in line and "lists run1, run2" in line
    code, _, err = _gate(capsys, "compare", tmp_path / "baseline", ex / "ex" / "candidate", "--models", "qwen3",
                         "--format", "none")
    assert code != EXIT_INPUT and "gate: error" not in err  # the base's own log, listing its run3, is no error


_GATE = "import sys\nfrom gate.cli import main\nsys.argv = ['gate', *sys.argv[1:]]\nmain()\n"


def test_an_unreadable_raw_folder_is_an_error_not_the_tolerance_test(ex, tmp_path):
    """An unreadable `raw_en/` made compare switch silently to the tolerance test and PASS."""
    for side in ("baseline", "candidate"):
        shutil.copytree(ex / "ex" / side, tmp_path / side, ignore=shutil.ignore_patterns(".gate-cache"))
    raw = tmp_path / "candidate" / "run2" / "qwen3" / "raw_en"
    argv = [sys.executable, "-c", _GATE, "compare", "baseline", "candidate", "--models", "qwen3", "--no-cache"]
    raw.chmod(0)
    try:
        done = subprocess.run([*as_a_user(), *argv], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    finally:
        raw.chmod(0o755)
    assert done.returncode == EXIT_INCOMPLETE, done.stderr
    assert "candidate/run2/qwen3/raw_en: cannot be read (Permission denied)" in done.stdout
    assert "Traceback" not in done.stderr
    shutil.rmtree(raw)
    raw.write_text("", encoding="utf-8")  # a file where the client writes its folder
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == EXIT_INCOMPLETE and "raw_en: not a directory" in done.stdout
    raw.unlink()  # absent (--save-raw-dir never given): the labelled tolerance test, as before
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode != EXIT_INCOMPLETE and "raw_en" not in done.stderr


def test_reimporting_a_night_with_a_far_time_stores_no_second_copy(tmp_path, capsys):
    """Re-importing a night with a far `--time` stored a second copy, shown by the readers at the earliest time."""
    tree = write_example_tree(tmp_path / "night", load_suite(), ExampleSpec(models=("qwen3",)))
    (tree / "gate-run.json").unlink(missing_ok=True)  # a runbook tree: its time is what --time says
    history = tmp_path / "history"
    base = ("history", "import", "--history", history, "--runner-class", "h100")
    assert _gate(capsys, *base, tree, "--time", "2026-11-03T02:00:00+00:00")[0] == EXIT_OK
    lines = [line for path in history.rglob("*.jsonl") for line in path.read_text(encoding="utf-8").splitlines()]
    code, out, _ = _gate(capsys, *base, tree, "--time", "2026-01-15T02:00:00+00:00")  # ten months earlier
    assert code == EXIT_OK and "0 new records" in out
    again = [line for path in history.rglob("*.jsonl") for line in path.read_text(encoding="utf-8").splitlines()]
    assert sorted(again) == sorted(lines) and len(lines) == 2  # qwen3's two workloads, once
    assert [p.name for p in history.rglob("*.jsonl")] == ["2026-11.jsonl"]


def _git_repo(repo: Path) -> tuple[str, str]:
    """A clone with two commits, (older, newer), as the runbook's /work/sglang-omni holds main and a PR."""
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t",
           "HOME": str(repo.parent), "PATH": os.environ.get("PATH", "")}

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                              env=env).stdout.strip()
    repo.mkdir()
    git("init", "-q")
    git("commit", "-q", "--allow-empty", "-m", "main")
    older = git("rev-parse", "HEAD")
    git("commit", "-q", "--allow-empty", "-m", "pr")
    return older, git("rev-parse", "HEAD")


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_swapped_hand_made_trees_are_caught_from_their_commits_or_said_unknown(tmp_path, capsys, monkeypatch):
    """Two hand-made runbook trees given as `gate compare CAND BASE`: PASS, exit 0, no word (the swap check relied
    on file times at least 10 minutes apart, which interleaved trees never have)."""
    older, newer = _git_repo(tmp_path / "sglang-omni")
    suite = load_suite()
    trees = {}
    for name, seed, commit in (("main", 1, older), ("pr", 2, newer)):
        trees[name] = write_example_tree(tmp_path / "results" / name, suite,
                                         ExampleSpec(seed=seed, models=("qwen3",), commit=commit))
        (trees[name] / "gate-run.json").unlink(missing_ok=True)  # made by hand: no run log
    swapped = ("compare", trees["pr"], trees["main"], "--format", "none")
    monkeypatch.chdir(tmp_path / "sglang-omni")  # where the runbook has the user: the clone knows both commits
    code, _, err = _gate(capsys, *swapped)
    warning = next(line for line in err.splitlines() if line.startswith("gate: warning: arguments may be swapped"))
    assert f"{older[:10]} is an ancestor of BASE's {newer[:10]}" in warning
    assert f"gate compare {trees['main']} {trees['pr']}" in warning and code in (EXIT_OK, EXIT_FAIL)
    assert "gate: note" not in _gate(capsys, "compare", trees["main"], trees["pr"], "--format", "none")[2]
    monkeypatch.chdir(tmp_path)  # a fresh shell elsewhere: nothing can order the commits, and that is said
    code, _, err = _gate(capsys, *swapped)
    assert "arguments may be swapped" not in err
    note = next(line for line in err.splitlines() if line.startswith("gate: note: "))
    assert "cannot be told" in note and f"BASE is taken to be {trees['pr']}" in note and "--checkout DIR" in note
    code, _, err = _gate(capsys, *swapped, "--checkout", tmp_path / "sglang-omni")
    assert "arguments may be swapped" in err


def test_a_failed_earlier_ci_attempt_is_named_in_the_summary_and_the_comment(tmp_path, capsys):
    """`gate compare BASE CAND` over a CI artifact whose wrapper retried (pytest-1 and pytest-2 failed, pytest-3 read)
    judged pytest-3 and dropped the failed attempts without a word: a retry can hide a flaky failure."""
    suite = load_suite()
    base = write_example_ci_artifacts(tmp_path / "base", suite, attempts=1)
    retried = write_example_ci_artifacts(tmp_path / "retried", suite, attempts=3)
    last_only = tmp_path / "last-only"  # the same last attempt with no retry before it
    shutil.copytree(retried / "pytest-of-runner" / "pytest-3", last_only / "pytest-of-runner" / "pytest-3")
    reports, texts = {}, {}
    for name, cand in (("retried", retried), ("last-only", last_only)):
        out = tmp_path / f"out-{name}"
        code, _, _ = _gate(capsys, "compare", base, cand, "--json", out / "report.json",
                           "--comment", out / "comment.md", "--summary", out / "summary.md", "--format", "none")
        reports[name] = Report.from_json(json.loads((out / "report.json").read_text(encoding="utf-8")))
        texts[name] = [(out / f).read_text(encoding="utf-8") for f in ("comment.md", "summary.md")]
        assert code == reports[name].exit_code
    said = reports["retried"].candidate.retried
    assert {r.workload for r in said} == {w.id for w in suite.workloads_for(("qwen3", "moss_td"))}
    assert set(said) == {CiRetry(r.workload, "run1", "pytest-3", ("pytest-1", "pytest-2")) for r in said}
    assert reports["retried"].baseline.retried == () == reports["last-only"].candidate.retried  # one attempt: nothing
    assert reports["retried"].rows == reports["last-only"].rows  # said, never judged: the same verdict
    for text in texts["retried"]:
        assert "pytest-3" in text and "pytest-1, pytest-2" in text
    assert not any("pytest-" in text for text in texts["last-only"])
    # A report.json written before the field reads it as not said.
    old = json.loads((tmp_path / "out-retried" / "report.json").read_text(encoding="utf-8"))
    for side in ("baseline", "candidate"):
        del old[side]["retried"]
    assert Report.from_json(old).candidate.retried == ()
