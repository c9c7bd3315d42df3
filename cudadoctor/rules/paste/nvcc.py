"""nvcc's own "Unsupported gpu architecture 'compute_86'" while an extension builds: the toolkit is older than
that architecture, or newer than the last CUDA that compiled for it (knowledge/architectures.py FIRST_CUDA and
LAST_CUDA). Either way the extension gets no kernels for such a GPU (CD240). Which of the two is said only
where the paste settles it: the nvcc version shown, or an architecture no CUDA has dropped yet.
"""

from __future__ import annotations

from cudadoctor.facts import Facts
from cudadoctor.facts.paste import PasteHit
from cudadoctor.knowledge.architectures import FIRST_CUDA, INTEGRATED, LAST_CUDA
from cudadoctor.knowledge.versions import parse_version
from cudadoctor.model import Finding, Fix, Message, msg
from cudadoctor.rules.catalogue import fix

_REBUILD = "python -m pip install --no-build-isolation -e ."
# the GPU's own capability, as torch reads it: the architecture list of a build for the GPUs at hand
_OWN_ARCH = (
    'export TORCH_CUDA_ARCH_LIST="$(python -c "import torch; '
    "print('.'.join(map(str, torch.cuda.get_device_capability())))\")\""
)


def _cc(arch: str) -> tuple[int, int] | None:
    """ "compute_86" -> (8, 6); "compute_120" -> (12, 0)."""
    digits = arch.removeprefix("compute_")
    return (int(digits[:-1]), int(digits[-1])) if digits.isdigit() and len(digits) >= 2 else None


def _v(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"


def nvcc_arch_error(f: Facts, h: PasteHit) -> Finding:
    """CD240 from nvcc's error: too old (a newer CUDA, or a lower minor of the same major whose cubins run on
    the GPU: open-mmlab/OpenPCDet#591), too new (the architecture was dropped: leave it out of the list), or,
    where the paste does not tell which, both named and `nvcc -V` to settle it."""
    from cudadoctor.rules.extensions import NO_KERNELS

    arch = h.detail.get("arch", "")
    cc = _cc(arch)
    first = FIRST_CUDA.get(cc) if cc else None
    last = LAST_CUDA.get(cc) if cc else None
    parsed = parse_version(f.toolkit.nvcc_version) if f.toolkit is not None and f.toolkit.nvcc_version else None
    have = (parsed[0], parsed[1]) if parsed and len(parsed) >= 2 else None
    windows = f.system is not None and f.system.os == "Windows"
    cmake = h.detail.get("builder") == "cmake"  # CMake's own architecture settings, not torch's variable
    if cc is None or (first is None and last is None):
        return NO_KERNELS.finding(title=msg("This nvcc cannot compile for {arch}", arch=arch))
    if last is not None and ((have is not None and have > last) or first is None):
        return _dropped(arch, last, have, windows or cmake)
    assert first is not None
    if have is not None and have >= first:
        # neither too old nor past the last: nvcc refuses it for another reason (a typo'd list); say what it said
        return NO_KERNELS.finding(
            title=msg("nvcc (CUDA {have}) refused {arch}", have=_v(have), arch=arch), fix=[fix("See it", "nvcc -V")]
        )
    if last is not None and have is None:  # dropped later too: the paste does not show which toolkit it was
        return NO_KERNELS.finding(
            title=msg(
                "This nvcc cannot compile for {arch}: only CUDA {first} to {last} can (nvcc -V shows which it is)",
                arch=arch,
                first=_v(first),
                last=_v(last),
            ),
            why=_why(arch, cc, first, last),
            fix=[
                fix(
                    msg(
                        "See which toolkit builds it: before CUDA {first} too old, after {last} too new for {arch}",
                        first=_v(first),
                        last=_v(last),
                        arch=arch,
                    ),
                    "nvcc -V",
                )
            ],
        )
    fixes = [
        fix(
            msg(
                "Build with CUDA {need} or newer: its nvcc first on PATH, and a torch built for that CUDA's major",
                need=_v(first),
            ),
            "nvcc -V",
            'python -c "import torch; print(torch.version.cuda)"',
        )
    ]
    lower = _lower_minor(cc, have)
    if lower is not None and not cmake:
        fixes.append(_lower_fix(lower, cc, windows))
    return NO_KERNELS.finding(
        title=msg(
            "The nvcc that builds the extension cannot compile for {arch}: it is older than CUDA {need}",
            arch=arch,
            need=_v(first),
        ),
        why=_why(arch, cc, first, last),
        fix=fixes,
    )


def _lower_minor(cc: tuple[int, int], have: tuple[int, int] | None) -> tuple[int, int] | None:
    """The highest lower minor of the same major, of a discrete GPU, that this nvcc (where known) compiles for."""
    fits = [
        k
        for k, since in FIRST_CUDA.items()
        if k[0] == cc[0] and k[1] < cc[1] and k not in INTEGRATED and (have is None or have >= since)
    ]
    return max(fits, default=None)


def _lower_fix(lower: tuple[int, int], cc: tuple[int, int], windows: bool) -> Fix:
    low = _v(lower)
    env = f'$env:TORCH_CUDA_ARCH_LIST="{low}"' if windows else f'export TORCH_CUDA_ARCH_LIST="{low}"'
    return fix(
        msg(
            "Or, where nvcc -V says CUDA {since} or newer, build for {low}: its cubins run on {cc} GPUs",
            since=_v(FIRST_CUDA[lower]),
            low=low,
            cc=_v(cc),
        ),
        "nvcc -V",
        env,
        _REBUILD,
        lang="powershell" if windows else "",
    )


def _dropped(arch: str, last: tuple[int, int], have: tuple[int, int] | None, no_own_arch: bool) -> Finding:
    from cudadoctor.rules.extensions import NO_KERNELS

    fixes = [
        fix(
            msg("Build only for the GPUs here; a GPU of {arch} needs CUDA {last} or older", arch=arch, last=_v(last)),
            "nvidia-smi --query-gpu=name,compute_cap --format=csv",
            *([] if no_own_arch else [_OWN_ARCH, _REBUILD]),
        )
    ]
    title = (
        msg(
            "This nvcc (CUDA {have}) no longer compiles for {arch}: CUDA {last} was the last that did",
            have=_v(have),
            arch=arch,
            last=_v(last),
        )
        if have is not None
        else msg("No CUDA after {last} compiles for {arch}: this nvcc is newer", arch=arch, last=_v(last))
    )
    return NO_KERNELS.finding(
        title=title,
        why=msg(
            "nvcc stops the build: newer toolkits no longer compile for {arch}. A build that lists it fails; one "
            "for the GPUs at hand builds.",
            arch=arch,
        ),
        fix=fixes,
    )


def _why(arch: str, cc: tuple[int, int], first: tuple[int, int], last: tuple[int, int] | None) -> Message:
    return msg(
        "nvcc stops the build: it does not know {arch} (CUDA compiles for {cc} from {need} on{until}). An "
        "extension built without it has no kernels for such a GPU; a cubin of a lower minor of the same major "
        "runs on it, a cubin of another major does not.",
        arch=arch,
        cc=_v(cc),
        need=_v(first),
        until=msg(" to {last}", last=_v(last)) if last is not None else "",
    )
