"""What `cudadoctor fleet` learnt about a torchrun job: every rank and node, each node's own check, the
per-GPU measurements, the all-reduces and how the run ended. Unknown is None, as everywhere."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cudadoctor.model import ProbeOutcome


@dataclass
class RankInfo:
    rank: int
    node_rank: int
    local_rank: int
    host: str | None = None
    torch: str | None = None  # torch.__version__ in this rank's interpreter
    torch_cuda: str | None = None
    nccl: str | None = None
    visible_gpus: int | None = None  # torch.cuda.device_count() in this rank (0: no usable CUDA)


@dataclass
class NodeFacts:
    node_rank: int
    label: str  # the host name, or "host[node rank]" when several nodes share one
    host: str | None = None
    ranks: list[int] = field(default_factory=list)
    facts: Any = None  # cudadoctor.facts.Facts from this node's local rank 0 (None: not received)
    outcomes: list[ProbeOutcome] = field(default_factory=list)
    report_error: str | None = None  # the node's report could not be read
    packages: dict[str, str] | None = None  # nvidia-* wheels in the worker's interpreter


@dataclass
class GpuPerf:
    """One rank's GPU: bf16 GEMM, device-memory copy and pinned host-to-device copy."""

    rank: int
    node_rank: int
    device: int  # CUDA ordinal (the rank's LOCAL_RANK)
    name: str | None = None
    gemm_tflops: float | None = None
    memory_gbps: float | None = None
    h2d_gbps: float | None = None
    skipped: str | None = None
    error: str | None = None


@dataclass
class AllReduce:
    """nccl-tests' definitions: algbw = size / time, busbw = algbw * 2(n-1)/n (GB/s, 10^9 bytes)."""

    group: str  # node | world | pair
    nodes: list[int]  # node ranks in the group
    size: int  # bytes
    ranks: int
    seconds: float
    algbw: float
    busbw: float


@dataclass
class Hang:
    step: str  # what did not finish: "arrive", "gloo", "all-reduce world 1048576", …
    seconds: float | None = None
    not_arrived: dict[int, str | None] = field(default_factory=dict)  # rank -> the last step it reached


@dataclass
class FleetFacts:
    world_size: int | None = None
    local_world_size: int | None = None
    nodes: list[NodeFacts] = field(default_factory=list)
    ranks: list[RankInfo] = field(default_factory=list)
    expected_nodes: int | None = None
    expected_gpus: int | None = None  # per node
    never_arrived: list[int] = field(default_factory=list)  # ranks that never reached the store
    gloo_errors: dict[int, str] = field(default_factory=dict)  # rank -> why the gloo group failed there
    rank_errors: dict[int, str] = field(default_factory=dict)  # rank -> the error that stopped it
    unfinished: dict[int, str | None] = field(default_factory=dict)  # rank -> last step; never reported back
    hang: Hang | None = None
    backend: str | None = None  # nccl | gloo (the measured collectives)
    gpus: list[GpuPerf] = field(default_factory=list)
    allreduce: list[AllReduce] = field(default_factory=list)
    waits: dict[int, list[float]] = field(default_factory=dict)  # rank -> seconds inside each small all-reduce
    phases: list[str] = field(default_factory=list)  # inventory | gpu | nccl
    child_error: str | None = None  # rank 0's own child could not run or report
    environ: dict[str, str] = field(default_factory=dict)  # NCCL_ALGO etc. that fleet itself set
    endpoint: str | None = None  # MASTER_ADDR:MASTER_PORT, the rendezvous store
    limits: dict[str, float] = field(default_factory=dict)  # --min-tflops etc. over knowledge/gpu_perf.py

    def node(self, node_rank: int) -> NodeFacts | None:
        return next((n for n in self.nodes if n.node_rank == node_rank), None)

    def label(self, node_rank: int) -> str:
        n = self.node(node_rank)
        return n.label if n is not None else f"node {node_rank}"
