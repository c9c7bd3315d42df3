"""`cudadoctor gpus`: ordering, picking the N best GPUs, and the shell line that selects them (pure)."""

from __future__ import annotations

from dataclasses import dataclass

from cudadoctor.facts.nvml import NvmlDevice
from cudadoctor.locale import N_

SORT_KEYS = ("index", "free", "used", "util", "temp")
SHELLS = ("sh", "fish", "powershell", "cmd")


def _num(v: int | None, missing: float) -> float:
    return missing if v is None else float(v)


def sort_devices(devices: list[NvmlDevice], key: str, reverse: bool = False) -> list[NvmlDevice]:
    """index ascending; free, used, util and temp largest first. Ties keep NVML order. Unknown values
    (a lost GPU, an unsupported query) go last."""
    if key == "index":
        ordered = sorted(devices, key=lambda d: d.index)
    else:
        field = {"free": "memory_free", "used": "memory_used", "util": "utilization_gpu", "temp": "temperature_c"}[key]
        ordered = sorted(devices, key=lambda d: (-_num(getattr(d, field), float("-inf")), d.index))
    return list(reversed(ordered)) if reverse else ordered


@dataclass
class Pick:
    chosen: list[NvmlDevice]
    candidates: int  # how many qualified
    rejected: dict[int, str]  # NVML index -> why not


def pick(
    devices: list[NvmlDevice],
    n: int,
    min_free: int | None = None,
    max_util: int | None = None,
    min_cc: str | None = None,
) -> Pick:
    """The n GPUs with the most free memory (then the least busy) that meet the constraints."""
    from cudadoctor.knowledge.architectures import parse_cc

    rejected: dict[int, str] = {}
    ok: list[NvmlDevice] = []
    need_cc = parse_cc(min_cc)
    for d in devices:
        if d.error:
            rejected[d.index] = d.error
        elif d.mig_enabled:
            rejected[d.index] = N_("MIG mode (select one instance by its MIG- UUID)")
        elif not d.uuid:
            rejected[d.index] = N_("no UUID")
        elif min_free is not None and (d.memory_free is None or d.memory_free < min_free):
            rejected[d.index] = N_("too little free memory")
        elif max_util is not None and (d.utilization_gpu is None or d.utilization_gpu > max_util):
            rejected[d.index] = N_("too busy")
        elif need_cc is not None and ((cc := parse_cc(d.compute_capability)) is None or cc < need_cc):
            rejected[d.index] = f"compute capability {d.compute_capability or 'unknown'} below {min_cc}"
        else:
            ok.append(d)
    ok.sort(key=lambda d: (-_num(d.memory_free, -1), _num(d.utilization_gpu, 101), d.index))
    return Pick(chosen=ok[:n] if len(ok) >= n else [], candidates=len(ok), rejected=rejected)


def export_lines(chosen: list[NvmlDevice], by: str = "uuid", shell: str = "sh") -> list[str]:
    """The lines that select these GPUs. UUIDs survive any device order; indices need PCI_BUS_ID order,
    since NVML indices are PCI order and CUDA's default is FASTEST_FIRST."""
    value = ",".join(d.uuid if by == "uuid" else str(d.index) for d in chosen)  # type: ignore[misc]
    env = [("CUDA_DEVICE_ORDER", "PCI_BUS_ID")] if by == "index" else []
    env.append(("CUDA_VISIBLE_DEVICES", value))
    if shell == "fish":
        return [f"set -gx {k} {v}" for k, v in env]
    if shell == "powershell":
        return [f'$env:{k}="{v}"' for k, v in env]
    if shell == "cmd":
        return [f"set {k}={v}" for k, v in env]
    return ["export " + " ".join(f"{k}={v}" for k, v in env)]
