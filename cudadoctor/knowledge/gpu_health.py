"""The compact per-GPU health flags `cudadoctor gpus` shows, from NVML's health facts.

Clock event reason bits: nvml.h `nvmlClocksEventReason*` (SW power cap 0x4, HW slowdown 0x8, SW thermal
0x20, HW thermal 0x40, HW power brake 0x80). Flags: E uncorrectable ECC errors since boot, R retired
pages or remapped rows pending (a reset is needed) or a row remap failed, T thermal or power slowdown,
X compute mode exclusive-process or prohibited (other processes get "busy or unavailable").
"""

from __future__ import annotations

from typing import Any

THROTTLE_BITS = 0x8 | 0x20 | 0x40 | 0x80


def flags(dev: Any) -> str:
    """ "E", "RT", … or "" when nothing is wrong; "?" when NVML told nothing about the GPU's health."""
    out = []
    ecc = getattr(dev, "ecc_uncorrected_volatile", None)
    if ecc:
        out.append("E")
    if (
        getattr(dev, "retired_pages_pending", None)
        or getattr(dev, "remapped_rows_pending", None)
        or getattr(dev, "remapped_rows_failure", None)
    ):
        out.append("R")
    reasons = getattr(dev, "clocks_event_reasons", None)
    if isinstance(reasons, int) and reasons & THROTTLE_BITS:
        out.append("T")
    if getattr(dev, "compute_mode", None) in ("exclusive_process", "exclusive_thread", "prohibited"):
        out.append("X")
    if out:
        return "".join(out)
    known = [getattr(dev, n, None) for n in ("ecc_uncorrected_volatile", "clocks_event_reasons", "compute_mode")]
    return "" if any(v is not None for v in known) else "?"
