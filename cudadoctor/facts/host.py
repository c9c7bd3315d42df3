"""Facts about the machine around the GPU: the OS, the PCI bus, the CUDA toolkit, libcuda."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class CudaDriverFacts:
    """libcuda loaded with ctypes in a child process: what cuInit and friends say."""

    library_found: bool | None = None  # None: the child never said (crashed, hung before loading)
    library_path: str | None = None
    candidates: list[str] = field(default_factory=list)  # names and paths tried
    load_error: str | None = None
    init_result: int | None = None  # CUresult of cuInit(0)
    init_error_name: str | None = None  # CUDA_ERROR_NO_DEVICE, …
    driver_version: int | None = None  # cuDriverGetVersion, 12020 means 12.2
    device_count: int | None = None
    timed_out: bool = False
    child_error: str | None = None

    def incomplete(self) -> str | None:
        if self.timed_out:
            return "cuInit did not return in time"
        if self.child_error and self.library_found is None:
            return f"the libcuda child failed: {self.child_error}"
        return None


@dataclass
class ToolkitInstall:
    path: str
    version: str | None = None


@dataclass
class ToolkitFacts:
    nvcc_path: str | None = None
    nvcc_version: str | None = None  # "13.0"
    cuda_home: str | None = None  # CUDA_HOME, else CUDA_PATH
    installs: list[ToolkitInstall] = field(default_factory=list)
    libcudart: list[str] = field(default_factory=list)  # files found in the usual places


@dataclass
class PciDevice:
    address: str
    device_id: str | None = None
    class_code: str | None = None
    kernel_driver: str | None = None  # nvidia, nouveau, vfio-pci, or None when unbound


@dataclass
class PciFacts:
    scanned: bool  # False where the bus cannot be read (no /sys, macOS, Windows)
    nvidia_gpus: list[PciDevice] = field(default_factory=list)
    method: str | None = None


@dataclass
class SystemFacts:
    os: str  # Linux, Windows, Darwin
    os_release: str | None = None  # "Ubuntu 22.04.4 LTS"
    os_id: str | None = None  # ubuntu, debian, rhel, fedora, arch, …
    kernel: str | None = None
    machine: str | None = None  # x86_64, aarch64, arm64
    python_version: str | None = None
    python_executable: str | None = None
    hostname: str | None = None
    user: str | None = None
    cpu_count: int | None = None
    memory_total: int | None = None
    in_container: bool | None = None
    container_hints: list[str] = field(default_factory=list)
    wsl: bool | None = None
    shm_total: int | None = None  # /dev/shm size in bytes
    kernel_module_version: str | None = None  # /proc/driver/nvidia/version
    env: dict[str, str] | None = None  # relevant variables, secrets masked; None: not read
