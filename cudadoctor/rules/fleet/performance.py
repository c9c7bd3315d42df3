"""Phases 1 and 2, what the fleet measures: each GPU against its SKU and its fleet, all-reduce bus
bandwidth inside and across nodes, node pairs and stragglers."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Callable
from typing import Any

from cudadoctor.facts.fleet import FleetFacts
from cudadoctor.knowledge import gpu_perf
from cudadoctor.knowledge.units import format_size
from cudadoctor.locale import N_
from cudadoctor.model import Finding, Fix, Severity, Table, msg, msg_n
from cudadoctor.rules.catalogue import entry, fix
from cudadoctor.rules.fleet.labels import S, joined, nodes_text, ranks_text

GPU_TABLE = entry(
    "CD820",
    "fleet-gpu-perf",
    Severity.OK,
    S,
    "Each GPU's compute, memory and host copy",
    """bf16 GEMM TFLOP/s (8192-square matmul), device-memory bandwidth (a 1 GiB copy, read + write)
    and pinned host-to-device copy GB/s, each timed with CUDA events after a warm-up, on every
    rank's own GPU.""",
)
GPU_OUTLIER = entry(
    "CD821",
    "fleet-gpu-outlier",
    Severity.WARNING,
    S,
    "A GPU is slower than the rest of the fleet",
    """More than 10 % below the fleet's median and beyond its spread (more than one standard
    deviation below the mean, as Megatron-LM's straggler detection requires). One slow GPU slows
    every synchronous step of the job: clocks held down by power or heat, a bad HBM stack, a PCIe
    link that trained narrow.""",
)
GPU_LOW = entry(
    "CD822",
    "fleet-gpu-below-expected",
    Severity.WARNING,
    S,
    "A GPU measures below what its SKU reaches",
    """The figure is below the share of the datasheet peak (or the production health-check floor)
    that a healthy GPU of this model reaches; knowledge/gpu_perf.py names the source of each figure.
    The whole fleet being low points at settings (power cap, clocks, persistence) rather than one GPU.""",
)
GPU_FAILED = entry(
    "CD823",
    "fleet-gpu-measure-failed",
    Severity.ERROR,
    S,
    "A GPU measurement failed",
    """The GEMM or a copy raised an error on this GPU; training would fail there the same way.""",
)
GPU_SKIPPED = entry(
    "CD824",
    "fleet-gpu-skipped",
    Severity.INFO,
    S,
    "GPU measurements were skipped",
    """torch could not use a GPU in these ranks, so phase 1 measured nothing there.""",
)

BUSBW = entry(
    "CD830",
    "fleet-allreduce",
    Severity.OK,
    S,
    "All-reduce bus bandwidth",
    """Bus bandwidth as nccl-tests defines it (algbw x 2(n-1)/n, GB/s) for float32 sum all-reduces
    from 1 MiB up, inside each node and across all nodes; across nodes NCCL_ALGO=Ring is set so the
    network is what is measured (on two nodes tree or NVLS would otherwise beat it).""",
)
BUSBW_LOW = entry(
    "CD831",
    "fleet-busbw-low",
    Severity.WARNING,
    S,
    "All-reduce bus bandwidth is below what this hardware reaches",
    """Below the production health-check floor for this GPU model and node size, or below the
    --min-busbw given. Inside a node: NVLink/NVSwitch or P2P trouble (NCCL falling back to copies
    through host memory). Across nodes: a port down or degraded, GPUDirect RDMA off, or the wrong
    interface.""",
)
BAD_PAIR = entry(
    "CD832",
    "fleet-bad-node",
    Severity.ERROR,
    S,
    "A node is slow in every pair it is part of",
    """Nodes were tested in pairs (rounds of disjoint pairs). A node whose every pair is slow while
    other pairs are fast is the bad host: its network ports, cables or switch port.""",
)
STRAGGLER = entry(
    "CD833",
    "fleet-straggler",
    Severity.WARNING,
    S,
    "A rank arrives late at every collective",
    """In each small all-reduce the last rank to arrive waits the least; the difference from the
    longest wait is how late each rank came, with no clock shared between hosts. A rank late by more
    than 10 % of the step and beyond the spread of the others holds every step of the job back.""",
)
NODE_BUSBW_OUTLIER = entry(
    "CD834",
    "fleet-node-busbw-outlier",
    Severity.WARNING,
    S,
    "A node's all-reduce is slower than the other nodes'",
    """Inside-node bus bandwidth more than 10 % below the median node and beyond the spread: that
    node's NVLink, NVSwitch or PCIe topology differs from the others.""",
)
ON_GLOO = entry(
    "CD835",
    "fleet-collectives-on-gloo",
    Severity.INFO,
    S,
    "The collectives ran over gloo, not NCCL",
    """No rank could use CUDA (or --backend gloo was given), so gloo on the CPU stood in for NCCL:
    the run proves the ranks can talk, but its bandwidths say nothing about GPUs or the network's
    RDMA path and are not compared with any expected figure.""",
)

