"""Are the two sides measuring the same thing? Fingerprints and their diff (docs/design.md §Coverage and comparability).

A fingerprint is what a result depends on besides the code under test: the GPU and its driver, the
installed packages (pip freeze), and per workload the dataset (id, revision, loaded fingerprint), the
evaluation input hash, the model (id, revision) and the MOSS token budget. A fact both sides know and
that differs makes the affected rows NOT COMPARABLE unless its kind is allowed; a fact only one side
knows is shown as "unknown", never guessed and never blocking. An env.json that exists but cannot
be read is not "unknown": its facts (GPU, driver) become an UNREADABLE marker that always differs
and always counts as known, so the rows are NOT COMPARABLE unless that kind is allowed.

The GPU, driver, CUDA build and packages come from `gate run`'s env.json and pip freeze when a run has
them, and from the runbook result files' own `provenance` (nvidia_smi_csv, torch_cuda_build, packages)
when it has not, so two runbook trees measured on an H100 and an H200 differ. Where both record the GPU
or driver they must agree (env.json's GPU is one of those nvidia-smi listed); a run whose two records
disagree gets a CONFLICT marker that, like UNREADABLE, always differs.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from gate.formats.config import Suite
from gate.formats.result_types import ResultTree

GPU = "gpu"
DRIVER = "driver"
FREEZE = "freeze"
DATASET = "dataset"
EVALUATION_INPUT = "evaluation_input"
MODEL = "model"
MAX_NEW_TOKENS = "max_new_tokens"
CLIENT = "client"  # the client settings the runbook fixes: what is measured, not the code under test
KINDS = (GPU, DRIVER, FREEZE, DATASET, EVALUATION_INPUT, MODEL, MAX_NEW_TOKENS, CLIENT)

# The package under test appears in the freeze with its commit; that difference is the point of the comparison.
UNDER_TEST = frozenset({"sglang-omni"})

# Workload fact -> the kind it belongs to.
WORKLOAD_FACTS = {
    "dataset_id": DATASET,
    "dataset_revision": DATASET,
    "dataset_fingerprint": DATASET,
    "evaluation_input_sha256": EVALUATION_INPUT,
    "model_id": MODEL,
    "model_revision": MODEL,
    "max_new_tokens": MAX_NEW_TOKENS,
    # The runbook's client command line (concurrency 32 or 16, --repeats 1, --warmup, --stream only for the
    # stream workload, MOSS's 300 s timeout): a candidate measured at concurrency 8 is not slower, it is another test.
    "concurrency": CLIENT,
    "stream": CLIENT,
    "warmup": CLIENT,
    "repeats": CLIENT,
    "request_timeout_s": CLIENT,
}

UNREADABLE = "unreadable env.json"  # prefix of the marker that replaces the facts of a broken env record
CONFLICT = "env.json and provenance disagree"  # prefix of the marker for a run whose two records disagree
# nvidia-smi --query-gpu=index,name,uuid,memory.total,driver_version,... (the runbook's provenance columns)
_CSV_NAME, _CSV_DRIVER, _CSV_MIN_FIELDS = 1, 4, 5

_FREEZE_LINE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*(==|===|@)\s*(.+?)\s*$")


@dataclass(frozen=True)
class Fingerprint:
    gpu: str | None = None
    driver: str | None = None
    packages: Mapping[str, str] | None = None  # normalized name -> version (None: no freeze recorded)
    workloads: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # workload id -> fact -> value
    cuda: str | None = None  # torch's CUDA build (provenance)

    def to_dict(self) -> dict:
        out = {"gpu": self.gpu, "driver": self.driver,
               "packages": None if self.packages is None else dict(sorted(self.packages.items())),
               "workloads": {w: dict(facts) for w, facts in self.workloads.items()}}
        if self.cuda is not None:  # absent rather than null: fingerprints stored before it read the same
            out["cuda"] = self.cuda
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Fingerprint":
        packages = data.get("packages")
        return cls(gpu=data.get("gpu"), driver=data.get("driver"),
                   packages=None if packages is None else {str(k): str(v) for k, v in packages.items()},
                   workloads={str(w): dict(f) for w, f in (data.get("workloads") or {}).items()},
                   cuda=data.get("cuda"))


@dataclass(frozen=True)
class Difference:
    kind: str
    workload: str | None  # None: the whole environment
    item: str  # what differs: "gpu name", a package name, "model_revision", ...
    baseline: Any
    candidate: Any
    known: bool = True  # False: only one side recorded the fact (shown, never blocking)

    def to_dict(self, allowed: Iterable[str] = ()) -> dict:
        return {"kind": self.kind, "workload": self.workload, "item": self.item, "baseline": _text(self.baseline),
                "candidate": _text(self.candidate), "known": self.known,
                "blocking": self.known and self.kind not in set(allowed)}


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
            for name in ("concurrency", "stream", "warmup", "repeats", "request_timeout_s"):
                facts[name].append(getattr(p, name))
        workloads[workload_id] = {name: _join(values) for name, values in facts.items()}
    return Fingerprint(gpu=_join(gpus), driver=_join(drivers), packages=packages, workloads=workloads,
                       cuda=_join(cudas))


def diff(base: Fingerprint, cand: Fingerprint, workloads: Iterable[str]) -> list[Difference]:
    """Every fact that differs (or is known on one side only), environment first, then per workload."""
    out = [d for d in (_fact(GPU, None, "gpu name", base.gpu, cand.gpu),
                       _fact(DRIVER, None, "driver version", base.driver, cand.driver),
                       _fact(DRIVER, None, "torch CUDA build", base.cuda, cand.cuda)) if d]
    if base.packages is not None and cand.packages is not None:
        for name in sorted(set(base.packages) | set(cand.packages)):
            a, b = base.packages.get(name), cand.packages.get(name)
            if a != b or _unreadable(a) or _unreadable(b):
                out.append(Difference(FREEZE, None, name, a or "(absent)", b or "(absent)"))
    elif (base.packages is None) != (cand.packages is None):
        out.append(Difference(FREEZE, None, "pip freeze", _recorded(base.packages), _recorded(cand.packages), known=False))
    for workload_id in workloads:
        a_facts, b_facts = base.workloads.get(workload_id, {}), cand.workloads.get(workload_id, {})
        for name, kind in WORKLOAD_FACTS.items():
            d = _fact(kind, workload_id, name, a_facts.get(name), b_facts.get(name))
            if d:
                out.append(d)
    return out


def blocking_kinds(differences: Iterable[Difference], workload_id: str, allowed: Iterable[str]) -> tuple[str, ...]:
    """The kinds that make this workload's rows NOT COMPARABLE."""
    allowed = set(allowed)
    kinds = {d.kind for d in differences if d.known and d.kind not in allowed and d.workload in (None, workload_id)}
    return tuple(k for k in KINDS if k in kinds)


def _fact(kind: str, workload: str | None, item: str, a: Any, b: Any) -> Difference | None:
    if _unreadable(a) or _unreadable(b):  # a broken record never matches, and never reads as "unknown"
        return Difference(kind, workload, item, a if a is not None else "unknown", b if b is not None else "unknown")
    if a == b or (a is None and b is None):
        return None
    return Difference(kind, workload, item, a, b, known=a is not None and b is not None)


def disagrees_within(d: Difference) -> str | None:
    """Which side's own records disagree (or cannot be read) on this fact: "baseline", "candidate", "both" or None."""
    sides = [name for name, value in (("baseline", d.baseline), ("candidate", d.candidate)) if _unreadable(value)]
    return "both" if len(sides) == 2 else (sides[0] if sides else None)


def _unreadable(value: Any) -> bool:
    return isinstance(value, str) and (UNREADABLE in value or CONFLICT in value)


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


def _recorded(packages: Mapping | None) -> str:
    return "not recorded" if packages is None else f"{len(packages)} packages"


def _text(value: Any) -> Any:
    return value if value is None or isinstance(value, (str, int, float, bool)) else str(value)
