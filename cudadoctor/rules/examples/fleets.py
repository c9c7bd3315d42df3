"""Example torchrun jobs for `fleet`'s codes."""

from __future__ import annotations

from typing import Any

from cudadoctor.facts import (
    Facts,
)
from cudadoctor.facts.fleet import AllReduce, FleetFacts, GpuPerf, Hang, NodeFacts, RankInfo
from cudadoctor.rules.examples.base import (
    example_driver,
    example_gpu,
    ubuntu_system,
)


def _fleet(nodes: int, per_node: int = 8, **kw: Any) -> FleetFacts:
    """A torchrun job of H100 nodes, every rank on torch 2.13 (a story changes what differs)."""
    ff = FleetFacts(world_size=nodes * per_node, local_world_size=per_node, backend="nccl", **kw)
    for n in range(nodes):
        host = f"gpu{n + 1:02d}"
        gpus = [example_gpu("NVIDIA H100 80GB HBM3", "9.0", i, used=0, persistence_mode=True) for i in range(per_node)]
        facts = Facts(
            system=ubuntu_system(hostname=host),
            driver=example_driver(devices=gpus, driver_version="570.172.08", cuda_driver_version=12080),
        )
        ff.nodes.append(NodeFacts(node_rank=n, label=host, host=host, facts=facts))
        for lr in range(per_node):
            r = n * per_node + lr
            ff.nodes[-1].ranks.append(r)
            info = RankInfo(r, n, lr, host=host, torch="2.13.0+cu130", torch_cuda="13.0", visible_gpus=per_node)
            ff.ranks.append(info)
    return ff


def fleets() -> dict[str, FleetFacts]:
    # four of five nodes joined; gpu03 was reimaged with an older driver and torch, gpu04 lost a GPU
    odd = _fleet(4, expected_nodes=5, expected_gpus=8, never_arrived=list(range(32, 40)), endpoint="gpu01:29500")
    odd.world_size = 40
    drv = odd.nodes[2].facts.driver
    drv.driver_version, drv.cuda_driver_version = "550.90.07", 12040
    for info in odd.ranks:
        if info.node_rank == 2:
            info.torch = "2.12.0+cu128"
        if info.node_rank == 3:
            info.visible_gpus = 7
    lost = odd.nodes[3].facts.driver
    lost.devices, lost.device_count = lost.devices[:7], 7
    # a four-node job that finished, slowly: one GPU, one node's NVLink, one host's network, one busy rank
    slow = _fleet(4, phases=["inventory", "gpu", "nccl"])
    slow.gpus = [
        GpuPerf(r, r // 8, r % 8, "NVIDIA H100 80GB HBM3", 610.0 if r == 13 else 720.0 + r % 3, 2900.0, 25.0)
        for r in range(32)
    ]
    for n in range(4):
        bw = 210.0 if n == 2 else 395.0 + n
        slow.allreduce.append(AllReduce("node", [n], 1 << 30, 8, 0.01, bw * 0.57, bw))
    for a, b in ((0, 1), (2, 3), (0, 2), (1, 3), (0, 3), (1, 2)):
        bw = 11.0 if 3 in (a, b) else 44.0
        slow.allreduce.append(AllReduce("pair", [a, b], 1 << 30, 16, 0.05, bw, bw))
    slow.waits = {r: [0.011, 0.012, 0.011] if r == 21 else [0.060, 0.061, 0.060] for r in range(32)}
    # a firewall on gpu02 drops gloo's connections: its ranks stop
    walled = _fleet(2, gloo_errors={8: "Connection refused (gpu01:43211)"})
    walled.rank_errors = {8: "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:144] Connection refused"}
    # every rank reached the all-reduce, which never finished (P2P broken by ACS or the IOMMU)
    hung = _fleet(1, hang=Hang("all-reduce node 1073741824", 300.0))
    # gpu02's check report was cut off in transit; the job itself ran
    no_report = _fleet(2)
    no_report.nodes[1].facts, no_report.nodes[1].report_error = (
        None,
        "the report was not valid JSON (cut off at 64 KiB)",
    )
    # rank 0's child was killed by the out-of-memory killer before it reported
    killed = _fleet(1, child_error="the child exited with signal 9 (SIGKILL) before it reported")
    # `fleet --full`: rank 5's GEMM ran out of memory (a leftover process), and another node skipped the step
    gpu_trouble = _fleet(2, phases=["inventory", "gpu"])
    gpu_trouble.gpus = [GpuPerf(r, r // 8, r % 8, "NVIDIA H100 80GB HBM3", 720.0, 2900.0, 25.0) for r in range(16)]
    gpu_trouble.gpus[5] = GpuPerf(5, 0, 5, "NVIDIA H100 80GB HBM3", error="torch.OutOfMemoryError: CUDA out of memory")
    for r in range(8, 16):
        gpu_trouble.gpus[r] = GpuPerf(r, 1, r % 8, "NVIDIA H100 80GB HBM3", skipped="--skip gpu on this node")
    # a CPU-only dry run of the job: the collectives on gloo
    on_gloo = _fleet(2, phases=["inventory", "nccl"])
    on_gloo.backend = "gloo"
    for n in range(2):
        on_gloo.allreduce.append(AllReduce("node", [n], 1 << 30, 8, 0.9, 1.2, 2.1))
    on_gloo.allreduce.append(AllReduce("pair", [0, 1], 1 << 30, 16, 0.9, 1.1, 1.1))
    return {
        "fleet-node-missing": odd,
        "fleet-slow": slow,
        "fleet-firewall": walled,
        "fleet-allreduce-hangs": hung,
        "fleet-node-report-lost": no_report,
        "fleet-child-killed": killed,
        "fleet-gpu-step-failed": gpu_trouble,
        "fleet-on-gloo": on_gloo,
    }
