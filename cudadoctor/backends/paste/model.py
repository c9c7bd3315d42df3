"""What one format parser found in a paste: flat values with where each was seen, GPUs, packages,
environment variables and recognised error texts. Nothing here is a default: a key that is absent is
unknown, and the merger leaves the matching fact None."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# The keys a parser may set (the merger maps them to Facts fields):
KEYS = (
    # torch
    "torch_version",  # "2.1.0+cu121"
    "torch_cuda",  # "12.1"; set with torch_cuda_built
    "torch_cuda_built",  # True / False (a CPU build)
    "torch_hip",  # ROCm build version
    "torch_available",  # torch.cuda.is_available()
    "torch_arch_flags",  # ["sm_50", …] from torch's own warning
    "torch_kernel_error",  # "no kernel image is available …"
    "torch_cudnn_error",  # torch's cuDNN error text
    "torch_installed",  # False: "No module named 'torch'"
    # the machine
    "os",  # Linux / Windows / Darwin
    "os_release",  # "Ubuntu 22.04.3 LTS"
    "machine",  # x86_64 / aarch64 / arm64 / AMD64
    "kernel",
    "python_version",  # "3.10.12"
    "wsl",  # True under WSL2
    "in_container",  # True when the paste shows it
    "container_hint",
    "kernel_module_version",  # /proc/driver/nvidia/version
    "shm_total",  # bytes
    # the driver (NVML / nvidia-smi)
    "driver_version",  # "535.104.05"
    "driver_cuda",  # int, 12020 = 12.2 (nvidia-smi "CUDA Version", torch's "found version")
    "nvml_status",  # "ok" or an NVML error name
    "nvml_message",
    "nvml_library_version",  # "NVML library version: 550.90" after a mismatch
    "gpu_count",  # GPUs nvidia-smi lists (all of them, not only the visible ones)
    # libcuda
    "cuda_init_result",  # CUresult / cudaError of CUDA initialisation: 3, 802, 804, …
    "libcuda_found",  # False: torch found no driver library
    "libcuda_version",  # int: the CUDA version torch read from the driver ("found version 11040")
    # toolkit
    "nvcc_version",  # "12.1"
)


@dataclass
class Gpu:
    index: int | None = None
    name: str | None = None
    uuid: str | None = None
    bus_id: str | None = None
    memory_total: int | None = None  # bytes
    memory_used: int | None = None
    capability: str | None = None  # only when the paste prints it (a torch warning)
    mig: bool | None = None


@dataclass
class Hit:
    """A recognised error or warning text."""

    kind: str  # "undefined-symbol", "cannot-open-library", "deserialize-cuda", …
    text: str  # the matched text, shortened
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass
class Partial:
    format: str  # "torch collect_env", "nvidia-smi", …
    values: dict[str, Any] = field(default_factory=dict)
    where: dict[str, str] = field(default_factory=dict)  # key -> "line 12: Nvidia driver version: 535…"
    gpus: list[Gpu] = field(default_factory=list)
    torch_gpus: list[Gpu] = field(default_factory=list)  # devices as torch names them (cuda:N)
    packages: dict[str, str] = field(default_factory=dict)  # normalised name -> version
    conda: dict[str, tuple[str, str]] = field(default_factory=dict)  # name -> (version, build)
    env: dict[str, str] = field(default_factory=dict)
    hits: list[Hit] = field(default_factory=list)

    def set(self, key: str, value: Any, where: str) -> None:
        """The first value seen for a key wins inside one format."""
        if key not in KEYS:
            raise KeyError(key)
        if value is None or key in self.values:
            return
        self.values[key] = value
        self.where[key] = where

    def empty(self) -> bool:
        return not (self.values or self.gpus or self.torch_gpus or self.packages or self.conda or self.hits)
