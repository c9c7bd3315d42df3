"""NVML through nvidia-ml-py: loaded lazily, every call through the one guarded helper (nvml_guard.py).

NVML errors become names (the part after NVML_ERROR_), never exceptions for the caller:
an old driver's missing functions, a device that does not support a query, or a lost GPU
each leave a mark in the facts and the rest of the query goes on.
"""

from __future__ import annotations

import ctypes
import os
import re
import sys
import threading
from collections.abc import Callable
from typing import Any

from cudadoctor.backends.nvml_guard import DeviceLost, Guard, RecordFacts, error_names, text
from cudadoctor.facts.nvml import DriverFacts, GpuProcess, MigInstance, NvmlDevice

_LOCK = threading.Lock()

# Test seam: when set (directories joined by os.pathsep), libcuda.so.1 and libnvidia-ml.so.1 are looked
# for only there, never through the linker cache or the driver's usual directories. The tests' fake
# libraries stand for "the whole driver" this way even on a machine with a real one. Unset: no change.
LIBRARY_DIRS_ENV = "CUDADOCTOR_LIBRARY_DIRS"


def library_dirs() -> list[str] | None:
    """The directories CUDADOCTOR_LIBRARY_DIRS confines the driver libraries to; None when unset."""
    value = os.environ.get(LIBRARY_DIRS_ENV)
    return None if value is None else [d for d in value.split(os.pathsep) if d]


def preload_nvml(nv: Any) -> None:
    """Hand pynvml the libnvidia-ml.so.1 of CUDADOCTOR_LIBRARY_DIRS (pynvml dlopens it by bare name, which
    would find the real one). Raises nv.NVMLError(LIBRARY_NOT_FOUND) when none of them has it."""
    dirs = library_dirs()
    if dirs is None or nv.nvmlLib is not None:
        return
    for d in dirs:
        try:
            nv.nvmlLib = ctypes.CDLL(os.path.join(d, "libnvidia-ml.so.1"))
            return
        except OSError:
            continue
    raise nv.NVMLError(nv.NVML_ERROR_LIBRARY_NOT_FOUND)


def _binding_version() -> str | None:
    from importlib import metadata

    for dist in ("nvidia-ml-py", "nvidia-ml-py3", "pynvml"):
        try:
            return f"{dist} {metadata.version(dist)}"
        except metadata.PackageNotFoundError:
            continue
    return None


