"""`nvidia-smi` output: the banner table (old narrow and current wide layouts, Linux and Windows
WDDM/TCC), `-L`, `-q`, `--query-gpu=… --format=csv` and `topo -m`.

Any of these printed means NVML initialised: nvidia-smi is NVML's own client. The "CUDA Version" in
the banner is the newest CUDA the driver supports (nvmlSystemGetCudaDriverVersion), not a toolkit.
Every GPU is listed whatever CUDA_VISIBLE_DEVICES says. Names longer than the banner's column end in
"..." and are kept only as far as they are shown.
"""

from __future__ import annotations

import re

from cudadoctor.backends.paste.model import Gpu, Partial
from cudadoctor.backends.paste.text import cuda_str_to_int, joined, where

_BANNER = re.compile(r"NVIDIA-SMI\s+(\S+)\s+Driver Version:\s*(\S+)\s+CUDA Version:\s*(\d+\.\d+|N/A)", re.I)
_BANNER_NO_CUDA = re.compile(r"NVIDIA-SMI\s+(\d\S*)\s+Driver Version:\s*(\d\S*)")
_ROW = re.compile(
    r"^\|\s*(\d+)\s+(.+?)\s+(On|Off|WDDM|TCC|N/A)\s*\|\s*([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])"
)
_MEM = re.compile(r"(\d+)\s*MiB\s*/\s*(\d+)\s*MiB")
_LIST = re.compile(r"^\s*GPU (\d+): (.+?) \(UUID: (GPU-[0-9A-Fa-f-]+)\)")
_Q_KV = re.compile(r"^(\s*)([A-Za-z][A-Za-z0-9 ./()-]*?)\s+:\s*(.*)$")
_Q_GPU = re.compile(r"^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s*$")
_TOPO_HEAD = re.compile(r"^\s*(GPU\d+)(\s+(GPU\d+|NIC\d+|mlx\S+))*\s+CPU Affinity")
_TOPO_ROW = re.compile(r"^(GPU\d+)\s+(.*)$")


def detect(all_lines: list[str]) -> bool:
    for line in all_lines:
        if (
            "NVIDIA-SMI" in line
            or _BANNER_NO_CUDA.search(line)
            or _LIST.match(line)
            or "NVSMI LOG" in line
            or _TOPO_HEAD.match(line)
            or _csv_header(line)
        ):
            return True
    return False


def _csv_header(line: str) -> list[str] | None:
    head = line.lstrip()[:1]
    if not head.islower() or "," not in line or len(line) > 600:
        return None
    cols = [c.strip() for c in line.split(",")]
    if len(cols) >= 2 and all(re.fullmatch(r"[a-z_.]+(?: \[[A-Za-z%]+\])?", c) for c in cols):
        if {"name", "compute_cap", "driver_version", "index", "uuid", "pci.bus_id"} & {c.split(" ")[0] for c in cols}:
            return [c.split(" ")[0] for c in cols]
    return None


def parse(all_lines: list[str]) -> Partial:
    p = Partial("nvidia-smi")
    shapes: list[str] = []
    banner_gpus: list[Gpu] = []
    list_gpus: list[Gpu] = []
    q_gpus: list[Gpu] = []
    topo: list[str] = []
    i = 0
    while i < len(all_lines):
        line = all_lines[i]
        w = where(i, line)
        m = _BANNER.search(line) or _BANNER_NO_CUDA.search(line)
        if m:
            shapes.append("banner")
            p.set("driver_version", m.group(2), w)
            p.set("nvml_status", "ok", w)
            if m.re is _BANNER and m.group(3) != "N/A":
                p.set("driver_cuda", cuda_str_to_int(m.group(3)), w)
            if re.fullmatch(r"\d+\.\d+\.\d+", m.group(1)) and re.fullmatch(r"\d+\.\d+", m.group(2)):
                # a Linux nvidia-smi (3-part version) talking to a Windows driver (2-part): WSL2
                p.set("wsl", True, w)
                p.set("os", "Linux", w)
        elif (row := _ROW.match(line)) is not None:
            name = row.group(2).strip()
            gpu = Gpu(index=int(row.group(1)), name=name, bus_id=row.group(4))
            if row.group(3) in ("WDDM", "TCC"):
                p.set("os", "Windows", w)
            for nxt in all_lines[i + 1 : i + 3]:
                mm = _MEM.search(nxt)
                if mm:
                    gpu.memory_used, gpu.memory_total = int(mm.group(1)) << 20, int(mm.group(2)) << 20
                    break
            mig = re.search(r"\|\s*(Enabled|Disabled)\s*\|?\s*$", all_lines[i + 2]) if i + 2 < len(all_lines) else None
            if mig:
                gpu.mig = mig.group(1) == "Enabled"
            banner_gpus.append(gpu)
        elif (lm := _LIST.match(line)) is not None:
            shapes.append("-L")
            list_gpus.append(Gpu(index=int(lm.group(1)), name=lm.group(2).strip(), uuid=lm.group(3)))
            p.set("nvml_status", "ok", w)
        elif "NVSMI LOG" in line:
            shapes.append("-q")
            i = _query(p, all_lines, i + 1, q_gpus)
            continue
        elif _TOPO_HEAD.match(line):
            shapes.append("topo -m")
            j = i + 1
            while j < len(all_lines) and (tm := _TOPO_ROW.match(all_lines[j])):
                topo.append(tm.group(1))
                j += 1
            if topo:
                p.set("gpu_count", len(topo), w)
                p.set("nvml_status", "ok", w)
            i = j
            continue
        elif (cols := _csv_header(line)) is not None:
            shapes.append("--query-gpu")
            i = _csv(p, all_lines, i, cols, list_gpus)
            continue
        elif re.match(r"^\s*No devices were found\s*$", line):
            p.set("gpu_count", 0, w)
            p.set("nvml_status", "ok", w)
        i += 1
    if "banner" not in shapes and (m := _BANNER.search(joined(all_lines))) is not None:
        # a banner a narrow window or a mail client wrapped
        shapes.append("banner")
        p.set("driver_version", m.group(2), "the nvidia-smi header")
        p.set("nvml_status", "ok", "the nvidia-smi header")
        p.set("driver_cuda", cuda_str_to_int(m.group(3)), "the nvidia-smi header")
    # the same output pasted twice (or `watch nvidia-smi`): one GPU per index, the first seen
    banner_gpus, list_gpus, q_gpus = (_first_per_index(g) for g in (banner_gpus, list_gpus, q_gpus))
    gpus = _combine(q_gpus or list_gpus or banner_gpus, [list_gpus, banner_gpus, q_gpus])
    if gpus:
        p.gpus = gpus
        p.set("gpu_count", len(gpus), "nvidia-smi GPU list")
        p.set("nvml_status", "ok", "nvidia-smi GPU list")
    if shapes:
        p.format = (
            "nvidia-smi " + ", ".join(dict.fromkeys(s for s in shapes if s != "banner"))
            if (set(shapes) - {"banner"})
            else "nvidia-smi"
        )
    return p


