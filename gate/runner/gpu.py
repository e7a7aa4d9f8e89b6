"""The GPU under test, through pynvml: what it is, how much memory is used, telemetry samples, a lock.

pynvml is imported lazily (inside NvmlGpu) so that `gate run --no-gpu` and every other gate
command work on a machine without the NVIDIA library. A provider is passed to the runner as a
collaborator, so tests can give a scripted one (tests/e2e/run) and `--no-gpu` gives NoGpu.
"""
from __future__ import annotations

import errno
import fcntl
import os
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol

from gate.formats.errors import GateError
from gate.runner.waits import Say, Ticker, quiet

# NVML clock-event (throttle) reason bits -> names, from nvml.h (nvmlClocksEventReason*).
THROTTLE_REASONS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}
# Reasons that mean the GPU ran slower than it could for a reason other than being idle.
SLOWDOWN_REASONS = frozenset(THROTTLE_REASONS.values()) - {"gpu_idle", "applications_clocks_setting",
                                                          "display_clock_setting"}


class GpuBusy(GateError):
    """The GPU did not become free in time (another job, or a server that survived its kill)."""

    exit_code = 3


class LockBusy(GateError):
    """Another gate holds this GPU."""

    exit_code = 4


@dataclass(frozen=True)
class GpuInfo:
    index: int
    name: str | None
    uuid: str | None
    driver_version: str | None
    cuda_driver_version: str | None
    pci_bus_id: str | None
    memory_total_mib: int | None
    max_sm_clock_mhz: int | None
    max_mem_clock_mhz: int | None
    power_limit_w: float | None
    persistence_mode: bool | None


@dataclass(frozen=True)
class GpuProcess:
    pid: int
    used_mib: float | None


class GpuProvider(Protocol):
    available: bool
    reason: str  # why not available ("" when available)

    def devices(self) -> list[GpuInfo]: ...

    def memory_used_mib(self, index: int) -> float: ...

    def processes(self, index: int) -> list[GpuProcess]: ...

    def sample(self, index: int) -> dict: ...


class NoGpu:
    """No GPU (`gate run --no-gpu`, for CPU tests): GPU waits are skipped and telemetry holds the host only."""

    available = False

    def __init__(self, reason: str = "no GPU (--no-gpu): GPU-free waits skipped, GPU telemetry not recorded") -> None:
        self.reason = reason

    def devices(self) -> list[GpuInfo]:
        return []

    def memory_used_mib(self, index: int) -> float:
        return 0.0

    def processes(self, index: int) -> list[GpuProcess]:
        return []

    def sample(self, index: int) -> dict:
        return {}


class NvmlGpu:
    """The real GPU through pynvml (nvidia-ml-py)."""

    available = True
    reason = ""

    def __init__(self) -> None:
        try:
            import pynvml
        except ImportError:
            raise GateError("pynvml is not installed (pip install nvidia-ml-py); use --no-gpu to run without a GPU") from None
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as exc:
            raise GateError(f"NVML cannot start ({exc}); is the NVIDIA driver present? "
                            "use --no-gpu to run without a GPU") from None
        self._nvml = pynvml

    def _handle(self, index: int):
        return self._nvml.nvmlDeviceGetHandleByIndex(index)

    def _try(self, fn: Callable, *args):
        """A fact NVML cannot give is None, never invented."""
        try:
            value = fn(*args)
        except self._nvml.NVMLError:
            return None
        return value.decode() if isinstance(value, bytes) else value

    def devices(self) -> list[GpuInfo]:
        nv = self._nvml
        found = []
        for index in range(nv.nvmlDeviceGetCount()):
            h = self._handle(index)
            memory = self._try(nv.nvmlDeviceGetMemoryInfo, h)
            power = self._try(nv.nvmlDeviceGetPowerManagementLimit, h)
            pci = self._try(nv.nvmlDeviceGetPciInfo, h)
            persistence = self._try(nv.nvmlDeviceGetPersistenceMode, h)
            cuda = self._try(nv.nvmlSystemGetCudaDriverVersion)
            bus_id = None
            if pci is not None:
                bus_id = pci.busId.decode() if isinstance(pci.busId, bytes) else pci.busId
            found.append(GpuInfo(
                index=index,
                name=self._try(nv.nvmlDeviceGetName, h),
                uuid=self._try(nv.nvmlDeviceGetUUID, h),
                driver_version=self._try(nv.nvmlSystemGetDriverVersion),
                cuda_driver_version=None if cuda is None else str(cuda),
                pci_bus_id=bus_id,
                memory_total_mib=None if memory is None else int(memory.total // 2**20),
                max_sm_clock_mhz=self._try(nv.nvmlDeviceGetMaxClockInfo, h, nv.NVML_CLOCK_SM),
                max_mem_clock_mhz=self._try(nv.nvmlDeviceGetMaxClockInfo, h, nv.NVML_CLOCK_MEM),
                power_limit_w=None if power is None else power / 1000.0,
                persistence_mode=None if persistence is None else bool(persistence),
            ))
        return found

    def memory_used_mib(self, index: int) -> float:
        return self._nvml.nvmlDeviceGetMemoryInfo(self._handle(index)).used / 2**20

    def processes(self, index: int) -> list[GpuProcess]:
        nv = self._nvml
        h = self._handle(index)
        found: dict[int, GpuProcess] = {}
        for getter in (nv.nvmlDeviceGetComputeRunningProcesses, nv.nvmlDeviceGetGraphicsRunningProcesses):
            for proc in self._try(getter, h) or []:
                used = getattr(proc, "usedGpuMemory", None)
                found[proc.pid] = GpuProcess(proc.pid, None if used is None else used / 2**20)
        return list(found.values())

    def sample(self, index: int) -> dict:
        nv = self._nvml
        h = self._handle(index)
        util = self._try(nv.nvmlDeviceGetUtilizationRates, h)
        memory = self._try(nv.nvmlDeviceGetMemoryInfo, h)
        power = self._try(nv.nvmlDeviceGetPowerUsage, h)
        reasons_of = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None) or nv.nvmlDeviceGetCurrentClocksThrottleReasons
        reasons = self._try(reasons_of, h)
        return {
            "sm_clock_mhz": self._try(nv.nvmlDeviceGetClockInfo, h, nv.NVML_CLOCK_SM),
            "mem_clock_mhz": self._try(nv.nvmlDeviceGetClockInfo, h, nv.NVML_CLOCK_MEM),
            "temperature_c": self._try(nv.nvmlDeviceGetTemperature, h, nv.NVML_TEMPERATURE_GPU),
            "power_w": None if power is None else power / 1000.0,
            "gpu_util": None if util is None else util.gpu,
            "memory_util": None if util is None else util.memory,
            "memory_used_mib": None if memory is None else round(memory.used / 2**20, 1),
            "throttle_reasons": None if reasons is None else throttle_names(reasons),
        }


