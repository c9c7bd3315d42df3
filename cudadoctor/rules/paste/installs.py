"""The install commands the paste's findings give: torch's own version and CUDA variant where the paste
shows them, else the build the driver runs (advice/install.py), else the oldest CUDA of the newest release.
"""

from __future__ import annotations

import dataclasses

from cudadoctor.advice.driver import driver_view
from cudadoctor.advice.install import advise
from cudadoctor.facts import CudaDriverFacts, Facts
from cudadoctor.knowledge import wheels
from cudadoctor.model import Fix, Message, msg
from cudadoctor.rules.catalogue import fix


def with_driver_cuda(f: Facts, found: int | None) -> Facts:
    if found is None or (f.driver and f.driver.cuda_driver_version):
        return f
    return dataclasses.replace(f, cuda_driver=CudaDriverFacts(library_found=True, init_result=0, driver_version=found))


def advice_fix(f: Facts, label: Message) -> list[Fix]:
    a = advise(f)
    out = []
    if a.commands:
        out.append(fix(msg("{label} ({note})", label=label, note=a.note), *a.commands))
    if a.driver_upgrade:
        out.append(
            fix(msg("Or upgrade the NVIDIA driver to {version} or newer", version=a.driver_upgrade), "nvidia-smi")
        )
    return out


def torch_install(f: Facts, force: bool = False) -> str:
    """The install line for the torch the paste shows: its version and CUDA variant when known."""
    t = f.torch
    version = (t.version or "").split("+")[0] if t is not None else ""
    # a release is always named: a bare `torch` is whatever the index serves newest when it is pasted
    pin = f"torch=={version}" if version else f"torch=={wheels.newest_release()}.0"
    flag = " --force-reinstall" if force else ""
    if t is not None and t.cuda:
        name = wheels.variant_name(t.cuda)
        if not version:  # the newest release built for the CUDA the paste shows
            release = next(
                (r for r in wheels.releases_newest_first() if name in {v.name for v in wheels.variants(r)}), None
            )
            pin = f"torch=={release}.0" if release else pin
        index = wheels.INDEX_URL.format(variant=name)
        return f"python -m pip install{flag} {pin} --index-url {index}"
    variant = _variant_for(f, wheels.release_of(version) if version else wheels.newest_release())
    if variant is None:  # a release the tables do not know: its default wheel, from PyPI
        return f"python -m pip install{flag} {pin}"
    return f"python -m pip install{flag} {pin} --index-url {variant.index_url}"


def _variant_for(f: Facts, release: str | None) -> wheels.Variant | None:
    """The build of `release` to install: the newest CUDA the driver runs (the newest when it is unknown
    or runs none of them); None when the tables do not know the release."""
    machine = f.system.machine if f.system is not None else None
    offered = wheels.variants(release or "", machine) or wheels.variants(release or "")
    if not offered:
        return None
    drv = driver_view(f)
    runnable = [v for v in offered if drv.runs(v.cuda)]
    return max(runnable or offered, key=lambda v: v.cuda)


def reinstall_torch(f: Facts) -> Fix:
    return fix(
        "Remove every nvidia-* wheel and reinstall torch from its index (pytorch#104259)",
        "python -m pip list 2>/dev/null | grep -i '^nvidia-'",
        "python -m pip uninstall -y $(python -m pip list 2>/dev/null | grep -o '^nvidia-[^ ]*') torch",
        torch_install(f),
    )


def _oldest_variant(need: tuple[int, int] = (0, 0)) -> wheels.Variant | None:
    """With the driver unknown, the build of the newest release with the oldest CUDA that has `need`:
    the one most drivers run (nvidia-smi's "CUDA Version" must be at least the wheel's)."""
    fitting = sorted((v for v in wheels.variants(wheels.newest_release()) if v.cuda >= need), key=lambda v: v.cuda)
    return fitting[0] if fitting else None


def cuda_build_install(f: Facts) -> str:
    """The install line for a CUDA build: the driver's best where it is known, else the oldest CUDA."""
    if f.driver is not None and f.driver.driver_version:
        return torch_install(dataclasses.replace(f, torch=None))
    v = _oldest_variant()
    # the release is named: a bare `torch` follows whatever the index serves next
    release = f"torch=={wheels.newest_release()}.0"
    return f"python -m pip install {release} --index-url {v.index_url}" if v else f"python -m pip install {release}"


def cuda_at_least(need: tuple[int, int]) -> list[Fix]:
    v = _oldest_variant(need)
    if v is None:
        return []
    return [
        fix(
            msg(
                "Install a torch built with CUDA {need} or newer ({variant}); nvidia-smi's CUDA Version must be at "
                "least the wheel's",
                need=f"{need[0]}.{need[1]}",
                variant=v.name,
            ),
            "nvidia-smi",
            f"python -m pip install torch=={wheels.newest_release()}.0 --index-url {v.index_url}",
        )
    ]
