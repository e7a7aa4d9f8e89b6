"""The fingerprint of a result tree: the facts gate.reading.comparability compares, read from the tree's runs.

The GPU, driver, CUDA build and packages come from `gate run`'s env.json and pip freeze when a run has them,
and from the runbook result files' own `provenance` (nvidia_smi_csv, torch_cuda_build, packages) when it has
not; where both record the GPU or driver they must agree, else the run's fact is a CONFLICT marker.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from gate.formats.config import Suite
from gate.formats.result_types import ResultTree
from gate.reading.comparability import CONFLICT, UNDER_TEST, UNREADABLE, WORKLOAD_FACTS, Fingerprint

# nvidia-smi --query-gpu=index,name,uuid,memory.total,driver_version,... (the runbook's provenance columns)
_CSV_NAME, _CSV_DRIVER, _CSV_MIN_FIELDS = 1, 4, 5

_FREEZE_LINE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*(==|===|@)\s*(.+?)\s*$")


def parse_freeze(lines: Iterable[str]) -> dict[str, str]:
    """`pip freeze` lines -> {normalized name: version or URL}; editable and comment lines are skipped."""
    packages = {}
    for line in lines:
        line = line.strip()
        if not line or line.startswith(("#", "-e ", "--")):
            continue
        match = _FREEZE_LINE.match(line)
        if match:
            name = re.sub(r"[-_.]+", "-", match.group(1)).lower()
            packages[name] = match.group(3)
    return packages


@dataclass(frozen=True)
class _ProvenanceFacts:
    """What a run's result files say about the machine (every workload of the run, joined)."""

    gpus: tuple[str, ...] = ()  # distinct GPU names nvidia-smi listed
    driver: str | None = None
    cuda: str | None = None
    packages: Mapping[str, str] | None = None


def parse_nvidia_smi_csv(text: str | None) -> tuple[tuple[str, ...], str | None]:
    """(GPU names, driver) from the runbook's nvidia_smi_csv; lines of another shape are not guessed at."""
    names, drivers = [], []
    for line in (text or "").splitlines():
        fields = [f.strip() for f in line.split(",")]
        if len(fields) >= _CSV_MIN_FIELDS and fields[_CSV_NAME]:
            names.append(fields[_CSV_NAME])
            drivers.append(fields[_CSV_DRIVER] or None)
    return tuple(dict.fromkeys(names)), _join(list(drivers))


def _provenance_of_runs(tree: ResultTree) -> dict[str, _ProvenanceFacts]:
    by_run: dict[str, list] = {}
    for runs in tree.workloads.values():
        for workload_run in runs:
            by_run.setdefault(workload_run.run, []).append(workload_run.provenance)
    out = {}
    for run, provenances in by_run.items():
        parsed = [parse_nvidia_smi_csv(p.gpu_csv) for p in provenances]
        packages = [{re.sub(r"[-_.]+", "-", k).lower(): v for k, v in p.packages.items() if v}
                    for p in provenances if p.packages]
        out[run] = _ProvenanceFacts(
            gpus=tuple(dict.fromkeys(name for names, _ in parsed for name in names)),
            driver=_join([driver for _, driver in parsed]),
            cuda=_join([p.torch_cuda_build for p in provenances]),
            packages={k: " | ".join(sorted({str(d.get(k, "(absent)")) for d in packages}))
                      for k in sorted(set().union(*packages))} if packages else None)
    return out


def _agree(item: str, env_value: str | None, recorded: tuple[str, ...], run: str) -> str | None:
    """env.json's fact where the provenance has none or lists it; a CONFLICT marker where they disagree."""
    if env_value is None:
        return " + ".join(recorded) if recorded else None
    if not recorded or env_value.casefold() in {r.casefold() for r in recorded}:
        return env_value
    return f"{CONFLICT} in {run} on the {item}: {env_value} vs {' + '.join(recorded)}"


def _checked_freeze(freeze: dict[str, str], named: Mapping[str, str] | None, run: str) -> dict[str, str]:
    """The freeze, with a CONFLICT marker on each package the result files name at another version."""
    out = dict(freeze)
    for name, version in (named or {}).items():
        if name in freeze and " | " not in version and freeze[name] != version:
            out[name] = f"{CONFLICT} in {run}: freeze.txt {freeze[name]} vs provenance {version}"
    return out


def fingerprint_of_tree(tree: ResultTree, suite: Suite) -> Fingerprint:
    """Collect the facts of a result tree. Runs of one side disagreeing on a fact join as 'a | b'."""
    gpus: list[str | None] = []
    drivers: list[str | None] = []
    cudas: list[str | None] = []
    freezes: list[dict[str, str]] = []
    provenance = _provenance_of_runs(tree)
    for run in tree.runs:
        machine = provenance.get(run.name, _ProvenanceFacts())
        cudas.append(machine.cuda)
        if run.env_problem:
            gpus.append(f"{UNREADABLE} in {run.name}")
            drivers.append(f"{UNREADABLE} in {run.name}")
            continue
        env = run.env or {}
        gpu_doc = env.get("gpu")
        gpu = gpu_doc if isinstance(gpu_doc, dict) else {}
        gpus.append(_agree("GPU", _str(gpu.get("name")), machine.gpus, run.name))
        drivers.append(_agree("driver", _str(gpu.get("driver_version")),
                              (machine.driver,) if machine.driver else (), run.name))
        if run.freeze is not None:
            freezes.append(_checked_freeze(parse_freeze(run.freeze), machine.packages, run.name))
        elif machine.packages is not None:  # no pip freeze beside the run: the result files' named packages
            freezes.append(dict(machine.packages))
    packages = None
    if freezes:
        packages = {}
        for name in sorted(set().union(*freezes)):
            versions = sorted({f.get(name, "(absent)") for f in freezes})
            packages[name] = " | ".join(versions)
        packages = {k: v for k, v in packages.items() if k not in UNDER_TEST}
    workloads = {}
    for workload_id, runs in tree.workloads.items():
        workload = suite.workload(workload_id)
        facts: dict[str, list] = {name: [] for name in WORKLOAD_FACTS}
        for workload_run, run_info in zip(runs, tree.runs_of(workload_id), strict=True):
            p = workload_run.provenance
            env = run_info.env or {}
            model_env = _dig(env, "models", workload.model) or {}
            dataset_id = p.dataset_id or suite.datasets[workload.dataset].id
            facts["dataset_id"].append(p.dataset_id)
            facts["dataset_revision"].append(p.dataset_revision)
            facts["dataset_fingerprint"].append(_str(_dig(env, "datasets", dataset_id, "loaded_fingerprint")))
            facts["evaluation_input_sha256"].append(p.evaluation_input_sha256)
            facts["model_id"].append(p.model_id or _str(model_env.get("model_id")))
            facts["model_revision"].append(p.model_revision or _str(model_env.get("revision")))
            facts["max_new_tokens"].append(p.max_new_tokens if workload.format == "moss" else None)
            for name in ("concurrency", "stream", "warmup", "repeats", "request_timeout_s", "request_rate",
                         "exclude_sample_ids"):
                facts[name].append(getattr(p, name))
        workloads[workload_id] = {name: _join(values) for name, values in facts.items()}
    return Fingerprint(gpu=_join(gpus), driver=_join(drivers), packages=packages, workloads=workloads,
                       cuda=_join(cudas))


def _join(values: list) -> Any:
    present = [v for v in values if v is not None]
    if not present:
        return None
    distinct = list(dict.fromkeys(present))
    return distinct[0] if len(distinct) == 1 else " | ".join(str(v) for v in distinct)


def _dig(data: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
