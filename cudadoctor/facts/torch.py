"""torch as the target interpreter sees it (gathered by backends/children/torch_child.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

from cudadoctor.facts.libraries import LibraryFacts


@dataclass
class TorchDevice:
    index: int
    name: str | None = None
    capability: str | None = None  # "8.6"
    total_memory: int | None = None  # NVML's total less the driver's reservation (real H100: 480 MiB less)
    uuid: str | None = None  # as torch prints it: NVML's UUID without "GPU-" (tests/fixtures/real_h100_nvml.json)


@dataclass
class WheelVariant:
    """The wheel variant (PEP 817) torch was installed as, from its `*.dist-info/variant.json`: the label
    ("null" is the fallback a variant-enabled installer picks when no variant suits the machine) and the
    properties ("nvidia :: cuda_version_lower_bound :: 12.8")."""

    label: str | None = None
    properties: list[str] = field(default_factory=list)


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
    # raw facts for the library stack (backends/libraries.py classifies them into `libraries`)
    prefix: str | None = None  # sys.prefix
    stdlib: str | None = None  # sysconfig.get_path("stdlib"): where a PEP 668 EXTERNALLY-MANAGED marker lives
    ensurepip: bool | None = None  # `-m venv` can put pip in a new venv (Debian splits it into python3-venv)
    site_dirs: list[str] | None = None  # sys.path directories, in order
    user_site: str | None = None  # the user site-packages when enabled
    ld_library_path: str | None = None
    torch_installer: str | None = None  # INSTALLER of torch's dist-info: pip, uv, conda, poetry
    torch_variant: WheelVariant | None = None  # None: a regular wheel (or a report from before)
    # free-threaded Python (PEP 703): sysconfig Py_GIL_DISABLED; None: not read (a report from before)
    free_threaded: bool | None = None
    # on a free-threaded interpreter, the installed companions of knowledge/free_threaded.PACKAGES: name -> version
    free_threaded_packages: dict[str, str] | None = None
    libraries: LibraryFacts | None = None
    complete: bool = False  # the child got to the end
    timed_out: bool = False
    child_error: str | None = None

    def incomplete(self) -> str | None:
        """Why the torch check did not finish (its facts are partial), or None."""
        if self.timed_out:
            return "the torch child did not finish in time"
        if self.child_error and not self.complete and self.import_error is None:
            return f"the torch child failed: {self.child_error}"
        return None
