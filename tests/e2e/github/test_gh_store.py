"""`gate store` against a real local bare git repository standing for the baseline branch: nothing reaches the
branch that was not judged PASS the same night, no calibration is dropped or shrunk, a rejected push is
applied again on the new tip, and the history is merged line by line."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from gate.cli import cli
from gate.examples import CANDIDATE_COMMIT, ExampleSpec, write_example_tree
from gate.formats.config import load_suite
from gate.publish.branch import Change, StoreError, SubprocessGit, write
from tests.helpers.nights import synthetic_records

SUITE = load_suite()
pytestmark = pytest.mark.slow  # real example trees and judges (multimodel), real git (store)
BRANCH = "asr-gate-baselines"
# Paths on the branch (h200 runner class, whisper, the A/A pairs `_calibrated` uploads).
STAMP = "h200/whisper.calibration-stamp.json"
PAIR_9 = "h200/calibration/whisper/9-1/a/commit.txt"
PAIR_10 = "h200/calibration/whisper/10-1/a/commit.txt"


def git(*args, cwd):
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout


@pytest.fixture
def remote(tmp_path):
    bare = tmp_path / "origin.git"
    git("init", "--quiet", "--bare", str(bare), cwd=tmp_path)
    return bare


def branch_files(remote: Path, tmp_path: Path) -> dict[str, str]:
    """path -> text of every file on the branch's tip ({} when the branch does not exist)."""
    heads = git("ls-remote", "--heads", str(remote), BRANCH, cwd=tmp_path)
    if not heads:
        return {}
    out = tmp_path / f"read-{len(list(tmp_path.glob('read-*')))}"
    git("clone", "--quiet", "--branch", BRANCH, str(remote), str(out), cwd=tmp_path)
    return {str(p.relative_to(out)): p.read_text() for p in out.rglob("*") if p.is_file() and ".git" not in p.parts}


def store(*args):
    result = CliRunner().invoke(cli, ["store", *[str(a) for a in args]], catch_exceptions=False)
    return result.exit_code, result.output + (result.stderr if result.stderr_bytes else "")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """whisper baselines: uncalibrated, calibrated from three A/A pairs, and from two (fewer df)."""
    root = tmp_path_factory.mktemp("store-files")
    trees = [write_example_tree(root / f"aa{k}", SUITE, ExampleSpec(models=("whisper",), seed=60 + k)) for k in range(6)]
    night = write_example_tree(root / "night", SUITE, ExampleSpec(models=("whisper",), seed=7, commit=CANDIDATE_COMMIT))
    # Another night's measurements: what the nightly moved the baseline to (the same night's baseline made a
    # second later differs only in its creation time, or not at all within one second).
    later = write_example_tree(root / "later", SUITE, ExampleSpec(models=("whisper",), seed=8, commit=CANDIDATE_COMMIT))
    out = {}
    for name, pairs, tree in (("plain", 0, night), ("three", 3, night), ("two", 2, night), ("moved", 0, later)):
        path = root / name / "whisper.json"
        path.parent.mkdir()
        args = [["baseline", "create", tree, "--out", path]]
        if pairs:
            args.append(["baseline", "calibrate", *trees[: 2 * pairs], "--baseline", path])
        for a in args:
            result = CliRunner().invoke(cli, [str(x) for x in a], catch_exceptions=False)
            assert result.exit_code == 0, result.output
        out[name] = path.parent
    out["night"] = night
    return out


def report(tmp_path, *, verdict="pass", commit=CANDIDATE_COMMIT, example_reports=None):
    data = json.loads(example_reports["whisper"].read_text())
    assert data["verdict"] == "pass"
    data["candidate"]["commit"] = commit
    path = tmp_path / f"report-{verdict}.json"
    if verdict != "pass":  # a real failing report: qwen3's, with whisper's model list kept out
        data = json.loads(example_reports["qwen3"].read_text())
        data["candidate"]["commit"] = commit
    path.write_text(json.dumps(data))
    return path


def first_night(remote, files):
    code, out = store("baselines", files["three"], "--runner-class", "h200", "--sha", CANDIDATE_COMMIT,
                      "--remote", remote)
    assert code == 0 and "store pushed" in out, out


def test_the_first_night_creates_the_branch_without_a_report(remote, files, tmp_path):
    first_night(remote, files)
    stored = branch_files(remote, tmp_path)
    assert list(stored) == ["h200/whisper.json"]
    assert stored["h200/whisper.json"] == (files["three"] / "whisper.json").read_text()


