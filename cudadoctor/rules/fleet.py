"""`cudadoctor fleet`: the nodes of a torchrun job side by side (phase 0), each GPU against its SKU and its
fleet (phase 1), all-reduce bus bandwidth inside and across nodes, node pairs and stragglers (phase 2),
and how a run that did not finish ended. Each node's own check findings are reported once, with the
list of nodes they were found on."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from cudadoctor.facts.fleet import FleetFacts, NodeFacts
from cudadoctor.knowledge import gpu_perf
from cudadoctor.knowledge.units import format_size
from cudadoctor.knowledge.versions import cuda_int_to_str
from cudadoctor.model import Finding, Fix, ProbeOutcome, Severity, Table, plural
from cudadoctor.report import decide
from cudadoctor.rules import health
from cudadoctor.rules.catalogue import entry, fix

S = "Fleet"

INVENTORY = entry(
    "CD800",
    "fleet-inventory",
    Severity.OK,
    S,
    "The nodes of the job",
    """Every node's local rank 0 ran the same checks as `cudadoctor check` and sent its facts to rank 0
    through the rendezvous store, which works even when NCCL (or gloo) does not.""",
)
MISMATCH = entry(
    "CD801",
    "fleet-mismatch",
    Severity.WARNING,
    S,
    "The nodes differ",
    """A job expects every node to be the same: the same driver, CUDA, torch, NCCL and nvidia-* wheels,
    the same number of GPUs, the same NCCL_* settings. A node that differs is where hangs, slow steps
    and "works on 7 of 8 nodes" come from; the odd node out is named.""",
)
GPU_COUNT = entry(
    "CD802",
    "fleet-gpu-count",
    Severity.ERROR,
    S,
    "A node shows fewer GPUs than expected",
    """The node's driver lists fewer GPUs than --expect-gpus. A GPU that fell off the bus (Xid 79),
    one held in reset, or a container given fewer devices all look like this; torchrun with
    --nproc-per-node G then fails on that node only.""",
)
TOO_MANY_RANKS = entry(
    "CD811",
    "fleet-more-ranks-than-gpus",
    Severity.ERROR,
    S,
    "More ranks per node than visible GPUs",
    """torchrun starts --nproc-per-node ranks on each node and each rank takes cuda:LOCAL_RANK; on a node
    that shows fewer GPUs the ranks beyond them fail with "CUDA error: invalid device ordinal" (or share a
    GPU, which NCCL refuses). fleet skipped those ranks' GPU and NCCL steps. CUDA_VISIBLE_DEVICES, the
    container's --gpus or the scheduler's GPU allocation decide how many GPUs the ranks see.""",
)
NODES_MISSING = entry(
    "CD803",
    "fleet-nodes-missing",
    Severity.ERROR,
    S,
    "Fewer nodes joined than expected",
    """torchrun's rendezvous closed with fewer nodes than --expect-nodes (an elastic --nnodes MIN:MAX
    range lets it start without them). The missing nodes never reached the rendezvous endpoint.""",
)
NEVER_ARRIVED = entry(
    "CD804",
    "fleet-ranks-never-arrived",
    Severity.ERROR,
    S,
    "Ranks never arrived",
    """These ranks were started by torchrun but never reported to the rendezvous store within
    --join-timeout: their node's check hung, the worker crashed at start, or the node cannot reach
    the store on MASTER_ADDR:MASTER_PORT.""",
)
GLOO_FAILED = entry(
    "CD805",
    "fleet-gloo-failed",
    Severity.ERROR,
    S,
    "The ranks reach the store but not each other",
    """Every rank reached the rendezvous store, but the gloo process group (direct TCP connections
    between all ranks) failed. Usually a firewall between nodes, or gloo picking an interface the
    other nodes cannot route to (docker0, a management network).""",
)
MIXED_TORCH = entry(
    "CD806",
    "fleet-mixed-torch",
    Severity.WARNING,
    S,
    "Ranks run different torch versions",
    """torch.distributed only promises that ranks of the same torch (and NCCL) talk to each other:
    the rendezvous, gloo and NCCL wire formats change between releases. Mixed versions fail at
    init, hang in the first collective, or silently disagree.""",
)
HANG = entry(
    "CD807",
    "fleet-hang",
    Severity.ERROR,
    S,
    "A collective did not finish in time",
    """Every collective fleet runs has a time bound. When one expires, the ranks that never arrived
    are named from the rendezvous store; when all of them arrived, the collective itself hung, which
    on one node usually means PCIe ACS or the IOMMU breaking peer-to-peer copies (nccl#631, #2079).""",
)
RANK_FAILED = entry(
    "CD808",
    "fleet-rank-failed",
    Severity.ERROR,
    S,
    "Ranks stopped before the end",
    """A rank died or stopped with an error, so the collectives it belonged to failed for everyone.
    The rank that never reported back is the root cause; the others' errors follow from it.""",
)
NODE_REPORT = entry(
    "CD809",
    "fleet-node-report-missing",
    Severity.WARNING,
    S,
    "A node's own check did not arrive",
    """The node's local rank 0 could not run `cudadoctor check` or send its report, so the node is
    only known by what its ranks said (host, torch, NCCL).""",
)
INCOMPLETE = entry(
    "CD810",
    "fleet-incomplete",
    Severity.ERROR,
    S,
    "fleet could not finish",
    """Rank 0's measurement child did not finish within its time bound or could not start, so part of
    the fleet was not checked. What it learnt before is reported.""",
)

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