def throttle_names(mask: int) -> list[str]:
    return [name for bit, name in THROTTLE_REASONS.items() if mask & bit]


def cpu_set(pci_bus_id: str | None, sysfs: Path = Path("/sys/bus/pci/devices")) -> str | None:
    """The CPUs of the GPU's NUMA node (runbook Variables: CPUSET), or None when sysfs does not say.

    NVML gives "00000000:3B:00.0"; sysfs names the device "0000:3b:00.0" (the runbook's `tail -c 13`)."""
    if not pci_bus_id:
        return None
    name = pci_bus_id.lower()[-12:]
    try:
        return (sysfs / name / "local_cpulist").read_text().strip() or None
    except OSError:
        return None


def wait_until_free(gpu: GpuProvider, index: int, *, below_mib: float, timeout_s: float, poll_s: float = 0.05,
                    clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
                    say: Say = quiet) -> float:
    """Block until the GPU's used memory is under `below_mib`; return the seconds waited.

    Raises GpuBusy naming the processes still on the GPU when it does not happen within `timeout_s`."""
    if not gpu.available:
        return 0.0
    start = clock()
    ticker = Ticker(say, f"GPU {index} memory to drop below {below_mib:g} MiB", limit_s=timeout_s, clock=clock)
    while True:
        used = gpu.memory_used_mib(index)
        if used < below_mib:
            return clock() - start
        ticker.tick()
        if clock() - start >= timeout_s:
            procs = ", ".join(f"pid {p.pid}" + (f" ({p.used_mib:.0f} MiB)" if p.used_mib is not None else "")
                              for p in gpu.processes(index)) or "none listed"
            raise GpuBusy(f"GPU {index} still has {used:.0f} MiB used (need < {below_mib:g} MiB) after "
                          f"{timeout_s:g} s; processes on it: {procs}. Another job is using it, or a server survived.")
        sleep(poll_s)


class GpuLock:
    """One gate per GPU: an exclusive flock on <lock_dir>/gate-gpu-<key>.lock, key = the GPU UUID
    (without a GPU: the server port, the one resource such runs share).

    The kernel drops the lock when the process dies, so a crashed gate never leaves it stale. The file
    is opened without following links (a link planted in /tmp must not make us truncate its target),
    and a lock file another user owns and we cannot open means another user's gate: GPU busy."""

    def __init__(self, lock_dir: Path, key: str) -> None:
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in key)
        self.path = Path(lock_dir) / f"gate-gpu-{safe}.lock"
        self._fd: int | None = None

    def _open(self) -> int:
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
        except PermissionError:
            owner = _owner(self.path)
            raise LockBusy(f"GPU busy: the lock file belongs to another user{owner} and cannot be opened; "
                           "another user's gate run holds this GPU", path=self.path) from None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise GateError("is a symbolic link; refusing to use it as the GPU lock (remove it)",
                                path=self.path) from None
            raise GateError(f"cannot open the GPU lock ({exc.strerror})", path=self.path) from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise GateError("not a regular file; refusing to use it as the GPU lock (remove it)", path=self.path)
        return fd

    def acquire(self, *, wait_s: float = 0.0, poll_s: float = 0.1, say: Say = quiet) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = self._open()
        deadline = time.monotonic() + wait_s
        ticker = Ticker(say, f"another gate run to release {self.path}", limit_s=wait_s)
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES):
                    os.close(fd)
                    raise
                if time.monotonic() >= deadline:
                    holder = _read_holder(self.path)
                    os.close(fd)
                    raise LockBusy(f"another gate run{holder} holds this GPU; waited {wait_s:g} s "
                                   "(use --lock-wait SECONDS to wait longer)", path=self.path) from None
                ticker.tick()
                time.sleep(poll_s)
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "GpuLock":
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def _owner(path: Path) -> str:
    try:
        return f" (uid {path.lstat().st_uid})"
    except OSError:
        return ""


def _read_holder(path: Path) -> str:
    try:
        pid = path.read_text().strip()
    except OSError:
        return ""
    return f" (pid {pid})" if pid.isdigit() else ""