def test_a_night_without_a_report_never_replaces_a_stored_baseline(remote, files, tmp_path):
    first_night(remote, files)
    before = branch_files(remote, tmp_path)
    code, out = store("baselines", files["three"], "--runner-class", "h200", "--sha", "e" * 40, "--remote", remote)
    assert code == 2 and "tonight has no report" in out
    code, out = store("baselines", files["three"], "--runner-class", "h200", "--sha", "e" * 40, "--remote", remote,
                      "--report", tmp_path / "missing.json")
    assert code == 2 and "tonight's report is missing" in out
    assert branch_files(remote, tmp_path) == before


def test_only_a_pass_report_of_the_same_night_moves_the_baseline(remote, files, tmp_path, example_reports):
    first_night(remote, files)
    before = branch_files(remote, tmp_path)
    other = report(tmp_path, commit="e" * 40, example_reports=example_reports)
    code, out = store("baselines", files["three"], "--runner-class", "h200", "--sha", CANDIDATE_COMMIT,
                      "--remote", remote, "--report", other)
    assert code == 2 and f"not of tonight's {CANDIDATE_COMMIT}" in out
    failing = report(tmp_path, verdict="fail", example_reports=example_reports)
    code, out = store("baselines", files["three"], "--runner-class", "h200", "--sha", CANDIDATE_COMMIT,
                      "--remote", remote, "--report", failing)
    assert code == 2 and ("does not cover it" in out or "only a PASS night" in out)
    assert branch_files(remote, tmp_path) == before
    passing = report(tmp_path, example_reports=example_reports)
    code, out = store("baselines", files["three"], "--runner-class", "h200", "--sha", CANDIDATE_COMMIT,
                      "--remote", remote, "--report", passing)
    assert code == 2 and "the drift guard cannot run" in out  # tonight's trees are a required input too
    code, out = store("baselines", files["three"], "--runner-class", "h200", "--sha", CANDIDATE_COMMIT,
                      "--remote", remote, "--report", passing, "--tonight", files["night"])
    assert code == 0 and "store unchanged" in out, out  # the same file: nothing to commit
    assert "no history of h200" in out


@pytest.mark.parametrize("new, words", [("plain", "drops the calibration of whisper/"),
                                        ("two", "fewer degrees of freedom are not stored silently")])
def test_a_calibration_is_never_dropped_or_shrunk(remote, files, tmp_path, example_reports, new, words):
    first_night(remote, files)
    before = branch_files(remote, tmp_path)
    code, out = store("baselines", files[new], "--runner-class", "h200", "--sha", CANDIDATE_COMMIT, "--remote", remote,
                      "--report", report(tmp_path, example_reports=example_reports), "--update", "always")
    assert code == 2 and words in out, out
    assert branch_files(remote, tmp_path) == before


def test_a_rejected_push_is_applied_again_on_the_new_tip(remote, tmp_path):
    """Another writer pushes between our fetch and our push: the first push is rejected, the second lands."""
    other = tmp_path / "other"
    nights = synthetic_records(nights=2, runner_class="h200")
    history = tmp_path / "night" / "h200"
    history.mkdir(parents=True)
    month = f"{nights[1].month}.jsonl"
    (history / month).write_text(nights[1].line() + "\n")
    write(Change("seed", lambda root: (root / "history").mkdir() or (root / "history" / "seed.txt").write_text("x\n")),
          remote=str(remote), branch=BRANCH, make_git=lambda cwd: SubprocessGit(cwd))
    pushes = []

    class Racing(SubprocessGit):
        def __call__(self, *args, check=True):
            if args[0] == "push" and not pushes:
                pushes.append(1)
                git("clone", "--quiet", "--branch", BRANCH, str(remote), str(other), cwd=tmp_path)
                (other / "history" / "h200").mkdir(parents=True)
                (other / "history" / "h200" / month).write_text(nights[0].line() + "\n")
                git("add", "-A", cwd=other)
                git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "other writer", cwd=other)
                git("push", "--quiet", "origin", f"HEAD:{BRANCH}", cwd=other)
            return super().__call__(*args, check=check)

    from gate.publish.branch import history_change

    lines = []
    done = write(history_change(runner_class="h200", source=tmp_path / "night", sha="c" * 40), remote=str(remote),
                 branch=BRANCH, make_git=lambda cwd: Racing(cwd), log=lines.append)
    assert done == "pushed" and any("push rejected (attempt 1)" in line for line in lines)
    stored = branch_files(remote, tmp_path)
    assert stored[f"history/h200/{month}"] == nights[0].line() + "\n" + nights[1].line() + "\n"  # both writers', once
    assert stored["history/seed.txt"] == "x\n"


