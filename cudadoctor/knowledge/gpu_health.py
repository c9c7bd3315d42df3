"""GPU health from NVML as named constants, and the compact per-GPU flag column `cudadoctor gpus` shows.

Clock event reason bits: nvml.h `nvmlClocksEventReason*`; compute modes: nvml.h `nvmlComputeMode_t`.
Flags: L lost, E uncorrectable ECC errors since boot, R retired pages or remapped rows pending (a reset
is needed), F a row remap failed, T thermal slowdown, P power brake, S hardware slowdown, X compute mode
exclusive or prohibited (other processes get "CUDA-capable device(s) is/are busy or unavailable").
"""

from __future__ import annotations

from typing import Any

from cudadoctor.locale import N_

CLOCKS_SW_POWER_CAP = 0x4
CLOCKS_HW_SLOWDOWN = 0x8
CLOCKS_SW_THERMAL = 0x20
CLOCKS_HW_THERMAL = 0x40
CLOCKS_HW_POWER_BRAKE = 0x80
CLOCK_WORDS = (
    (CLOCKS_HW_THERMAL, "hardware thermal slowdown"),
    (CLOCKS_SW_THERMAL, "software thermal slowdown"),
    (CLOCKS_HW_POWER_BRAKE, "power brake (external power signal)"),
    (CLOCKS_HW_SLOWDOWN, "hardware slowdown"),
)
CLOCK_BAD = CLOCKS_HW_THERMAL | CLOCKS_SW_THERMAL | CLOCKS_HW_POWER_BRAKE | CLOCKS_HW_SLOWDOWN

# nvmlComputeMode_t, as the backend names them
COMPUTE_DEFAULT = "default"
COMPUTE_EXCLUSIVE_THREAD = "exclusive_thread"
COMPUTE_PROHIBITED = "prohibited"
COMPUTE_EXCLUSIVE_PROCESS = "exclusive_process"


# What each letter of the HEALTH column means: `cudadoctor gpus` prints the ones it shows under the table
FLAG_MEANINGS = {
    "L": N_("lost or cannot be queried"),
    "E": N_("uncorrectable ECC errors since boot"),
    "F": N_("a row remap failed (needs service)"),
    "R": N_("reset needed (row remap or page retirement pending)"),
    "T": N_("thermal slowdown"),
    "P": N_("power brake"),
    "S": N_("hardware slowdown"),
    "X": N_("exclusive or prohibited compute mode"),
    "?": N_("health unknown (not reported)"),
}

# At or above this a GPU is at or near its slowdown temperature (nvidia-smi -q -d TEMPERATURE shows each
# GPU's own threshold; data-centre GPUs slow down from about 85-90 C): the table never hides it.
HOT_C = 85


def health_flags(dev: Any) -> str:
    """A compact health column: "" healthy, "?" unknown, else letters —
    L lost, E uncorrectable ECC, R reset needed (pending remap/retirement) or F remap failed,
    T thermal, P power brake, S hardware slowdown, X exclusive/prohibited compute mode."""
    if dev.error:
        return "L"
    known = [
        dev.ecc_uncorrected_volatile,
        dev.retired_pages_pending,
        dev.remapped_rows_pending,
        dev.clocks_event_reasons,
        dev.compute_mode,
    ]
    if all(v is None for v in known):
        return "?"
    flags = ""
    if dev.ecc_uncorrected_volatile:
        flags += "E"
    if dev.remapped_rows_failure:
        flags += "F"
    if dev.remapped_rows_pending or dev.retired_pages_pending:
        flags += "R"
    reasons = dev.clocks_event_reasons or 0
    if reasons & (CLOCKS_HW_THERMAL | CLOCKS_SW_THERMAL):
        flags += "T"
    if reasons & CLOCKS_HW_POWER_BRAKE:
        flags += "P"
    if reasons & CLOCKS_HW_SLOWDOWN:
        flags += "S"
    if dev.compute_mode in (COMPUTE_EXCLUSIVE_PROCESS, COMPUTE_EXCLUSIVE_THREAD, COMPUTE_PROHIBITED):
        flags += "X"
    return flags