def _nodes_text(labels: list[str], total: int) -> str:
    if total > 1 and len(labels) == total:
        return f"all {total} nodes"
    if len(labels) > 6:
        return ", ".join(labels[:6]) + f" and {len(labels) - 6} more"
    return ", ".join(labels)


def _ranks_text(ff: FleetFacts, ranks: Iterable[int]) -> str:
    ranks = sorted(ranks)
    by_node: dict[str, list[int]] = {}
    for r in ranks:
        info = next((i for i in ff.ranks if i.rank == r), None)
        by_node.setdefault(ff.label(info.node_rank) if info else _guess_node(ff, r), []).append(r)
    parts = [f"{', '.join(map(str, rs))} ({node})" for node, rs in by_node.items()]
    return ("rank " if len(ranks) == 1 else "ranks ") + "; ".join(parts)


def _guess_node(ff: FleetFacts, rank: int) -> str:
    # torchrun numbers ranks node by node: with the same --nproc-per-node everywhere, rank // that
    if ff.local_world_size:
        return f"node rank {rank // ff.local_world_size}"
    return "node unknown"


# -- phase 0 -------------------------------------------------------------------------------------


def _node_properties(ff: FleetFacts, node: NodeFacts) -> dict[str, str | None]:
    props: dict[str, str | None] = {}
    facts = node.facts
    drv = getattr(facts, "driver", None)
    ranks = [i for i in ff.ranks if i.node_rank == node.node_rank]

    def one(values: Iterable[Any]) -> str | None:
        vals = sorted({str(v) for v in values if v is not None})
        return " / ".join(vals) if vals else None

    if drv is not None and drv.init_status == "ok":
        props["GPUs"] = str(drv.device_count) if drv.device_count is not None else None
        props["GPU model"] = one(d.name for d in drv.devices)
        props["driver"] = drv.driver_version
        props["CUDA (driver)"] = cuda_int_to_str(drv.cuda_driver_version)
        props["persistence mode"] = one(
            None if d.persistence_mode is None else "on" if d.persistence_mode else "off" for d in drv.devices
        )
        ecc = [d.ecc_uncorrected_volatile for d in drv.devices if d.ecc_uncorrected_volatile is not None]
        props["uncorrectable ECC errors"] = str(sum(ecc)) if ecc else None
        props["clock event reasons"] = one(_clock_words(d.clocks_event_reasons) for d in drv.devices)
    elif drv is not None:
        props["driver"] = f"NVML {drv.init_status}"
    props["torch"] = one(i.torch for i in ranks)
    props["torch CUDA"] = one(i.torch_cuda for i in ranks)
    tf = getattr(facts, "torch", None)
    props["NCCL"] = one(i.nccl for i in ranks) or (tf.nccl_version if tf is not None else None)
    for name, version in (node.packages or {}).items():
        props[name] = version
    system = getattr(facts, "system", None)
    env = getattr(system, "env", None)
    if env is not None:
        for k, v in env.items():
            if k.startswith("NCCL_"):
                props[k] = v
    return props


