"""What a healthy GPU and a healthy node reach, per SKU: the figures `cudadoctor fleet --full` measures
against. Each row says where its numbers come from; ✅ read at the source, ◐ vendor figure quoted
second-hand (cuda-facts.md §12 and the datasheets as quoted by the pages named).

Peaks are datasheet numbers: dense BF16 tensor TFLOP/s (NVIDIA's datasheets print the 2:4-sparsity figure
and say "specifications 1/2 lower without sparsity") and HBM/GDDR bandwidth. A real GEMM and a real copy
reach a share of the peak (`GEMM_SHARE`, `MEMORY_SHARE`): the measurement is flagged below that share,
and a GPU well below its fleet's median is flagged whatever the table says.

Floors are health-check thresholds somebody runs in production, with the conditions they hold under:
- pinned host-to-device GB/s per GPU: Azure HPC node health checks `check_gpu_bw H2D P2P`, nvbandwidth's
  host_to_device_memcpy_ce / device_to_host_memcpy_ce (customTests/azure_gpu_bandwidth.nhc) at
  Azure/azurehpc-health-checks@0e0a1ac2 (2026-05): conf/nd96isr_h100_v5.conf and nd96isr_h200_v5.conf
  `check_gpu_bw 48 335`, conf/nd96asr_v4.conf (A100 40GB) `check_gpu_bw 21 235`, nd96amsr_a100_v4.conf
  (A100 80GB) `check_gpu_bw 21 238` ✅. (The `check_cuda_bw 52` / `24` cited before are older settings.)
- 8-GPU all-reduce bus bandwidth inside a node: `check_nccl_allreduce` (A100 228 at 8 GiB) ✅. On H100 and
  H200 the Azure figures (460, 431 at 16 GiB) hold only with NVLink SHARP (NVLS), which NCCL picks by
  default where the NVSwitch fabric offers it: "NCCL can get an effective NVLink bandwidth of 370GB/s …
  when running with NCCL_ALGO=RING … allreduce uses NVLink SHARP by default … On 8 GPUs, you should reach
  a peak busBw of ~480GB/s" (sjeaugey, NVIDIA/nccl-tests#212); 330 -> 430 GB/s with NCCL_NVLS_ENABLE=0/1
  (NVIDIA/nccl#1221). A healthy node without NVLS would fail 460, so the table holds the ring figure (370)
  that both reach. GB200 (4 GPUs) 432 at 16 GiB comes from conf/nd128isr_ndr_gb200_v6.conf, which exists at
  Azure/azurehpc-health-checks@215c6445 but not on the main branch read (@0e0a1ac2) ◐; it is not the H200
  value (431). Those sizes are larger than the 1 GiB `fleet` ends at, where NCCL is a little below its
  plateau: `BUSBW_SHARE` allows for it.
- across nodes: H100 with NDR InfiniBand reaches 400-450 GB/s at >= 8 GB (◐, cuda-facts §12); a
  node's network floor is 8 x 400 Gb/s ports ~ 400 GB/s of bus bandwidth at best.
- device memory: no measured per-SKU reference with its conditions was found (DCGM's memory-bandwidth
  test is not open source: NVIDIA/DCGM#67), so `MEMORY_SHARE` of the datasheet peak is a coarse floor and
  the fleet median is the sharper comparison.
Any figure can be overridden: `cudadoctor fleet --min-tflops/--min-memory-gbps/--min-h2d-gbps/--min-busbw`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# share of the datasheet peak a healthy GPU reaches with fleet's measurements (8192^3 bf16 GEMM; a 1 GiB
# device-to-device copy counted as read + write). Measured H100 SXM GEMMs reach 600-750 of 989 TFLOP/s
# and copies ~ 2.6-3.0 of 3.35 TB/s (◐); below these shares something is wrong (clocks, power, thermals).
GEMM_SHARE = 0.5
MEMORY_SHARE = 0.7
# measured at 1 GiB instead of the 8-16 GiB the floors were set at
BUSBW_SHARE = 0.8


@dataclass(frozen=True)
class GpuPerf:
    sku: str
    pattern: str  # regex on the NVML / torch device name
    bf16_tflops: float | None  # dense peak
    memory_gbps: float | None  # peak device memory bandwidth, GB/s
    h2d_gbps: float | None  # pinned host-to-device floor per GPU, GB/s
    node_busbw: float | None  # all-reduce bus bandwidth floor for a full node, GB/s
    node_gpus: int | None  # how many GPUs that node figure is for
    source: str


TABLE: tuple[GpuPerf, ...] = (
    GpuPerf(
        "H100 SXM",
        r"H100 80GB HBM3|H100 SXM",
        989.4,
        3350,
        48,
        370,
        8,
        "NVIDIA H100 datasheet (1,979 sparse BF16, 3.35 TB/s) ✅ via hpctech.co.jp and glennklockwood.com; "
        "Azure NHC nd96isr_h100_v5.conf @0e0a1ac2 (check_gpu_bw 48 335; check_nccl_allreduce 460 @16G "
        "needs NVLS) ✅; ring all-reduce ~370 busbw (NVIDIA/nccl-tests#212) ✅",
    ),
    GpuPerf(
        "H100 NVL",
        r"H100 NVL",
        835,
        3900,
        None,
        None,
        None,
        "NVIDIA H100 datasheet (1,671 sparse BF16, 3.9 TB/s) ◐",
    ),
    GpuPerf(
        "H100 PCIe",
        r"H100 PCIe",
        756,
        2000,
        None,
        None,
        None,
        "NVIDIA H100 datasheet (1,513 sparse BF16, 2,000 GB/s) ✅ via hpctech.co.jp",
    ),
    GpuPerf(
        "H200 SXM",
        r"H200(?! NVL)",
        989.4,
        4800,
        48,
        370,
        8,
        "NVIDIA H200 datasheet (1,979 sparse BF16, 4.8 TB/s) ◐; Azure NHC nd96isr_h200_v5.conf @0e0a1ac2 "
        "(check_gpu_bw 48 335; check_nccl_allreduce 431 @16G needs NVLS) ✅; ring ~370 on NVLink4 "
        "(NVIDIA/nccl-tests#212) ✅",
    ),
    GpuPerf("H200 NVL", r"H200 NVL", 835, 4800, None, None, None, "NVIDIA H200 datasheet (1,671 sparse BF16) ◐"),
    GpuPerf(
        "GB200",
        r"GB200",
        2500,
        8000,
        48,
        432,
        4,
        "NVIDIA GB200 NVL72 (360 PFLOPS sparse BF16 / 72 GPUs, 8 TB/s) ◐; Azure NHC nd128isr_ndr_gb200_v6.conf "
        "@215c6445, not on main (check_gpu_bw 48 335, check_nccl_allreduce 432 @16G, 4 GPUs) ◐",
    ),
    GpuPerf(
        "B200",
        r"B200",
        2250,
        7700,
        None,
        None,
        None,
        "NVIDIA DGX B200 datasheet (per GPU) ◐; HBM 7.7 TB/s per the Blackwell datasheet "
        "(ai-dynamo/aiconfigurator#1246) and a 7680-bit bus as the driver reports it (pytorch/ao#4002) ◐",
    ),
    GpuPerf(
        "A100 SXM 80GB",
        r"A100[- ]SXM4?[- ]80GB|A100-SXM-80GB",
        312,
        2039,
        21,
        228,
        8,
        "NVIDIA A100 datasheet (312 dense BF16, 2,039 GB/s) ✅ via glennklockwood.com; Azure NHC "
        "nd96amsr_a100_v4.conf @0e0a1ac2 (check_gpu_bw 21 238, check_nccl_allreduce 228) ✅",
    ),
    GpuPerf(
        "A100 SXM 40GB",
        r"A100[- ]SXM4?[- ]40GB",
        312,
        1555,
        21,
        228,
        8,
        "NVIDIA A100 datasheet (312 dense BF16, 1,555 GB/s) ✅ via glennklockwood.com; Azure NHC nd96asr_v4.conf "
        "@0e0a1ac2 (check_gpu_bw 21 235, check_nccl_allreduce 228 @8G) ✅",
    ),
    GpuPerf("A100 PCIe 80GB", r"A100 80GB PCIe", 312, 1935, None, None, None, "NVIDIA A100 datasheet ◐"),
    GpuPerf("A100 PCIe 40GB", r"A100-PCIE-40GB", 312, 1555, None, None, None, "NVIDIA A100 datasheet ◐"),
    GpuPerf("L40S", r"L40S", 362, 864, None, None, None, "NVIDIA L40S datasheet (733 sparse BF16, 864 GB/s) ◐"),
    GpuPerf("L4", r"\bL4\b", 121, 300, None, None, None, "NVIDIA L4 datasheet (242 sparse BF16, 300 GB/s) ◐"),
    GpuPerf("A10", r"\bA10\b", 125, 600, None, None, None, "NVIDIA A10 datasheet (250 sparse BF16, 600 GB/s) ◐"),
)


def lookup(name: str | None) -> GpuPerf | None:
    """The row for a device name as NVML or torch prints it ("NVIDIA H100 80GB HBM3"), or None."""
    if not name:
        return None
    for row in TABLE:
        if re.search(row.pattern, name, re.IGNORECASE):
            return row
    return None


@dataclass(frozen=True)
class Expected:
    """The figures one run is judged against, after --min-* overrides; None: nothing to judge by."""

    tflops: float | None = None
    memory_gbps: float | None = None
    h2d_gbps: float | None = None
    node_busbw: float | None = None  # inside one node
    world_busbw: float | None = None  # across nodes
    source: str = ""


def expected(
    name: str | None,
    gpus_per_node: int | None,
    *,
    min_tflops: float | None = None,
    min_memory_gbps: float | None = None,
    min_h2d_gbps: float | None = None,
    min_busbw: float | None = None,
) -> Expected:
    """Floors for a fleet of `name` GPUs. A node all-reduce floor only applies to as many GPUs per node as
    the figure was set with; options override the table."""
    row = lookup(name)
    tflops = memory = h2d = node_busbw = None
    source = ""
    if row is not None:
        tflops = row.bf16_tflops * GEMM_SHARE if row.bf16_tflops else None
        memory = row.memory_gbps * MEMORY_SHARE if row.memory_gbps else None
        h2d = row.h2d_gbps
        if row.node_busbw and row.node_gpus and gpus_per_node == row.node_gpus:
            node_busbw = row.node_busbw * BUSBW_SHARE
        source = f"{row.sku}: {row.source}"
    return Expected(
        tflops=min_tflops if min_tflops is not None else tflops,
        memory_gbps=min_memory_gbps if min_memory_gbps is not None else memory,
        h2d_gbps=min_h2d_gbps if min_h2d_gbps is not None else h2d,
        node_busbw=min_busbw if min_busbw is not None else node_busbw,
        world_busbw=min_busbw,
        source=source,
    )