def test_history_is_a_union_and_a_missing_history_is_refused(remote, tmp_path):
    a, b, c = (r.line() + "\n" for r in synthetic_records(nights=3, runner_class="h200"))
    month = f"{synthetic_records(nights=1, runner_class='h200')[0].month}.jsonl"
    night = tmp_path / "h"
    (night / "h200").mkdir(parents=True)
    (night / "h200" / month).write_text(a + b)
    assert store("history", night, "--runner-class", "h200", "--sha", "c" * 40, "--remote", remote)[0] == 0
    (night / "h200" / month).write_text(b + c)
    assert store("history", night, "--runner-class", "h200", "--sha", "d" * 40, "--remote", remote)[0] == 0
    assert branch_files(remote, tmp_path)[f"history/h200/{month}"] == a + b + c
    code, out = store("history", tmp_path / "none", "--runner-class", "h200", "--sha", "c" * 40, "--remote", remote)
    assert code == 2 and "gate: error: " in out and "night's history" in out
    assert str(tmp_path / "none") in out


def test_an_unreadable_branch_is_an_error_not_a_first_night(tmp_path, files):
    code, out = store("baselines", files["three"], "--runner-class", "h200", "--sha", CANDIDATE_COMMIT,
                      "--remote", tmp_path / "no-such-repo.git")
    assert code == 2 and "gate: error: " in out and "cannot read" in out and BRANCH in out


def test_store_errors_are_store_errors():
    with pytest.raises(StoreError, match="expected on-pass or always"):
        from gate.publish.branch import baseline_change
        baseline_change(runner_class="h200", new={"whisper": Path("x")}, night=None, sha="c" * 40, update="never",
                        entries_of=lambda p, m: {})


# -- the drift guard (issue 25): a worse step on a gated metric holds the baseline until a maintainer accepts it --

def _nights_like(tonight, *, nights=36, step_night=24, seed=5):
    """The branch's history: `nights` of main at tonight's own level, throughput 6% higher before `step_night`
    (so tonight sits on the new, slower level), 1% night noise; WER unchanged. Returns records."""
    import dataclasses
    import datetime as dt
    import math

    import numpy as np

    rng = np.random.default_rng(seed)
    first = dt.datetime(2026, 9, 1, 2, 0, tzinfo=dt.timezone.utc)
    out = []
    for i in range(nights):
        shift = rng.normal(0, 0.01) + (0.0 if i >= step_night else math.log(1.06))
        for record in tonight:
            values = {}
            for metric, runs in record.values.items():
                if metric in ("throughput_samples_per_s",):
                    values[metric] = tuple(v * math.exp(shift + rng.normal(0, 0.005)) for v in runs)
                elif metric.startswith(("latency", "rtf")):
                    values[metric] = tuple(v * math.exp(-shift + rng.normal(0, 0.005)) for v in runs)
                else:
                    values[metric] = runs
            out.append(dataclasses.replace(record, time=(first + dt.timedelta(days=i)).isoformat(),
                                           commit=f"{i:040x}", values=values, verdict="pass"))
    return out


@pytest.fixture
def guarded(remote, files, tmp_path):
    """A branch with whisper's baseline and a history whose throughput stepped down 6% (tracking issue filed)."""
    from gate.history.analysis import trends
    from gate.history.importer import records_from_tree
    from gate.history.store import HistoryStore

    first_night(remote, files)
    tonight = records_from_tree(files["night"], SUITE, runner_class="h200")
    history = tmp_path / "history-seed"
    store_ = HistoryStore(history, suite=SUITE)
    store_.append(_nights_like(tonight), warn=None)
    steps = [cp for t in trends(store_.read(), SUITE) for cp in t.change_points if cp.gated and cp.worse]
    assert steps and "throughput_samples_per_s" in {cp.metric for cp in steps}
    return store_, steps, history