def _first_per_index(gpus: list[Gpu]) -> list[Gpu]:
    seen: dict[int | None, Gpu] = {}
    for g in gpus:
        seen.setdefault(g.index, g)
    return list(seen.values())


def _combine(base: list[Gpu], others: list[list[Gpu]]) -> list[Gpu]:
    """One GPU per index: the fullest name (the banner truncates), memory from the banner."""
    out = []
    for g in base:
        for group in others:
            for o in group:
                if o.index != g.index:
                    continue
                if o.name and (not g.name or g.name.endswith("...")) and not o.name.endswith("..."):
                    g.name = o.name
                g.uuid = g.uuid or o.uuid
                g.bus_id = g.bus_id or o.bus_id
                g.memory_total = g.memory_total or o.memory_total
                g.memory_used = g.memory_used if g.memory_used is not None else o.memory_used
                g.mig = g.mig if g.mig is not None else o.mig
        out.append(g)
    return out


def _query(p: Partial, all_lines: list[str], i: int, gpus: list[Gpu]) -> int:
    """`nvidia-smi -q`: global keys, then one block per GPU ("GPU 00000000:07:00.0")."""
    current: Gpu | None = None
    parent = ""
    while i < len(all_lines):
        line = all_lines[i]
        w = where(i, line)
        if "NVSMI LOG" in line:
            break
        gm = _Q_GPU.match(line.strip()) if not line.startswith(" " * 8) else None
        if gm:
            current = Gpu(index=len(gpus), bus_id=gm.group(1))
            gpus.append(current)
            i += 1
            continue
        m = _Q_KV.match(line)
        if m:
            indent, key, value = len(m.group(1)), m.group(2).strip(), m.group(3).strip()
            if key == "Driver Version":
                p.set("driver_version", value, w)
                p.set("nvml_status", "ok", w)
            elif key == "CUDA Version":
                p.set("driver_cuda", cuda_str_to_int(value), w)
            elif key == "Attached GPUs" and value.isdigit():
                p.set("gpu_count", int(value), w)
            elif current is not None:
                if key == "Product Name":
                    current.name = value
                elif key == "GPU UUID":
                    current.uuid = value
                elif key == "Total" and parent == "FB Memory Usage":
                    mm = re.match(r"(\d+)\s*MiB", value)
                    current.memory_total = int(mm.group(1)) << 20 if mm else None
                elif key == "Used" and parent == "FB Memory Usage":
                    mm = re.match(r"(\d+)\s*MiB", value)
                    current.memory_used = int(mm.group(1)) << 20 if mm else None
                elif key == "Current" and parent == "MIG Mode":
                    current.mig = value.lower() == "enabled"
            del indent
        elif line.strip() and not line.strip().startswith("="):
            parent = line.strip()
        i += 1
    return i


def _csv(p: Partial, all_lines: list[str], i: int, cols: list[str], gpus: list[Gpu]) -> int:
    j = i + 1
    while j < len(all_lines):
        values = [v.strip() for v in all_lines[j].split(",")]
        if len(values) != len(cols):
            break
        row = dict(zip(cols, values, strict=True))
        w = where(j, all_lines[j])
        gpu = Gpu(index=int(row["index"]) if row.get("index", "").isdigit() else len(gpus), name=row.get("name"))
        gpu.uuid = row.get("uuid")
        gpu.bus_id = row.get("pci.bus_id")
        cc = row.get("compute_cap")
        if cc and re.fullmatch(r"\d+\.\d+", cc):
            gpu.capability = cc
        mt = re.match(r"(\d+)", row.get("memory.total", ""))
        if mt:
            gpu.memory_total = int(mt.group(1)) << 20
        if row.get("driver_version"):
            p.set("driver_version", row["driver_version"], w)
        p.set("nvml_status", "ok", w)
        gpus.append(gpu)
        j += 1
    return j