_CLOCK_WORDS = (
    (health.CLOCKS_HW_THERMAL, "HW thermal"),
    (health.CLOCKS_SW_THERMAL, "SW thermal"),
    (health.CLOCKS_HW_POWER_BRAKE, "power brake"),
    (health.CLOCKS_HW_SLOWDOWN, "HW slowdown"),
    (health.CLOCKS_SW_POWER_CAP, "power cap"),
)


def _clock_words(bits: int | None) -> str | None:
    """The clock event reasons that slow a GPU down (idle and application settings are not news)."""
    if bits is None:
        return None
    words = [w for b, w in _CLOCK_WORDS if bits & b]
    return "+".join(words) if words else "none"


def _inventory(ff: FleetFacts, node_findings: dict[int, list[Finding]]) -> Finding:
    rows = []
    for node in ff.nodes:
        p = _node_properties(ff, node)
        found = node_findings.get(node.node_rank, [])
        if node.facts is None:
            verdict = "no report"
        else:
            status = decide(found, [o for o in node.outcomes])
            errors = sum(f.severity is Severity.ERROR for f in found)
            warnings = sum(f.severity is Severity.WARNING for f in found)
            counts = " ".join(f"{n}{kind}" for n, kind in ((errors, "E"), (warnings, "W")) if n)
            verdict = status.value + (f" ({counts})" if counts else "")
        drv = getattr(node.facts, "driver", None)
        rows.append(
            [
                node.label,
                str(len(node.ranks)),
                p.get("GPUs") or "?",
                # a driver NVML could not reach: its version is unknown here (CD801 and the node's own
                # finding say why)
                (p.get("driver") if drv is not None and drv.init_status == "ok" else None) or "?",
                p.get("CUDA (driver)") or "?",
                p.get("torch") or "?",
                p.get("NCCL") or "?",
                verdict,
            ]
        )
    title = f"{plural(len(ff.nodes), 'node')}, {plural(len(ff.ranks), 'rank')} reported"
    return INVENTORY.finding(
        title=title,
        # at 80 columns the node and its status stay whole; the versions go first (CD801 lists any that differ)
        tables=[Table(["Node!<", "Ranks?", "GPUs", "Driver", "CUDA?", "torch?", "NCCL?", "Check!"], rows)],
    )


def _mismatch(ff: FleetFacts) -> list[Finding]:
    if len(ff.nodes) < 2:
        return []
    per_node = {n.node_rank: _node_properties(ff, n) for n in ff.nodes}
    names: list[str] = []
    for props in per_node.values():
        names += [k for k in props if k not in names]
    rows: list[list[str]] = []
    differing: list[str] = []
    for name in names:
        values = {n: per_node[n].get(name) for n in per_node}
        if name.startswith("NCCL_"):
            # a variable set on some nodes only is a difference too: unset is a value here
            values = {n: v if v is not None else "(unset)" for n, v in values.items() if ff.node(n).facts is not None}
        known = {n: v for n, v in values.items() if v is not None}
        counts = Counter(known.values())
        if len(counts) < 2:
            continue
        differing.append(name)
        for value, _ in counts.most_common():
            nodes = [ff.label(n) for n, v in known.items() if v == value]
            rows.append([name, value, _nodes_text(nodes, len(ff.nodes))])
    if not differing:
        return []
    fixes = _mismatch_fixes(ff, per_node, differing)
    return [
        MISMATCH.finding(
            title=f"The nodes differ in {', '.join(differing)}",
            tables=[Table(["Property", "Value", "Nodes"], rows)],
            fix=fixes,
        )
    ]


