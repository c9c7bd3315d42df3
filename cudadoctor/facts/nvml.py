"""What NVML says about the driver and each GPU (part of the facts; see facts.py)."""

from __future__ import annotations

from dataclasses import dataclass, field


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
    # NVML error name when the device could not be queried at all (GPU_IS_LOST, …)
    error: str | None = None
    # queries this device's driver does not answer: {"temperature": "NOT_SUPPORTED"}
    unsupported: dict[str, str] = field(default_factory=dict)


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
