"""CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER, interpreted the way CUDA does (pure functions).

- Entries: indices (into CUDA's own enumeration order), `GPU-` UUID prefixes, `MIG-` UUIDs.
- Parsing stops at the first invalid entry; the ones before it still count.
- A device named twice makes the whole list invalid: no device is visible.
- An empty string (or "-1", an invalid first entry) hides every device.
- CUDA enumerates FASTEST_FIRST unless CUDA_DEVICE_ORDER=PCI_BUS_ID; NVML and nvidia-smi use PCI order.
  CUDA's "fastest" heuristic is not published: identical GPUs keep PCI order, mixed ones are estimated
  (higher compute capability, then more memory, first). Only GPUs whose name and compute capability are
  known count as models: one unknown value is not a second model.
- A `MIG-` entry that matches no known instance cannot be judged while some MIG instance's UUID is
  unknown: the visibility is then unknown (`undetermined`), never "hides every GPU".
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cudadoctor.facts.nvml import SICK_ERRORS, NvmlDevice
from cudadoctor.knowledge.architectures import parse_cc


@dataclass
class Selected:
    ordinal: int  # the CUDA device number the process sees (cuda:N)
    device: NvmlDevice
    mig_uuid: str | None = None


@dataclass
class Visibility:
    raw: str | None
    order: str  # FASTEST_FIRST or PCI_BUS_ID
    selected: list[Selected] = field(default_factory=list)
    invalid_entry: str | None = None  # where parsing stopped
    ignored: list[str] = field(default_factory=list)  # entries after (and including) the invalid one
    duplicate: str | None = None
    order_estimated: bool = False
    undetermined: str | None = None  # an entry that cannot be judged (a MIG UUID NVML did not tell)

    @property
    def hides_all(self) -> bool:
        """CUDA_VISIBLE_DEVICES leaves CUDA no device (unset hides nothing, even when no GPU is usable)."""
        return self.raw is not None and not self.selected and self.undetermined is None


def _cc_key(d: NvmlDevice) -> tuple[int, int]:
    return parse_cc(d.compute_capability) or (0, 0)


def enumeration_order(devices: list[NvmlDevice], order: str) -> tuple[list[NvmlDevice], bool]:
    """CUDA's device order before CUDA_VISIBLE_DEVICES applies, and whether it is an estimate."""
    usable = [d for d in devices if d.error is None]
    by_pci = sorted(usable, key=lambda d: (d.pci_bus_id or "", d.index))
    models = {(d.name, d.compute_capability) for d in usable if d.name and d.compute_capability}
    if order == "PCI_BUS_ID" or len(models) <= 1:
        return by_pci, False
    fastest = sorted(by_pci, key=lambda d: (tuple(-x for x in _cc_key(d)), -(d.memory_total or 0)))
    return fastest, True


def parse(raw: str | None, devices: list[NvmlDevice], order: str | None = None) -> Visibility:
    order = "PCI_BUS_ID" if (order or "").strip().upper() == "PCI_BUS_ID" else "FASTEST_FIRST"
    enum, estimated = enumeration_order(devices, order)
    vis = Visibility(raw=raw, order=order, order_estimated=estimated)
    if raw is None:
        vis.selected = [Selected(i, d) for i, d in enumerate(enum)]
        return vis
    entries = raw.split(",")
    chosen: list[tuple[NvmlDevice, str | None]] = []
    for pos, entry in enumerate(entries):
        token = entry.strip()
        match = _resolve(token, enum, devices)
        if match is None and token.startswith("MIG-") and _mig_uuid_unknown(devices):
            vis.undetermined = entry  # it may name the instance whose UUID is unknown: nothing after it is known
            vis.selected = [Selected(i, d, mig) for i, (d, mig) in enumerate(chosen)]
            return vis
        if match is None:
            vis.invalid_entry = entry
            vis.ignored = entries[pos:]
            break
        key = match[1] or match[0].uuid or str(match[0].index)
        if any((c[1] or c[0].uuid or str(c[0].index)) == key for c in chosen):
            vis.duplicate = token
            return vis  # a duplicate invalidates the whole list
        chosen.append(match)
    vis.selected = [Selected(i, d, mig) for i, (d, mig) in enumerate(chosen)]
    return vis


def _resolve(token: str, enum: list[NvmlDevice], devices: list[NvmlDevice]) -> tuple[NvmlDevice, str | None] | None:
    if token.isascii() and token.isdigit():  # CUDA reads ASCII digits only ("²", "①", "٣" are not)
        if len(token) > 6:  # no machine has a million GPUs; int() of 100,000 digits would even raise
            return None
        i = int(token)
        return (enum[i], None) if i < len(enum) else None
    if token.startswith("GPU-") and len(token) > 4:
        hits = [d for d in enum if d.uuid and d.uuid.startswith(token)]
        return (hits[0], None) if len(hits) == 1 else None
    if token.startswith("MIG-"):
        for d in devices:
            for inst in d.mig_instances:
                if inst.uuid == token:
                    return d, token
    return None


def _mig_uuid_unknown(devices: list[NvmlDevice]) -> bool:
    return any(inst.uuid is None for d in devices for inst in d.mig_instances)


def from_env(env: dict[str, str] | None, devices: list[NvmlDevice]) -> Visibility | None:
    """What CUDA programs started with this environment see; None when the environment is unknown,
    CUDA_VISIBLE_DEVICES names something the facts cannot judge (a MIG instance whose UUID is unknown), or
    a GPU's NVML query crashed or hung (CUDA may or may not count that GPU: every number after it is unknown)."""
    if env is None or any(d.error in SICK_ERRORS for d in devices):
        return None
    vis = parse(env.get("CUDA_VISIBLE_DEVICES"), devices, env.get("CUDA_DEVICE_ORDER"))
    return None if vis.undetermined is not None else vis
