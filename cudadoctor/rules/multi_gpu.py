"""Multi-GPU readiness (`check --full`, two or more GPUs): the P2P access matrix and P2P copy bandwidth
the measurement child took, and when P2P fails or is slow, the IOMMU mode from sysfs and NCCL's fixes.

Sources: cuda-facts §12 — NCCL hangs and slow P2P on one node come from PCIe ACS / IOMMU (nccl#631,
#2079): NCCL_P2P_DISABLE=1 works around it, iommu=pt or ACS off fixes it (NCCL "Troubleshooting", PCI
Access Control Services); ACS is in PCIe extended config space, which only root can read (lspci -vvv).
GeForce cards: NVIDIA does not enable PCIe P2P on GeForce boards (RTX 4090/5090 report no peer access).
P2P over PCIe reaches roughly the link's host-copy rate (§8); below 40 % of the link is "slow" here.
"""

from __future__ import annotations

from cudadoctor.facts import Facts
from cudadoctor.knowledge.pcie import link_gbps
from cudadoctor.model import Finding, Fix, Severity, Table, msg, msg_n
from cudadoctor.rules.catalogue import entry, fix

SLOW_SHARE = 0.4  # of the narrowest link's theoretical rate

P2P_OK = entry(
    "CD160",
    "p2p-ok",
    Severity.OK,
    "Multi-GPU",
    "P2P works between every pair of GPUs",
    """Every GPU can read and write every other GPU's memory directly (over NVLink or PCIe), which NCCL
    and torch.distributed use for intra-node communication.""",
)
P2P_MISSING = entry(
    "CD161",
    "p2p-unavailable",
    Severity.WARNING,
    "Multi-GPU",
    "P2P access is unavailable between some GPUs",
    """Some GPU pairs cannot access each other's memory directly, so NCCL routes their traffic through
    host memory (slower). On servers the usual cause is the IOMMU or PCIe ACS redirecting P2P traffic;
    GeForce cards have no PCIe P2P at all.""",
)
P2P_SLOW = entry(
    "CD162",
    "p2p-slow",
    Severity.WARNING,
    "Multi-GPU",
    "P2P copies between GPUs are slow",
    """Direct copies between some GPUs run far below their PCIe link's rate. With the IOMMU translating
    (not passthrough) or ACS on the PCIe switches, P2P traffic goes up to the root complex and back; NCCL
    may also hang there.""",
)


def _names(f: Facts) -> dict[int, str]:
    b = f.bandwidth
    return {int(k): v for k, v in (b.device_names if b else {}).items()}


def _fixes(f: Facts) -> list[Fix]:
    iommu = f.platform.iommu if f.platform is not None else None
    out = []
    translated = (
        iommu is not None and iommu.group_types and any(t.upper().startswith("DMA") for t in iommu.group_types.values())
    )
    if translated or (iommu is not None and iommu.enabled and not (iommu.cmdline or "").count("iommu=pt")):
        out.append(
            fix(
                "The IOMMU translates GPU traffic: put it in passthrough on the kernel command line, then reboot",
                "sudo sed -i 's/^GRUB_CMDLINE_LINUX=\"/&iommu=pt /' /etc/default/grub",
                "sudo update-grub || sudo grub2-mkconfig -o /boot/grub2/grub.cfg",
                "sudo reboot",
            )
        )
    out.append(
        fix(
            "Check ACS on the PCIe bridges (reading it needs root); SrcValid+ on a bridge above the GPUs breaks P2P",
            "sudo lspci -vvv | grep -i -E '^[0-9a-f]|ACSCtl' | grep -B1 'SrcValid+'",
        )
    )
    out.append(
        fix(
            "Then turn ACS off in the BIOS, or per bridge that lspci named (BUS:DEV.FN; lasts until a reboot)",
            "sudo setpci -s BUS:DEV.FN ECAP_ACS+0x6.w=0000",
        )
    )
    out.append(fix("Workaround until then: NCCL without P2P (slower, but no hang)", "export NCCL_P2P_DISABLE=1"))
    out.append(fix("See the topology NCCL sees", "nvidia-smi topo -m"))
    return out


