"""Which GPUs a CUDA process sees, under CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER."""

from __future__ import annotations

from cudadoctor.facts import Facts
from cudadoctor.model import Finding, Severity
from cudadoctor.rules.catalogue import entry, fix
from cudadoctor.units import format_size
from cudadoctor.visible_devices import Visibility, parse

VISIBLE_TABLE = entry(
    "CD300",
    "visible-devices",
    Severity.INFO,
    "Visible devices",
    "Which GPUs CUDA programs see",
    """CUDA numbers devices itself (cuda:0, cuda:1, …) after applying CUDA_VISIBLE_DEVICES and
    CUDA_DEVICE_ORDER; nvidia-smi numbers them in PCI order. The table maps one to the other.""",
)
ALL_HIDDEN = entry(
    "CD301",
    "all-devices-hidden",
    Severity.ERROR,
    "Visible devices",
    "CUDA_VISIBLE_DEVICES hides every GPU",
    """An empty CUDA_VISIBLE_DEVICES, -1, or a first entry that names no device leaves CUDA with no
    device at all: torch.cuda.is_available() is False.""",
)
ENTRY_IGNORED = entry(
    "CD302",
    "visible-entry-ignored",
    Severity.WARNING,
    "Visible devices",
    "CUDA_VISIBLE_DEVICES has an invalid entry: it and everything after it are ignored",
    """CUDA stops reading CUDA_VISIBLE_DEVICES at the first entry that names no device (an index out of
    range, an unknown UUID, a typo); the devices listed after it are silently left out.""",
)
DUPLICATE = entry(
    "CD303",
    "visible-duplicate",
    Severity.ERROR,
    "Visible devices",
    "CUDA_VISIBLE_DEVICES names a device twice: the whole list is invalid",
    """A device listed twice (by index and UUID, say) makes CUDA reject the whole list, so no device
    is visible.""",
)
MIXED_ORDER = entry(
    "CD304",
    "device-order-mismatch",
    Severity.WARNING,
    "Visible devices",
    "Mixed GPU models: CUDA's device numbers differ from nvidia-smi's",
    """With different GPU models, CUDA's default FASTEST_FIRST order puts the fastest first while
    nvidia-smi lists PCI order, so `cuda:0` and nvidia-smi's GPU 0 can be different cards, and
    CUDA_VISIBLE_DEVICES=1 may pick the card you did not mean. CUDA_DEVICE_ORDER=PCI_BUS_ID makes them
    agree.""",
)
MIG = entry(
    "CD305",
    "mig-enabled",
    Severity.INFO,
    "Visible devices",
    "A GPU is in MIG mode: each process uses one MIG instance",
    """A MIG-enabled GPU is split into instances. A CUDA process can use only one MIG instance; choose
    it with CUDA_VISIBLE_DEVICES=MIG-<uuid>.""",
)


def table(vis: Visibility) -> list[str]:
    rows = [f"{'cuda':<5} {'nvml':<5} {'uuid':<14} {'free':>10}  name"]
    for s in vis.selected:
        d = s.device
        uuid = (s.mig_uuid or d.uuid or "?")[:13]
        rows.append(f"{s.ordinal:<5} {d.index:<5} {uuid:<14} {format_size(d.memory_free):>10}  {d.name or '?'}")
    return rows


def evaluate(f: Facts) -> list[Finding]:
    if f.driver is None or f.driver.init_status != "ok" or not f.driver.devices:
        return []
    env = f.system.env if f.system else {}
    raw, order = env.get("CUDA_VISIBLE_DEVICES"), env.get("CUDA_DEVICE_ORDER")
    devices = f.driver.devices
    vis = parse(raw, devices, order)
    out: list[Finding] = []
    shown = "unset" if raw is None else f"'{raw}'"
    if vis.duplicate is not None:
        out.append(
            DUPLICATE.finding(
                title=f"CUDA_VISIBLE_DEVICES={shown} names {vis.duplicate} twice: no GPU is visible",
                fix=[fix("List each device once", "export CUDA_VISIBLE_DEVICES=0,1")],
            )
        )
    elif vis.hides_all:
        out.append(
            ALL_HIDDEN.finding(
                title=f"CUDA_VISIBLE_DEVICES={shown} hides all {len(devices)} GPU{'s' * (len(devices) != 1)}",
                fix=[
                    fix("Show every GPU", "unset CUDA_VISIBLE_DEVICES"),
                    fix("Or pick GPUs by UUID (order-proof)", "cudadoctor gpus --pick 1"),
                ],
            )
        )
    elif vis.invalid_entry is not None:
        out.append(
            ENTRY_IGNORED.finding(
                title=f"CUDA_VISIBLE_DEVICES={shown}: entry '{vis.invalid_entry.strip()}' names no device, "
                f"so {', '.join(e.strip() for e in vis.ignored)} {'is' if len(vis.ignored) == 1 else 'are'} ignored",
                fix=[fix("Use indices below the GPU count, or UUIDs from nvidia-smi -L", "nvidia-smi -L")],
            )
        )
    if vis.selected:
        out.append(
            VISIBLE_TABLE.finding(
                title=f"CUDA sees {len(vis.selected)} of {len(devices)} GPU{'s' * (len(devices) != 1)} "
                f"(CUDA_VISIBLE_DEVICES {shown}, order {vis.order}{', estimated' if vis.order_estimated else ''})",
                details=table(vis),
            )
        )
    if vis.order_estimated:
        out.append(
            MIXED_ORDER.finding(
                fix=[fix("Make CUDA number GPUs like nvidia-smi", "export CUDA_DEVICE_ORDER=PCI_BUS_ID")]
            )
        )
    for d in devices:
        if d.mig_enabled:
            uuids = [i.uuid for i in d.mig_instances if i.uuid]
            n = f"{len(uuids)} instance{'s' * (len(uuids) != 1)}"
            out.append(
                MIG.finding(
                    title=f"GPU {d.index} ({d.name}) is in MIG mode with {n}",
                    fix=[fix("Give each process one instance", f"export CUDA_VISIBLE_DEVICES={uuids[0]}")]
                    if uuids
                    else [],
                    details=uuids,
                )
            )
    return out
