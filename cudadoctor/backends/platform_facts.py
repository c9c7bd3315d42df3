"""Below torch, gathered in one pass through the host seam: WSL, the kernel module, the container, Xid
errors from the kernel log, the IOMMU. Each part is bounded: file reads are size-bounded and never
block, programs (dmesg, modinfo, systemctl) run in children with a timeout, and nothing needs root.

Xid meanings: NVIDIA "XID Errors" (https://docs.nvidia.com/deploy/xid-errors/), see knowledge/xid.py.
"""

from __future__ import annotations

import re
import sys

from cudadoctor.backends.containers import container_facts
from cudadoctor.backends.hostfs import Host
from cudadoctor.backends.kernel_module import NVIDIA_VENDOR, kernel_module_facts
from cudadoctor.backends.wsl import wsl_facts
from cudadoctor.facts.platform import IommuFacts, PlatformFacts, XidEvent

_XID = re.compile(r"NVRM: Xid \((?:PCI:)?([0-9a-fA-F:.]+)\):\s*(\d+)(.*)$")
_XID_LIMIT = 50  # the most recent events kept


def read_kernel_log(host: Host, timeout: float) -> tuple[str | None, bool | None]:
    """(text, readable): readable False where the kernel log needs root here (dmesg_restrict)."""
    exe = host.program("dmesg")
    if exe is None:
        return None, None
    res = host.run([exe], timeout)
    if res.ok:
        return res.stdout, True
    if res.timed_out or res.error:
        return None, None
    return None, False  # "dmesg: read kernel buffer failed: Operation not permitted"


def parse_xid(text: str | None) -> list[XidEvent]:
    out = []
    for line in (text or "").splitlines():
        m = _XID.search(line)
        if m:
            out.append(XidEvent(xid=int(m.group(2)), pci=m.group(1), text=line.strip()[-200:]))
    return out[-_XID_LIMIT:]


def iommu_facts(host: Host) -> IommuFacts:
    units = host.listdir("/sys/class/iommu")
    cmdline = host.read("/proc/cmdline")
    words = (
        " ".join(w for w in cmdline.split() if w.startswith(("iommu=", "intel_iommu=", "amd_iommu=")))
        if cmdline is not None
        else None
    )
    groups: dict[str, str] | None = None
    devices = host.listdir("/sys/bus/pci/devices")
    if devices is not None:
        groups = {}
        for dev in devices:
            base = f"/sys/bus/pci/devices/{dev}"
            if (host.read(f"{base}/vendor") or "").strip() != NVIDIA_VENDOR:
                continue
            if not (host.read(f"{base}/class") or "").strip().startswith("0x03"):
                continue
            link = host.readlink(f"{base}/iommu_group")
            if link:
                kind = host.read(f"/sys/kernel/iommu_groups/{link.rstrip('/').rsplit('/', 1)[-1]}/type")
                if kind:
                    groups[dev] = kind.strip()
    return IommuFacts(enabled=None if units is None else bool(units), cmdline=words, group_types=groups)


def platform_facts(host: Host | None = None, timeout: float = 3.0) -> PlatformFacts:
    """Everything below torch that can be read without root. Linux only; elsewhere every part is None."""
    host = host or Host()
    facts = PlatformFacts()
    if host.root in ("", "/") and not sys.platform.startswith("linux"):
        return facts
    for part, fn in (
        ("wsl", lambda: wsl_facts(host)),
        ("container", lambda: container_facts(host)),
    ):
        try:
            setattr(facts, part, fn())
        except Exception as exc:  # one unreadable part must not hide the others
            facts.errors[part] = f"{type(exc).__name__}: {exc}"
    log, readable = read_kernel_log(host, timeout)
    facts.xid = parse_xid(log) if readable else None
    if facts.wsl is None:  # inside WSL there is no NVIDIA kernel module to ask about
        try:
            facts.module = kernel_module_facts(host, log, readable, timeout)
        except Exception as exc:
            facts.errors["module"] = f"{type(exc).__name__}: {exc}"
        try:
            facts.iommu = iommu_facts(host)
        except Exception as exc:
            facts.errors["iommu"] = f"{type(exc).__name__}: {exc}"
    return facts