def _link_bound(f: Facts) -> float | None:
    d = f.driver
    if d is None or d.init_status != "ok" or not d.devices:
        return None
    rates = [link_gbps(dev.pcie_gen_max, dev.pcie_width_max) for dev in d.devices]
    if any(r is None for r in rates):
        return None
    return min(r for r in rates if r is not None)


def evaluate(f: Facts) -> list[Finding]:
    b = f.bandwidth
    if b is None or b.p2p_access is None:
        return []
    matrix = b.p2p_access
    n = len(matrix)
    if n < 2:
        return []
    names = _names(f)
    missing = [(i, j) for i in range(n) for j in range(n) if i != j and not matrix[i][j]]
    out: list[Finding] = []
    if missing:
        geforce = [i for i in range(n) if "geforce" in names.get(i, "").lower()]
        grid = Table(
            ["GPU"] + [str(j) for j in range(n)],
            [[str(i)] + ["-" if i == j else ("yes" if matrix[i][j] else "no") for j in range(n)] for i in range(n)],
        )
        if geforce and len(geforce) == n:
            out.append(
                P2P_MISSING.finding(
                    title=msg(
                        "No P2P between these GeForce cards ({name}): NVIDIA does not enable it",
                        name=names.get(0, "GeForce"),
                    ),
                    severity=Severity.INFO,
                    why="GeForce cards have no PCIe peer-to-peer access: the driver does not enable it on them. "
                    "NCCL and torch.distributed still work, through host memory, at lower speed. Nothing on this "
                    "machine can change it; data-centre and workstation cards have P2P.",
                    fix=[fix("NCCL picks the host path itself; nothing to set", "nvidia-smi topo -p2p r")],
                    tables=[grid],
                )
            )
        else:
            out.append(
                P2P_MISSING.finding(
                    title=msg("No P2P access on {k} of {n} GPU pairs", k=len(missing), n=n * (n - 1)),
                    fix=_fixes(f),
                    tables=[grid],
                )
            )
    bound = _link_bound(f)
    measured = [t for t in b.p2p if t.gbps is not None]
    # pairs without P2P copy through host memory: already said above, not "slow P2P"
    peer = [t for t in measured if 0 <= t.src < n and 0 <= t.dst < n and matrix[t.src][t.dst]]
    slow = [t for t in peer if bound is not None and t.gbps < SLOW_SHARE * bound]
    if slow:
        out.append(
            P2P_SLOW.finding(
                title=msg_n(
                    "P2P copies slow on {n} GPU pair: {rate} GB/s vs a {link} GB/s link",
                    "P2P copies slow on {n} GPU pairs: {rate} GB/s vs a {link} GB/s link",
                    len(slow),
                    n=len(slow),
                    rate=f"{min(t.gbps for t in slow):.1f}",
                    link=f"{bound:.0f}",
                ),
                fix=_fixes(f),
                tables=[Table(["From", "To", "GB/s"], [[str(t.src), str(t.dst), f"{t.gbps:.1f}"] for t in slow])],
            )
        )
    if not missing and not slow and measured:
        out.append(
            P2P_OK.finding(
                title=msg(
                    "P2P works between all {n} GPUs: slowest pair {rate} GB/s",
                    n=n,
                    rate=f"{min(t.gbps for t in measured):.1f}",
                ),
                tables=[Table(["From", "To", "GB/s"], [[str(t.src), str(t.dst), f"{t.gbps:.1f}"] for t in measured])],
            )
        )
    errors = [t for t in b.p2p if t.error]
    if errors and not out:
        out.append(
            P2P_MISSING.finding(
                title=msg_n(
                    "P2P copies failed on {n} GPU pair: {error}",
                    "P2P copies failed on {n} GPU pairs: {error}",
                    len(errors),
                    n=len(errors),
                    error=errors[0].error,
                ),
                fix=_fixes(f),
            )
        )
    return out