def _loaded_library_path() -> str | None:
    """The libnvidia-ml file this process mapped (Linux), which names the user-space version."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            for line in maps:
                if "libnvidia-ml" in line:
                    return line.split(None, 5)[-1].strip()
    except OSError:
        return None
    return None


def library_version_from_path(path: str | None) -> str | None:
    if not path:
        return None
    m = re.search(r"libnvidia-ml\.so\.(\d+\.\d+(?:\.\d+)?)$", path)
    return m.group(1) if m else None


class _Session:
    """A snapshot's NVML calls for the lifetime of an init/shutdown pair: each through the one guard
    (nvml_guard.Guard), whose RecordFacts policy files every error in the facts."""

    def __init__(
        self,
        nv: Any,
        facts: DriverFacts,
        trace: Callable[[str], None] | None = None,
        progress: Callable[[DriverFacts], None] | None = None,
    ) -> None:
        self.facts = facts
        self.guard = Guard(nv, RecordFacts(facts), trace, resolve=lambda name: _function(nv, name))
        self.progress = progress  # told the facts so far after each device

    def call(self, fn_name: str, *args: Any, device: NvmlDevice | None = None, what: str = "") -> Any:
        return self.guard.call(fn_name, *args, at=(device, what))

    def first(self, names: list[str], *args: Any, device: NvmlDevice | None = None, what: str = "") -> Any:
        """Call the newest of several versioned functions the driver has."""
        return self.guard.first(names, *args, at=(device, what))


def _function(nv: Any, fn_name: str) -> Callable[..., Any] | None:
    fn: Callable[..., Any] | None = getattr(nv, fn_name, None)
    if fn is not None and fn_name in _PROCESS_CALLS and hasattr(nv, "_nvmlGetFunctionPointer"):
        return _process_lister(nv, fn_name)
    return fn


def query_driver(
    with_processes: bool = True,
    with_binding: bool = True,
    trace: Callable[[str], None] | None = None,
    progress: Callable[[DriverFacts], None] | None = None,
    first: int = 0,
) -> DriverFacts:
    """Everything NVML can tell about the driver and each GPU. Never raises for NVML trouble.

    with_binding=False skips naming the binding's version (importlib.metadata costs ~7 ms, which
    `cudadoctor gpus` does not spend). first: the GPUs before this index are not read (they were, by a
    query that then crashed or hung in the GPU at first - 1)."""
    try:
        import pynvml as nv  # the nvidia-ml-py binding
    except ImportError:
        return DriverFacts(binding=None, library_loaded=False, init_status="BINDING_MISSING")

    facts = DriverFacts(binding=_binding_version() if with_binding else None, library_loaded=False, init_status="ok")
    with _LOCK:
        try:
            if trace is not None:
                trace("nvmlInit")
            preload_nvml(nv)
            nv.nvmlInit()
        except nv.NVMLError as exc:
            facts.init_status = error_names(nv).get(exc.value, f"CODE_{exc.value}")
            facts.init_message = text(str(exc))
            facts.library_loaded = nv.nvmlLib is not None
            facts.library_path = _loaded_library_path() if facts.library_loaded else None
            facts.library_version = library_version_from_path(facts.library_path)
            return facts
        try:
            facts.library_loaded = True
            facts.library_path = _loaded_library_path()
            facts.library_version = library_version_from_path(facts.library_path)
            _query_system(_Session(nv, facts, trace, progress), with_processes, first)
        finally:
            try:
                if trace is not None:
                    trace("nvmlShutdown")
                nv.nvmlShutdown()
            except nv.NVMLError:
                pass
    return facts


def _query_system(s: _Session, with_processes: bool, first: int = 0) -> None:
    f = s.facts
    version = s.call("nvmlSystemGetDriverVersion")
    f.driver_version = text(version) if version is not None else None
    f.cuda_driver_version = s.first(["nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion"])
    nvml_version = s.call("nvmlSystemGetNVMLVersion")
    f.nvml_version = text(nvml_version) if nvml_version is not None else None
    f.device_count = s.call("nvmlDeviceGetCount")
    if s.progress is not None:
        s.progress(f)  # the count goes out before any GPU: a crash in the first GPU is then that GPU's
    for index in range(first, f.device_count or 0):
        dev = NvmlDevice(index=index)
        try:
            handle = s.call("nvmlDeviceGetHandleByIndex", index, device=dev, what="handle")
            if handle is None:
                dev.error = dev.unsupported.pop("handle", "UNKNOWN")
            else:
                _query_device(s, handle, dev, with_processes)
        except DeviceLost as gone:
            dev.error = gone.name
        f.devices.append(dev)
        if s.progress is not None:
            s.progress(f)


def _query_device(s: _Session, h: Any, dev: NvmlDevice, with_processes: bool) -> None:
    name = s.call("nvmlDeviceGetName", h, device=dev, what="name")
    dev.name = text(name) if name is not None else None
    uuid = s.call("nvmlDeviceGetUUID", h, device=dev, what="uuid")
    dev.uuid = text(uuid) if uuid is not None else None
    pci = s.call("nvmlDeviceGetPciInfo", h, device=dev, what="pci")
    if pci is not None:
        dev.pci_bus_id = text(pci.busId)
    cc = s.call("nvmlDeviceGetCudaComputeCapability", h, device=dev, what="compute_capability")
    if cc is not None:
        dev.compute_capability = f"{cc[0]}.{cc[1]}"
    mem = s.call("nvmlDeviceGetMemoryInfo", h, device=dev, what="memory")
    if mem is not None:
        dev.memory_total, dev.memory_free, dev.memory_used = int(mem.total), int(mem.free), int(mem.used)
    util = s.call("nvmlDeviceGetUtilizationRates", h, device=dev, what="utilization")
    if util is not None:
        dev.utilization_gpu = int(util.gpu)
    dev.temperature_c = s.call("nvmlDeviceGetTemperature", h, 0, device=dev, what="temperature")
    dev.pcie_gen_current = s.call("nvmlDeviceGetCurrPcieLinkGeneration", h, device=dev, what="pcie")
    dev.pcie_gen_max = s.call("nvmlDeviceGetMaxPcieLinkGeneration", h, device=dev, what="pcie")
    dev.pcie_width_current = s.call("nvmlDeviceGetCurrPcieLinkWidth", h, device=dev, what="pcie")
    dev.pcie_width_max = s.call("nvmlDeviceGetMaxPcieLinkWidth", h, device=dev, what="pcie")
    mig = s.call("nvmlDeviceGetMigMode", h, device=dev, what="mig_mode")
    if dev.unsupported.get("mig_mode") == "NOT_SUPPORTED":
        del dev.unsupported["mig_mode"]  # just a GPU without MIG; any other error stays named
    if mig is not None:
        dev.mig_enabled = bool(mig[0])
        if dev.mig_enabled:
            dev.mig_instances = _query_mig(s, h, dev)
    _query_health(s, h, dev)
    if with_processes:
        dev.processes = _query_processes(s, h, dev)


# nvmlComputeMode_t -> the names facts use (nvml.h; EXCLUSIVE_THREAD was removed in CUDA 8 but may be reported)
_COMPUTE_MODES = {0: "default", 1: "exclusive_thread", 2: "prohibited", 3: "exclusive_process"}
_UNCORRECTED, _VOLATILE, _AGGREGATE = 1, 0, 1  # NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_*_ECC
_CAUSE_SBE, _CAUSE_DBE = 0, 1  # NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS, _DOUBLE_BIT_ECC_ERROR


def _query_health(s: _Session, h: Any, dev: NvmlDevice) -> None:
    """ECC, retired pages, remapped rows, persistence, compute mode, clock event reasons. Optional: a GPU or
    driver without one of them leaves it None, and an old driver's missing function is not reported."""
    missing_before = list(s.facts.missing_functions)
    unsupported_before = dict(dev.unsupported)
    vol = s.call("nvmlDeviceGetTotalEccErrors", h, _UNCORRECTED, _VOLATILE, device=dev, what="ecc")
    agg = s.call("nvmlDeviceGetTotalEccErrors", h, _UNCORRECTED, _AGGREGATE, device=dev, what="ecc")
    dev.ecc_uncorrected_volatile = None if vol is None else int(vol)
    dev.ecc_uncorrected_aggregate = None if agg is None else int(agg)
    pending = s.call("nvmlDeviceGetRetiredPagesPendingStatus", h, device=dev, what="retired_pages")
    if pending is not None:
        dev.retired_pages_pending = bool(pending)
        sbe = s.call("nvmlDeviceGetRetiredPages", h, _CAUSE_SBE, device=dev, what="retired_pages")
        dbe = s.call("nvmlDeviceGetRetiredPages", h, _CAUSE_DBE, device=dev, what="retired_pages")
        dev.retired_pages_sbe = None if sbe is None else len(sbe)
        dev.retired_pages_dbe = None if dbe is None else len(dbe)
    rows = s.call("nvmlDeviceGetRemappedRows", h, device=dev, what="remapped_rows")
    if rows is not None:
        corr, unc, is_pending, failure = rows
        dev.remapped_rows_correctable, dev.remapped_rows_uncorrectable = int(corr), int(unc)
        dev.remapped_rows_pending, dev.remapped_rows_failure = bool(is_pending), bool(failure)
    persistence = s.call("nvmlDeviceGetPersistenceMode", h, device=dev, what="persistence")
    dev.persistence_mode = None if persistence is None else bool(persistence)
    mode = s.call("nvmlDeviceGetComputeMode", h, device=dev, what="compute_mode")
    dev.compute_mode = None if mode is None else _COMPUTE_MODES.get(int(mode), f"mode_{int(mode)}")
    reasons = s.first(
        ["nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"],
        h,
        device=dev,
        what="clocks_event_reasons",
    )
    dev.clocks_event_reasons = None if reasons is None else int(reasons)
    # NOT_SUPPORTED is the normal answer on GeForce and older GPUs: not worth a mark in the facts
    for key in ("ecc", "retired_pages", "remapped_rows", "persistence", "compute_mode", "clocks_event_reasons"):
        if dev.unsupported.get(key) == "NOT_SUPPORTED" and key not in unsupported_before:
            del dev.unsupported[key]
    s.facts.missing_functions[:] = missing_before


