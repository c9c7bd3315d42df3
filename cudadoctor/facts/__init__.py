"""What the probes collected: JSON-serialisable dataclasses, saved in every JSON report.

A fact a probe could not learn is None: unknown, never false, zero or empty. The rules test knownness
explicitly. One module per subject (host, nvml, torch, libraries, measure, platform, paste, ckpt,
watch, fleet); `Facts` (collected.py) holds one field per probe, filled by name.

The names below load their module on first use, so `cudadoctor gpus`, which needs only facts.nvml,
does not import every other subject's facts (start-up time).
"""

from __future__ import annotations

import importlib
from typing import Any

_WHERE = {
    "BandwidthFacts": "measure",
    "CompileFacts": "libraries",
    "CudaDriverFacts": "host",
    "DriverFacts": "nvml",
    "ExtensionFacts": "extensions",
    "ExtensionLibrary": "extensions",
    "ExtensionPackage": "extensions",
    "Facts": "collected",
    "GpuProcess": "nvml",
    "LibraryFacts": "libraries",
    "MigInstance": "nvml",
    "NvmlDevice": "nvml",
    "PasteFacts": "paste",
    "PciDevice": "host",
    "PciFacts": "host",
    "PlatformFacts": "platform",
    "SmokeFacts": "measure",
    "SmokeStep": "measure",
    "SystemFacts": "host",
    "ToolkitFacts": "host",
    "ToolkitInstall": "host",
    "TorchDevice": "torch",
    "TorchFacts": "torch",
    "Transfer": "measure",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'cudadoctor.facts' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"cudadoctor.facts.{_WHERE[name]}"), name)
    globals()[name] = value
    return value