def test_an_unaccepted_step_holds_the_baseline_and_a_writers_accept_on_its_issue_releases_it(
        remote, files, tmp_path, example_reports, guarded):
    import dataclasses

    from gate.publish.branch import history_change
    from tests.helpers.fake_github import REPO, TOKEN, FakeGitHub

    store_, steps, history = guarded
    passing = report(tmp_path, example_reports=example_reports)
    newer = tmp_path / "newer"
    newer.mkdir()
    text = (files["three"] / "whisper.json").read_text()
    (newer / "whisper.json").write_text(text + "\n")  # tonight's file: the same baseline, one byte newer
    with FakeGitHub() as fake:
        issue = fake.add_issue("ASR regression on main: whisper/asr_en throughput_samples_per_s -6%")
        store_.record_change_points("h200", [dataclasses.replace(cp, issue=issue) for cp in steps])
        write(history_change(runner_class="h200", source=history, sha="c" * 40), remote=str(remote), branch=BRANCH,
              make_git=lambda cwd: SubprocessGit(cwd))
        before = branch_files(remote, tmp_path)
        env = {"GITHUB_API_URL": fake.base_url, "GITHUB_TOKEN": TOKEN, "GITHUB_REPOSITORY": REPO}
        args = ["store", "baselines", str(newer), "--runner-class", "h200", "--sha", CANDIDATE_COMMIT, "--remote",
                str(remote), "--report", str(passing), "--tonight", str(files["night"])]

        def run(*extra):
            result = CliRunner().invoke(cli, [*args, *extra], env=env, catch_exceptions=False)
            return result.exit_code, result.output + (result.stderr if result.stderr_bytes else "")

        code, out = run()
        metric = "throughput_samples_per_s"
        assert code == 2 and "the drift guard holds" in out and f"whisper/asr_en {metric}: step -" in out
        assert f"(#{issue}) not accepted" in out
        code, out = run("--update", "always")  # a dispatch moves past a WARN night, not past an unaccepted step
        assert code == 2 and "drift guard holds" in out
        fake.state.permissions["tri"] = "triage"
        fake.comment_as(issue, "/asr-gate accept whisper I think it is fine", user="tri")
        fake.state.permissions["alice"] = "write"
        fake.comment_as(issue, "Maybe:\n```\n/asr-gate accept all quoted, not a command\n```", user="alice")
        code, out = run()
        assert code == 2 and "@tri (triage) cannot accept" in out
        assert branch_files(remote, tmp_path) == before  # nothing reached the branch
        fake.comment_as(issue, "/asr-gate accept whisper new decoder, 6% slower by design (#77)", user="alice")
        code, out = run()
        assert code == 0 and "store pushed" in out, out
        assert f"accepted by @alice on #{issue}" in out
    after = branch_files(remote, tmp_path)
    assert after["h200/whisper.json"] == text + "\n" and after != before


def test_tonight_off_the_last_nights_level_holds_an_on_pass_move(remote, files, tmp_path, example_reports, guarded):
    """No step in the history, but tonight is 6% slower than every night before it: the level holds it."""
    from gate.history.importer import records_from_tree
    from gate.history.store import HistoryStore
    from gate.publish.branch import history_change

    tonight = records_from_tree(files["night"], SUITE, runner_class="h200")
    flat = tmp_path / "flat"
    HistoryStore(flat, suite=SUITE).append(_nights_like(tonight, nights=20, step_night=99), warn=None)
    write(history_change(runner_class="h200", source=flat, sha="c" * 40), remote=str(remote), branch=BRANCH,
          make_git=lambda cwd: SubprocessGit(cwd))
    newer = tmp_path / "newer"
    newer.mkdir()
    (newer / "whisper.json").write_text((files["three"] / "whisper.json").read_text() + "\n")
    passing = report(tmp_path, example_reports=example_reports)
    base = ["baselines", newer, "--runner-class", "h200", "--sha", CANDIDATE_COMMIT, "--remote", remote,
            "--report", passing, "--tonight", files["night"]]
    code, out = store(*base)
    assert code == 2 and "last 14 nights' level" in out, out
    code, out = store(*base, "--update", "always")  # a maintainer's dispatch accepts a level move
    assert code == 0 and "store pushed" in out, out


# -- the calibration workflow's write (issue 22): pairs only added, calibration never dropped or shrunk silently --