OUTLIER_SHARE = 0.9  # > 10 % below the median
STRAGGLER_SHARE = 0.1
STRAGGLER_FLOOR = 0.001  # seconds


# -- phase 1 -------------------------------------------------------------------------------------


def _gpus_per_node(ff: FleetFacts) -> int | None:
    return ff.local_world_size


def _fleet_gpu_name(ff: FleetFacts) -> str | None:
    names = Counter(g.name for g in ff.gpus if g.name)
    if names:
        return names.most_common(1)[0][0]
    for node in ff.nodes:
        drv = getattr(node.facts, "driver", None)
        if drv is not None and drv.devices:
            return drv.devices[0].name
    return None


def _expected(ff: FleetFacts) -> gpu_perf.Expected:
    o = ff.limits
    return gpu_perf.expected(
        _fleet_gpu_name(ff),
        _gpus_per_node(ff),
        min_tflops=o.get("min_tflops"),
        min_memory_gbps=o.get("min_memory_gbps"),
        min_h2d_gbps=o.get("min_h2d_gbps"),
        min_busbw=o.get("min_busbw"),
    )


def outliers(values: dict[Any, float], share: float = OUTLIER_SHARE) -> list[Any]:
    """Keys whose value is more than (1 - share) below the median AND more than one standard deviation
    below the mean; needs three values to say anything."""
    if len(values) < 3:
        return []
    vals = list(values.values())
    median = statistics.median(vals)
    mean = statistics.fmean(vals)
    sd = statistics.pstdev(vals)
    return [k for k, v in values.items() if v < share * median and v < mean - sd]


_METRICS: tuple[tuple[str, str, str, Callable[[gpu_perf.Expected], float | None]], ...] = (
    ("gemm_tflops", msg("bf16 GEMM"), "TFLOP/s", lambda e: e.tflops),
    ("memory_gbps", msg("memory"), "GB/s", lambda e: e.memory_gbps),
    ("h2d_gbps", msg("pinned H2D"), "GB/s", lambda e: e.h2d_gbps),
)


def _gpu_label(ff: FleetFacts, g: Any) -> str:
    return msg("{node} GPU {device} (rank {rank})", node=ff.label(g.node_rank), device=g.device, rank=g.rank)


def _gpus_text(ff: FleetFacts, gpus: list[Any]) -> str:
    return joined([_gpu_label(ff, g) for g in gpus])


