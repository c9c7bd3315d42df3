"""Phase 0, what the nodes are: the inventory table, the properties that differ between nodes, GPU
counts against --nproc-per-node."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from cudadoctor.facts.fleet import FleetFacts, NodeFacts
from cudadoctor.knowledge.versions import cuda_int_to_str
from cudadoctor.model import Finding, Fix, Severity, Table, decide, msg, msg_n
from cudadoctor.rules import health
from cudadoctor.rules.catalogue import entry, fix
from cudadoctor.rules.fleet.labels import S, joined, nodes_text

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


def inventory(ff: FleetFacts, node_findings: dict[int, list[Finding]]) -> Finding:
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
    nodes, ranks = len(ff.nodes), len(ff.ranks)
    title = msg(
        "{nodes}, {ranks} reported",
        nodes=msg_n("{n} node", "{n} nodes", nodes, n=nodes),
        ranks=msg_n("{n} rank", "{n} ranks", ranks, n=ranks),
    )
    return INVENTORY.finding(
        title=title,
        # at 80 columns the node and its status stay whole; the versions go first (CD801 lists any that differ)
        tables=[Table(["Node!<", "Ranks?", "GPUs", "Driver", "CUDA?", "torch?", "NCCL?", "Check!"], rows)],
    )


def mismatch(ff: FleetFacts) -> list[Finding]:
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
            rows.append([name, value, nodes_text(nodes, len(ff.nodes))])
    if not differing:
        return []
    fixes = _mismatch_fixes(ff, per_node, differing)
    return [
        MISMATCH.finding(
            title=msg("The nodes differ in {names}", names=joined([_PROPERTY_WORDS.get(n, n) for n in differing])),
            tables=[Table(["Property", "Value", "Nodes"], rows)],
            fix=fixes,
        )
    ]


# the compared properties whose names are words: the title shows them in the reader's language (the others
# are names: torch, NCCL, the nvidia-* wheels, NCCL_* variables)
_PROPERTY_WORDS = {
    "GPUs": msg("GPUs"),
    "GPU model": msg("GPU model"),
    "driver": msg("driver"),
    "CUDA (driver)": msg("CUDA (driver)"),
    "persistence mode": msg("persistence mode"),
    "uncorrectable ECC errors": msg("uncorrectable ECC errors"),
    "clock event reasons": msg("clock event reasons"),
    "torch CUDA": msg("torch CUDA"),
}


def _mismatch_fixes(ff: FleetFacts, per_node: dict[int, dict[str, str | None]], differing: list[str]) -> list[Fix]:
    """Bring the odd nodes to the most common value of each property that differs."""
    out: list[Fix] = []
    for name in differing:
        known = {n: props[name] for n, props in per_node.items() if props.get(name) is not None}
        if name.startswith("NCCL_"):
            known = {n: props.get(name) or "(unset)" for n, props in per_node.items() if ff.node(n).facts is not None}
        common = Counter(known.values()).most_common(1)[0][0]
        odd = [n for n, v in known.items() if v != common]
        where = nodes_text([ff.label(n) for n in odd], len(ff.nodes))
        if name == "driver" and common and common[0].isdigit():
            branch = common.split(".")[0]
            os_ids = {getattr(getattr(ff.node(n).facts, "system", None), "os_id", None) for n in odd}
            cmds = []
            if os_ids & {"ubuntu", "debian"}:
                cmds.append(f"sudo apt-get install -y cuda-drivers-{branch}   # NVIDIA's CUDA repository")
            if os_ids & {"rhel", "rocky", "almalinux", "centos", "ol"}:
                cmds.append(f"sudo dnf module install -y nvidia-driver:{branch}-dkms")
            if cmds:
                label = msg(
                    "on {nodes}: {what}",
                    nodes=where,
                    what=msg("the driver of the other nodes ({version}), then reboot", version=common),
                )
                out.append(fix(label, *cmds, "sudo reboot"))
            else:  # no package known for this OS: the label says what to install, nothing to paste
                label = msg(
                    "on {nodes}: {what}",
                    nodes=where,
                    what=msg(
                        "install NVIDIA driver {version} (branch {branch}), as on the others, then reboot",
                        version=common,
                        branch=branch,
                    ),
                )
                out.append(fix(label))
        elif name == "torch" or name.startswith("nvidia-"):
            base, _, variant = common.partition("+")
            index = f" --index-url https://download.pytorch.org/whl/{variant}" if variant.startswith("cu") else ""
            out.append(
                fix(
                    msg(
                        "on {nodes}: {what}",
                        nodes=where,
                        what=msg("{pkg} {pkgversion} as on the other nodes", pkg=name, pkgversion=common),
                    ),
                    f"python -m pip install '{name}=={base}'{index}",
                )
            )
        elif name.startswith("NCCL_"):
            cmd = f"unset {name}" if common == "(unset)" else f"export {name}={common}"
            what = msg("{variable} as on the other nodes (in the job's environment)", variable=name)
            out.append(fix(msg("on {nodes}: {what}", nodes=where, what=what), cmd))
        elif name == "persistence mode" and common == "on":
            what = msg("persistence mode on, as on the other nodes")
            out.append(fix(msg("on {nodes}: {what}", nodes=where, what=what), "sudo nvidia-smi -pm 1"))
    return out


def gpu_count(ff: FleetFacts) -> list[Finding]:
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
            title=msg(
                "{nodes}: {seen} of {expected} GPUs",
                nodes=nodes_text([s[0] for s in short], len(ff.nodes)),
                seen=first[1],
                expected=ff.expected_gpus,
            )
            if len(short) == 1
            else msg("{n} nodes show fewer than {expected} GPUs", n=len(short), expected=ff.expected_gpus),
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


def too_many_ranks(ff: FleetFacts) -> list[Finding]:
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
            title=msg(
                "{nodes}: --nproc-per-node {nproc} exceeds the {gpus} this node shows",
                nodes=label,
                nproc=nproc,
                gpus=msg_n("{n} GPU", "{n} GPUs", gpus, n=gpus),
            )
            if len(short) == 1
            else msg("{n} nodes run more ranks than the GPUs they show", n=len(short)),
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
