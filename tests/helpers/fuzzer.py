"""A mutation fuzzer over result trees, baselines and reports (the standing fuzz suite, README "Robustness").

Seeds come from `gate example` itself, run on a small copy of the packaged suite (the same ten-workload
schema, three workloads with 120/80/25 utterances) so that one comparison takes a fraction of a second.
The candidate tree carries the example's planted regression (qwen3/asr_en slower with extra word
errors), so its comparison against the baseline is FAIL; a *validity* mutation must never turn
that into PASS.

A mutation edits a copy of a seed and says which file it broke; `Case.validity` marks the mutations
that make the input invalid (the gate must refuse them), the others must be read as before. Targets:
"tree" (the candidate, through compare and every 4th case summarize), "baseline" (compare),
"calibration" (a baseline given as a calibration file to compare, `baseline create
--keep-calibration` and `baseline nights`), "summary" (summarize alone) and "report" (merge).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import yaml

from gate.formats import runlog
from gate.formats.config import default_suite_path
from gate.formats.inputs import BASELINE, RESULT

# Workloads of the small suite: the regressed one, a second SeedTTS one and a MOSS one.
SMALL_WORKLOADS = {"qwen3/asr_en": 120, "qwen3/asr_zh": 80, "moss_td/googletime": 25}
REGRESSED = "qwen3/asr_en"

# Values that are wrong for each kind of field the gate uses (never coerced: "0.5" is not 0.5, true is not 1).
BAD_NUMBERS = (-0.5, "0.5", True, [], {}, "NaN!", "Infinity!", "1e999!", "BIGINT!")
BAD_COUNTS = (-1, 2.5, "1088", True, None, "BIGINT!")
BAD_STRINGS = (5, True, [], {})
ABSURD = (5e-324, 1e308)  # a denormal and a huge float: valid JSON numbers that no measurement gives
# Literal JSON text for values json.dumps cannot produce (the markers above are replaced by these).
LITERALS = {"NaN!": "NaN", "Infinity!": "Infinity", "1e999!": "1e999", "BIGINT!": "9" * 401}

# Fields the gate reads, per file of a run, with the kind of value each must hold.
SEEDTTS_FIELDS = {
    "schema_version": "version",
    "results.0.evaluated": "count", "results.0.total": "count", "results.0.skipped": "count",
    "results.0.corpus_wer.mean": "number", "results.0.throughput_samples_per_s.mean": "positive",
    "results.0.latency_mean_s.mean": "positive", "results.0.latency_p95_s.mean": "positive",
    "results.0.rtf_mean.mean": "positive",
    "provenance.artifacts.dataset_revision": "string", "provenance.artifacts.evaluation_input_sha256": "string",
    "provenance.artifacts.requested_model_id": "string",
}
MOSS_RESULT_FIELDS = {
    "summary.evaluated": "count", "summary.total_samples": "count",
    "diarization_metrics.cer": "number", "diarization_metrics.cp_cer": "number",
    "diarization_metrics.cer_valid_samples": "number",
    "per_sample.3.id": "string", "per_sample.3.expected_text": "string",
}
MOSS_SPEED_FIELDS = {
    "schema_version": "version", "speed.failed_requests": "count", "speed.throughput_qps": "positive",
    "speed.latency_mean_s": "positive", "speed.latency_p95_s": "positive", "speed.rtf_mean": "positive",
    "config.max_new_tokens": "count_positive", "config.model_path": "string",
}
JSONL_FIELDS = {"id": "string", "is_success": "bool", "ref_norm": "string", "hyp_norm": "string"}
CALIBRATION_BAD = {"sigma": (0, -0.01, 1e-9, "0.01", True, 5.0, "NaN!"),
                   "df": (0, -1, 2.5, "4", True, "BIGINT!"), "groups": (0, "6", True)}


def small_suite(path: Path) -> Path:
    """The packaged suite cut to SMALL_WORKLOADS (same schema, fewer utterances), written to `path`."""
    doc = yaml.safe_load(default_suite_path().read_text(encoding="utf-8"))
    doc["workloads"] = [dict(w, expected_samples=SMALL_WORKLOADS[w["id"]]) for w in doc["workloads"]
                        if w["id"] in SMALL_WORKLOADS]
    models = {w["model"] for w in doc["workloads"]}
    doc["models"] = {k: v for k, v in doc["models"].items() if k in models}
    doc["labels"] = {label: [m for m in chosen if m in models] for label, chosen in doc["labels"].items()
                     if any(m in models for m in chosen)}
    doc["datasets"] = {k: v for k, v in doc["datasets"].items() if k in {w["dataset"] for w in doc["workloads"]}}

    class _NoAliases(yaml.SafeDumper):
        def ignore_aliases(self, data: Any) -> bool:
            return True

    path.write_text(yaml.dump(doc, Dumper=_NoAliases, sort_keys=False), encoding="utf-8")
    return path


@dataclass(frozen=True)
class Case:
    name: str
    target: str  # "tree", "baseline", "calibration", "summary" or "report" (see the module doc)
    validity: bool  # True: the input is invalid and must be refused; False: it must read as before
    apply: Callable[[Path, np.random.Generator], str]  # edits the copy at the path; returns the file it broke
    field_level: bool = False  # a field the gate uses: that workload's own verdict must not be pass either
    workload: str | None = None


# --- low-level edits ----------------------------------------------------------------------------------

def _set(doc: Any, dotted: str, value: Any) -> None:
    keys = [int(k) if k.isdigit() else k for k in dotted.split(".")]
    node = doc
    for key in keys[:-1]:
        node = node[key]
    node[keys[-1]] = value


def _dump(doc: Any) -> str:
    text = json.dumps(doc)
    for marker, literal in LITERALS.items():
        text = text.replace(json.dumps(marker), literal)
    return text


def _set_field(path: Path, dotted: str, value: Any) -> None:
    doc = json.loads(path.read_text(encoding="utf-8"))
    _set(doc, dotted, value)
    path.write_text(_dump(doc), encoding="utf-8")


def _bad_values(kind: str) -> tuple:
    return {"number": BAD_NUMBERS + ABSURD, "positive": BAD_NUMBERS + ABSURD + (0, -0.0), "count": BAD_COUNTS + ABSURD,
            "count_positive": (0, -1, 2.5, "16", True, "BIGINT!"), "string": BAD_STRINGS,
            "bool": ("true", 1, None), "version": (99, "2", True, None)}[kind]


def _duplicate_key(path: Path, key: str) -> None:
    """Insert a second `"key": ...` before the first: strict JSON must refuse it (json keeps the last)."""
    text = path.read_text(encoding="utf-8")
    match = re.search(r'"%s":\s*' % re.escape(key), text)
    assert match, (path, key)
    path.write_text(text[:match.start()] + f'"{key}": 0, ' + text[match.start():], encoding="utf-8")


def _truncate(path: Path, rng: np.random.Generator) -> None:
    data = path.read_bytes()
    path.write_bytes(data[:int(rng.integers(0, max(1, len(data) - 2)))])


def _deep(path: Path, rng: np.random.Generator) -> None:
    text = path.read_text(encoding="utf-8")
    depth = int(rng.choice([70, 1500, 5000]))
    at = text.index(":") + 1
    end = text.index(",", at)
    path.write_text(text[:at] + "[" * depth + "1" + "]" * depth + text[end:], encoding="utf-8")


def _fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def _dev_zero(path: Path) -> None:
    path.unlink()
    path.symlink_to("/dev/zero")


def _outside(path: Path, root: Path) -> None:
    """A link to a valid copy of the file outside the tree: refused (links must stay inside)."""
    outside = root.parent / f"outside-{path.name}"
    shutil.copy(path, outside)
    path.unlink()
    path.symlink_to(outside)


def _socket(path: Path) -> None:
    path.unlink()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))  # the socket file stays after close
    server.close()


def _dev_null(path: Path) -> None:
    """A link to a character device (mknod needs privileges; /dev/null is one everywhere)."""
    path.unlink()
    path.symlink_to("/dev/null")


def _directory(path: Path) -> None:
    path.unlink()
    path.mkdir()


def _oversize(path: Path, cap: int) -> None:
    os.truncate(path, cap + 1)  # sparse: cheap to write, must still be refused before it is read


# --- the case catalogue -----------------------------------------------------------------------------

def _field_cases(relative: str, fields: dict[str, str], workload: str, runs: tuple[str, ...]) -> list[Case]:
    cases = []
    for dotted, kind in fields.items():
        for value in _bad_values(kind):
            def apply(root: Path, rng: np.random.Generator, dotted=dotted, value=value) -> str:
                target = root / f"run{rng.choice(runs)}" / relative
                _set_field(target, dotted, value)
                return str(target.relative_to(root))
            cases.append(Case(f"{relative}:{dotted}={value!r}", "tree", True, apply, True, workload))
    return cases


def _delete(doc: Any, dotted: str) -> None:
    keys = [int(k) if k.isdigit() else k for k in dotted.split(".")]
    node = doc
    for key in keys[:-1]:
        node = node[key]
    del node[keys[-1]]


# Metric keys the client always writes, per file: deleting one from one run, or turning it to null in one
# run while the others measured it, must make that run incomplete (never a quieter mean of the others).
METRIC_KEYS = {
    "qwen3/asr_en.json": ("results.0.corpus_wer.mean", "results.0.throughput_samples_per_s.mean",
                          "results.0.latency_mean_s.mean", "results.0.latency_p95_s.mean", "results.0.rtf_mean.mean"),
    "qwen3/asr_zh.json": ("results.0.throughput_samples_per_s.mean", "results.0.latency_p95_s.mean"),
    "moss_td/googletime/transcribe_diarize_results.json": (
        "diarization_metrics.cer", "diarization_metrics.cp_cer", "diarization_metrics.cer_valid_samples",
        "diarization_metrics.cp_cer_valid_samples", "diarization_metrics.speaker_timestamp_der",
        "diarization_metrics.speaker_timestamp_der_skipped_parse_error", "per_sample.2.result_text"),
    "moss_td/googletime/transcribe_diarize_speed_results.json": (
        "speed.throughput_qps", "speed.latency_mean_s", "speed.latency_p95_s", "speed.rtf_mean"),
}


def _metric_key_cases(runs: tuple[str, ...]) -> list[Case]:
    workloads = {"qwen3/asr_en.json": REGRESSED, "qwen3/asr_zh.json": "qwen3/asr_zh"}
    cases = []
    for relative, keys in METRIC_KEYS.items():
        workload = workloads.get(relative, "moss_td/googletime")
        for dotted in keys:
            for edit in ("deleted", "null"):
                if edit == "null" and dotted.startswith("per_sample"):
                    continue  # a null transcript is a failed request's: covered by the per-sample reader
                def apply(root: Path, rng: np.random.Generator, relative=relative, dotted=dotted, edit=edit) -> str:
                    target = root / f"run{rng.choice(runs)}" / relative
                    doc = json.loads(target.read_text(encoding="utf-8"))
                    _delete(doc, dotted) if edit == "deleted" else _set(doc, dotted, None)
                    target.write_text(_dump(doc), encoding="utf-8")
                    return str(target.relative_to(root))
                cases.append(Case(f"{relative}:{dotted} {edit} in one run", "tree", True, apply, True, workload))
    return cases


def _jsonl_cases(runs: tuple[str, ...]) -> list[Case]:
    relative = "qwen3/raw_en/conc32_rep1.jsonl"
    cases = []
    for field, kind in JSONL_FIELDS.items():
        for value in _bad_values(kind):
            def apply(root: Path, rng: np.random.Generator, field=field, value=value) -> str:
                target = root / f"run{rng.choice(runs)}" / relative
                lines = target.read_text(encoding="utf-8").splitlines()
                k = int(rng.integers(0, len(lines)))
                row = json.loads(lines[k])
                row[field] = value
                lines[k] = _dump(row)
                target.write_text("\n".join(lines) + "\n", encoding="utf-8")
                return str(target.relative_to(root))
            cases.append(Case(f"{relative}:{field}={value!r}", "tree", True, apply, True, REGRESSED))

    def duplicate_row(root: Path, rng: np.random.Generator) -> str:
        target = root / f"run{rng.choice(runs)}" / relative
        lines = target.read_text(encoding="utf-8").splitlines()
        lines[1] = lines[0]
        target.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return str(target.relative_to(root))

    def dropped_row(root: Path, rng: np.random.Generator) -> str:
        target = root / f"run{rng.choice(runs)}" / relative
        lines = target.read_text(encoding="utf-8").splitlines()
        del lines[int(rng.integers(0, len(lines)))]
        target.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return str(target.relative_to(root))

    cases.append(Case(f"{relative}:duplicate row", "tree", True, duplicate_row, True, REGRESSED))
    cases.append(Case(f"{relative}:dropped row", "tree", True, dropped_row, True, REGRESSED))
    return cases


FILES = {  # run-relative result files of the small suite -> (workload, a key to duplicate)
    "qwen3/asr_en.json": (REGRESSED, "evaluated"),
    "qwen3/asr_zh.json": ("qwen3/asr_zh", "corpus_wer"),
    "qwen3/raw_en/conc32_rep1.jsonl": (REGRESSED, "hyp_norm"),
    "moss_td/googletime/transcribe_diarize_results.json": ("moss_td/googletime", "cer"),
    "moss_td/googletime/transcribe_diarize_speed_results.json": ("moss_td/googletime", "throughput_qps"),
}


def _file_cases(runs: tuple[str, ...]) -> list[Case]:
    edits: dict[str, Callable[[Path, Path, np.random.Generator, str], None]] = {
        "truncated": lambda p, root, rng, key: _truncate(p, rng),
        "duplicate key": lambda p, root, rng, key: _duplicate_key(p, key),
        "deep nesting": lambda p, root, rng, key: _deep(p, rng),
        "FIFO": lambda p, root, rng, key: _fifo(p),
        "link to /dev/zero": lambda p, root, rng, key: _dev_zero(p),
        "link leaving the tree": lambda p, root, rng, key: _outside(p, root),
        "directory": lambda p, root, rng, key: _directory(p),
        "oversized": lambda p, root, rng, key: _oversize(p, RESULT.max_bytes),
        "missing": lambda p, root, rng, key: p.unlink(),
    }
    cases = []
    for relative, (workload, key) in FILES.items():
        for edit_name, edit in edits.items():
            if edit_name == "duplicate key" and relative.endswith(".jsonl"):
                continue  # a JSONL row's duplicate key is a field-level case below
            def apply(root: Path, rng: np.random.Generator, relative=relative, edit=edit, key=key) -> str:
                target = root / f"run{rng.choice(runs)}" / relative
                edit(target, root, rng, key)
                return str(target.relative_to(root))
            if edit_name == "missing" and relative.endswith(".jsonl"):
                # No per-sample file is not a broken one: accuracy falls back to the means (still FAIL here).
                cases.append(Case(f"{relative}:missing (accuracy falls back)", "tree", False, apply))
                continue
            cases.append(Case(f"{relative}:{edit_name}", "tree", True, apply, True, workload))
    return cases


def _run_cases(runs: tuple[str, ...]) -> list[Case]:
    def missing_run(root: Path, rng: np.random.Generator) -> str:
        run = f"run{rng.choice(runs)}"
        shutil.rmtree(root / run)
        return run

    def extra_copy(root: Path, rng: np.random.Generator) -> str:
        shutil.copytree(root / "run1", root / str(rng.choice(["run1.bak", "run_old"])))
        return "run1"

    def copied_scored_run(root: Path, rng: np.random.Generator) -> str:
        # run4 is a scored run (no gate-run.json: every run<N> folder is): a copy is one measurement, refused
        shutil.copytree(root / f"run{rng.choice(runs)}", root / "run4", copy_function=rng.choice([shutil.copy2, os.link]))
        return "run4"

    def unknown_workload(root: Path, rng: np.random.Generator) -> str:
        shutil.copy(root / "run1/qwen3/asr_en.json", root / "run1/qwen3/asr_fr.json")
        return "asr_fr.json"

    def env_record(root: Path, rng: np.random.Generator) -> str:
        target = root / f"run{rng.choice(runs)}" / "env.json"
        text = json.dumps({"schema_version": 1, "gpu": {"name": "NVIDIA H200", "driver_version": "580.65"}})
        target.write_text(text[:int(rng.integers(1, len(text) - 1))] if rng.random() < 0.5
                          else text.replace('"NVIDIA H200"', "5"), encoding="utf-8")
        return str(target.relative_to(root))

    def run_record(root: Path, rng: np.random.Generator) -> str:
        target = root / f"run{rng.choice(runs)}" / str(rng.choice(["commit.txt", "freeze.txt"]))
        (_fifo if rng.random() < 0.5 else _dev_zero)(target)
        return str(target.relative_to(root))

    return [Case("missing scored run", "tree", True, missing_run),
            Case("extra run folder (ignored)", "tree", False, extra_copy),
            Case("scored run copied or hard-linked (refused)", "tree", True, copied_scored_run),
            Case("unknown workload file (ignored)", "tree", False, unknown_workload),
            Case("unreadable env record", "tree", True, env_record),
            Case("non-regular run record", "tree", True, run_record)]


# Complexity over 15: a catalogue: each nested builder is one fuzz case.
def _baseline_cases() -> list[Case]:  # noqa: C901 (reason above)
    def edit_json(change: Callable[[dict, np.random.Generator], None]) -> Callable[[Path, np.random.Generator], str]:
        def apply(path: Path, rng: np.random.Generator) -> str:
            doc = json.loads(path.read_text(encoding="utf-8"))
            change(doc, rng)
            path.write_text(_dump(doc), encoding="utf-8")
            return path.name
        return apply

    def file_edit(edit: Callable[[Path, np.random.Generator], None]) -> Callable[[Path, np.random.Generator], str]:
        def apply(path: Path, rng: np.random.Generator) -> str:
            edit(path, rng)
            return path.name
        return apply

    cases = []
    for field, values in CALIBRATION_BAD.items():
        for value in values:
            def change(doc, rng, field=field, value=value):
                doc["calibration"][REGRESSED]["throughput_samples_per_s"][field] = value
            cases.append(Case(f"baseline calibration.{field}={value!r}", "baseline", True, edit_json(change)))
    for value in BAD_NUMBERS + (-0.02,):
        def metric(doc, rng, value=value):
            doc["workloads"][REGRESSED]["metrics"][str(rng.choice(["corpus_wer", "throughput_samples_per_s"]))][1] = value
        cases.append(Case(f"baseline metric={value!r}", "baseline", True, edit_json(metric)))

    def invalid_index(doc, rng):
        samples = doc["workloads"][REGRESSED]["samples"]["wer"]
        samples["invalid"][0] = [len(samples["ids"]) + int(rng.integers(0, 50))]

    def errors_disagree(doc, rng):
        row = doc["workloads"][REGRESSED]["samples"]["wer"]["errors"][int(rng.integers(0, 3))]
        row[int(rng.integers(0, len(row)))] += 9

    def duplicate_id(doc, rng):
        ids = doc["workloads"][REGRESSED]["samples"]["wer"]["ids"]
        ids[1] = ids[0]

    def negative_error(doc, rng):
        doc["workloads"][REGRESSED]["samples"]["wer"]["errors"][0][0] = -3

    def no_runs(doc, rng):
        doc["workloads"][REGRESSED]["runs"] = []

    def complete_string(doc, rng):
        doc["workloads"][REGRESSED]["complete"] = "yes"

    for name, change in (("invalid index out of range", invalid_index), ("errors disagree with metric", errors_disagree),
                         ("duplicate utterance id", duplicate_id), ("negative error count", negative_error),
                         ("no runs", no_runs), ("complete not a boolean", complete_string)):
        cases.append(Case(f"baseline {name}", "baseline", True, edit_json(change)))
    for name, edit in (("truncated", _truncate), ("duplicate key", lambda p, rng: _duplicate_key(p, "sigma")),
                       ("deep nesting", _deep), ("oversized", lambda p, rng: _oversize(p, BASELINE.max_bytes))):
        cases.append(Case(f"baseline {name}", "baseline", True, file_edit(edit)))
    # Calibration files (a baseline given to --keep-calibration, compare, or nights): every command refuses them.
    for name, edit in SPECIAL_FILES.items():
        cases.append(Case(f"calibration file {name}", "calibration", True, file_edit(lambda p, rng, edit=edit: edit(p))))
    for name, change in (("schema_version 1.0", lambda d, rng: d.update(schema_version=1.0)),
                         ("schema_version true", lambda d, rng: d.update(schema_version=True)),
                         ("calibration null", lambda d, rng: d.update(calibration=None)),
                         ("calibration a list", lambda d, rng: d.update(calibration=[])),
                         ("sigma denormal", lambda d, rng: d["calibration"][REGRESSED]["throughput_samples_per_s"]
                          .update(sigma=5e-324))):
        cases.append(Case(f"calibration file {name}", "calibration", True, edit_json(change)))
    return cases


SPECIAL_FILES: dict[str, Callable[[Path], None]] = {
    "FIFO": _fifo, "socket": _socket, "link to a character device": _dev_null, "link to /dev/zero": _dev_zero}


def _run_log_cases() -> list[Case]:
    """gate-run.json (a gate-owned file beside the runs): special files and non-integer schema versions."""
    def write_log(root: Path, doc: Any) -> None:
        (root / "gate-run.json").write_text(_dump(doc), encoding="utf-8")

    def plan(root: Path) -> dict:
        return runlog.skeleton({root.name: "/checkouts/pr"}, {f"{root.name}/run{r}": "completed" for r in "123"},
                               started="2026-11-02T03:00:00+00:00", status="completed")

    cases = []
    for name, edit in SPECIAL_FILES.items():
        def special(root: Path, rng: np.random.Generator, edit=edit) -> str:
            write_log(root, plan(root))
            edit(root / "gate-run.json")
            return "gate-run.json"
        cases.append(Case(f"run log {name}", "tree", True, special))
    for name, change in (("schema_version 1.0", {"schema_version": 1.0}), ("schema_version true", {"schema_version": True}),
                         ("schema_version '1'", {"schema_version": "1"}), ("a run's status a number", {"runs": {"x/run1": 1}}),
                         ("a naive start", {"started": "2026-11-02T03:00:00"}), ("steps an object", {"steps": {}}),
                         ("an unknown status", {"status": "done"})):
        def changed(root: Path, rng: np.random.Generator, change=change) -> str:
            write_log(root, {**plan(root), **change})
            return "gate-run.json"
        cases.append(Case(f"run log {name}", "tree", True, changed))
    for name, doc in (("null", None), ("a list", [])):
        def whole(root: Path, rng: np.random.Generator, doc=doc) -> str:
            write_log(root, doc)
            return "gate-run.json"
        cases.append(Case(f"run log {name}", "tree", True, whole))

    def failed(root: Path, rng: np.random.Generator) -> str:
        doc = plan(root)
        doc["status"], doc["message"] = "failed", "server exited with status 1"
        doc["runs"][f"{root.name}/run{rng.choice(list('123'))}"] = "failed"
        write_log(root, doc)
        return "gate-run.json"
    cases.append(Case("run log marks the run failed", "summary", True, failed))
    return cases


def _report_cases() -> list[Case]:
    def edit_json(change: Callable[[dict], None]) -> Callable[[Path, np.random.Generator], str]:
        def apply(path: Path, rng: np.random.Generator) -> str:
            doc = json.loads(path.read_text(encoding="utf-8"))
            change(doc)
            path.write_text(_dump(doc), encoding="utf-8")
            return path.name
        return apply

    def file_edit(edit: Callable[[Path, np.random.Generator], None]) -> Callable[[Path, np.random.Generator], str]:
        def apply(path: Path, rng: np.random.Generator) -> str:
            edit(path, rng)
            return path.name
        return apply

    changes = {
        "verdict unknown": lambda d: d.update(verdict="great"),
        "rows not a list": lambda d: d.update(rows={}),
        "exit_code string": lambda d: d.update(exit_code="1"),
        "NaN in a row": lambda d: d["rows"][0].update(delta_rel="NaN!"),
        "huge integer": lambda d: d.update(exit_code="BIGINT!"),
        "models wrong type": lambda d: d.update(models="qwen3"),
        "family size a string": lambda d: d["statistics"].update(quality_family_size="12"),
        "floor a string": lambda d: d["rows"][0].update(floor_abs="x"),
        "statistics key missing": lambda d: d["statistics"].pop("speed_alpha"),
    }
    cases = [Case(f"report {name}", "report", True, edit_json(change)) for name, change in changes.items()]
    for name, edit in (("truncated", _truncate), ("duplicate key", lambda p, rng: _duplicate_key(p, "verdict")),
                       ("deep nesting", _deep), ("FIFO", lambda p, rng: _fifo(p)),
                       ("link to /dev/zero", lambda p, rng: _dev_zero(p))):
        cases.append(Case(f"report {name}", "report", True, file_edit(edit)))
    return cases


def catalogue(runs: tuple[str, ...] = ("1", "2", "3")) -> list[Case]:
    """Every case, in a fixed order."""
    cases = _field_cases("qwen3/asr_en.json", SEEDTTS_FIELDS, REGRESSED, runs)
    cases += _field_cases("moss_td/googletime/transcribe_diarize_results.json", MOSS_RESULT_FIELDS,
                          "moss_td/googletime", runs)
    cases += _field_cases("moss_td/googletime/transcribe_diarize_speed_results.json", MOSS_SPEED_FIELDS,
                          "moss_td/googletime", runs)
    cases += _metric_key_cases(runs)
    cases += _jsonl_cases(runs) + _file_cases(runs) + _run_cases(runs) + _run_log_cases() + _baseline_cases()
    cases += _report_cases()
    return cases