def phase1(ff: FleetFacts) -> list[Finding]:
    if "gpu" not in ff.phases:
        return []
    out: list[Finding] = []
    skipped = [g for g in ff.gpus if g.skipped]
    failed = [g for g in ff.gpus if g.error]
    measured = [g for g in ff.gpus if not g.skipped and not g.error]
    if skipped:
        out.append(
            GPU_SKIPPED.finding(
                title=msg(
                    "GPU measurements skipped on {ranks}: {reason}",
                    ranks=msg_n("{n} rank", "{n} ranks", len(skipped), n=len(skipped)),
                    reason=skipped[0].skipped,
                ),
            )
        )
    for g in failed:
        out.append(GPU_FAILED.finding(title=msg("{gpu}: {error}", gpu=_gpu_label(ff, g), error=g.error)))
    if not measured:
        return out
    exp = _expected(ff)

    def fmt(v: float | None) -> str:
        return "?" if v is None else f"{v:,.0f}" if v >= 100 else f"{v:.1f}"

    rows = [
        [ff.label(g.node_rank), str(g.device), g.name or "?", fmt(g.gemm_tflops), fmt(g.memory_gbps), fmt(g.h2d_gbps)]
        for g in measured
    ]
    rows.append(["", "", "expected at least", fmt(exp.tflops), fmt(exp.memory_gbps), fmt(exp.h2d_gbps)])
    out.append(
        GPU_TABLE.finding(
            title=msg("{gpus} measured", gpus=msg_n("{n} GPU", "{n} GPUs", len(measured), n=len(measured))),
            why=msg("{page} Expected figures: {source}", page=msg(GPU_TABLE.explanation), source=exp.source)
            if exp.source
            else GPU_TABLE.explanation,
            tables=[Table(["Node", "GPU", "Name", "TFLOP/s", "Memory GB/s", "H2D GB/s"], rows)],
        )
    )
    for attr, what, unit, floor_of in _METRICS:
        values = {g.rank: getattr(g, attr) for g in measured if getattr(g, attr) is not None}
        slow = outliers(values)
        if slow:
            median = statistics.median(values.values())
            gs = [g for g in measured if g.rank in slow]
            out.append(
                GPU_OUTLIER.finding(
                    title=msg(
                        "{what} on {gpus}: {values} {unit} vs the fleet's median {median}",
                        what=what,
                        gpus=_gpus_text(ff, gs),
                        values=", ".join(f"{values[g.rank]:,.1f}" for g in gs),
                        unit=unit,
                        median=f"{median:,.1f}",
                    ),
                    fix=_slow_gpu_fix(),
                )
            )
        floor = floor_of(exp)
        if floor is not None:
            low = [
                g for g in measured if getattr(g, attr) is not None and getattr(g, attr) < floor and g.rank not in slow
            ]
            if low:
                everyone = len(low) == len(measured)
                out.append(
                    GPU_LOW.finding(
                        title=msg(
                            "Every GPU's {what} is below {floor} {unit} (lowest {lowest})"
                            if everyone
                            else "{what} on {gpus} is below {floor} {unit} (lowest {lowest})",
                            what=what,
                            gpus=_gpus_text(ff, low),
                            floor=f"{floor:,.0f}",
                            unit=unit,
                            lowest=f"{min(getattr(g, attr) for g in low):,.1f}",
                        ),
                        why=_with_source(GPU_LOW.explanation, exp.source),
                        fix=_slow_gpu_fix(),
                    )
                )
    return out


def _with_source(page: str, source: str) -> str:
    """A catalogue page with where this run's expected figure comes from."""
    return msg("{page} Source: {source}", page=msg(page), source=source)


def _slow_gpu_fix() -> list[Fix]:
    return [
        fix(
            "see why the GPU is held back: clock event reasons (power cap, thermal, HW slowdown), clocks, power limit",
            "nvidia-smi -q -d PERFORMANCE,CLOCK,POWER,TEMPERATURE",
        ),
        fix(
            "keep the driver initialised between jobs (persistence) so clocks and ECC state are steady",
            "sudo nvidia-smi -pm 1",
        ),
    ]


# -- phase 2 -------------------------------------------------------------------------------------