def _mismatch_fixes(ff: FleetFacts, per_node: dict[int, dict[str, str | None]], differing: list[str]) -> list[Fix]:
    """Bring the odd nodes to the most common value of each property that differs."""
    out: list[Fix] = []
    for name in differing:
        known = {n: props[name] for n, props in per_node.items() if props.get(name) is not None}
        if name.startswith("NCCL_"):
            known = {n: props.get(name) or "(unset)" for n, props in per_node.items() if ff.node(n).facts is not None}
        common = Counter(known.values()).most_common(1)[0][0]
        odd = [n for n, v in known.items() if v != common]
        where = _nodes_text([ff.label(n) for n in odd], len(ff.nodes))
        if name == "driver" and common and common[0].isdigit():
            branch = common.split(".")[0]
            os_ids = {getattr(getattr(ff.node(n).facts, "system", None), "os_id", None) for n in odd}
            cmds = []
            if os_ids & {"ubuntu", "debian"}:
                cmds.append(f"sudo apt-get install -y cuda-drivers-{branch}   # NVIDIA's CUDA repository")
            if os_ids & {"rhel", "rocky", "almalinux", "centos", "ol"}:
                cmds.append(f"sudo dnf module install -y nvidia-driver:{branch}-dkms")
            if cmds:
                label = f"on {where}: the driver of the other nodes ({common}), then reboot"
                out.append(fix(label, *cmds, "sudo reboot"))
            else:  # no package known for this OS: the label says what to install, nothing to paste
                label = f"on {where}: install NVIDIA driver {common} (branch {branch}), as on the others, then reboot"
                out.append(fix(label))
        elif name == "torch" or name.startswith("nvidia-"):
            base, _, variant = common.partition("+")
            index = f" --index-url https://download.pytorch.org/whl/{variant}" if variant.startswith("cu") else ""
            out.append(
                fix(
                    f"on {where}: {name} {common} as on the other nodes",
                    f"python -m pip install '{name}=={base}'{index}",
                )
            )
        elif name.startswith("NCCL_"):
            cmd = f"unset {name}" if common == "(unset)" else f"export {name}={common}"
            out.append(fix(f"on {where}: {name} as on the other nodes (in the job's environment)", cmd))
        elif name == "persistence mode" and common == "on":
            out.append(fix(f"on {where}: persistence mode on, as on the other nodes", "sudo nvidia-smi -pm 1"))
    return out


def _gpu_count(ff: FleetFacts) -> list[Finding]:
    if ff.expected_gpus is None:
        return []
    short = []
    for node in ff.nodes:
        drv = getattr(node.facts, "driver", None)
        if drv is None or drv.init_status != "ok" or drv.device_count is None:
            continue
        if drv.device_count < ff.expected_gpus:
            pci = getattr(node.facts, "pci", None)
            on_bus = len(pci.devices) if pci is not None and getattr(pci, "devices", None) is not None else None
            short.append((node.label, drv.device_count, on_bus))
    if not short:
        return []
    rows = [[label, str(n), str(ff.expected_gpus), "?" if bus is None else str(bus)] for label, n, bus in short]
    first = short[0]
    return [
        GPU_COUNT.finding(
            title=f"{_nodes_text([s[0] for s in short], len(ff.nodes))}: {first[1]} of {ff.expected_gpus} GPUs"
            if len(short) == 1
            else f"{len(short)} nodes show fewer than {ff.expected_gpus} GPUs",
            tables=[Table(["Node", "GPUs (driver)", "Expected", "NVIDIA on PCI bus"], rows)],
            fix=[
                fix(
                    "on each node named: which GPU is missing, and whether the driver logged it falling off",
                    "nvidia-smi -L",
                    "sudo dmesg | grep -iE 'NVRM: Xid|fallen off the bus'",
                    "lspci -d 10de: | grep -ciE '3d|vga'",
                ),
                fix(
                    "a GPU the bus still shows but the driver lost (Xid 79) comes back only after a reset; drain the "
                    "node first",
                    "sudo reboot",
                ),
            ],
        )
    ]


