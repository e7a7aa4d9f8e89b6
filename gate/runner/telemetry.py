"""Telemetry during a run: a background thread samples the GPU (where there is one) and the host about
once a second.

The summary lets a report flag a run that was throttled or shared: minimum and mean SM clock,
the share of samples with a slowdown reason (power cap, thermal, HW slowdown...), peak memory, and
the host's contention: 1-minute load average and the share of CPU time stolen by the hypervisor
(/proc/stat "steal", non-zero on a shared VM), sampled with the GPU.
"""
from __future__ import annotations

import os
import statistics
import threading
import time
from typing import Any

from gate.runner.gpu import SLOWDOWN_REASONS, GpuProvider

TELEMETRY_SCHEMA_VERSION = 1


class Telemetry:
    def __init__(self, gpu: GpuProvider, index: int, *, interval_s: float = 1.0) -> None:
        self.gpu = gpu
        self.index = index
        self.interval_s = interval_s
        self.samples: list[dict[str, Any]] = []
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._start = 0.0
        self._end = 0.0

    def start(self) -> "Telemetry":
        self._start = time.monotonic()
        # The host's contention is sampled without a GPU too: a loaded runner explains slow runs either way.
        self._thread = threading.Thread(target=self._loop, name="gate-telemetry", daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.is_set():
            began = time.monotonic()
            try:
                sample = self.gpu.sample(self.index) if self.gpu.available else {}
                self.samples.append({"t_s": round(began - self._start, 3), "time": time.time(), **sample,
                                     **host_sample()})
            except Exception as exc:  # an NVML hiccup must not kill the run; it is recorded instead
                if len(self.errors) < 10:
                    self.errors.append(f"{type(exc).__name__}: {exc}")
            self._stop.wait(max(0.0, self.interval_s - (time.monotonic() - began)))

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._end = time.monotonic()

    def document(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"schema_version": TELEMETRY_SCHEMA_VERSION, "interval_s": self.interval_s,
                               "available": self.gpu.available, "gpu_index": self.index if self.gpu.available else None}
        if not self.gpu.available:
            doc["error"] = self.gpu.reason
        if self.errors:
            doc["errors"] = self.errors
        doc["samples"] = self.samples
        doc["summary"] = summarize(self.samples, duration_s=(self._end or time.monotonic()) - self._start)
        return doc


def host_sample() -> dict[str, Any]:
    """Load average and cumulative CPU jiffies (total, steal) of the host; empty where /proc is missing."""
    out: dict[str, Any] = {}
    try:
        out["load1"] = round(os.getloadavg()[0], 2)
    except OSError:
        pass
    try:
        with open("/proc/stat") as handle:
            fields = [int(v) for v in handle.readline().split()[1:]]
        out["cpu_jiffies"] = sum(fields[:8])  # user nice system idle iowait irq softirq steal (guest is in user)
        out["steal_jiffies"] = fields[7] if len(fields) > 7 else 0
    except (OSError, ValueError, IndexError):
        pass
    return out


def steal_share(samples: list[dict[str, Any]]) -> float | None:
    """Share of all CPU time the hypervisor stole between the first and last sample."""
    with_stat = [s for s in samples if isinstance(s.get("cpu_jiffies"), int) and isinstance(s.get("steal_jiffies"), int)]
    if len(with_stat) < 2:
        return None
    total = with_stat[-1]["cpu_jiffies"] - with_stat[0]["cpu_jiffies"]
    return round((with_stat[-1]["steal_jiffies"] - with_stat[0]["steal_jiffies"]) / total, 4) if total > 0 else None


def summarize(samples: list[dict[str, Any]], *, duration_s: float) -> dict[str, Any]:
    def values(key: str) -> list[float]:
        return [s[key] for s in samples if isinstance(s.get(key), (int, float))]

    def agg(fn, key: str):
        v = values(key)
        return round(fn(v), 3) if v else None

    with_reasons = [s for s in samples if isinstance(s.get("throttle_reasons"), list)]
    shares: dict[str, float] = {}
    for sample in with_reasons:
        for name in sample["throttle_reasons"]:
            shares[name] = shares.get(name, 0) + 1
    throttled = sum(1 for s in with_reasons if SLOWDOWN_REASONS.intersection(s["throttle_reasons"]))
    return {
        "duration_s": round(duration_s, 3),
        "samples": len(samples),
        "sm_clock_mhz_min": agg(min, "sm_clock_mhz"),
        "sm_clock_mhz_mean": agg(statistics.fmean, "sm_clock_mhz"),
        "temperature_c_max": agg(max, "temperature_c"),
        "power_w_mean": agg(statistics.fmean, "power_w"),
        "gpu_util_mean": agg(statistics.fmean, "gpu_util"),
        "memory_used_mib_max": agg(max, "memory_used_mib"),
        "throttled_share": round(throttled / len(with_reasons), 4) if with_reasons else None,
        "throttle_reasons": {k: round(v / len(with_reasons), 4) for k, v in sorted(shares.items())},
        "load1_max": agg(max, "load1"),
        "load1_mean": agg(statistics.fmean, "load1"),
        "cpu_steal_share": steal_share(samples),
        "host_cpus": os.cpu_count(),
    }
