"""Between torch and the driver: the CUDA libraries torch loaded, the nvidia-* wheels against torch's
pins, what manages the environment, and whether torch.compile works.

Filled by backends/libraries.py (from the raw paths the torch child reports and the target's
dist-info) and backends/installer.py (files of the target environment), and by the compile child.
Unknown is None: an empty list here means "looked, found none".
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Where a loaded library came from. "wheel" (an nvidia-* package), "torch" (torch/lib) and "env" (the
# target environment's own lib directory, e.g. conda) are the environment's own copies; the others
# were found first through the loader's search path.
OWN_ORIGINS = ("wheel", "torch", "env")


@dataclass
class LoadedLibrary:
    family: str  # cudart, cublas, cudnn, cufft, curand, cusolver, cusparse, nccl, nvjitlink, nvrtc, cupti, nvtx
    path: str
    origin: str  # wheel, torch, env, ld_library_path, conda, cuda_toolkit, system, other
    version: str | None = None  # from the file name or its nvidia-* package
    package: str | None = None  # the nvidia-* distribution that owns the file
    via: str | None = None  # the LD_LIBRARY_PATH entry, toolkit or conda prefix it came through


@dataclass
class PinCheck:
    """One nvidia-* requirement of torch (Requires-Dist) against what is installed."""

    package: str  # nvidia-cudnn-cu12
    required: str  # "==9.10.2.21"
    installed: str | None  # None: not installed
    ok: bool


@dataclass
class ImportFailure:
    """Why `import torch` failed, read from the error and the libraries loaded when it did."""

    kind: str  # undefined_symbol, missing_library, dll_load, other
    library: str | None = None  # the file that failed to load ("libcusparse.so.12", "c10.dll")
    symbol: str | None = None  # the missing symbol
    family: str | None = None  # the library family the symbol or file belongs to
    loaded_instead: str | None = None  # the file of that family that was loaded (from elsewhere)
    loaded_origin: str | None = None


@dataclass
class CompanionCheck:
    """torchvision / torchaudio against the installed torch."""

    package: str  # torchvision
    version: str
    requires_torch: str | None = None  # its Requires-Dist pin on torch ("==2.13.0"); None: unpinned or unknown
    expected: str | None = None  # the version that pairs with this torch (knowledge/companions.py)
    local_tag: str | None = None  # "cu126", "cpu"; None: no local tag
    ok: bool | None = None  # None: nothing to compare


@dataclass
class EnvironmentManager:
    """What manages the target environment (pyvenv.cfg, conda-meta, pixi and poetry markers)."""

    kind: str  # pip, uv, conda, pixi, poetry, system
    prefix: str | None = None
    project: str | None = None  # the uv / pixi / poetry project directory
    manifest: str | None = None  # pixi.toml or pyproject.toml of that project
    uv_project: bool | None = None  # a uv-managed project (uv.lock or [tool.uv]) rather than a bare venv
    conda_frontend: str | None = None  # conda or mamba (from conda-meta/history commands)
    torch_installer: str | None = None  # INSTALLER of torch's dist-info: pip, uv, conda, poetry
    conda_torch_package: str | None = None  # "pytorch 2.5.1 py3.11_cuda12.4_cudnn9.1.0_0 (pytorch)"
    conda_torch_packages: list[str] | None = None  # installed: pytorch, torchvision, …, pytorch-mutex, cpuonly
    cpuonly: list[str] | None = None  # conda packages that pin a CPU build: "cpuonly 2.0", "pytorch-mutex 1.0 cpu"
    pytorch_channel: list[str] | None = None  # evidence of the deprecated `-c pytorch` channel
    # PEP 668: the interpreter's stdlib holds EXTERNALLY-MANAGED and it is no venv, so pip refuses to
    # install into it (`externally-managed-environment`, Debian 12, Ubuntu 23.04+, Fedora 38+ …)
    externally_managed: bool | None = None
    evidence: list[str] = field(default_factory=list)


@dataclass
class LibraryFacts:
    loaded: list[LoadedLibrary] | None = None
    pins: list[PinCheck] | None = None  # torch's nvidia-* Requires-Dist; [] when it has none (CPU/conda)
    nvidia_installed: dict[str, str] | None = None  # every nvidia-* distribution: name -> version
    torch_installs: list[str] | None = None  # every torch package directory on sys.path, first wins
    user_site_torch: str | None = None  # a torch in the user site-packages (~/.local/…)
    companions: list[CompanionCheck] | None = None
    ld_library_path: list[str] | None = None
    stale_toolkits: list[str] | None = None  # LD_LIBRARY_PATH entries of a CUDA toolkit: "path=version"
    import_failure: ImportFailure | None = None
    manager: EnvironmentManager | None = None
    jetson: str | None = None  # /etc/nv_tegra_release, first line
    errors: list[str] = field(default_factory=list)  # what could not be read


@dataclass
class CompileFacts:
    """torch.compile in the target interpreter (backends/children/compile_child.py)."""

    python_executable: str
    torch_version: str | None = None
    triton: str | None = None  # version; None with triton_error set: not importable
    triton_error: str | None = None
    compiler: str | None = None  # the C++ compiler inductor would use (path), None: none found
    compiler_name: str | None = None  # g++, clang++, cl
    python_headers: bool | None = None  # Python.h present
    python_include: str | None = None
    cache_dir: str | None = None
    cache_writable: bool | None = None
    cpu_ok: bool | None = None  # None: not tried
    cpu_seconds: float | None = None
    cpu_error: str | None = None
    gpu_ok: bool | None = None  # None: no GPU, or not tried
    gpu_seconds: float | None = None
    gpu_error: str | None = None
    complete: bool = False
    timed_out: bool = False
    child_error: str | None = None

    def incomplete(self) -> str | None:
        """A compile check that hung or died is a check that did not finish (exit 3), not one that ran."""
        if self.timed_out:
            return "the compile check did not finish in time"
        if self.child_error and not self.complete:
            return f"the compile check failed: {self.child_error}"
        return None