def _query_mig(s: _Session, h: Any, dev: NvmlDevice) -> list[MigInstance]:
    """The MIG devices; an error other than an empty slot (NOT_FOUND) is named in dev.unsupported
    ("mig_devices") and on the instance, never read as "no MIG device"."""
    out: list[MigInstance] = []
    for i in range(s.call("nvmlDeviceGetMaxMigDeviceCount", h, device=dev, what="mig_devices") or 0):
        probe = NvmlDevice(index=i)
        mh = s.call("nvmlDeviceGetMigDeviceHandleByIndex", h, i, device=probe, what="handle")
        if mh is None:
            error = probe.unsupported.get("handle", "NOT_FOUND")
            if error != "NOT_FOUND":  # NOT_FOUND: an empty slot
                dev.unsupported.setdefault("mig_devices", error)
            continue
        inst = MigInstance(index=i)
        uuid = s.call("nvmlDeviceGetUUID", mh, device=probe, what="uuid")
        inst.uuid = text(uuid) if uuid is not None else None
        mem = s.call("nvmlDeviceGetMemoryInfo", mh, device=probe, what="memory")
        if mem is not None:
            inst.memory_total, inst.memory_used = int(mem.total), int(mem.used)
        if probe.unsupported:
            inst.error = ", ".join(f"{what} {name}" for what, name in sorted(probe.unsupported.items()))
            dev.unsupported.setdefault("mig_devices", next(iter(probe.unsupported.values())))
        out.append(inst)
    return out


