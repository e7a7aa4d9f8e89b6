"""GPU-free waits, the per-GPU lock, the NUMA CPU set and telemetry, with a scripted GPU (test double);
the gpu-marked tests use the real GPU through pynvml."""
from __future__ import annotations

import threading
import time

import pytest

from gate.runner.gpu import GpuBusy, GpuInfo, GpuLock, GpuProcess, LockBusy, cpu_set, throttle_names, wait_until_free
from gate.runner.telemetry import Telemetry, summarize


class ScriptedGpu:
    """TEST DOUBLE of a GpuProvider: memory used follows a script, one value per query (last one repeats)."""

    available = True
    reason = ""

    def __init__(self, memory=(0.0,), samples=()):
        self.memory = list(memory)
        self.samples = list(samples)
        self.queries = 0

    def devices(self):
        return [GpuInfo(0, "Scripted GPU", "GPU-test", "1", "12080", "00000000:3B:00.0", 1000, 1980, 3201, 700.0, True)]

    def memory_used_mib(self, index):
        self.queries += 1
        return self.memory.pop(0) if len(self.memory) > 1 else self.memory[0]

    def processes(self, index):
        return [GpuProcess(4242, 3000.0)]

    def sample(self, index):
        return self.samples.pop(0) if len(self.samples) > 1 else self.samples[0]


def test_wait_until_free_returns_once_memory_drops():
    gpu = ScriptedGpu(memory=[4000, 3000, 900])
    waited = wait_until_free(gpu, 0, below_mib=1024, timeout_s=5, poll_s=0.01)
    assert gpu.queries == 3 and waited < 1


def test_wait_until_free_is_bounded_and_names_the_processes():
    gpu = ScriptedGpu(memory=[4000])
    began = time.monotonic()
    with pytest.raises(GpuBusy, match=r"4000 MiB used \(need < 1024 MiB\) after 0.3 s; processes on it: pid 4242"):
        wait_until_free(gpu, 0, below_mib=1024, timeout_s=0.3, poll_s=0.05)
    assert time.monotonic() - began < 1.0


def test_cpu_set_reads_the_numa_node_of_the_gpu(tmp_path):
    (tmp_path / "0000:3b:00.0").mkdir()
    (tmp_path / "0000:3b:00.0" / "local_cpulist").write_text("0-55,112-167\n")
    assert cpu_set("00000000:3B:00.0", sysfs=tmp_path) == "0-55,112-167"
    assert cpu_set("00000000:AA:00.0", sysfs=tmp_path) is None
    assert cpu_set(None, sysfs=tmp_path) is None


def test_lock_is_exclusive_per_gpu_and_released(tmp_path):
    first = GpuLock(tmp_path, "GPU-1234")
    first.acquire()
    with pytest.raises(LockBusy, match=r"another gate run \(pid \d+\) holds this GPU"):
        GpuLock(tmp_path, "GPU-1234").acquire(wait_s=0.2)
    GpuLock(tmp_path, "GPU-other").acquire()  # another GPU is another lock
    threading.Timer(0.2, first.release).start()
    GpuLock(tmp_path, "GPU-1234").acquire(wait_s=3)  # a bounded wait succeeds once it is released


def test_throttle_reason_bits():
    assert throttle_names(0x1 | 0x4 | 0x40) == ["gpu_idle", "sw_power_cap", "hw_thermal_slowdown"]


def test_telemetry_summary_flags_throttling():
    samples = [
        {"sm_clock_mhz": 1980, "temperature_c": 60, "power_w": 400.0, "gpu_util": 90, "memory_used_mib": 5000.0,
         "throttle_reasons": []},
        {"sm_clock_mhz": 1500, "temperature_c": 85, "power_w": 700.0, "gpu_util": 100, "memory_used_mib": 7000.0,
         "throttle_reasons": ["sw_power_cap"]},
        {"sm_clock_mhz": 1980, "temperature_c": 61, "power_w": 100.0, "gpu_util": 0, "memory_used_mib": 7000.0,
         "throttle_reasons": ["gpu_idle"]},
        {"sm_clock_mhz": 1200, "temperature_c": 90, "power_w": 600.0, "gpu_util": 100, "memory_used_mib": 6000.0,
         "throttle_reasons": ["hw_thermal_slowdown", "sw_power_cap"]},
    ]
    s = summarize(samples, duration_s=4.0)
    assert s["samples"] == 4 and s["sm_clock_mhz_min"] == 1200 and s["temperature_c_max"] == 90
    assert s["throttled_share"] == 0.5  # idle is not a slowdown
    assert s["throttle_reasons"] == {"gpu_idle": 0.25, "hw_thermal_slowdown": 0.25, "sw_power_cap": 0.5}
    assert s["memory_used_mib_max"] == 7000.0 and s["power_w_mean"] == 450.0