def _too_many_ranks(ff: FleetFacts) -> list[Finding]:
    """Nodes whose ranks see GPUs, but fewer than the node runs ranks (each rank wants cuda:LOCAL_RANK)."""
    short = []  # (label, ranks on the node, GPUs it shows)
    for n in sorted({i.node_rank for i in ff.ranks}):
        mine = [i for i in ff.ranks if i.node_rank == n]
        shown = [i.visible_gpus for i in mine if i.visible_gpus]
        nproc = max(i.local_rank for i in mine) + 1
        if shown and nproc > min(shown):
            short.append((ff.label(n), nproc, min(shown)))
    if not short:
        return []
    label, nproc, gpus = short[0]
    least = min(g for _, _, g in short)
    rows = [[lab, str(p), str(g), ", ".join(str(i) for i in range(g, p))] for lab, p, g in short]
    return [
        TOO_MANY_RANKS.finding(
            title=f"{label}: --nproc-per-node {nproc} exceeds the {plural(gpus, 'GPU')} this node shows"
            if len(short) == 1
            else f"{len(short)} nodes run more ranks than the GPUs they show",
            tables=[Table(["Node", "Ranks", "GPUs visible", "Local ranks without a GPU"], rows)],
            fix=[
                fix("start one rank per visible GPU", f"torchrun --nproc-per-node {least} …"),
                fix(
                    "or make the node's other GPUs visible to the job (CUDA_VISIBLE_DEVICES, the container's "
                    "--gpus, the scheduler's GPU request)",
                    'echo "[$CUDA_VISIBLE_DEVICES]"',
                    "nvidia-smi -L",
                ),
            ],
        )
    ]


def _nodes_and_ranks(ff: FleetFacts) -> list[Finding]:
    out: list[Finding] = []
    if ff.expected_nodes is not None and ff.nodes and len(ff.nodes) < ff.expected_nodes:
        out.append(
            NODES_MISSING.finding(
                title=f"{len(ff.nodes)} of {ff.expected_nodes} nodes joined: "
                f"{_nodes_text([n.label for n in ff.nodes], len(ff.nodes))}",
                fix=[
                    fix(
                        "find the nodes that are not in the list and look at their torchrun output; from a missing "
                        "node, the rendezvous endpoint must answer",
                        "nc -zv " + (ff.endpoint.replace(":", " ") if ff.endpoint else "HOST PORT  # --rdzv-endpoint"),
                    )
                ],
            )
        )
    if ff.never_arrived:
        out.append(
            NEVER_ARRIVED.finding(
                title=f"{_ranks_text(ff, ff.never_arrived)} never arrived",
                fix=[
                    fix(
                        "run the node check by hand on that node; if it is healthy, give slow nodes longer",
                        "cudadoctor check",
                        "torchrun … -m cudadoctor fleet --join-timeout 300",
                    )
                ],
            )
        )
    return out


def _torch_versions(ff: FleetFacts) -> tuple[Counter, dict[str, list[int]]]:
    by_version: dict[str, list[int]] = {}
    for i in ff.ranks:
        if i.torch:
            by_version.setdefault(i.torch, []).append(i.rank)
    return Counter({v: len(r) for v, r in by_version.items()}), by_version