def phase2(ff: FleetFacts) -> list[Finding]:
    if not ff.allreduce:
        return []
    out: list[Finding] = []
    gloo = ff.backend == "gloo"
    node_runs = [a for a in ff.allreduce if a.group == "node"]
    world_runs = [a for a in ff.allreduce if a.group == "world"]
    sizes = sorted({a.size for a in node_runs + world_runs})
    node_ids = sorted({a.nodes[0] for a in node_runs})
    many = len(node_ids) > 3
    cols = [N_("Size")]
    if many:
        cols += [N_("nodes min"), N_("nodes median")]
    else:
        cols += [ff.label(n) for n in node_ids]
    if world_runs:
        cols.append(msg("all {n} nodes", n=len(ff.nodes)))
    rows = []
    for size in sizes:
        row = [format_size(size)]
        at = {a.nodes[0]: a.busbw for a in node_runs if a.size == size}
        if many:
            row += [f"{min(at.values()):.1f}", f"{statistics.median(at.values()):.1f}"] if at else ["?", "?"]
        else:
            row += [f"{at[n]:.1f}" if n in at else "?" for n in node_ids]
        if world_runs:
            w = next((a for a in world_runs if a.size == size), None)
            row.append(f"{w.busbw:.1f}" if w else "?")
        rows.append(row)
    biggest = sizes[-1] if sizes else 0
    ranks_per_node = max((a.ranks for a in node_runs), default=0)
    out.append(
        BUSBW.finding(
            title=msg(
                "All-reduce bus bandwidth (GB/s) over {backend}, {smallest} to {biggest}"
                if len(sizes) > 1
                else "All-reduce bus bandwidth (GB/s) over {backend}, at {biggest}",
                backend=ff.backend or "NCCL",
                smallest=format_size(sizes[0]),
                biggest=format_size(biggest),
            )
            if sizes
            else BUSBW.summary,
            tables=[Table(cols, rows)],
        )
    )
    if gloo:
        out.append(ON_GLOO.finding())
    else:
        exp = _expected(ff)
        top = {a.nodes[0]: a.busbw for a in node_runs if a.size == biggest}
        if exp.node_busbw is not None and top:
            low = [n for n, v in top.items() if v < exp.node_busbw]
            if low:
                out.append(
                    BUSBW_LOW.finding(
                        title=msg(
                            "Inside-node all-reduce at {size} on {nodes}: {gbps} GB/s, below {need}",
                            size=format_size(biggest),
                            nodes=nodes_text([ff.label(n) for n in low], len(top)),
                            gbps=f"{min(top[n] for n in low):.0f}",
                            need=f"{exp.node_busbw:.0f}",
                        ),
                        why=_with_source(BUSBW_LOW.explanation, exp.source),
                        fix=_busbw_fix(inside=True),
                    )
                )
        slow_nodes = outliers(top)
        if slow_nodes:
            out.append(
                NODE_BUSBW_OUTLIER.finding(
                    title=msg(
                        "{nodes}: inside-node all-reduce {values} GB/s vs the median {median}",
                        nodes=nodes_text([ff.label(n) for n in slow_nodes], len(top)),
                        values=", ".join(f"{top[n]:.0f}" for n in slow_nodes),
                        median=f"{statistics.median(top.values()):.0f}",
                    ),
                    fix=_busbw_fix(inside=True),
                )
            )
        w = next((a for a in world_runs if a.size == biggest), None)
        if exp.world_busbw is not None and w is not None and w.busbw < exp.world_busbw:
            out.append(
                BUSBW_LOW.finding(
                    title=msg(
                        "All-reduce across {nodes} at {size}: {gbps} GB/s, below {need}",
                        nodes=msg_n("{n} node", "{n} nodes", len(ff.nodes), n=len(ff.nodes)),
                        size=format_size(biggest),
                        gbps=f"{w.busbw:.0f}",
                        need=f"{exp.world_busbw:.0f}",
                    ),
                    fix=_busbw_fix(inside=False),
                )
            )
    del ranks_per_node
    if not gloo:  # over gloo the pairs measure the CPU's TCP stack: nothing to blame a host for
        out += _pairs(ff)
    out += _stragglers(ff)
    return out