def test_telemetry_thread_samples_and_stops():
    gpu = ScriptedGpu(samples=[{"sm_clock_mhz": 1980, "throttle_reasons": []}])
    t = Telemetry(gpu, 0, interval_s=0.05).start()
    time.sleep(0.3)
    t.stop()
    doc = t.document()
    assert doc["available"] and 3 <= doc["summary"]["samples"] <= 8
    assert doc["samples"][0]["sm_clock_mhz"] == 1980 and doc["summary"]["throttled_share"] == 0.0


def test_telemetry_without_a_gpu_still_records_the_hosts_contention():
    """--no-gpu: no GPU samples, but load and CPU steal are recorded, so a slow run on a loaded host is explained."""
    from gate.runner.gpu import NoGpu
    t = Telemetry(NoGpu(), 0, interval_s=0.05).start()
    time.sleep(0.3)
    t.stop()
    doc = t.document()
    assert not doc["available"] and 3 <= doc["summary"]["samples"] <= 8
    assert doc["summary"]["load1_max"] is not None and doc["summary"]["sm_clock_mhz_min"] is None
    assert "sm_clock_mhz" not in doc["samples"][0]


def _nvml_or_skip():
    try:
        from gate.runner.gpu import NvmlGpu
        gpu = NvmlGpu()
    except Exception as exc:  # GateError when NVML is missing
        pytest.skip(f"no NVIDIA GPU/pynvml here: {exc}")
    if not gpu.devices():
        pytest.skip("NVML sees no GPU")
    return gpu


@pytest.mark.gpu
def test_nvml_facts_and_telemetry_on_the_real_gpu():
    gpu = _nvml_or_skip()
    info = gpu.devices()[0]
    assert info.uuid and info.uuid.startswith("GPU-") and info.memory_total_mib > 0 and info.max_sm_clock_mhz > 0
    t = Telemetry(gpu, 0, interval_s=0.2).start()
    time.sleep(1.1)
    t.stop()
    summary = t.document()["summary"]
    assert summary["samples"] >= 4 and summary["sm_clock_mhz_min"] > 0 and summary["temperature_c_max"] > 0


@pytest.mark.gpu
def test_gpu_memory_is_seen_and_released_on_the_real_gpu():
    gpu = _nvml_or_skip()
    pytest.importorskip("torch")
    before = gpu.memory_used_mib(0)
    # A separate process holds 2 GiB, as a server would; killing it must bring memory back down.
    import subprocess
    import sys
    holder = subprocess.Popen([sys.executable, "-c", "import torch, time; x = torch.ones(2 * 2**30, dtype=torch.uint8, "
                               "device='cuda'); torch.cuda.synchronize(); print('held', flush=True); time.sleep(60)"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        assert gpu.memory_used_mib(0) >= before + 2000
        with pytest.raises(GpuBusy):
            wait_until_free(gpu, 0, below_mib=before + 1024, timeout_s=0.5)
    finally:
        holder.kill()
        holder.wait()
    waited = wait_until_free(gpu, 0, below_mib=before + 1024, timeout_s=30, poll_s=0.1)
    assert waited < 30


def test_a_long_gpu_wait_says_what_it_waits_for():
    now = [0.0]
    lines: list[str] = []
    gpu = ScriptedGpu(memory=[5000] * 40 + [10])
    wait_until_free(gpu, 0, below_mib=1024, timeout_s=600, poll_s=1.0, clock=lambda: now[0],
                    sleep=lambda s: now.__setitem__(0, now[0] + s), say=lines.append)
    assert lines == ["waiting for GPU 0 memory to drop below 1024 MiB (5 s of at most 600 s)",
                     "waiting for GPU 0 memory to drop below 1024 MiB (35 s of at most 600 s)"]


def test_lock_refuses_a_symlink_and_leaves_its_target_alone(tmp_path):
    target = tmp_path / "precious"
    target.write_text("keep me")
    (tmp_path / "gate-gpu-GPU-x.lock").symlink_to(target)
    from gate.formats.errors import GateError
    with pytest.raises(GateError, match="is a symbolic link; refusing"):
        GpuLock(tmp_path, "GPU-x").acquire()
    assert target.read_text() == "keep me"


def test_a_lock_file_of_another_user_means_gpu_busy(tmp_path, monkeypatch):
    import os
    lock = GpuLock(tmp_path, "GPU-y")
    lock.path.write_text("")
    real_open = os.open

    def foreign(path, flags, mode=0o777):  # what open() gives a non-root user for another user's 0644 file
        if str(path) == str(lock.path):
            raise PermissionError(13, "Permission denied")
        return real_open(path, flags, mode)
    monkeypatch.setattr(os, "open", foreign)
    with pytest.raises(LockBusy, match="GPU busy: the lock file belongs to another user"):
        lock.acquire()