def _gloo_and_torch(ff: FleetFacts) -> list[Finding]:
    out: list[Finding] = []
    counts, by_version = _torch_versions(ff)
    mixed = len(counts) > 1
    broken = bool(ff.gloo_errors) or ff.hang is not None or bool(ff.rank_errors)
    if mixed:
        common = counts.most_common(1)[0][0]
        rows = [[v, _ranks_text(ff, rs)] for v, rs in sorted(by_version.items(), key=lambda x: -len(x[1]))]
        base = common.split("+")[0]
        variant = common.partition("+")[2]
        index = f" --index-url https://download.pytorch.org/whl/{variant}" if variant.startswith("cu") else ""
        out.append(
            MIXED_TORCH.finding(
                title=f"Ranks run {len(counts)} torch versions: " + ", ".join(sorted(counts)),
                severity=Severity.ERROR if broken else Severity.WARNING,
                tables=[Table(["torch", "Ranks"], rows)],
                fix=[
                    fix(
                        f"install the fleet's most common torch ({common}) on the others",
                        f"python -m pip install 'torch=={base}'{index}",
                    )
                ],
            )
        )
    if ff.gloo_errors:
        rows = [[_ranks_text(ff, [r]), e] for r, e in sorted(ff.gloo_errors.items())]
        out.append(
            GLOO_FAILED.finding(
                title=f"The gloo process group failed on {plural(len(ff.gloo_errors), 'rank')}",
                tables=[Table(["Rank", "Error"], rows)],
                cause=MIXED_TORCH.code if mixed else None,
                fix=[
                    fix(
                        "name the interface the nodes reach each other on (ip -br addr shows them), for gloo and NCCL",
                        "export GLOO_SOCKET_IFNAME=eth0 NCCL_SOCKET_IFNAME=eth0",
                    ),
                    fix(
                        "allow TCP between the nodes (gloo and NCCL bootstrap use ephemeral ports)",
                        "sudo iptables -S | grep -iE 'drop|reject'",
                    ),
                ],
            )
        )
    return out


def _hang_and_failures(ff: FleetFacts) -> list[Finding]:
    out: list[Finding] = []
    if ff.hang is not None:
        h = ff.hang
        bound = f" within {h.seconds:g} s" if h.seconds else ""
        late = {r: s for r, s in h.not_arrived.items()}
        if late:
            rows = [[_ranks_text(ff, [r]), s or "never started"] for r, s in sorted(late.items())]
            out.append(
                HANG.finding(
                    title=f"{h.step} did not finish{bound}: {_ranks_text(ff, late)} never arrived",
                    tables=[Table(["Rank", "Last step reached"], rows)],
                    fix=[
                        fix(
                            "look at the late ranks' node: its torchrun output, and its own check",
                            "cudadoctor check",
                            "sudo dmesg | grep -iE 'NVRM: Xid|oom'",
                        )
                    ],
                )
            )
        else:
            nccl = ff.backend in ("nccl", None)
            out.append(
                HANG.finding(
                    title=f"{h.step} did not finish{bound}"
                    + (": every rank reached it, so the collective itself hung" if h.seconds else ""),
                    fix=_hang_fix() if nccl else [],
                )
            )
    dead = dict(ff.unfinished)
    errors = {r: e for r, e in ff.rank_errors.items() if r not in dead}
    if dead or errors:
        rows = [[_ranks_text(ff, [r]), f"never reported back (last step: {s or 'unknown'})"] for r, s in dead.items()]
        rows += [[_ranks_text(ff, [r]), e] for r, e in sorted(errors.items())]
        if dead:
            title = f"{_ranks_text(ff, dead)} died or hung" + (
                f"; {plural(len(errors), 'other rank')} failed after it" if errors else ""
            )
        else:
            title = f"{_ranks_text(ff, errors)} stopped with an error: {next(iter(errors.values()))}"
        out.append(
            RANK_FAILED.finding(
                title=title,
                tables=[Table(["Rank", "What happened"], rows)],
                cause=HANG.code if ff.hang is not None else None,
                fix=[
                    fix(
                        "read the failing rank's own output in its node's torchrun log, and check the node",
                        "cudadoctor check",
                    )
                ],
            )
        )
    if ff.child_error and ff.hang is None and not dead and not errors:
        out.append(INCOMPLETE.finding(title=f"fleet could not finish: {ff.child_error}"))
    return out


def _hang_fix() -> list[Fix]:
    return [
        fix(
            "confirm that peer-to-peer copies are the cause: if fleet passes with P2P off, PCIe ACS or the IOMMU "
            "breaks them",
            "NCCL_P2P_DISABLE=1 torchrun … -m cudadoctor fleet --full",
        ),
        fix(
            "then fix it for good: the IOMMU in passthrough (kernel command line), or ACS off in the BIOS",
            "sudo grubby --update-kernel=ALL --args=iommu=pt   # RHEL/Fedora; Debian/Ubuntu: /etc/default/grub",
            "sudo lspci -vvv | grep -i 'ACSCtl:.*SrcValid+'",
        ),
        fix("see where NCCL stops", "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,P2P,NET torchrun … -m cudadoctor fleet"),
    ]


