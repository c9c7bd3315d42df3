"""What the probes collected: JSON-serialisable dataclasses, saved in every JSON report.

Every field may be None where the fact could not be read; the rules treat None as "unknown",
never as "false".
"""

from __future__ import annotations

from dataclasses import dataclass, field

# NVML facts live apart so that `cudadoctor gpus` imports only them (start-up time).
from cudadoctor.facts_nvml import DriverFacts, GpuProcess, MigInstance, NvmlDevice  # noqa: F401 (re-exported)


@dataclass
class CudaDriverFacts:
    """libcuda loaded with ctypes in a child process: what cuInit and friends say."""

    library_found: bool
    library_path: str | None = None
    candidates: list[str] = field(default_factory=list)  # names and paths tried
    load_error: str | None = None
    init_result: int | None = None  # CUresult of cuInit(0)
    init_error_name: str | None = None  # CUDA_ERROR_NO_DEVICE, …
    driver_version: int | None = None  # cuDriverGetVersion, 12020 means 12.2
    device_count: int | None = None
    timed_out: bool = False
    child_error: str | None = None


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
    in_container: bool = False
    container_hints: list[str] = field(default_factory=list)
    wsl: bool = False
    shm_total: int | None = None  # /dev/shm size in bytes
    kernel_module_version: str | None = None  # /proc/driver/nvidia/version
    env: dict[str, str] = field(default_factory=dict)  # relevant variables, secrets masked


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
    installed: bool = False
    python_version: str | None = None
    import_error: str | None = None
    version: str | None = None  # "2.13.0+cu130"
    path: str | None = None
    cuda: str | None = None  # torch.version.cuda: "13.0", None on a CPU build
    hip: str | None = None
    cuda_built: bool = False
    compiled_cuda_version: int | None = None
    arch_flags: list[str] = field(default_factory=list)  # ["sm_75", …, "compute_120"]
    cudnn_built: bool = False
    is_available: bool | None = None  # None: never reached (the child hung or crashed first)
    availability_warnings: list[str] = field(default_factory=list)
    device_count: int | None = None
    devices: list[TorchDevice] = field(default_factory=list)
    device_error: str | None = None
    kernel_error: str | None = None  # a tiny kernel launch on cuda:0 failed
    cudnn_version: int | None = None
    cudnn_error: str | None = None
    nccl_version: str | None = None
    mps_built: bool | None = None
    mps_available: bool | None = None
    torchvision: str | None = None
    torchaudio: str | None = None
    cuda_visible_devices: str | None = None
    loaded_libraries: dict[str, list[str]] = field(default_factory=dict)
    complete: bool = False  # the child got to the end
    timed_out: bool = False
    child_error: str | None = None


@dataclass
class Transfer:
    """One copy measurement: median of several timed repeats after a warm-up."""

    device: int  # CUDA ordinal
    direction: str  # h2d | d2h
    memory: str  # pinned | pageable
    gbps: float | None = None  # median, GB/s (10^9 bytes)
    samples: list[float] = field(default_factory=list)
    size: int = 0  # bytes per copy
    error: str | None = None


@dataclass
class BandwidthFacts:
    skipped: str | None = None  # why nothing was measured (no usable GPU, …)
    transfers: list[Transfer] = field(default_factory=list)
    device_names: dict[str, str] = field(default_factory=dict)  # CUDA ordinal -> name
    error: str | None = None
    timed_out: bool = False


@dataclass
class SmokeStep:
    device: str  # cpu | cuda:0
    model: str  # mlp | cnn
    losses: list[float] = field(default_factory=list)
    steps_per_s: float | None = None
    error: str | None = None


@dataclass
class SmokeFacts:
    gpu_skipped: str | None = None  # why the GPU half did not run
    steps: list[SmokeStep] = field(default_factory=list)
    max_loss_difference: float | None = None  # CPU vs GPU, same seed and weights, TF32 off
    amp_dtype: str | None = None  # bfloat16 | float16
    amp_finite: bool | None = None
    amp_error: str | None = None
    dataloader_ok: bool | None = None
    dataloader_error: str | None = None
    checkpoint_ok: bool | None = None
    checkpoint_error: str | None = None
    error: str | None = None
    timed_out: bool = False


@dataclass
class Facts:
    """Everything one run collected; a probe that did not finish leaves its field None."""

    system: SystemFacts | None = None
    pci: PciFacts | None = None
    driver: DriverFacts | None = None
    cuda_driver: CudaDriverFacts | None = None
    toolkit: ToolkitFacts | None = None
    torch: TorchFacts | None = None
    bandwidth: BandwidthFacts | None = None
    smoke: SmokeFacts | None = None
