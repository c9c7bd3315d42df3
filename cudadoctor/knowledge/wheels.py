"""PyTorch wheel variants: which CUDA builds each release offers and which GPUs each build targets.

Sources (shared cuda-facts §4):
- Release matrix: pytorch RELEASE.md ("Release Compatibility Matrix"), a late-2026 copy including 2.14.
  https://github.com/pytorch/pytorch/blob/main/RELEASE.md
- Arch lists: pytorch .ci/manywheel/build_cuda.sh (TORCH_CUDA_ARCH_LIST per CUDA version) at several
  commits, and pytorch/builder manywheel/build_cuda.sh for 2.0. cu128 in 2.7 is an observed
  get_arch_list(); rows marked "assumed" reuse the nearest documented list for the same CUDA version.
- PyPI default (Linux x86_64): the Requires-Dist of the wheels (pip install --dry-run --report).
  On Windows the PyPI torch wheel is CPU-only; on macOS it is CPU + MPS.
- Release matrices decided in pytorch's RFCs (research/leads28.md has the quotes):
  2.11: Volta left cu128 (RFC pytorch#172352, PR pytorch#172598 "Remove 7.0 from TORCH_CUDA_ARCH_LIST",
  dev-discuss "Dropping Volta support from CUDA-12.8 binaries for release 2.11"); 2.12 removed cu128
  (RFC pytorch#178665); 2.14 ships cu126, cu130, cu132 and not cu134 (RFC pytorch#190355, PR
  pytorch#194374); 2.15 removes cu126, the last build with Maxwell, Pascal and Volta kernels (RFC
  pytorch#190385, test-infra PR#8739, PR pytorch#196249) and keeps cu130 beside the cu132 default
  (RFC pytorch#190385; the cu130 arch list is assumed the same as 2.14's).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cudadoctor.knowledge.architectures import parse_cc
from cudadoctor.model import Message, msg

INDEX_URL = "https://download.pytorch.org/whl/{variant}"

_CU117_20 = "3.7 5.0 6.0 7.0 7.5 8.0 8.6"
_CU118 = "3.7 5.0 6.0 7.0 7.5 8.0 8.6 9.0"
_CU121 = "5.0 6.0 7.0 7.5 8.0 8.6 9.0"
_CU124_126_OLD = "5.0 6.0 7.0 7.5 8.0 8.6 9.0+PTX"
_CU126 = "5.0 6.0 7.0 7.5 8.0 8.6 9.0"
_CU128_27 = "7.5 8.0 8.6 9.0 10.0 12.0+PTX"
_CU128 = "7.0 7.5 8.0 8.6 9.0 10.0 12.0"
# 2.11: "Remove 7.0 from TORCH_CUDA_ARCH_LIST" of the 12.8 build (pytorch PR#172598, RFC #172352)
_CU128_211 = "7.5 8.0 8.6 9.0 10.0 12.0"
_CU129 = "7.0 7.5 8.0 8.6 9.0 10.0 12.0+PTX"
_CU13X = "7.5 8.0 8.6 9.0 10.0 12.0+PTX"

# release -> {variant: TORCH_CUDA_ARCH_LIST}, Linux x86_64
RELEASES: dict[str, dict[str, str]] = {
    "2.0": {"cu117": _CU117_20, "cu118": _CU118},
    "2.1": {"cu118": _CU118, "cu121": _CU121},
    "2.2": {"cu118": _CU118, "cu121": _CU121},
    "2.3": {"cu118": _CU118, "cu121": _CU121},
    "2.4": {"cu118": _CU118, "cu121": _CU121, "cu124": _CU124_126_OLD},
    "2.5": {"cu118": _CU118, "cu121": _CU121, "cu124": _CU124_126_OLD},
    "2.6": {"cu118": _CU118, "cu124": _CU124_126_OLD, "cu126": _CU124_126_OLD},
    # cu118 kept Kepler's sm_37 (K80): the last build with Kepler kernels; 2.8 dropped cu118 (RFC
    # https://github.com/pytorch/pytorch/issues/147383: "For PyTorch Release 2.7 … CUDA 11.8 … Same as Previous
    # Release 2.6 … drop it for release 2.8"; pytorch's CUDA upgrade runbook of that time: "11.8.0 | 9.1.0.70 |
    # Kepler(3.7), Maxwell(5.0), Pascal(6.0), Volta(7.0), Turing(7.5), Ampere(8.0, 8.6), Hopper(9.0) | Legacy").
    # No 2.x build has sm_35 (K20, K40): their cubins do not run on 3.5. The cu126 list is assumed.
    "2.7": {"cu118": _CU118, "cu126": _CU126, "cu128": _CU128_27},
    "2.8": {"cu126": _CU126, "cu128": _CU128, "cu129": _CU129},
    "2.9": {"cu126": _CU126, "cu128": _CU128, "cu130": _CU13X},
    "2.10": {"cu126": _CU126, "cu128": _CU128, "cu130": _CU13X},
    "2.11": {"cu126": _CU126, "cu128": _CU128_211, "cu130": _CU13X},
    "2.12": {"cu126": _CU126, "cu130": _CU13X, "cu132": _CU13X},
    "2.13": {"cu126": _CU126, "cu130": _CU13X, "cu132": _CU13X},
    "2.14": {"cu126": _CU126, "cu130": _CU13X, "cu132": _CU13X},
    # no cu126: no 2.15 build has Maxwell, Pascal or Volta kernels (RFC #190385, test-infra PR#8739)
    "2.15": {"cu130": _CU13X, "cu132": _CU13X},
}

# aarch64 (Linux) builds drop 5.0-7.5 and 8.6 (build_cuda.sh filter); known for these variants.
AARCH64: dict[str, str] = {
    "cu126": "8.0 9.0",
    "cu130": "8.0 9.0 10.0 11.0 12.0+PTX",
    "cu132": "8.0 9.0 10.0 11.0 12.0+PTX",
}


@dataclass(frozen=True)
class Variant:
    release: str
    name: str  # "cu128"
    arch_flags: tuple[str, ...]  # ("sm_70", …, "compute_120")

    @property
    def cuda(self) -> tuple[int, int]:
        return variant_cuda(self.name)

    @property
    def index_url(self) -> str:
        return INDEX_URL.format(variant=self.name)


def variant_cuda(name: str) -> tuple[int, int]:
    """ "cu128" -> (12, 8); "cu118" -> (11, 8); "cu130" -> (13, 0)."""
    digits = name[2:]
    return int(digits[:-1]), int(digits[-1])


def variant_name(cuda: str) -> str:
    """ "12.8" -> "cu128"."""
    major, minor = cuda.split(".")[:2]
    return f"cu{major}{minor}"


def arch_list_to_flags(arch_list: str) -> tuple[str, ...]:
    """TORCH_CUDA_ARCH_LIST "7.5 9.0+PTX" -> ("sm_75", "sm_90", "compute_90"), as _cuda_getArchFlags."""
    flags: list[str] = []
    for item in arch_list.split():
        cc = item.replace("+PTX", "")
        sm = cc.replace(".", "")
        flags.append(f"sm_{sm}")
        if item.endswith("+PTX"):
            flags.append(f"compute_{sm}")
    return tuple(flags)


def release_of(version: str | None) -> str | None:
    """ "2.13.0+cu130" -> "2.13"."""
    if not version:
        return None
    parts = version.split("+")[0].split(".")
    return ".".join(parts[:2]) if len(parts) >= 2 else None


def variants(release: str, machine: str | None = None) -> list[Variant]:
    out = []
    for name, arch in RELEASES.get(release, {}).items():
        if machine in ("aarch64", "arm64"):
            if name not in AARCH64:
                continue
            arch = AARCH64[name]
        out.append(Variant(release, name, arch_list_to_flags(arch)))
    return out


def official_arch_flags(version: str | None, machine: str | None = None) -> tuple[str, ...] | None:
    """The arch list of an official wheel, from its version ("2.13.0+cu130"); None for any other build
    (a source build says "2.13.0a0+git…") or a release/variant the tables do not know."""
    if not version or "+" not in version:
        return None
    base, _, local = version.partition("+")
    if not re.fullmatch(r"\d+\.\d+\.\d+", base) or not re.fullmatch(r"cu\d{3}", local):
        return None
    if machine is None:
        # the machine is unknown: a list only where every platform's wheel is known, merged, so a GPU is
        # called uncovered only when no platform's build covers it (knowing less never adds a problem)
        each = [official_arch_flags(version, m) for m in ("x86_64", "aarch64")]
        if any(flags is None for flags in each):
            return None
        return tuple(dict.fromkeys(flag for flags in each for flag in flags or ()))
    release = release_of(base)
    for v in variants(release or "", machine):
        if v.name == local:
            return v.arch_flags
    return None


def newest_release() -> str:
    return max(RELEASES, key=lambda r: tuple(int(x) for x in r.split(".")))


def releases_newest_first() -> list[str]:
    return sorted(RELEASES, key=lambda r: tuple(int(x) for x in r.split(".")), reverse=True)


def coverage(arch_flags: list[str] | tuple[str, ...], cc: str | None) -> str | None:
    """How a build with these arch flags runs on a GPU of capability cc: "sm" (a cubin), "ptx"
    (only by JIT-compiling embedded PTX), "none", or None when cc is unknown.

    A cubin sm_XY runs on X.Z with Z >= Y (same major; arch-specific sm_XYa only on X.Y exactly);
    PTX compute_XY is JIT-compiled for any capability >= X.Y (compute_XYa for X.Y only, compute_XYf
    within major X). torch itself only counts cubins of the same major as supported, and libraries
    without that architecture can still fail under PTX.
    """
    target = parse_cc(cc)
    if target is None:
        return None
    best = "none"
    for flag in arch_flags:
        kind, _, num = flag.partition("_")
        digits = num.rstrip("af")
        if not digits.isdigit() or len(digits) < 2:
            continue
        flag_cc = (int(digits[:-1]), int(digits[-1]))
        if kind == "sm":
            exact_only = num.endswith("a")
            if flag_cc == target or (not exact_only and flag_cc[0] == target[0] and flag_cc[1] <= target[1]):
                return "sm"
        elif kind == "compute" and flag_cc <= target:
            # compute_XYa is JIT-compiled only for X.Y itself, compute_XYf only within its family (major)
            if (num.endswith("a") and flag_cc != target) or (num.endswith("f") and flag_cc[0] != target[0]):
                continue
            best = "ptx"
    return best


def covers(arch_flags: list[str] | tuple[str, ...], cc: str | None) -> bool | None:
    """True when the build runs on cc by cubin or PTX; None when cc is unknown."""
    c = coverage(arch_flags, cc)
    return None if c is None else c != "none"


def torchvision_for(torch_version: str) -> str | None:
    """torchvision that matches a torch release (the table and its sources: knowledge/companions.py)."""
    from cudadoctor.knowledge import companions

    return companions.torchvision_for(torch_version)


def torchaudio_for(torch_version: str) -> str | None:
    """torchaudio that matches a torch release (knowledge/companions.py)."""
    from cudadoctor.knowledge import companions

    return companions.torchaudio_for(torch_version)


# --- platforms (shared cuda-facts §7, §10) -----------------------------------------------------------
# Windows: the PyPI torch wheel is CPU-only; CUDA builds come from download.pytorch.org (uv docs ✅; "Windows
# CPU only wheels are available on PyPI", pytorch/pytorch.github.io#757, malfet; pytorch#131731 ✅).
# NVML is %WINDIR%\System32\nvml.dll, then %ProgramFiles%\NVIDIA Corporation\NVSMI\nvml.dll
# (nvidia-ml-py's loader ✅); the CUDA driver library is nvcuda.dll in %WINDIR%\System32, installed by the
# display driver ❓ (standard, not checked here). "[WinError 126] … c10.dll or one of its dependencies":
# the Visual C++ Redistributable is missing (pytorch#126507, #131662, nagadomi/nunif#701 ✅).
# macOS: no CUDA; the PyPI wheel is CPU + MPS (cuda-facts §6 ✅).
# Linux aarch64: CUDA wheels for server GPUs (GH200, GB200, DGX Spark) on download.pytorch.org; a plain
# `pip install torch` gave a CPU build on GB200 (pytorch#168065 ✅), and pytorch's own get-started page says
# "For Linux Aarch64: pip3 install torch torchvision --index-url https://download.pytorch.org/whl/cu128"
# (https://github.com/pytorch/test-infra/pull/7652, 2026-01-15 ✅); CUDA wheels on PyPI for aarch64 are still
# asked for in https://github.com/pytorch/pytorch/issues/160162 (open ✅).
# Jetson: NVIDIA's JetPack wheels, not PyPI (cuda-facts §10 ✅; the page below is NVIDIA's install guide).
JETSON_WHEELS = "https://docs.nvidia.com/deeplearning/frameworks/install-pytorch-jetson-platform/index.html"


def platform_note(
    os_name: str | None, machine: str | None, jetson: bool = False, variant: str | None = None
) -> Message | None:
    """What is different about getting a CUDA torch on this platform; None for Linux x86_64. `variant`: the
    build the fix installs ("cu130"), whose index the note then names."""
    index = INDEX_URL.format(variant=variant) if variant else "…/cuXYZ"
    if jetson:
        return msg(
            "On Jetson (JetPack/L4T), torch with CUDA comes from NVIDIA's JetPack wheels ({url}), not from PyPI "
            "or download.pytorch.org.",
            url=JETSON_WHEELS,
        )
    if os_name == "Windows":
        return msg(
            "On Windows, `pip install torch` from PyPI installs a CPU-only build; CUDA builds come from "
            "download.pytorch.org (--index-url {index}).",
            index=index,
        )
    if os_name == "Darwin":
        return msg("macOS has no CUDA: torch uses the Apple GPU through MPS (torch.backends.mps.is_available()).")
    if machine in ("aarch64", "arm64"):
        return msg(
            "On Linux aarch64 (GH200, GB200, DGX Spark), install the CUDA build from download.pytorch.org "
            "(--index-url {index}): a plain `pip install torch` gave a CPU-only build there (pytorch#168065).",
            index=index,
        )
    return None
