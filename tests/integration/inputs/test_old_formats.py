"""Old-version files of every stored format, read by today's code or refused with the reader's documented line.

The files under tests/fixtures/formats/ were written by the gate's own earlier commits (their README names,
per file, the commit and the command); the `future-*` files are the newest old file with its version
raised by one. Each is read by today's one reader of its format and the typed result checked (verdict,
counts, σ, df, model names, times), or refused with the one line that reader documents; once per format
through the CLI too, with its exit code. A backward-compatibility defect is an xfail(strict=True) test
naming the fixture (see the README's "Defects found").
"""
from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from gate.cli import run as gate
from gate.formats import runlog
from gate.formats.calibration_stamp import Stamp, packages_digest, read_stamp, stale_reasons
from gate.formats.config import load_suite
from gate.formats.errors import InputError
from gate.formats.noise_model import Calibration, Dispersion
from gate.formats.report import REPORT_SCHEMA_VERSION, Report
from gate.formats.verdict import Verdict
from gate.history.store import HistoryStore
from gate.publish.untrusted import UntrustedInputError, load_untrusted_report
from gate.reading.baseline_file import load_document, read_baseline, write_document
from gate.reading.results import planned_runs
from tests.standin.build import SMALL_COUNTS, small_suite

FORMATS = Path(__file__).resolve().parents[2] / "fixtures" / "formats"
BASELINES, CALIBRATIONS, HISTORIES = FORMATS / "baseline", FORMATS / "calibration", FORMATS / "history"
REPORTS, RUN_LOGS, STAMPS = FORMATS / "report", FORMATS / "gate-run", FORMATS / "calibration-stamp"
EXAMPLE_COMMIT = "5b0c1f3e9a7d4c2b8e6f1a3d5c7b9e0f2a4c6e8d"  # gate example's baseline tree, at every commit
QWEN3 = ("qwen3/asr_en", "qwen3/asr_zh")
# The stand-in checkout's `pip freeze` (tests/standin/build.py) that every old `gate run` stamped.
STANDIN_FREEZE = "standin-sglang-omni==0.0.0\ntorch==2.9.0+standin\ntransformers==5.12.1\n"

# Each reader's documented refusal (the line after "gate: error: <file>: "); see the fixtures' README.
REFUSED_BASELINE_VERSION = "baseline schema_version is 2, this gate reads the integer 1"  # baselines/README.md
REFUSED_SIGMA = "malformed baseline: calibration.qwen3/asr_en.rtf_mean.sigma is 0.0, expected a number between 0.0001 and 1"
REFUSED_REPORT_VERSION = f"report does not match the schema at $.schema_version: expected {REPORT_SCHEMA_VERSION}"
REFUSED_HISTORY_VERSION = "$.v: schema_version 2 is not supported (this gate reads 1)"
REFUSED_RUN_LOG_VERSION = "$.schema_version: expected 1, got 2; expected the run log `gate run` writes"
REFUSED_STAMP_KEY = '$: unexpected key "schema_version"; expected a calibration stamp {gpu, driver, packages_sha256}'


@pytest.fixture(scope="module")
def suite_path(tmp_path_factory) -> Path:
    """The suite the fixtures were written with: the bundled one with the stand-in's small sample counts."""
    return small_suite(tmp_path_factory.mktemp("suite") / "suite.yaml", SMALL_COUNTS)


@pytest.fixture(scope="module")
def suite(suite_path):
    return load_suite(suite_path)


