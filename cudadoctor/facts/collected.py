"""`Facts`: everything one run collected, one field per probe (probes.REGISTRY names them)."""

from __future__ import annotations

from dataclasses import dataclass

from cudadoctor.facts.extensions import ExtensionFacts
from cudadoctor.facts.host import (
    CudaDriverFacts,
    PciFacts,
    SystemFacts,
    ToolkitFacts,
)
from cudadoctor.facts.libraries import CompileFacts
from cudadoctor.facts.measure import BandwidthFacts, SmokeFacts
from cudadoctor.facts.nvml import DriverFacts
from cudadoctor.facts.paste import PasteFacts
from cudadoctor.facts.platform import PlatformFacts
from cudadoctor.facts.torch import TorchFacts


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
    extensions: ExtensionFacts | None = None  # third-party CUDA extensions (facts/extensions.py)
