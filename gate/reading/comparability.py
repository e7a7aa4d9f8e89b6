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
disagree gets a CONFLICT marker that, like UNREADABLE, always differs. Reading those facts from a result
tree is gate.reading.tree_fingerprint's; this module compares two fingerprints.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

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
    "request_rate": CLIENT,  # MOSS --request-rate: Poisson arrivals measure another load than "inf"
    "exclude_sample_ids": CLIENT,  # MOSS --exclude-sample-ids: which samples were left out
}

UNREADABLE = "unreadable env.json"  # prefix of the marker that replaces the facts of a broken env record
CONFLICT = "env.json and provenance disagree"  # prefix of the marker for a run whose two records disagree
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


def _recorded(packages: Mapping | None) -> str:
    return "not recorded" if packages is None else f"{len(packages)} packages"


def _text(value: Any) -> Any:
    return value if value is None or isinstance(value, (str, int, float, bool)) else str(value)
