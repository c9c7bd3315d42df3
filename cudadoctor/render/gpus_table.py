"""The `cudadoctor gpus` table: plain aligned text (no rich: this command must start fast).

It fits the terminal (80 columns when not a terminal): columns drop by priority and names shorten until
it does, but a column that shows a problem on some row (a hot GPU's TEMP, a HEALTH letter, a narrowed
PCIe link) is never the one dropped; --wide keeps every column whole. UUIDs show as the shortest prefix
unique on this machine, which CUDA_VISIBLE_DEVICES accepts as it is. Process command lines are masked for
secrets. The HEALTH letters shown are explained under the table.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable

from cudadoctor.facts.nvml import LOST_ERRORS, SICK_ERRORS, NvmlDevice
from cudadoctor.knowledge.gpu_health import FLAG_MEANINGS, HOT_C
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


def state(d: NvmlDevice) -> str:
    """The word the CUDA column shows for a GPU that cannot be used: lost, crashed, hung, error."""
    if d.error in LOST_ERRORS:
        return _("lost")
    if d.error == "CRASHED":
        return _("crashed")
    if d.error == "HUNG":
        return _("hung")
    return _("error")


def _sick_call(d: NvmlDevice) -> str | None:
    """ "in nvmlDeviceGetName" for a GPU whose query crashed or hung there (the CUDA column says which)."""
    m = re.search(r" in (nvml\w+)", d.failure or "") if d.error in SICK_ERRORS else None
    return _("in {call}").format(call=m.group(1)) if m else None


def _cuda_cell(d: NvmlDevice, ordinal: dict[int, int], sick: bool) -> str:
    if d.error:
        return state(d)
    if d.index not in ordinal:
        return _("hidden")  # CUDA_VISIBLE_DEVICES hides it
    # CUDA may or may not count a GPU whose NVML query crashed or hung: the numbers after it are unknown
    return "?" if sick else str(ordinal[d.index])


def _problems(devices: list[NvmlDevice], rows: list[dict[str, str]]) -> set[str]:
    """The columns that show a problem on some row: never dropped to fit the width."""
    out = set()
    if any(d.temperature_c is not None and d.temperature_c >= HOT_C for d in devices):
        out.add("TEMP")
    if any(d.pcie_width_current and d.pcie_width_max and d.pcie_width_current < d.pcie_width_max for d in devices):
        out.add("PCIE")  # fewer lanes than the slot has (a lower generation at idle only saves power)
    if any(r.get("HEALTH", "") not in ("", "?", _("ok")) for r in rows):
        out.add("HEALTH")
    if any(d.error for d in devices):
        out.add("NAME")
    return out


def _legend(letters: str, width: int) -> list[str]:
    """'HEALTH: E uncorrectable ECC errors since boot; X exclusive…', wrapped to the width."""
    parts = [f"{c} {_(FLAG_MEANINGS[c])}" for c in FLAG_MEANINGS if c in letters]
    if not parts:
        return []
    words = (_("HEALTH") + ": " + _("; ").join(parts)).split(" ")
    lines, line = [], ""
    for word in words:
        if line and _width(line) + 1 + _width(word) > width:
            lines.append(line)
            line = "  " + word
        else:
            line = f"{line} {word}" if line else word
    return [*lines, line]


def _identity(key: str, text: str) -> str:
    return text


def render(
    devices: list[NvmlDevice],
    vis: Visibility,
    driver: str | None,
    cuda: str | None,
    width: int = 80,
    wide: bool = False,
    flags: Callable[[NvmlDevice], str] | None = None,
    scrub: Callable[[str, str], str] = _identity,
) -> str:
    """scrub(field, text): render.redact's field_scrub under --redact (field: "uuid", "user", "command")."""
    ordinal = {s.device.index: s.ordinal for s in vis.selected if s.mig_uuid is None}
    sick = any(d.error in SICK_ERRORS for d in devices)
    prefixes = unique_prefixes([d.uuid for d in devices if d.uuid])
    rows: list[dict[str, str]] = []
    for d in devices:
        row = {"CUDA": _cuda_cell(d, ordinal, sick), "NVML": str(d.index), "BUS": d.pci_bus_id or "N/A"}
        if d.error:
            row["NAME"] = _sick_call(d) or _("ERROR: {error}").format(error=d.error)
            row["HEALTH"] = "L" if flags else ""
        else:
            row.update(
                {
                    "NAME": (d.name or "N/A") if wide else _short_name(d.name or "N/A"),
                    "UUID": scrub("uuid", d.uuid if wide else prefixes.get(d.uuid, "N/A")) if d.uuid else "N/A",
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
    problems = _problems(devices, rows)

    # each column's natural width, measured once (the fitting loop below asks many times)
    natural = {h: max([_width(_(h))] + [_width(r.get(h, "")) for r in rows]) for h, _prio, _right in columns}

    def widths(cols: list[tuple[str, int, bool]], name_cap: int | None) -> list[int]:
        return [min(natural[h], name_cap) if h == "NAME" and name_cap else natural[h] for h, _prio, _right in cols]

    name_cap = None
    # names shorten down to 20 columns, but what a sick or lost GPU's row says (its call) is not cut
    floor = max([20] + [_width(r["NAME"]) for d, r in zip(devices, rows, strict=True) if d.error])
    if not wide:
        while True:
            total = sum(widths(columns, name_cap)) + 2 * (len(columns) - 1)
            if total <= width:
                break
            current = widths(columns, None)[[c[0] for c in columns].index("NAME")]
            if (name_cap or current) > floor:  # first shorten the names
                name_cap = max(floor, (name_cap or current) - (total - width))
                continue
            # then drop the least important column, never one that shows a problem (unless all do)
            droppable = [c for c in columns if c[0] not in problems] or columns
            columns.remove(min(droppable, key=lambda c: c[1]))
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
    header_done = False
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
            text = f"{indent}MIG {inst.index}: {printable(scrub('uuid', inst.uuid or 'N/A'))}  {used}"
            lines.append(text if wide else _cut(text, width))
        for p in sorted(d.processes, key=lambda p: -(p.used_memory or 0)):
            if not header_done:  # once, above the first process row
                lines.append(_process_header(indent))
                header_done = True
            who = users.get(p.user)
            if who is None:
                who = users[p.user] = printable(scrub("user", p.user) if p.user else "N/A")
            mem = sizes.get(p.used_memory)
            if mem is None:
                mem = sizes[p.used_memory] = format_size(p.used_memory)
            key = p.command or p.name
            cmd = commands.get(key)
            if cmd is None:
                # a command line may hold anything: a newline that fakes a row, a terminal escape
                cmd = commands[key] = printable(scrub("command", mask_secrets(key or "N/A")))
            text = f"{indent}pid {p.pid:<7} {who:<10} {mem:>10}  {cmd}"
            lines.append(text if wide else _cut(text, width))
    if any(c[0] == "HEALTH" for c in columns):
        lines += _legend("".join(r.get("HEALTH", "") for r in rows), 10**6 if wide else width)
    if any(r.get("CUDA") == "?" for r in rows) and any(c[0] == "CUDA" for c in columns):
        note = _("CUDA ?: a GPU's NVML query crashed or hung, so which CUDA index each GPU has is unknown")
        lines += _wrap(note, 10**6 if wide else width)
    return "\n".join(lines)


def _wrap(text: str, width: int) -> list[str]:
    """`text` in lines of `width` display columns, the lines after the first indented by two."""
    lines, line = [], ""
    for word in text.split(" "):
        if line and _width(line) + 1 + _width(word) > width:
            lines.append(line)
            line = "  " + word
        else:
            line = f"{line} {word}" if line else word
    return [*lines, line] if line else lines


def _process_header(indent: str) -> str:
    """Above the process rows: `pid 1234567 alice      40.0 GiB  python train.py`."""
    process, user, memory, command = _("PROCESS"), _("USER"), _("GPU MEMORY"), _("COMMAND")
    return indent + " ".join([_pad(process, 11), _pad(user, 10), _pad(memory, 10, right=True)]) + "  " + command
