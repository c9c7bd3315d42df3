"""The `cudadoctor gpus` table: plain aligned text (no rich: this command must start fast).

It fits the terminal (80 columns when not a terminal): columns drop by priority and names shorten until
it does; --wide keeps every column whole. UUIDs show as the shortest prefix unique on this machine,
which CUDA_VISIBLE_DEVICES accepts as it is. Process command lines are masked for secrets.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from cudadoctor.facts.nvml import NvmlDevice
from cudadoctor.knowledge.secrets import mask_secrets
from cudadoctor.knowledge.units import format_size
from cudadoctor.knowledge.visibility import Visibility
from cudadoctor.locale import N_, _
from cudadoctor.render.printable import printable

GiB = 1 << 30


def unique_prefixes(uuids: list[str], shortest: int = 4) -> dict[str, str]:
    """Each UUID's shortest prefix (at least `shortest` hex digits after "GPU-") no other UUID shares."""
    out = {}
    # another UUID shares u[:n] exactly when their common prefix is n or longer, and in sorted order the
    # longest common prefix is with a neighbour: O(n log n), not every pair (128 GPUs took 20 ms)
    distinct = sorted(set(uuids))
    longest: dict[str, int] = {}
    for a, b in itertools.pairwise(distinct):
        common = _common_prefix(a, b)
        longest[a], longest[b] = max(longest.get(a, 0), common), max(longest.get(b, 0), common)
    for u in uuids:
        head = 4 if u.startswith(("GPU-", "MIG-")) else 0
        n = min(len(u), max(head + shortest, longest.get(u, -1) + 1))
        # never end on a dash: extend to the next hex digit
        while n < len(u) and u[n - 1] == "-":
            n += 1
        out[u] = u[:n]
    return out


def _common_prefix(a: str, b: str) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


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


def _width(text: str) -> int:
    # ASCII (nearly every cell and command line) is one column a character: no per-character lookup
    if text.isascii():
        return len(text)
    from cudadoctor.render.layout import display_width  # imports report.py: only when needed

    return display_width(text)


def _cut(text: str, width: int) -> str:
    width = max(1, width)
    if text.isascii():  # what cut() does, without measuring each character
        return text if len(text) <= width else text[: width - 1] + "…"
    from cudadoctor.render.layout import cut

    return cut(text, width)


def _pad(text: str, width: int, right: bool = False) -> str:
    if text.isascii():
        return text.rjust(width) if right else text.ljust(width)
    from cudadoctor.render.layout import pad

    return pad(text, width, right)


# (header, priority: higher stays longer, right-aligned); headers are shown translated
COLUMNS = [
    (N_("CUDA"), 9, False),
    (N_("NVML"), 8, False),
    (N_("NAME"), 7, False),
    (N_("FREE GiB"), 9, True),
    (N_("TOTAL"), 6, True),
    (N_("UTIL"), 6, True),
    (N_("UUID"), 5, False),
    (N_("HEALTH"), 5, False),
    (N_("TEMP"), 3, True),
    (N_("PCIE"), 2, False),
    (N_("BUS"), 1, False),
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
            "CUDA": str(ordinal[d.index]) if d.index in ordinal else _("hidden"),
            "NVML": str(d.index),
            "BUS": d.pci_bus_id or "N/A",
        }
        if d.error:
            row["NAME"] = _("ERROR: {error}").format(error=d.error)
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
                    "HEALTH": (flags(d) if flags else "") or _("ok"),
                }
            )
        rows.append({k: printable(v) for k, v in row.items()})  # what the driver said, never an escape
    columns = list(COLUMNS)

    # each column's natural width, measured once (the fitting loop below asks many times)
    natural = {h: max([_width(_(h))] + [_width(r.get(h, "")) for r in rows]) for h, _prio, _right in columns}

    def widths(cols: list[tuple[str, int, bool]], name_cap: int | None) -> list[int]:
        return [min(natural[h], name_cap) if h == "NAME" and name_cap else natural[h] for h, _prio, _right in cols]

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
    shown = _("unset") if vis.raw is None else repr(vis.raw)
    head = _("Driver {driver}  CUDA {cuda}  CUDA_VISIBLE_DEVICES={shown}  order {order}")
    first = head.format(driver=driver or "N/A", cuda=cuda or "N/A", shown=shown, order=vis.order)
    if not wide and _width(first) > width:  # a long CUDA_VISIBLE_DEVICES is cut; --wide and --json keep it
        room = max(8, _width(shown) - (_width(first) - width))
        first = head.format(driver=driver or "N/A", cuda=cuda or "N/A", shown=_cut(shown, room), order=vis.order)
    lines = [first]
    lines.append("  ".join(_pad(_(h), w, right) for (h, _prio, right), w in zip(columns, ws, strict=True)).rstrip())
    indent = "    "
    # one process usually holds memory on many GPUs: mask and scrub its command line once
    commands: dict[str | None, str] = {}
    users: dict[str | None, str] = {}
    sizes: dict[int | None, str] = {}
    for d, row in zip(devices, rows, strict=True):
        cells = [_cut(row.get(h, ""), w) for (h, _prio, _right), w in zip(columns, ws, strict=True)]
        lines.append(
            "  ".join(_pad(c, w, right) for c, (_h, _prio, right), w in zip(cells, columns, ws, strict=True)).rstrip()
        )
        for inst in d.mig_instances:
            used = _("{used} used of {total}").format(
                used=format_size(inst.memory_used), total=format_size(inst.memory_total)
            )
            text = f"{indent}MIG {inst.index}: {printable(scrub(inst.uuid or 'N/A'))}  {used}"
            lines.append(text if wide else _cut(text, width))
        for p in sorted(d.processes, key=lambda p: -(p.used_memory or 0)):
            who = users.get(p.user)
            if who is None:
                who = users[p.user] = printable(scrub(p.user or "N/A"))
            mem = sizes.get(p.used_memory)
            if mem is None:
                mem = sizes[p.used_memory] = format_size(p.used_memory)
            key = p.command or p.name
            cmd = commands.get(key)
            if cmd is None:
                # a command line may hold anything: a newline that fakes a row, a terminal escape
                cmd = commands[key] = printable(scrub(mask_secrets(key or "N/A")))
            text = f"{indent}pid {p.pid:<7} {who:<10} {mem:>10}  {cmd}"
            lines.append(text if wide else _cut(text, width))
    return "\n".join(lines)