def cli(capsys, *argv: object) -> tuple[int, str, str]:
    """`gate ARGV` through the real CLI entry (gate.cli.run) in this process: exit code, stdout, stderr."""
    capsys.readouterr()
    code = gate([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def one_error_line(err: str, path: Path | str) -> str:
    """stderr's single `gate: error: <path>: ...` line, without its prefix."""
    lines = err.splitlines()
    assert len(lines) == 1, err
    prefix = f"gate: error: {path}: "
    assert lines[0].startswith(prefix), lines[0]
    return lines[0][len(prefix):]


# --- baseline file (gate baseline create) ------------------------------------------------------------------

def test_a_baseline_from_before_run_complete_and_expected_runs_reads_with_the_earlier_defaults(suite):
    path = BASELINES / "2026-12-02-e1fd255-baseline-create-qwen3.json"
    assert "run_complete" not in json.loads(path.read_text())["workloads"]["qwen3/asr_en"]
    side = read_baseline(path, suite)
    assert (side.kind, side.commit, side.runs) == ("baseline", EXAMPLE_COMMIT, ("run1", "run2", "run3"))
    assert tuple(side.workloads) == QWEN3 and side.calibration == {} and side.missing == ()
    for workload in side.workloads.values():
        assert workload.complete and workload.run_complete == () and workload.expected_runs == 3
        assert workload.evaluated == ((6, 6, 6) if workload.workload_id.endswith("en") else (5, 5, 5))
        assert set(workload.samples) == {"wer"}


def test_todays_baseline_writer_output_reads(suite):
    side = read_baseline(BASELINES / "2026-12-04-e54a742-baseline-create-qwen3.json", suite)
    assert tuple(side.workloads) == QWEN3
    assert all(w.run_complete == (True, True, True) and w.expected_runs == 3 for w in side.workloads.values())


@pytest.mark.parametrize("name", ["2026-12-02-e1fd255-baseline-create-qwen3.json",
                                  "2026-12-04-e54a742-baseline-create-qwen3.json"])
def test_an_old_baseline_is_compared_through_the_cli(capsys, tmp_path, suite_path, name):
    path = BASELINES / name
    code, _, err = cli(capsys, "compare", path, path, "--suite", suite_path, "--format", "none",
                       "--json", tmp_path / "report.json")
    assert (code, err) == (0, "")
    report = Report.from_json(json.loads((tmp_path / "report.json").read_text()))
    assert (report.verdict, report.models, report.baseline.commit) == (Verdict.PASS, ("qwen3",), EXAMPLE_COMMIT)
    assert {row.workload for row in report.rows} == set(QWEN3)


@pytest.mark.parametrize("folder", [BASELINES, CALIBRATIONS])
def test_a_future_baseline_version_is_refused_in_one_line(capsys, suite_path, folder):
    path = folder / "future-schema-version-2.json"
    with pytest.raises(InputError) as refused:
        load_document(path)
    assert REFUSED_BASELINE_VERSION in str(refused.value)
    code, out, err = cli(capsys, "compare", path, path, "--suite", suite_path, "--format", "none")
    assert (code, out) == (2, "")
    assert one_error_line(err, path).startswith(REFUSED_BASELINE_VERSION)


# --- calibration (the baseline file's calibration: gate example, gate baseline calibrate) -----------------

CALIBRATED = {  # file -> (speed keys the writer wrote for qwen3/asr_en throughput, an accuracy record?)
    "2026-12-02-e1fd255-example-calibrated.json": ({"sigma", "df", "groups", "delta_sd", "delta_df"}, False),
    "2026-12-02-0be92d1-example-calibrated.json": ({"cross_pairs", "within_pairs", "set_aside"}, False),
    "2026-12-03-933c31f-example-calibrated.json": ({"nights", "night_df", "night_sum_sq"}, False),
    "2026-12-03-e7443fb-example-calibrated.json": ({"nights", "night_df", "night_sum_sq"}, True),
    "2026-12-04-e54a742-example-calibrated.json": ({"nights", "night_df", "night_sum_sq"}, True),
}


@pytest.mark.parametrize("name", sorted(CALIBRATED))
def test_an_old_calibration_reads_with_its_sigma_and_df(suite, name):
    path = CALIBRATIONS / name
    stored = json.loads(path.read_text())["calibration"]
    keys, has_accuracy = CALIBRATED[name]
    assert keys <= set(stored["qwen3/asr_en"]["throughput_samples_per_s"])
    side = read_baseline(path, suite)
    assert set(side.calibration) == {w.id for w in suite.workloads}
    for workload_id, metrics in stored.items():
        for metric, entry in metrics.items():
            noise = side.calibration[workload_id][metric]
            if "sigma" in entry:
                assert isinstance(noise, Calibration)
                assert (noise.sigma, noise.df, noise.groups) == (entry["sigma"], entry["df"], entry["groups"])
                # keys the writer did not know yet read as the earlier reader gave them: none
                assert (noise.cross_pairs, noise.nights) == (entry.get("cross_pairs", 0), entry.get("nights", 0))
            else:
                assert isinstance(noise, Dispersion)
                assert (noise.df, noise.arms, noise.ss_total) == (entry["df"], entry["arms"], entry["ss_total"])
                assert noise.comoving == tuple(entry.get("comoving", ()))  # before `comoving`: none set aside
    assert isinstance(side.calibration["qwen3/asr_en"].get("corpus_wer"), Dispersion) is has_accuracy


@pytest.mark.parametrize("name", sorted(CALIBRATED))
def test_an_old_calibration_rewritten_by_todays_writer_reads_back_the_same(tmp_path, name):
    old = load_document(CALIBRATIONS / name)  # upgraded: the keys its writer left out, filled in
    write_document(tmp_path / "rewritten.json", old)
    assert load_document(tmp_path / "rewritten.json") == old


@pytest.mark.parametrize("name", ["2026-12-02-e1fd255-example-calibrated.json",
                                  "2026-12-03-e7443fb-example-calibrated.json"])
def test_an_old_calibration_is_used_through_the_cli(capsys, tmp_path, suite_path, name):
    path = CALIBRATIONS / name
    code, _, err = cli(capsys, "compare", path, path, "--suite", suite_path, "--models", "qwen3",
                       "--format", "none", "--json", tmp_path / "report.json")
    assert (code, err) == (0, "")
    report = Report.from_json(json.loads((tmp_path / "report.json").read_text()))
    assert report.verdict is Verdict.PASS and report.baseline.calibrated and report.candidate.calibrated


def test_an_old_calibrate_that_wrote_sigma_zero_is_refused_in_one_line(capsys, suite, suite_path):
    # Before 94d5b23 (issue 36) `gate baseline calibrate` wrote σ 0 for a metric constant across the A/A
    # runs; the reader has always refused σ below 1e-4, so such a file is refused, whole, naming the field.
    path = CALIBRATIONS / "2026-12-04-e54a742-calibrate-constant-rtf-sigma0.json"
    assert json.loads(path.read_text())["calibration"]["qwen3/asr_en"]["rtf_mean"]["sigma"] == 0.0
    with pytest.raises(InputError) as refused:
        read_baseline(path, suite)
    assert REFUSED_SIGMA in str(refused.value)
    code, out, err = cli(capsys, "compare", path, path, "--suite", suite_path, "--format", "none")
    assert (code, out) == (2, "")
    assert one_error_line(err, path).startswith(REFUSED_SIGMA)


# --- history lines and change points (gate history import / detect) ----------------------------------------

def test_history_lines_from_the_first_store_read_with_their_times_in_utc(suite):
    history = HistoryStore(HISTORIES / "2026-12-02-0be92d1-history-import", suite=suite).read(warn=None)
    assert history.skipped == () and len(history.records) == 30  # 10 workloads x 3 imports
    # That writer stored the offsets it was given ("+08:00", "Z"): read as the same instants in UTC.
    assert sorted({(r.time, r.kind) for r in history.records}) == [
        ("2026-11-30T02:00:00+00:00", "nightly"), ("2026-11-30T18:00:00+00:00", "nightly"),
        ("2026-12-01T05:00:00+00:00", "calibration")]
    assert {(r.workload, r.verdict) for r in history.records if r.verdict} == {("qwen3/asr_en", "warn"),
                                                                            ("qwen3/asr_zh", "pass")}
    night = next(r for r in history.records if r.workload == "qwen3/asr_en" and r.verdict)
    assert night.runs == ("run1", "run2", "run3") and len(night.values["throughput_samples_per_s"]) == 3


def test_history_lines_and_change_points_of_the_newest_old_store_read(suite):
    history = HistoryStore(HISTORIES / "2026-12-04-e54a742-history-import", suite=suite).read(warn=None)
    assert history.skipped == () and len(history.records) == 30
    assert {(r.workload, r.verdict) for r in history.records if r.verdict} == {("qwen3/asr_en", "fail"),
                                                                            ("qwen3/asr_zh", "pass")}
    points = HistoryStore(HISTORIES / "2026-12-04-e54a742-change-points", suite=suite).read(warn=None).change_points
    assert [(c.workload, c.metric, c.night, c.worse, c.gated) for c in points] == [
        ("qwen3/asr_en", "latency_mean_s", "2026-10-21T02:00:00+00:00", True, False),
        ("qwen3/asr_en", "latency_p95_s", "2026-10-21T02:00:00+00:00", True, True),
        ("qwen3/asr_en", "rtf_mean", "2026-10-21T02:00:00+00:00", True, False),
        ("qwen3/asr_en", "throughput_samples_per_s", "2026-10-21T02:00:00+00:00", True, True)]
    assert all(c.issue is None and c.p_value <= 1 for c in points)


def test_an_import_into_the_first_store_rewrites_its_lines_in_utc(tmp_path, suite):
    store = tmp_path / "history"
    shutil.copytree(HISTORIES / "2026-12-02-0be92d1-history-import", store)
    night = HistoryStore(store, suite=suite).read(warn=None).records[0]  # a night of another commit, by today's writer
    tonight = replace(night, kind="nightly", time="2026-12-02T02:00:00+00:00", commit="0123456789abcdef" * 2 + "01234567")
    assert HistoryStore(store, suite=suite).append([tonight], warn=None) == 1
    history = HistoryStore(store, suite=suite).read(warn=None)
    assert history.skipped == () and len(history.records) == 31
    rewritten = [json.loads(line) for line in (store / "default" / "2026-12.jsonl").read_text().splitlines()]
    assert len(rewritten) == 21 and all(line["time"].endswith("+00:00") for line in rewritten)


def test_old_history_is_shown_through_the_cli(capsys, suite_path):
    code, out, err = cli(capsys, "history", "--history", HISTORIES / "2026-12-02-0be92d1-history-import",
                         "--suite", suite_path, "--json")
    assert (code, err) == (0, "")
    trend = next(t for t in json.loads(out)["trends"] if (t["workload"], t["metric"]) == ("qwen3/asr_en", "corpus_wer"))
    assert [(n["time"], n["verdict"]) for n in trend["nights"]] == [("2026-11-30T02:00:00+00:00", None),
                                                                   ("2026-11-30T18:00:00+00:00", "warn")]


def test_a_future_history_line_and_change_point_are_named_and_skipped(capsys, suite, suite_path):
    store = HISTORIES / "future-v2"
    history = HistoryStore(store, suite=suite).read(warn=None)
    assert len(history.records) == 1 and history.change_points == ()  # the v1 line beside it is read
    assert [(Path(s.path).name, s.line) for s in history.skipped] == [("2026-11.jsonl", 1), ("change-points.jsonl", 1)]
    assert all(s.reason.startswith(REFUSED_HISTORY_VERSION) for s in history.skipped)
    code, _, err = cli(capsys, "history", "--history", store, "--suite", suite_path, "--json")
    assert code == 0  # the store is still shown; each skipped line is one warning naming it
    where = f"gate: warning: {store}/default"
    assert err.splitlines() == [
        f"{where}/2026-11.jsonl:1: {REFUSED_HISTORY_VERSION}; line not read (gate history repair moves bad lines aside)",
        f"{where}/change-points.jsonl:1: {REFUSED_HISTORY_VERSION}; expected a stored change point; line not read "
        "(gate history repair moves bad lines aside)"]


# --- report.json (gate compare --json) ------------------------------------------------------------------

@pytest.mark.parametrize("name", ["2026-12-02-e1fd255-compare-v1.json", "2026-12-02-0be92d1-compare-v2.json",
                                  "2026-12-03-1aa57bc-compare-v3.json", "future-schema-version-5.json"])
def test_a_report_of_another_schema_version_is_refused_in_one_line(capsys, name):
    path = REPORTS / name
    assert json.loads(path.read_text())["schema_version"] != REPORT_SCHEMA_VERSION
    with pytest.raises(UntrustedInputError) as refused:
        load_untrusted_report(path)
    assert str(refused.value) == f"{path}: {REFUSED_REPORT_VERSION}"
    code, out, err = cli(capsys, "merge", path, "--json", "-")
    assert (code, out) == (2, "")
    assert one_error_line(err, path) == REFUSED_REPORT_VERSION


@pytest.mark.parametrize(("name", "verdict", "not_passing"), [
    ("2026-12-03-e7443fb-compare-trees-v4.json", Verdict.FAIL, {"latency_p95_s", "throughput_samples_per_s"}),
    ("2026-12-04-e54a742-compare-v4.json", Verdict.WARN, {"latency_p95_s", "throughput_samples_per_s"}),
])
def test_a_version_4_report_of_an_earlier_commit_reads_and_merges(capsys, name, verdict, not_passing):
    path = REPORTS / name
    report = load_untrusted_report(path)
    assert (report.verdict, report.models, len(report.rows)) == (verdict, ("qwen3",), 10)
    assert report.counts[verdict] == 2 and report.counts[Verdict.PASS] == 8
    assert {r.metric for r in report.rows if r.verdict is not Verdict.PASS} == not_passing
    assert {r.workload for r in report.rows if r.verdict is not Verdict.PASS} == {"qwen3/asr_en"}
    assert report.statistics.speed_warn_q is None  # written before it: its speed rows used warn_q
    code, out, err = cli(capsys, "merge", path, "--json", "-")
    assert (code, err) == (0, "")
    merged = Report.from_json(json.loads(out))
    assert (merged.verdict, merged.models, merged.counts) == (verdict, ("qwen3",), report.counts)


# --- gate-run.json (gate run, stand-in checkout) ----------------------------------------------------------

def _log(name: str) -> runlog.RunLog:
    path = RUN_LOGS / name
    return runlog.decode(json.loads(path.read_text()), path)


@pytest.mark.parametrize("name", ["2026-12-02-0be92d1-run.json", "2026-12-04-e54a742-run.json"])
def test_an_old_single_checkout_run_log_reads(name):
    log = _log(name)
    assert (log.status, log.exit_code, tuple(log.sides)) == ("completed", 0, ("main",))
    assert log.runs == {"main/runwarm": "completed", "main/run1": "completed"}
    assert log.scored_runs == {"main": {"qwen3": ("run1",)}}
    assert not log.two_looks and (log.plan, log.looks, log.calibration) == (None, None, None)


@pytest.mark.parametrize(("name", "first", "final", "scored"), [
    ("2026-12-02-0be92d1-run-ab.json", "fail", "fail", 3),  # before looks recorded `not_extended`
    ("2026-12-04-e54a742-run-ab.json", "extend", "pass", 6),
])
def test_an_old_ab_run_log_reads_with_its_looks_and_calibration(name, first, final, scored):
    log = _log(name)
    assert log.status == "completed" and log.two_looks and tuple(log.sides) == ("base", "candidate")
    assert log.plan is not None and log.plan.max_runs_per_model == 14
    looks = log.looks["qwen3"]
    assert (looks.first.action, looks.final, looks.extended, looks.not_extended) == (first, final, scored == 6, None)
    runs = tuple(f"run{r}" for r in range(1, scored + 1))
    assert log.scored_runs == {"base": {"qwen3": runs}, "candidate": {"qwen3": runs}}
    assert log.calibration is not None and log.calibration.used and log.calibration.stale == ()
    assert log.calibration.stale_unknown is None  # a key that writer did not know yet
    assert log.calibration.stamp == Stamp(gpu=None, driver=None, packages_sha256=packages_digest(STANDIN_FREEZE))
    assert log.remeasured and all(r.model == "qwen3" for r in log.remeasured)


@pytest.mark.parametrize("name", ["2026-12-02-0be92d1-run-ab.json", "2026-12-04-e54a742-run.json"])
def test_an_old_run_log_plans_a_tree_through_the_cli(capsys, tmp_path, suite, suite_path, name):
    tree = tmp_path / "tree"
    tree.mkdir()
    shutil.copy(RUN_LOGS / name, tree / runlog.FILE)
    scored = next(iter(_log(name).scored_runs.values()))["qwen3"]
    for run in scored:
        (tree / run).mkdir()
    assert planned_runs(tree, suite, ("qwen3",)) == scored
    code, _, err = cli(capsys, "summarize", tree, "--suite", suite_path, "--models", "qwen3")
    assert code == 3 and runlog.FILE not in err  # read: the empty run folders are incomplete, not the log


def test_a_future_run_log_is_refused_in_one_line(capsys, tmp_path, suite_path):
    path = RUN_LOGS / "future-schema-version-2.json"
    with pytest.raises(InputError) as refused:
        runlog.decode(json.loads(path.read_text()), path)
    assert str(refused.value) == f"{path}: {REFUSED_RUN_LOG_VERSION}"
    tree = tmp_path / "tree"
    (tree / "run1").mkdir(parents=True)
    shutil.copy(path, tree / runlog.FILE)
    code, out, err = cli(capsys, "summarize", tree, "--suite", suite_path, "--models", "qwen3")
    assert (code, out) == (2, "")
    assert one_error_line(err, tree / runlog.FILE) == REFUSED_RUN_LOG_VERSION


E1FD255_RUN = RUN_LOGS / "2026-12-02-e1fd255-run.json"


def test_a_run_log_from_before_previous_attempt_and_scored_runs_reads():
    log = runlog.decode(json.loads(E1FD255_RUN.read_text()), E1FD255_RUN)
    assert (log.status, log.runs) == ("completed", {"main/runwarm": "completed", "main/run1": "completed"})
    assert (log.previous_attempt, dict(log.scored_runs)) == (None, {})


def test_that_run_log_s_tree_is_read_and_its_missing_files_named(capsys, tmp_path, suite_path):
    tree = tmp_path / "tree"
    (tree / "run1").mkdir(parents=True)
    shutil.copy(E1FD255_RUN, tree / runlog.FILE)
    code, out, err = cli(capsys, "summarize", tree, "--suite", suite_path, "--models", "qwen3")
    assert (code, err) == (3, "")  # the log is read; the run's result files are absent: INCOMPLETE
    assert "2 missing (qwen3/asr_en, qwen3/asr_zh)" in out


# --- calibration stamp (gate run's stamp.json, kept as <model>.calibration-stamp.json) ----------------------

@pytest.mark.parametrize("name", ["2026-12-02-0be92d1-qwen3.calibration-stamp.json",
                                  "2026-12-04-e54a742-qwen3.calibration-stamp.json"])
def test_an_old_stamp_reads_and_its_package_digest_is_todays(name):
    stamp = read_stamp(STAMPS / name)
    assert stamp == Stamp(gpu=None, driver=None, packages_sha256=packages_digest(STANDIN_FREEZE))
    assert stale_reasons(stamp, Stamp(gpu=None, driver=None, packages_sha256=packages_digest(STANDIN_FREEZE))) == []
    assert stale_reasons(stamp, Stamp(gpu="NVIDIA H200", driver=None, packages_sha256=None)) == [
        "GPU none then, NVIDIA H200 now"]


@pytest.mark.parametrize(("stamp", "code"), [("2026-12-02-0be92d1-qwen3.calibration-stamp.json", 0),
                                             ("future-schema-version-2.calibration-stamp.json", 2)])
def test_a_stamp_beside_a_calibration_is_read_by_compare(capsys, tmp_path, suite_path, stamp, code):
    calibration = tmp_path / "qwen3.json"
    shutil.copy(CALIBRATIONS / "2026-12-04-e54a742-example-calibrated.json", calibration)
    shutil.copy(STAMPS / stamp, tmp_path / "qwen3.calibration-stamp.json")
    result, _, err = cli(capsys, "compare", calibration, calibration, "--suite", suite_path, "--models", "qwen3",
                         "--format", "none", "--json", tmp_path / "report.json")
    assert result == code
    if code == 0:
        check = Report.from_json(json.loads((tmp_path / "report.json").read_text())).calibration_checks[0]
        assert (check.source, check.models, check.status) == ("qwen3.json", ("qwen3",), "unknown")  # no env.json
    else:
        assert one_error_line(err, tmp_path / "qwen3.calibration-stamp.json").startswith(REFUSED_STAMP_KEY)
