"""cudadoctor: why PyTorch cannot use your NVIDIA GPU, or how well it can, and the fix.

For Python callers and notebooks: check(), gpus(), pick(), triage(), inspect_checkpoint() (cudadoctor/api.py),
loaded on first use so that the command line and `import cudadoctor` stay as fast as before."""

from __future__ import annotations

from typing import Any

from cudadoctor.version import __version__

_API = (
    "check",
    "gpus",
    "pick",
    "triage",
    "inspect_checkpoint",
    "Report",
    "UsageError",
    "GpuQueryError",
    "NotEnoughGPUs",
)
__all__ = ["__version__", *_API]


def __getattr__(name: str) -> Any:
    if name in _API:
        from cudadoctor import api

        return getattr(api, name)
    raise AttributeError(f"module 'cudadoctor' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_API])
