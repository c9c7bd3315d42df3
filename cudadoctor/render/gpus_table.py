"""The `cudadoctor gpus` table: plain aligned text (no rich import: this command must stay fast)."""

from __future__ import annotations

from cudadoctor.facts.nvml import NvmlDevice
from cudadoctor.knowledge.units import format_size
from cudadoctor.knowledge.visibility import Visibility


def _gib(n: int | None) -> str:
    return "N/A" if n is None else f"{n / (1 << 30):.1f}"


def _link(d: NvmlDevice) -> str:
    if d.pcie_gen_current is None and d.pcie_width_current is None:
        return "N/A"
    cur = f"Gen{d.pcie_gen_current or '?'}x{d.pcie_width_current or '?'}"
    top = f"Gen{d.pcie_gen_max or '?'}x{d.pcie_width_max or '?'}"
    return cur if cur == top else f"{cur}/{top}"


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def render(devices: list[NvmlDevice], vis: Visibility, driver: str | None, cuda: str | None) -> str:
    ordinal = {s.device.index: s.ordinal for s in vis.selected if s.mig_uuid is None}
    header = ["CUDA", "NVML", "NAME", "UUID", "BUS", "FREE/USED/TOTAL GiB", "UTIL", "TEMP", "PCIE"]
    rows = []
    for d in devices:
        cuda_col = str(ordinal[d.index]) if d.index in ordinal else "hidden"
        if d.error:
            rows.append([cuda_col, str(d.index), f"ERROR: {d.error}", "", d.pci_bus_id or "", "", "", "", ""])
            continue
        rows.append(
            [
                cuda_col,
                str(d.index),
                _cut(d.name or "N/A", 28),
                (d.uuid or "N/A")[:12],
                d.pci_bus_id or "N/A",
                f"{_gib(d.memory_free)}/{_gib(d.memory_used)}/{_gib(d.memory_total)}",
                "N/A" if d.utilization_gpu is None else f"{d.utilization_gpu}%",
                "N/A" if d.temperature_c is None else f"{d.temperature_c}C",
                _link(d),
            ]
        )
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = [
        f"Driver {driver or 'N/A'}  CUDA {cuda or 'N/A'}  "
        f"CUDA_VISIBLE_DEVICES={'unset' if vis.raw is None else repr(vis.raw)}  order {vis.order}"
    ]
    lines.append("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip())
    for d, row in zip(devices, rows, strict=True):
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
        for inst in d.mig_instances:
            lines.append(
                f"      MIG {inst.index}: {inst.uuid or 'N/A'}  {format_size(inst.memory_used)} used of "
                f"{format_size(inst.memory_total)}"
            )
        for p in sorted(d.processes, key=lambda p: -(p.used_memory or 0)):
            who = p.user or "N/A"
            cmd = _cut(p.command or p.name or "N/A", 60)
            mem = "N/A" if p.used_memory is None else format_size(p.used_memory)
            lines.append(f"      pid {p.pid:<8} {who:<12} {mem:>10}  {cmd}")
    return "\n".join(lines)
