"""Which GPUs a CUDA process sees, under CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER."""

from __future__ import annotations

from cudadoctor.facts import Facts
from cudadoctor.knowledge.units import format_size
from cudadoctor.knowledge.visibility import Visibility
from cudadoctor.model import Finding, Severity, Table, msg, msg_n
from cudadoctor.rules.catalogue import entry, fix
from cudadoctor.rules.predicates import visibility  # rules/measurements.py imports it from here too

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


def table(vis: Visibility) -> Table:
    rows = []
    for s in vis.selected:
        d = s.device
        rows.append(
            [f"cuda:{s.ordinal}", str(d.index), s.mig_uuid or d.uuid or "?", format_size(d.memory_free), d.name or "?"]
        )
    return Table(["cuda", "nvml", "uuid", "free>", "name"], rows)


def _cuda_cannot_start(f: Facts) -> bool:
    """libcuda is missing or cuInit failed (CD121-CD124 tell it): then CUDA sees no GPU at all, and "CUDA
    sees 4 of 4 GPUs" would contradict them. Unknown (no libcuda probe) is not "cannot"."""
    c = f.cuda_driver
    if c is None or c.timed_out:
        return False
    return c.library_found is False or (c.init_result is not None and c.init_result != 0)


def evaluate(f: Facts) -> list[Finding]:
    vis = visibility(f)
    if vis is None or f.driver is None:
        return _mig(f)
    raw = vis.raw
    devices = f.driver.devices
    out: list[Finding] = []
    shown = msg("unset") if raw is None else f"'{raw}'"
    if vis.duplicate is not None:
        out.append(
            DUPLICATE.finding(
                title=msg(
                    "CUDA_VISIBLE_DEVICES={value} names {device} twice: no GPU is visible",
                    value=shown,
                    device=vis.duplicate,
                ),
                fix=[fix("List each device once", "export CUDA_VISIBLE_DEVICES=0,1")],
            )
        )
    elif vis.hides_all:
        out.append(
            ALL_HIDDEN.finding(
                title=msg_n(
                    "CUDA_VISIBLE_DEVICES={value} hides all {n} GPU",
                    "CUDA_VISIBLE_DEVICES={value} hides all {n} GPUs",
                    len(devices),
                    value=shown,
                    n=len(devices),
                ),
                fix=[
                    fix("Show every GPU", "unset CUDA_VISIBLE_DEVICES"),
                    # gpus --pick chooses among the GPUs the variable shows: none until it is unset
                    fix(
                        "Or show them all and select one by UUID, order-proof (eval sets the variable in this shell)",
                        "unset CUDA_VISIBLE_DEVICES",
                        'eval "$(cudadoctor gpus --pick 1)"',
                    ),
                ],
            )
        )
    elif vis.invalid_entry is not None:
        out.append(
            ENTRY_IGNORED.finding(
                title=msg_n(
                    "CUDA_VISIBLE_DEVICES={value}: entry '{entry}' names no device, so {ignored} is ignored",
                    "CUDA_VISIBLE_DEVICES={value}: entry '{entry}' names no device, so {ignored} are ignored",
                    len(vis.ignored),
                    value=shown,
                    entry=vis.invalid_entry.strip(),
                    ignored=", ".join(e.strip() for e in vis.ignored),
                ),
                fix=[fix("Use indices below the GPU count, or UUIDs from nvidia-smi -L", "nvidia-smi -L")],
            )
        )
    if vis.selected and not _cuda_cannot_start(f):
        out.append(
            VISIBLE_TABLE.finding(
                title=msg_n(
                    "CUDA sees {k} of {n} GPU (CUDA_VISIBLE_DEVICES {value}, order {order}, estimated)"
                    if vis.order_estimated
                    else "CUDA sees {k} of {n} GPU (CUDA_VISIBLE_DEVICES {value}, order {order})",
                    "CUDA sees {k} of {n} GPUs (CUDA_VISIBLE_DEVICES {value}, order {order}, estimated)"
                    if vis.order_estimated
                    else "CUDA sees {k} of {n} GPUs (CUDA_VISIBLE_DEVICES {value}, order {order})",
                    len(devices),
                    k=len(vis.selected),
                    n=len(devices),
                    value=shown,
                    order=vis.order,
                ),
                tables=[table(vis)],
            )
        )
    if vis.order_estimated:
        out.append(
            MIXED_ORDER.finding(
                title=msg(
                    "Mixed GPU models ({names}): CUDA's device numbers differ from nvidia-smi's",
                    names=", ".join(sorted({d.name or "?" for d in devices})),
                ),
                fix=[fix("Make CUDA number GPUs like nvidia-smi", "export CUDA_DEVICE_ORDER=PCI_BUS_ID")],
            )
        )
    return out + _mig(f)


def _mig(f: Facts) -> list[Finding]:
    out: list[Finding] = []
    devices = f.driver.devices if f.driver is not None and f.driver.init_status == "ok" else []
    for d in devices:
        if d.mig_enabled:
            uuids = [i.uuid for i in d.mig_instances if i.uuid]
            out.append(
                MIG.finding(
                    title=msg_n(
                        "GPU {index} ({name}) is in MIG mode with {n} instance"
                        if d.name
                        else "GPU {index} is in MIG mode with {n} instance",
                        "GPU {index} ({name}) is in MIG mode with {n} instances"
                        if d.name
                        else "GPU {index} is in MIG mode with {n} instances",
                        len(uuids),
                        index=d.index,
                        name=d.name,
                        n=len(uuids),
                    ),
                    fix=[fix("Give each process one instance", f"export CUDA_VISIBLE_DEVICES={uuids[0]}")]
                    if uuids
                    else [],
                    tables=[Table(["MIG instance"], [[u] for u in uuids])] if uuids else [],
                )
            )
    return out
