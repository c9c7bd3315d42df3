"""What the probes collected: JSON-serialisable dataclasses, saved in every JSON report.

A fact a probe could not learn is None: unknown, never false, zero or empty. The rules test knownness
explicitly. One module per subject; this one holds `Facts` (one field per probe, filled by name) and
re-exports the rest.
"""

from __future__ import annotations

from dataclasses import dataclass

from cudadoctor.facts.host import (
    CudaDriverFacts,
    PciDevice,
    PciFacts,
    SystemFacts,
    ToolkitFacts,
    ToolkitInstall,
)
from cudadoctor.facts.libraries import CompileFacts, LibraryFacts
from cudadoctor.facts.measure import BandwidthFacts, SmokeFacts, SmokeStep, Transfer
from cudadoctor.facts.nvml import DriverFacts, GpuProcess, MigInstance, NvmlDevice
from cudadoctor.facts.paste import PasteFacts
from cudadoctor.facts.platform import PlatformFacts
from cudadoctor.facts.torch import TorchDevice, TorchFacts

__all__ = [
    "BandwidthFacts",
    "CompileFacts",
    "CudaDriverFacts",
    "DriverFacts",
    "Facts",
    "GpuProcess",
    "LibraryFacts",
    "MigInstance",
    "NvmlDevice",
    "PciDevice",
    "PciFacts",
    "PlatformFacts",
    "SmokeFacts",
    "SmokeStep",
    "SystemFacts",
    "ToolkitFacts",
    "ToolkitInstall",
    "TorchDevice",
    "TorchFacts",
    "Transfer",
]


@dataclass
class Facts:
    """Everything one run collected, one field per probe (probes.REGISTRY names them); a probe that
    did not run or did not finish leaves its field None."""

    system: SystemFacts | None = None
    pci: PciFacts | None = None
    driver: DriverFacts | None = None
    cuda_driver: CudaDriverFacts | None = None
    toolkit: ToolkitFacts | None = None
    torch: TorchFacts | None = None
    bandwidth: BandwidthFacts | None = None
    smoke: SmokeFacts | None = None
    compile: CompileFacts | None = None  # torch.compile in the target interpreter (--full, --only compile)
    paste: PasteFacts | None = None  # what `cudadoctor triage` read in a paste (facts/paste.py)
    platform: PlatformFacts | None = None  # below torch: WSL, kernel module, container, Xid (facts/platform.py)
