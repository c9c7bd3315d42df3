"""The GPUs in the install advice: their names and compute capabilities, and in words which builds have
kernels for each ("only cu128 builds and newer have kernels for it")."""

from __future__ import annotations

from cudadoctor.facts import Facts
from cudadoctor.knowledge import wheels
from cudadoctor.knowledge.architectures import arch_name, parse_cc
from cudadoctor.model import Message, msg


def gpu_capabilities(f: Facts) -> list[tuple[str, str]]:
    """(name, capability) of each GPU NVML reports; torch's own list when NVML has none."""
    if f.driver is not None and f.driver.devices:
        return [(d.name or f"GPU {d.index}", d.compute_capability) for d in f.driver.devices if d.compute_capability]
    if f.torch is not None:
        return [(d.name or f"GPU {d.index}", d.capability) for d in f.torch.devices if d.capability]
    return []


# arch_name's words for a capability it has no name for (prose, so translated; names stay verbatim)
_ARCH_WORDS = {
    "unknown architecture": msg("unknown architecture"),
    "a newer architecture": msg("a newer architecture"),
    "an unknown architecture": msg("an unknown architecture"),
}


def arch_reason(
    name: str,
    cc: str,
    machine: str | None = None,
    always: bool = False,
    release: str | None = None,
    last: bool = True,
) -> Message | None:
    """Why a GPU needs some builds: "NVIDIA GeForce RTX 5090 is Blackwell, sm_120: only cu128 builds and
    newer have kernels for it". None when every current build has kernels for it (unless `always`).
    `release`: the torch release a fix installs, which the sentence is then about (not the newest). `last`:
    False leaves out which release last had kernels (a sentence after it names it)."""
    parsed = parse_cc(cc)
    if parsed is None:
        return None
    arch = arch_name(cc)
    head = dict(gpu=name, arch=_ARCH_WORDS.get(arch, arch), sm=f"{parsed[0]}{parsed[1]}")
    releases = wheels.releases_newest_first()
    covering = {
        r: [v.name for v in wheels.variants(r, machine) if wheels.coverage(v.arch_flags, cc) == "sm"] for r in releases
    }
    known = [r for r in releases if len(wheels.variants(r, machine)) > 1] or releases  # full rows only
    current = release if release in covering else known[0]
    if not any(covering.values()):
        return msg("{gpu} is {arch}, sm_{sm}: no PyTorch build in cudadoctor's tables has kernels for it", **head)
    if not covering[current] and current == release:  # it runs through PTX JIT only: the advice says so
        return msg("{gpu} is {arch}, sm_{sm}: no torch {release} build has kernels for it", **head, release=release)
    if not covering[current]:
        if not last:
            return msg("{gpu} is {arch}, sm_{sm}: no current release has kernels for it", **head)
        newest = next(r for r in releases if covering[r])
        return msg(
            "{gpu} is {arch}, sm_{sm}: no current release has kernels for it; the last that does is torch "
            "{release} ({names})",
            **head,
            release=newest,
            names=", ".join(covering[newest]),
        )
    all_names = [v.name for v in wheels.variants(current, machine)]
    if covering[current] == all_names:
        if always:
            return msg(
                "{gpu} is {arch}, sm_{sm}: every torch {release} build has kernels for it", **head, release=current
            )
        return None
    have = sorted({n for r in releases for n in covering[r]}, key=wheels.variant_cuda)
    lacking = {v.name for r in releases for v in wheels.variants(r, machine)} - set(have)
    if all(wheels.variant_cuda(n) < wheels.variant_cuda(have[0]) for n in lacking):
        return msg(
            "{gpu} is {arch}, sm_{sm}: only {variant} builds and newer have kernels for it", **head, variant=have[0]
        )
    return msg(
        "{gpu} is {arch}, sm_{sm}: of torch {release}'s builds only {names} have kernels for it",
        **head,
        release=current,
        names=", ".join(covering[current]),
    )


def gpu_reasons(f: Facts, release: str | None = None) -> list[Message]:
    machine = f.system.machine if f.system else None
    seen, out = set(), []
    for name, cc in gpu_capabilities(f):
        if (name, cc) in seen:
            continue
        seen.add((name, cc))
        if why := arch_reason(name, cc, machine, always=True, release=release):
            out.append(why)
    return out
