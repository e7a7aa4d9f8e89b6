"""env.json: the fingerprint of the machine and inputs a run measured with (read by compare's comparability).

Missing facts are null, never invented. `build_env` writes the document; `check_env` is its schema
for readers (gate.reading.results): every fact the gate uses is typed, nothing is coerced.
"""
from __future__ import annotations

import dataclasses
import os
import platform
import socket
from importlib import metadata
from pathlib import Path
from typing import Any, Mapping

from gate.formats import schema
from gate.formats.schema import OBJECT, STRING, optional

ENV_SCHEMA_VERSION = 1


def check_env(doc: Any) -> None:
    """Raise schema.SchemaError unless `doc` is an env.json the gate can use: schema_version 1, `gpu`
    null or an object whose name and driver_version are strings or null, and `datasets`/`models`
    objects whose facts (loaded_fingerprint, model_id, revision) are strings or null."""
    OBJECT(doc, "top level")
    schema.get(doc, "schema_version", schema.one_of(ENV_SCHEMA_VERSION))
    gpu = schema.get_optional(doc, "gpu", OBJECT)
    if gpu is not None:
        for name in ("name", "driver_version"):
            schema.get_optional(doc, f"gpu.{name}", optional(STRING))
    for group, facts in (("datasets", ("loaded_fingerprint",)), ("models", ("model_id", "revision"))):
        entries = schema.get_optional(doc, group, OBJECT, {})
        for key, entry in entries.items():
            OBJECT(entry, f"{group}.{key}")
            for fact in facts:
                optional(STRING)(entry.get(fact), f"{group}.{key}.{fact}")


def gate_version() -> str:
    """The installed distribution's version; from a source checkout (PYTHONPATH=., nothing installed) the
    package's own version marked as such, so the run log still names what ran."""
    try:
        return metadata.version("asr-regression-gate")
    except metadata.PackageNotFoundError:
        from gate import __version__
        return f"{__version__}+source"


def host_facts(cpuinfo: Path = Path("/proc/cpuinfo")) -> dict[str, Any]:
    cpu_model = None
    try:
        for line in cpuinfo.read_text(errors="replace").splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"hostname": socket.gethostname(), "platform": platform.platform(), "cpu_model": cpu_model,
            "logical_cpus": os.cpu_count()}


def cached_dataset_ref(hf_hub: Path, repo_id: str) -> str | None:
    """The commit the local HF hub cache holds as the dataset's `main` (refs/main, written at download time).
    Offline this is the best record of which revision the cached rows came from; None when not cached."""
    ref = Path(hf_hub) / f"datasets--{repo_id.replace('/', '--')}" / "refs" / "main"
    try:
        return ref.read_text().strip() or None
    except OSError:
        return None


def build_env(*, gpu: Any | None, cpu_set: str | None, python: str | None, commit: str | None, checkout: str,
              datasets: Mapping[str, Mapping[str, Any]], models: Mapping[str, Mapping[str, Any]],
              host: Mapping[str, Any] | None = None, notes: tuple[str, ...] = ()) -> dict[str, Any]:
    """The env.json document. `gpu` is a runner.gpu.GpuInfo (or None without a GPU)."""
    doc: dict[str, Any] = {
        "schema_version": ENV_SCHEMA_VERSION,
        "gate_version": gate_version(),
        "gpu": dataclasses.asdict(gpu) if gpu is not None else None,
        "cpu_set": cpu_set,
        "host": dict(host) if host is not None else host_facts(),
        "python": python,
        "commit": commit,
        "checkout": checkout,
        "datasets": {k: dict(v) for k, v in datasets.items()},
        "models": {k: dict(v) for k, v in models.items()},
    }
    if notes:
        doc["notes"] = list(notes)
    return doc