def _node_reports(ff: FleetFacts) -> tuple[list[Finding], dict[int, list[Finding]]]:
    """Each node's own check findings, one line per finding with the nodes it was found on."""
    from cudadoctor.rules.check import evaluate

    per_node: dict[int, list[Finding]] = {}
    missing = []
    for node in ff.nodes:
        if node.facts is None:
            missing.append(node)
            continue
        per_node[node.node_rank] = evaluate(node.facts, node.outcomes)
    out: list[Finding] = []
    if missing:
        reasons = [[n.label, n.report_error or "no report arrived"] for n in missing]
        out.append(
            NODE_REPORT.finding(
                title=f"No check report from {_nodes_text([n.label for n in missing], len(ff.nodes))}",
                tables=[Table(["Node", "Why"], reasons)],
            )
        )
    groups: dict[tuple[str, str, Severity], tuple[Finding, list[str]]] = {}
    for node in ff.nodes:
        for f in per_node.get(node.node_rank, []):
            if f.severity is Severity.OK:
                continue
            key = (f.code, f.title, f.severity)
            if key not in groups:
                groups[key] = (f, [])
            groups[key][1].append(node.label)
    for f, labels in groups.values():
        if len(ff.nodes) == 1:
            out.append(f)
            continue
        where = _nodes_text(labels, len(ff.nodes))
        out.append(
            Finding(
                code=f.code,
                severity=f.severity,
                section=f.section,
                title=f"{f.title} [{where}]",
                why=f.why,
                fix=f.fix,
                docs=f.docs,
                tables=f.tables,
                cause=f.cause,
            )
        )
    return out, per_node


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
    ("gemm_tflops", "bf16 GEMM", "TFLOP/s", lambda e: e.tflops),
    ("memory_gbps", "memory", "GB/s", lambda e: e.memory_gbps),
    ("h2d_gbps", "pinned H2D", "GB/s", lambda e: e.h2d_gbps),
)


def _gpu_label(ff: FleetFacts, g: Any) -> str:
    return f"{ff.label(g.node_rank)} GPU {g.device} (rank {g.rank})"


def _phase1(ff: FleetFacts) -> list[Finding]:
    if "gpu" not in ff.phases:
        return []
    out: list[Finding] = []
    skipped = [g for g in ff.gpus if g.skipped]
    failed = [g for g in ff.gpus if g.error]
    measured = [g for g in ff.gpus if not g.skipped and not g.error]
    if skipped:
        out.append(
            GPU_SKIPPED.finding(
                title=f"GPU measurements skipped on {plural(len(skipped), 'rank')}: {skipped[0].skipped}",
            )
        )
    for g in failed:
        out.append(GPU_FAILED.finding(title=f"{_gpu_label(ff, g)}: {g.error}"))
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
            title=f"{plural(len(measured), 'GPU')} measured",
            why=GPU_TABLE.explanation + (f" Expected figures: {exp.source}" if exp.source else ""),
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
                    title=f"{what} on {', '.join(_gpu_label(ff, g) for g in gs)}: "
                    + ", ".join(f"{values[g.rank]:,.1f}" for g in gs)
                    + f" {unit} vs the fleet's median {median:,.1f}",
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
                        title=(
                            f"Every GPU's {what}"
                            if everyone
                            else f"{what} on {', '.join(_gpu_label(ff, g) for g in low)}"
                        )
                        + f" is below {floor:,.0f} {unit}"
                        + (f" (lowest {min(getattr(g, attr) for g in low):,.1f})" if low else ""),
                        why=GPU_LOW.explanation + f" Source: {exp.source}",
                        fix=_slow_gpu_fix(),
                    )
                )
    return out


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