def _calibrated(root: Path, files, *, calibration_of="three", measured_by="three", stamp='{"gpu": "NVIDIA H200"}',
                pair="9-1", content="arm a\n") -> Path:
    """What the recalibrate jobs upload: the baseline (the `measured_by` file's measurements with the
    `calibration_of` file's calibration), its stamp, and one A/A pair."""
    up = root / f"calibrated-{len(list(root.glob('calibrated-*')))}"
    folder = up / "h200"
    (folder / "calibration" / "whisper" / pair / "a").mkdir(parents=True)
    data = json.loads((files[measured_by] / "whisper.json").read_text())
    calibrated = json.loads((files[calibration_of] / "whisper.json").read_text())
    data.update({k: calibrated[k] for k in ("calibration", "calibration_source")})
    (folder / "whisper.json").write_text(json.dumps(data, indent=1) + "\n")
    (folder / "whisper.calibration-stamp.json").write_text(stamp)
    (folder / "calibration" / "whisper" / pair / "a" / "commit.txt").write_text(content)
    return up


def test_calibration_store_adds_the_pair_the_stamp_and_the_history(remote, files, tmp_path):
    first_night(remote, files)
    arm1, arm2, arm3 = (r.line() + "\n" for r in synthetic_records(nights=3, runner_class="h200"))
    month = f"{synthetic_records(nights=1, runner_class='h200')[0].month}.jsonl"
    history = tmp_path / "arms"
    (history / "h200").mkdir(parents=True)
    (history / "h200" / month).write_text(arm1 + arm2)
    up = _calibrated(tmp_path, files)
    code, out = store("calibration", "--calibrated", up, "--history", history, "--runner-class", "h200",
                      "--sha", CANDIDATE_COMMIT, "--remote", remote)
    assert code == 0 and "store pushed" in out, out
    stored = branch_files(remote, tmp_path)
    assert stored[PAIR_9] == "arm a\n"
    assert stored[STAMP] == '{"gpu": "NVIDIA H200"}'
    assert stored[f"history/h200/{month}"] == arm1 + arm2
    # Another pair later: the first one stays, the history grows by record.
    (history / "h200" / month).write_text(arm1 + arm2 + arm3)
    code, out = store("calibration", "--calibrated", _calibrated(tmp_path, files, pair="10-1"), "--history", history,
                      "--runner-class", "h200", "--sha", CANDIDATE_COMMIT, "--remote", remote)
    assert code == 0, out
    stored = branch_files(remote, tmp_path)
    assert {PAIR_9, PAIR_10} <= set(stored)
    assert stored[f"history/h200/{month}"] == arm1 + arm2 + arm3


def test_calibration_store_refuses_what_would_lose_evidence(remote, files, tmp_path):
    first_night(remote, files)
    base = ["--runner-class", "h200", "--sha", CANDIDATE_COMMIT, "--remote", remote]
    assert store("calibration", "--calibrated", _calibrated(tmp_path, files), *base)[0] == 0
    before = branch_files(remote, tmp_path)
    # Fewer degrees of freedom on the same stamp: refused.
    code, out = store("calibration", "--calibrated", _calibrated(tmp_path, files, calibration_of="two", pair="11-1"),
                      *base)
    assert code == 2 and "fewer degrees of freedom" in out
    # No calibration at all: refused whatever the stamp.
    code, out = store("calibration", "--calibrated", _calibrated(tmp_path, files, calibration_of="plain", pair="11-1",
                                                                  stamp='{"gpu": "other"}'), *base)
    assert code == 2 and "drops the calibration" in out and "whisper/" in out
    # A stored pair replaced by other content: refused.
    code, out = store("calibration", "--calibrated", _calibrated(tmp_path, files, content="forged\n"), *base)
    assert code == 2 and "would be replaced" in out and "commit.txt" in out
    assert branch_files(remote, tmp_path) == before
    # Missing inputs are errors, never a quiet "nothing to store".
    code, out = store("calibration", *base)
    assert code == 2 and "nothing to store" in out
    code, out = store("calibration", "--calibrated", tmp_path / "not-downloaded", *base)
    assert code == 2 and "expected a directory" in out
    # A new stamp (another GPU, driver or package set): older pairs expired, the shrink is stored and said.
    code, out = store("calibration", "--calibrated", _calibrated(tmp_path, files, calibration_of="two", pair="12-1",
                                                                  stamp='{"gpu": "NVIDIA H200", "driver": "580"}'), *base)
    assert code == 0 and "expired (the stamp changed)" in out, out


