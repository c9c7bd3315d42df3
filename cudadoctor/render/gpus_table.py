"""The `cudadoctor gpus` table: plain aligned text (no rich: this command must start fast).

It fits the terminal (80 columns when not a terminal): columns drop by priority and names shorten until
it does; --wide keeps every column whole. UUIDs show as the shortest prefix unique on this machine,
which CUDA_VISIBLE_DEVICES accepts as it is. Process command lines are masked for secrets.
"""

from __future__ import annotations

from collections.abc import Callable

from cudadoctor.facts.nvml import NvmlDevice
from cudadoctor.knowledge.secrets import mask_secrets
from cudadoctor.knowledge.units import format_size
from cudadoctor.knowledge.visibility import Visibility
from cudadoctor.render.layout import cut, display_width, pad

GiB = 1 << 30


def unique_prefixes(uuids: list[str], shortest: int = 4) -> dict[str, str]:
    """Each UUID's shortest prefix (at least `shortest` hex digits after "GPU-") no other UUID shares."""
    out = {}
    for u in uuids:
        head = 4 if u.startswith(("GPU-", "MIG-")) else 0
        n = head + shortest
        while n < len(u) and any(o != u and o.startswith(u[:n]) for o in uuids):
            n += 1
        # never end on a dash: extend to the next hex digit
        while n < len(u) and u[n - 1] == "-":
            n += 1
        out[u] = u[:n]
    return out


def _gib(n: int | None) -> str:
    return "N/A" if n is None else f"{n / GiB:.1f}"


def _link(d: NvmlDevice) -> str:
    if d.pcie_gen_current is None and d.pcie_width_current is None:
        return "N/A"
    cur = f"Gen{d.pcie_gen_current or '?'}x{d.pcie_width_current or '?'}"
    top = f"Gen{d.pcie_gen_max or '?'}x{d.pcie_width_max or '?'}"
    return cur if cur == top else f"{cur}/{top}"


def _short_name(name: str) -> str:
    return name.replace("NVIDIA ", "").replace("GeForce ", "")


def _cut(text: str, width: int) -> str:
    return cut(text, max(1, width))


# (header, priority: higher stays longer, right-aligned)
COLUMNS = [
    ("CUDA", 9, False),
    ("NVML", 8, False),
    ("NAME", 7, False),
    ("FREE GiB", 9, True),
    ("TOTAL", 6, True),
    ("UTIL", 6, True),
    ("UUID", 5, False),
    ("HEALTH", 5, False),
    ("TEMP", 3, True),
    ("PCIE", 2, False),
    ("BUS", 1, False),
]


def render(
    devices: list[NvmlDevice],
    vis: Visibility,
    driver: str | None,
    cuda: str | None,
    width: int = 80,
    wide: bool = False,
    flags: Callable[[NvmlDevice], str] | None = None,
    scrub: Callable[[str], str] = lambda s: s,
) -> str:
    ordinal = {s.device.index: s.ordinal for s in vis.selected if s.mig_uuid is None}
    prefixes = unique_prefixes([d.uuid for d in devices if d.uuid])
    rows: list[dict[str, str]] = []
    for d in devices:
        row = {
            "CUDA": str(ordinal[d.index]) if d.index in ordinal else "hidden",
            "NVML": str(d.index),
            "BUS": d.pci_bus_id or "N/A",
        }
        if d.error:
            row["NAME"] = f"ERROR: {d.error}"
        else:
            row.update(
                {
                    "NAME": (d.name or "N/A") if wide else _short_name(d.name or "N/A"),
                    "UUID": scrub(d.uuid if wide else prefixes.get(d.uuid, "N/A")) if d.uuid else "N/A",
                    "FREE GiB": _gib(d.memory_free),
                    "TOTAL": _gib(d.memory_total),
                    "UTIL": "N/A" if d.utilization_gpu is None else f"{d.utilization_gpu}%",
                    "TEMP": "N/A" if d.temperature_c is None else f"{d.temperature_c}C",
                    "PCIE": _link(d),
                    "HEALTH": (flags(d) if flags else "") or "ok",
                }
            )
        rows.append(row)
    columns = list(COLUMNS)

    def widths(cols: list[tuple[str, int, bool]], name_cap: int | None) -> list[int]:
        out = []
        for h, _, _ in cols:
            w = max([display_width(h)] + [display_width(r.get(h, "")) for r in rows])
            out.append(min(w, name_cap) if h == "NAME" and name_cap else w)
        return out

    name_cap = None
    if not wide:
        while True:
            total = sum(widths(columns, name_cap)) + 2 * (len(columns) - 1)
            if total <= width:
                break
            current = widths(columns, None)[[c[0] for c in columns].index("NAME")]
            if (name_cap or current) > 20:  # first shorten the names, down to 20 columns
                name_cap = max(20, (name_cap or current) - (total - width))
                continue
            columns.remove(min(columns, key=lambda c: c[1]))  # then drop the least important column
    ws = widths(columns, name_cap)
    shown = "unset" if vis.raw is None else repr(vis.raw)
    lines = [f"Driver {driver or 'N/A'}  CUDA {cuda or 'N/A'}  CUDA_VISIBLE_DEVICES={shown}  order {vis.order}"]
    lines.append("  ".join(pad(h, w, right) for (h, _, right), w in zip(columns, ws, strict=True)).rstrip())
    indent = "    "
    for d, row in zip(devices, rows, strict=True):
        cells = [_cut(row.get(h, ""), w) for (h, _, _), w in zip(columns, ws, strict=True)]
        lines.append(
            "  ".join(pad(c, w, right) for c, (_, _, right), w in zip(cells, columns, ws, strict=True)).rstrip()
        )
        for inst in d.mig_instances:
            text = (
                f"{indent}MIG {inst.index}: {scrub(inst.uuid or 'N/A')}  {format_size(inst.memory_used)} used of "
                f"{format_size(inst.memory_total)}"
            )
            lines.append(text if wide else _cut(text, width))
        for p in sorted(d.processes, key=lambda p: -(p.used_memory or 0)):
            who = scrub(p.user or "N/A")
            mem = "N/A" if p.used_memory is None else format_size(p.used_memory)
            cmd = scrub(mask_secrets(p.command or p.name or "N/A"))
            text = f"{indent}pid {p.pid:<7} {who:<10} {mem:>10}  {cmd}"
            lines.append(text if wide else _cut(text, width))
    return "\n".join(lines)
