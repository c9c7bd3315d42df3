"""Theoretical PCIe bandwidth per direction, per lane, in GB/s (10^9 bytes).

Source: PCI-SIG specifications as tabulated by https://en.wikipedia.org/wiki/PCI_Express and
hpc-notes.pages.dev/reference/pcie (cuda-facts §8): Gen3 8 GT/s 128b/130b gives 15.75 GB/s at x16,
Gen4 31.5, Gen5 63.0, Gen6 (64 GT/s PAM4, FLIT) about 121. Gen1/Gen2 use 8b/10b encoding.
Healthy pinned host-to-device copies reach roughly 75-88 % of these (measured rows in cuda-facts §8).
"""

from __future__ import annotations

PER_LANE_GBPS: dict[int, float] = {1: 0.25, 2: 0.5, 3: 0.985, 4: 1.969, 5: 3.938, 6: 7.563}


def link_gbps(gen: int | None, width: int | None) -> float | None:
    if gen is None or width is None or gen not in PER_LANE_GBPS or width <= 0:
        return None
    return PER_LANE_GBPS[gen] * width