def _busbw_fix(inside: bool) -> list[Fix]:
    if inside:
        return [
            fix(
                "check the NVLink links and the GPU topology the node reports",
                "nvidia-smi nvlink --status",
                "nvidia-smi topo -m",
            ),
            fix(
                "see which transport NCCL chose (P2P/NVLS, or SHM through host memory)",
                "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,GRAPH torchrun … -m cudadoctor fleet --full",
            ),
        ]
    return [
        fix("check every InfiniBand port is up at full rate", "ibstat | grep -E 'State|Rate'"),
        fix(
            "see which network NCCL uses and whether GPUDirect RDMA is on",
            "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET torchrun … -m cudadoctor fleet --full --pairwise",
        ),
    ]


def _pairs(ff: FleetFacts) -> list[Finding]:
    pairs = [a for a in ff.allreduce if a.group == "pair"]
    if not pairs:
        return []
    best = max(a.busbw for a in pairs)
    low = {tuple(a.nodes) for a in pairs if a.busbw < 0.8 * best}
    bad = []
    for n in sorted({x for a in pairs for x in a.nodes}):
        mine = [tuple(a.nodes) for a in pairs if n in a.nodes]
        if mine and all(p in low for p in mine) and len(low) < len(pairs):
            bad.append(n)
    rows = [[f"{ff.label(a.nodes[0])} + {ff.label(a.nodes[1])}", f"{a.busbw:.1f}"] for a in pairs]
    if not bad:
        return []
    return [
        BAD_PAIR.finding(
            title=msg(
                "{nodes}: slow in every pair (best pair {gbps} GB/s)",
                nodes=nodes_text([ff.label(n) for n in bad], len(ff.nodes)),
                gbps=f"{best:.0f}",
            ),
            tables=[Table(["Pair", "busbw GB/s"], rows)],
            fix=_busbw_fix(inside=False),
        )
    ]


def lags(waits: dict[int, list[float]]) -> tuple[dict[int, float], float]:
    """Each rank's median lateness and the median step time, from per-iteration waits."""
    if len(waits) < 2:
        return {}, 0.0
    n = min(len(w) for w in waits.values())
    if n == 0:
        return {}, 0.0
    per: dict[int, list[float]] = {r: [] for r in waits}
    steps = []
    for k in range(n):
        longest = max(w[k] for w in waits.values())
        steps.append(longest)
        for r, w in waits.items():
            per[r].append(longest - w[k])
    return {r: statistics.median(v) for r, v in per.items()}, statistics.median(steps)


def _stragglers(ff: FleetFacts) -> list[Finding]:
    late, step = lags(ff.waits)
    if len(late) < 2 or step <= 0:
        return []
    flagged = []
    for r, lag in late.items():
        others = [v for k, v in late.items() if k != r]
        spread = statistics.fmean(others) + statistics.pstdev(others)
        if lag > STRAGGLER_SHARE * step and lag > STRAGGLER_FLOOR and lag > spread:
            flagged.append(r)
    if not flagged:
        return []
    rows = [[ranks_text(ff, [r]), f"{late[r] * 1e3:.1f}"] for r in sorted(late, key=lambda r: -late[r])[:8]]
    return [
        STRAGGLER.finding(
            title=msg(
                "{ranks} arrive {late} ms late at each collective (step {step} ms)",
                ranks=ranks_text(ff, flagged),
                late=", ".join(f"{late[r] * 1e3:.0f}" for r in flagged),
                step=f"{step * 1e3:.1f}",
            ),
            tables=[Table(["Rank", "Median lateness (ms)"], rows)],
            fix=[
                fix(
                    "look for what else runs on that host, and its GPU's clocks",
                    "top -b -n 1 | head -20",
                    "nvidia-smi -q -d PERFORMANCE",
                ),
            ],
        )
    ]
