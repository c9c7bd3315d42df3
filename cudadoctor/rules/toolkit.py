"""The CUDA toolkit on disk: useful for compiling, never a driver, and not what torch runs on."""

from __future__ import annotations

from cudadoctor.facts import Facts
from cudadoctor.model import Finding, Message, Severity, msg
from cudadoctor.rules.catalogue import entry
from cudadoctor.rules.predicates import joined

TOOLKIT_WITHOUT_DRIVER = entry(
    "CD130",
    "toolkit-without-driver",
    Severity.INFO,
    "Toolkit",
    "A CUDA toolkit is installed, but a toolkit is not a driver",
    """nvcc and libcudart compile and run CUDA code only on top of the NVIDIA driver (libcuda.so.1),
    which this machine does not have. Installing or upgrading the toolkit will not make a GPU usable.
    A pip- or conda-installed PyTorch carries its own CUDA runtime and does not need this toolkit.""",
)
TOOLKIT_PRESENT = entry(
    "CD131",
    "toolkit-present",
    Severity.INFO,
    "Toolkit",
    "CUDA toolkit installed",
    """The toolkit is needed only to compile CUDA code (custom extensions, flash-attn builds). PyTorch
    wheels bundle their own CUDA runtime, so the toolkit's version does not have to match torch's.""",
)
NO_TOOLKIT = entry(
    "CD132",
    "toolkit-absent",
    Severity.OK,
    "Toolkit",
    "No CUDA toolkit, and none is needed to run PyTorch",
    """pip and conda builds of PyTorch bring their own CUDA runtime and libraries. A toolkit (nvcc) is
    needed only to compile CUDA extensions.""",
)


def _describe(f: Facts) -> Message | None:
    t = f.toolkit
    assert t is not None
    parts = []
    if t.nvcc_path and ("/" in t.nvcc_path or "\\" in t.nvcc_path):
        parts.append(msg("nvcc {version} at {path}", version=t.nvcc_version or "?", path=t.nvcc_path))
    elif t.nvcc_path:  # a paste's `nvcc -V` says the version, not where nvcc is
        parts.append(msg("nvcc {version}", version=t.nvcc_version or "?"))
    for inst in t.installs:
        parts.append(msg("CUDA {version} at {path}", version=inst.version or "?", path=inst.path))
    if t.cuda_home:
        parts.append(msg("{text}", text=f"CUDA_HOME={t.cuda_home}"))
    return joined(parts) if parts else None


def evaluate(f: Facts) -> list[Finding]:
    t = f.toolkit
    if t is None:
        return []
    if not (t.nvcc_path or t.installs or t.libcudart):
        return [NO_TOOLKIT.finding()]
    # Only a driver known to be absent makes the toolkit "not a driver"; NVML working with libcuda missing
    # is CD121's story (the driver is there), and an unknown driver says nothing.
    if f.driver is not None and f.driver.init_status != "BINDING_MISSING":
        no_driver = f.driver.init_status in ("LIBRARY_NOT_FOUND", "DRIVER_NOT_LOADED")
    else:
        no_driver = f.cuda_driver is not None and f.cuda_driver.library_found is False
    described = _describe(f)
    if no_driver:
        return [
            TOOLKIT_WITHOUT_DRIVER.finding(
                title=msg(
                    "CUDA toolkit found ({found}), but no NVIDIA driver: a toolkit is not a driver",
                    found=described or msg("files"),
                ),
            )
        ]
    return [TOOLKIT_PRESENT.finding(title=msg("CUDA toolkit: {found}", found=described or ""))]
