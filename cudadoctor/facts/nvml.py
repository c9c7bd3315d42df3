"""What NVML says about the driver and each GPU (part of the facts; see facts.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

# NvmlDevice.error values: the GPU is gone from the driver (fallen off the bus, needs a reset)
LOST_ERRORS = frozenset({"GPU_IS_LOST", "RESET_REQUIRED", "GPU_NOT_FOUND"})
# NvmlDevice.error values: NVML crashed or hung inside a call for this GPU (NvmlDevice.failure says where)
SICK_ERRORS = frozenset({"CRASHED", "HUNG"})


@dataclass
class GpuProcess:
    pid: int
    used_memory: int | None  # bytes; None where the OS hides it (WDDM)
    kind: str = "compute"  # compute | graphics
    name: str | None = None
    user: str | None = None
    command: str | None = None


@dataclass
class MigInstance:
    index: int
    uuid: str | None = None
    memory_total: int | None = None
    memory_used: int | None = None
    error: str | None = None


@dataclass
class NvmlDevice:
    index: int
    name: str | None = None
    uuid: str | None = None
    pci_bus_id: str | None = None
    compute_capability: str | None = None  # "9.0"
    memory_total: int | None = None
    memory_free: int | None = None
    memory_used: int | None = None
    utilization_gpu: int | None = None
    temperature_c: int | None = None
    pcie_gen_current: int | None = None
    pcie_gen_max: int | None = None
    pcie_width_current: int | None = None
    pcie_width_max: int | None = None
    mig_enabled: bool | None = None
    mig_instances: list[MigInstance] = field(default_factory=list)
    processes: list[GpuProcess] = field(default_factory=list)
    # NVML error name when the device could not be queried at all (GPU_IS_LOST, …), or CRASHED / HUNG
    # when NVML crashed or hung inside a call for this GPU (the other GPUs are still read)
    error: str | None = None
    failure: str | None = None  # CRASHED / HUNG: how and in which call, "crashed (SIGSEGV) in nvmlDeviceGetName"
    # queries this device's driver does not answer: {"temperature": "NOT_SUPPORTED"}
    unsupported: dict[str, str] = field(default_factory=dict)
    # health (rules/health.py), each None when unknown (NOT_SUPPORTED, NO_PERMISSION, an old driver)
    ecc_uncorrected_volatile: int | None = None  # since the driver loaded
    ecc_uncorrected_aggregate: int | None = None  # lifetime
    retired_pages_sbe: int | None = None  # pages retired for multiple single-bit errors (pre-A100)
    retired_pages_dbe: int | None = None  # pages retired for a double-bit error
    retired_pages_pending: bool | None = None  # retirement waits for a GPU reset
    remapped_rows_correctable: int | None = None  # A100 and newer
    remapped_rows_uncorrectable: int | None = None
    remapped_rows_pending: bool | None = None  # a remap waits for a GPU reset
    remapped_rows_failure: bool | None = None  # no spare row was left: needs service
    persistence_mode: bool | None = None
    compute_mode: str | None = None  # default | exclusive_thread | prohibited | exclusive_process
    clocks_event_reasons: int | None = None  # nvmlClocksEventReason* bitmask, now


@dataclass
class DriverFacts:
    """The NVIDIA driver as NVML sees it."""

    binding: str | None  # "nvidia-ml-py 13.615.71", or None when the binding is missing
    library_loaded: bool
    init_status: str  # "ok" or an NVML error name: LIBRARY_NOT_FOUND, DRIVER_NOT_LOADED, …
    init_message: str | None = None
    library_path: str | None = None  # the libnvidia-ml the process actually loaded
    library_version: str | None = None  # user-space driver version, from that file name
    driver_version: str | None = None
    cuda_driver_version: int | None = None  # 12020 means 12.2
    nvml_version: str | None = None
    device_count: int | None = None
    devices: list[NvmlDevice] = field(default_factory=list)
    missing_functions: list[str] = field(default_factory=list)
    # system-level NVML queries that returned an error: {"nvmlDeviceGetCount": "UNKNOWN"}
    query_errors: dict[str, str] = field(default_factory=dict)
    # the query could not finish: "crashed (SIGSEGV) in nvmlDeviceGetName", "hung in nvmlShutdown"
    query_failure: str | None = None

    def incomplete(self) -> str | None:
        """A query that hung before it read every GPU did not finish in time (a crash is a finding)."""
        # several parts when more than one GPU's query failed: "crashed … on GPU 1; hung … on GPU 2"
        parts = (self.query_failure or "").split("; ")
        if any(p.startswith("hung") and "after every GPU" not in p for p in parts):
            return f"NVML {self.query_failure}: did not finish in time"
        return None