def _phase2(ff: FleetFacts) -> list[Finding]:
    if not ff.allreduce:
        return []
    out: list[Finding] = []
    gloo = ff.backend == "gloo"
    node_runs = [a for a in ff.allreduce if a.group == "node"]
    world_runs = [a for a in ff.allreduce if a.group == "world"]
    sizes = sorted({a.size for a in node_runs + world_runs})
    node_ids = sorted({a.nodes[0] for a in node_runs})
    many = len(node_ids) > 3
    cols = ["Size"]
    if many:
        cols += ["nodes min", "nodes median"]
    else:
        cols += [ff.label(n) for n in node_ids]
    if world_runs:
        cols.append(f"all {len(ff.nodes)} nodes")
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
            title=f"All-reduce bus bandwidth (GB/s) over {ff.backend or 'NCCL'}, "
            + (f"{format_size(sizes[0])} to {format_size(biggest)}" if len(sizes) > 1 else f"at {format_size(biggest)}")
            if sizes
            else "All-reduce bus bandwidth",
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
                        title=f"Inside-node all-reduce at {format_size(biggest)} on "
                        f"{_nodes_text([ff.label(n) for n in low], len(top))}: "
                        f"{min(top[n] for n in low):.0f} GB/s, below {exp.node_busbw:.0f}",
                        why=BUSBW_LOW.explanation + f" Source: {exp.source}",
                        fix=_busbw_fix(inside=True),
                    )
                )
        slow_nodes = outliers(top)
        if slow_nodes:
            out.append(
                NODE_BUSBW_OUTLIER.finding(
                    title=f"{_nodes_text([ff.label(n) for n in slow_nodes], len(top))}: inside-node all-reduce "
                    f"{', '.join(f'{top[n]:.0f}' for n in slow_nodes)} GB/s vs the median "
                    f"{statistics.median(top.values()):.0f}",
                    fix=_busbw_fix(inside=True),
                )
            )
        w = next((a for a in world_runs if a.size == biggest), None)
        if exp.world_busbw is not None and w is not None and w.busbw < exp.world_busbw:
            out.append(
                BUSBW_LOW.finding(
                    title=f"All-reduce across {plural(len(ff.nodes), 'node')} at {format_size(biggest)}: "
                    f"{w.busbw:.0f} GB/s, below {exp.world_busbw:.0f}",
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
            title=f"{_nodes_text([ff.label(n) for n in bad], len(ff.nodes))}: slow in every pair "
            f"(best pair {best:.0f} GB/s)",
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
    rows = [[_ranks_text(ff, [r]), f"{late[r] * 1e3:.1f}"] for r in sorted(late, key=lambda r: -late[r])[:8]]
    return [
        STRAGGLER.finding(
            title=f"{_ranks_text(ff, flagged)} arrive {', '.join(f'{late[r] * 1e3:.0f}' for r in flagged)} ms late "
            f"at each collective (step {step * 1e3:.1f} ms)",
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


# -- all of it -----------------------------------------------------------------------------------


def node_outcomes(ff: FleetFacts) -> list[ProbeOutcome]:
    """The nodes' failed probes, named by node: a fleet with a half-checked node is incomplete."""
    out = []
    for node in ff.nodes:
        for o in node.outcomes:
            if o.failed:
                out.append(ProbeOutcome(f"{node.label}/{o.name}", o.status, o.seconds, o.error))
    return out


def evaluate(ff: FleetFacts) -> list[Finding]:
    from cudadoctor.rules.catalogue import SECTIONS

    found, per_node = _node_reports(ff)
    findings: list[Finding] = []
    if ff.nodes:
        findings.append(_inventory(ff, per_node))
    findings += _nodes_and_ranks(ff)
    findings += _gloo_and_torch(ff)
    findings += _hang_and_failures(ff)
    findings += _gpu_count(ff)
    findings += _too_many_ranks(ff)
    findings += _mismatch(ff)
    findings += _phase1(ff)
    findings += _phase2(ff)
    findings += found
    order = {s: i for i, s in enumerate(SECTIONS)}
    findings.sort(key=lambda x: (order[x.section], -x.severity.rank))
    return findings
