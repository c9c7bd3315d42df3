"""Third-party packages that ship CUDA code (flash-attn, xformers, bitsandbytes, vLLM, apex, torchvision's
ops, custom ops): which GPU architectures their shared objects carry, and which torch they were built
for. Read from the files of the target interpreter's installed distributions, never by importing them."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ExtensionLibrary:
    """One shared object with CUDA device code (a `.nv_fatbin` section)."""

    path: str  # relative to the distribution's location (site-packages)
    sass: list[str] = field(default_factory=list)  # cubins: "sm_80", "sm_90a", "sm_100f"
    ptx: list[str] = field(default_factory=list)  # PTX: "compute_90"
    needed: list[str] = field(default_factory=list)  # torch's and CUDA's libraries it links (DT_NEEDED)
    torch_symbols: int | None = None  # undefined c10::/at::/torch:: symbols; None: not read
    error: str | None = None  # the fatbin was cut short or malformed: the archs are what was read

    @property
    def links_torch(self) -> bool | None:
        if self.torch_symbols is None:
            return None
        return self.torch_symbols > 0 or any(n.startswith(("libc10", "libtorch")) for n in self.needed)


@dataclass
class ExtensionPackage:
    name: str
    version: str | None = None
    torch_requirement: str | None = None  # its Requires-Dist on torch: "torch==2.5.1", "torch>=2.1"
    libraries: list[ExtensionLibrary] = field(default_factory=list)


@dataclass
class ExtensionFacts:
    python_executable: str | None = None
    location: str | None = None  # the site-packages the packages were found in (the first one)
    packages: list[ExtensionPackage] = field(default_factory=list)  # only those with CUDA device code
    distributions: int | None = None  # installed distributions looked at
    files_read: int | None = None  # shared objects read
    unreadable: list[str] = field(default_factory=list)  # files that could not be read: why
    truncated: bool = False  # more distributions or files than the bounds: the rest was not read
    timed_out: bool = False
    child_error: str | None = None

    def incomplete(self) -> str | None:
        if self.timed_out:
            return "the extension files were not all read in time"
        if self.child_error and self.distributions is None:
            return f"the package listing failed: {self.child_error}"
        return None
