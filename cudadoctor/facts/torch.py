"""torch as the target interpreter sees it (gathered by backends/torch_child.py)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class TorchDevice:
    index: int
    name: str | None = None
    capability: str | None = None  # "8.6"
    total_memory: int | None = None
    uuid: str | None = None


@dataclass
class TorchFacts:
    """torch as the target interpreter sees it, gathered in a child process."""

    python_executable: str
    installed: bool | None = None
    python_version: str | None = None
    import_error: str | None = None
    version: str | None = None  # "2.13.0+cu130"
    path: str | None = None
    cuda: str | None = None  # torch.version.cuda: "13.0", None on a CPU build
    hip: str | None = None
    cuda_built: bool | None = None
    compiled_cuda_version: int | None = None
    arch_flags: list[str] | None = None  # ["sm_75", …, "compute_120"]; None: unknown
    cudnn_built: bool | None = None
    is_available: bool | None = None  # None: never reached (the child hung or crashed first)
    availability_warnings: list[str] = field(default_factory=list)
    device_count: int | None = None
    devices: list[TorchDevice] = field(default_factory=list)
    device_error: str | None = None
    kernel_error: str | None = None  # a tiny kernel launch on cuda:0 failed
    cudnn_version: int | None = None
    cudnn_present: bool | None = None  # False: torch.backends.cudnn.version() answered None (no cuDNN)
    cudnn_error: str | None = None
    nccl_version: str | None = None
    mps_built: bool | None = None
    mps_available: bool | None = None
    torchvision: str | None = None
    torchaudio: str | None = None
    cuda_visible_devices: str | None = None
    loaded_libraries: dict[str, list[str]] | None = None
    complete: bool = False  # the child got to the end
    timed_out: bool = False
    child_error: str | None = None