class _ProcessInfo(ctypes.Structure):
    """nvmlProcessInfo_v2_t (nvml.h), what the _v2 and _v3 process lists fill in."""

    _fields_ = [
        ("pid", ctypes.c_uint),
        ("usedGpuMemory", ctypes.c_ulonglong),
        ("gpuInstanceId", ctypes.c_uint),
        ("computeInstanceId", ctypes.c_uint),
    ]


_PROCESS_CALLS = frozenset(
    f"nvmlDevice{kind}RunningProcesses_{v}" for kind in ("GetCompute", "GetGraphics") for v in ("v2", "v3")
)
_PROCESS_ROOM = 64
_NOT_AVAILABLE = (1 << 64) - 1  # NVML_VALUE_NOT_AVAILABLE_ulonglong: memory hidden by the OS (WDDM)


def _process_lister(nv: Any, fn_name: str) -> Callable[[Any], list[_ProcessInfo]]:
    """pynvml's process list call, reading the records with a plain ctypes structure: pynvml wraps every
    field of every record in Python objects (128 GPUs x 50 processes took 0.4 s that way)."""

    def run(handle: Any) -> list[_ProcessInfo]:
        fn = nv._nvmlGetFunctionPointer(fn_name)
        # room for a busy GPU's processes at the first call: one call, not pynvml's two (size, then list)
        count = ctypes.c_uint(_PROCESS_ROOM)
        for _attempt in range(3):
            records = (_ProcessInfo * count.value)()
            ret = fn(handle, ctypes.byref(count), records)
            if ret != nv.NVML_ERROR_INSUFFICIENT_SIZE:
                break
            count.value = count.value * 2 + 5  # the number NVML says, and room for processes starting now
        if ret != nv.NVML_SUCCESS:
            raise nv.NVMLError(ret)
        return records[: count.value]

    return run


def _query_processes(s: _Session, h: Any, dev: NvmlDevice) -> list[GpuProcess]:
    procs: dict[int, GpuProcess] = {}
    for kind, names in (
        ("compute", ["nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2"]),
        (
            "graphics",
            ["nvmlDeviceGetGraphicsRunningProcesses_v3", "nvmlDeviceGetGraphicsRunningProcesses_v2"],
        ),
    ):
        for p in s.first(names, h, device=dev, what=f"{kind}_processes") or []:
            if p.pid in procs:
                continue
            used = p.usedGpuMemory
            used = None if used is None or used == _NOT_AVAILABLE else int(used)
            procs[p.pid] = GpuProcess(pid=int(p.pid), used_memory=used, kind=kind)
    return list(procs.values())