def test_a_baseline_the_nightly_moved_meanwhile_is_not_overwritten_but_the_pair_is_kept(remote, files, tmp_path):
    first_night(remote, files)
    before = branch_files(remote, tmp_path)
    stale = _calibrated(tmp_path, files, measured_by="moved")  # recalibrated from another baseline than the stored
    code, out = store("calibration", "--calibrated", stale, "--runner-class", "h200", "--sha", CANDIDATE_COMMIT,
                      "--remote", remote)
    assert code == 2 and "not recalibrated" in out and "nightly moved" in out, out
    after = branch_files(remote, tmp_path)
    assert after["h200/whisper.json"] == before["h200/whisper.json"]
    assert STAMP not in after
    assert after[PAIR_9] == "arm a\n"


# -- issue 35: the calibration store writes only what it owns ---------------------------------------------------

def test_a_reformatted_stamp_is_the_same_stamp_and_does_not_let_df_shrink(remote, files, tmp_path):
    first_night(remote, files)
    base = ["--runner-class", "h200", "--sha", CANDIDATE_COMMIT, "--remote", remote]
    assert store("calibration", "--calibrated", _calibrated(tmp_path, files), *base)[0] == 0
    same = json.dumps(json.loads('{"gpu": "NVIDIA H200"}'), indent=4) + "\n"  # only the bytes differ
    code, out = store("calibration", "--calibrated", _calibrated(tmp_path, files, calibration_of="two", pair="11-1",
                                                                  stamp=same), *base)
    assert code == 2 and "fewer degrees of freedom are not stored silently" in out, out


def test_a_stamp_that_is_not_json_is_one_error_line(remote, files, tmp_path):
    first_night(remote, files)
    code, out = store("calibration", "--calibrated", _calibrated(tmp_path, files, stamp="{not json"),
                      "--runner-class", "h200", "--sha", CANDIDATE_COMMIT, "--remote", remote)
    errors = {line for line in out.splitlines() if line.startswith("gate: error:")}  # output and stderr: one line
    assert code == 2 and len(errors) == 1 and "expected the calibration stamp as JSON" in errors.pop()


@pytest.mark.parametrize("stray", ["README.md", "history/.gitattributes", "h200/qwen9.json", "h100/whisper.json",
                                   "h200/calibration/unknown/9-1/a/x.txt", "h200/notes.txt"])
def test_a_file_the_calibration_store_does_not_own_is_refused_naming_it(remote, files, tmp_path, stray):
    first_night(remote, files)
    before = branch_files(remote, tmp_path)
    up = _calibrated(tmp_path, files)
    (up / stray).parent.mkdir(parents=True, exist_ok=True)
    (up / stray).write_text("x\n")
    code, out = store("calibration", "--calibrated", up, "--runner-class", "h200", "--sha", CANDIDATE_COMMIT,
                      "--remote", remote)
    errors = sorted({line for line in out.splitlines() if line.startswith("gate: error:")})  # output and stderr
    assert code == 2 and len(errors) == 1 and f"{stray}: not a file the calibration store writes" in errors[0], out
    assert branch_files(remote, tmp_path) == before


def test_history_in_the_calibrated_folder_is_merged_by_the_history_store_not_copied(remote, files, tmp_path):
    from gate.history.records import Record
    from gate.history.store import HistoryStore

    first_night(remote, files)

    def night(day, value):
        return Record(time=f"2026-11-{day:02d}T02:00:00+00:00", kind="nightly", commit=f"{day:040x}",
                      workload="whisper/asr_en", runs=("run1", "run2", "run3"),
                      values={"corpus_wer": (value,) * 3}, verdict="pass", env="abc", runner_class="h200")

    seeded = tmp_path / "seed"
    HistoryStore(seeded / "history", suite=SUITE).append([night(1, 0.02)], warn=None)
    assert store("history", seeded / "history", "--runner-class", "h200", "--sha", "c" * 40, "--remote", remote)[0] == 0
    stored_before = branch_files(remote, tmp_path)
    up = _calibrated(tmp_path, files)
    HistoryStore(up / "history", suite=SUITE).append([night(2, 0.03)], warn=None)
    (up / "history" / ".gitattributes").unlink()
    code, out = store("calibration", "--calibrated", up, "--runner-class", "h200", "--sha", CANDIDATE_COMMIT,
                      "--remote", remote)
    assert code == 0, out
    after = branch_files(remote, tmp_path)
    month = after["history/h200/2026-11.jsonl"].splitlines()
    assert len(month) == 2 and stored_before["history/h200/2026-11.jsonl"].splitlines()[0] in month
    assert after["history/.gitattributes"] == stored_before["history/.gitattributes"] != ""
