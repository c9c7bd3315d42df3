"""Xid errors: what the NVIDIA driver's "NVRM: Xid (PCI:…): N" kernel log lines mean, and what to do.

Source: NVIDIA, "XID Errors" (https://docs.nvidia.com/deploy/xid-errors/index.html), the catalogue of
causes (HW error, driver error, user application error, thermal, bus, FB corruption) for each Xid, and
its "Xid 79: GPU has fallen off the bus" / row-remapping (63, 64) / ECC (48, 94, 95) entries.
"""

from __future__ import annotations

from dataclasses import dataclass

# How bad an Xid is for the GPU itself.
APP, DRIVER, HARDWARE = "application", "driver", "hardware"


@dataclass(frozen=True)
class Xid:
    code: int
    title: str
    blame: str  # application | driver | hardware: where the cause usually lies
    action: str  # what to do, in words


XIDS: dict[int, Xid] = {
    x.code: x
    for x in (
        Xid(
            13,
            "Graphics engine exception",
            APP,
            "usually a bug in the program (an out-of-range access in a kernel); run it with "
            "CUDA_LAUNCH_BLOCKING=1 or compute-sanitizer. Repeated on every program: suspect the GPU",
        ),
        Xid(
            31,
            "GPU memory page fault",
            APP,
            "usually the program read or wrote an illegal address; run it under compute-sanitizer",
        ),
        Xid(
            43,
            "GPU stopped processing (a program hit a fault)",
            APP,
            "the GPU is healthy; the program that faulted was stopped",
        ),
        Xid(45, "Preemptive cleanup after an earlier error", DRIVER, "look at the Xid just before it"),
        Xid(
            48,
            "Double-bit ECC error (uncorrectable memory error)",
            HARDWARE,
            "reset the GPU or reboot; if it repeats, the GPU's memory is failing: contact the vendor",
        ),
        Xid(
            61,
            "Internal micro-controller breakpoint/warning",
            DRIVER,
            "reset the GPU or reboot; update the driver if it repeats",
        ),
        Xid(62, "Internal micro-controller halt", DRIVER, "reset the GPU or reboot; update the driver"),
        Xid(
            63,
            "Row remapping / page retirement recorded",
            HARDWARE,
            "a memory row was marked bad; reset the GPU (or reboot) so the remapping takes effect",
        ),
        Xid(
            64,
            "Row remapping / page retirement failed",
            HARDWARE,
            "the GPU could not remap a bad memory row: it needs service (RMA) if it repeats after a reset",
        ),
        Xid(74, "NVLink error", HARDWARE, "reset the GPUs; check the NVLink bridges or the baseboard"),
        Xid(
            79,
            "GPU has fallen off the bus",
            HARDWARE,
            "the GPU stopped answering on PCIe (power, heat, seating or riser, or a hardware fault); "
            "reboot, then check power cables, seating and temperatures",
        ),
        Xid(92, "High single-bit ECC error rate", HARDWARE, "watch the ECC counters; service if it grows"),
        Xid(94, "Contained ECC error", HARDWARE, "reset the GPU so the affected memory is retired"),
        Xid(95, "Uncontained ECC error", HARDWARE, "reset the GPU or reboot; every process on it was stopped"),
        Xid(119, "GSP RPC timeout", DRIVER, "reset the GPU or reboot; update the driver if it repeats"),
        Xid(120, "GSP error", DRIVER, "reset the GPU or reboot; update the driver if it repeats"),
    )
}


def describe(code: int) -> Xid:
    return XIDS.get(code) or Xid(code, f"Xid {code}", DRIVER, "see https://docs.nvidia.com/deploy/xid-errors/")
