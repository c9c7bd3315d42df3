"""Compute capability -> architecture, and which CUDA majors can target it.

Sources: https://developer.nvidia.com/cuda-gpus and https://developer.nvidia.com/cuda-legacy-gpus
(products); LLVM clang/lib/Basic/Cuda.cpp (Min/MaxVersionForOffloadArch); CUDA 13.0/13.1 release notes,
"Deprecated Architectures" (Maxwell, Pascal, Volta dropped in 13.0); CMake MR 8031 (3.5/3.7 dropped
in 12.0). See shared cuda-facts §3.
"""

from __future__ import annotations

import re

# (major, minor) -> (architecture, example products)
ARCHITECTURES: dict[tuple[int, int], tuple[str, str]] = {
    (3, 0): ("Kepler", "GTX 680, K10"),
    (3, 2): ("Kepler", "Jetson TK1"),
    (3, 5): ("Kepler", "K20, K40, GTX Titan"),
    (3, 7): ("Kepler", "Tesla K80"),
    (5, 0): ("Maxwell", "GTX 750 Ti, Quadro K2200"),
    (5, 2): ("Maxwell", "GTX 9xx, Tesla M40/M60, Titan X"),
    (5, 3): ("Maxwell", "Jetson Nano"),
    (6, 0): ("Pascal", "Tesla P100"),
    (6, 1): ("Pascal", "GTX 10xx, Tesla P4/P40"),
    (6, 2): ("Pascal", "Jetson TX2"),
    (7, 0): ("Volta", "Tesla V100, Titan V"),
    (7, 2): ("Volta", "Jetson AGX Xavier"),
    (7, 5): ("Turing", "T4, RTX 20xx, Quadro RTX"),
    (8, 0): ("Ampere", "A100, A30"),
    (8, 6): ("Ampere", "A10, A40, RTX 30xx, RTX A6000"),
    (8, 7): ("Ampere", "Jetson Orin"),
    (8, 9): ("Ada Lovelace", "L4, L40S, RTX 40xx"),
    (9, 0): ("Hopper", "H100, H200, GH200"),
    (10, 0): ("Blackwell", "B200, GB200"),
    (10, 3): ("Blackwell", "B300, GB300"),
    # CUDA 13.4 adds the Rubin architecture, compute capability 10.7, whose instructions run sm_100 code as
    # sm_103's do (pytorch/pytorch PR#190654; TensorRT-LLM PR#17336 maps it to the sm_100 family, 100f;
    # clang adds sm_107/107a/107f for CUDA 13.4, llvm-project PR#211677)
    (10, 7): ("Rubin", "Rubin"),
    (11, 0): ("Blackwell", "Jetson Thor"),
    (12, 0): ("Blackwell", "RTX 50xx, RTX PRO Blackwell"),
    (12, 1): ("Blackwell", "GB10 (DGX Spark)"),
}

# The last NVIDIA driver branch that drives each architecture: from 590 the driver ignores these GPUs.
# The driver's own kernel log: "NVRM: The NVIDIA GeForce GTX 1050 GPU installed in this system is supported
# through the NVIDIA 580.xx Legacy drivers. … The 595.71.05 NVIDIA driver will ignore this GPU"
# (NixOS/nixos-hardware#1880, #1828); "Drivers 590+ have dropped support for Pascal" (nixos-hardware#1843);
# Arch's news on 590: Pascal and older go to `nvidia-580xx-dkms` from the AUR (Phoronix, 2025-12-20);
# "R580 as the last driver branch supporting Maxwell, Pascal, and Volta", quoting NVIDIA's CUDA toolkit,
# driver and architecture matrix (NVIDIA/ansible-role-nvidia-driver PR#89).
# Kepler: 470. The driver's own log on a GT 710: "supported through the NVIDIA 470.xx Legacy drivers. … The
# 535.129.03 NVIDIA driver will ignore this GPU" (https://github.com/siderolabs/talos/issues/8764); "R470 is
# the last version supporting the kepler architecture", citing NVIDIA's cuda-arch-matrix
# (https://github.com/NixOS/nixpkgs/pull/142565).
LAST_DRIVER_BRANCH: dict[str, int] = {"Kepler": 470, "Maxwell": 580, "Pascal": 580, "Volta": 580}


def parse_cc(text: str | None) -> tuple[int, int] | None:
    """ "8.6" -> (8, 6): the one compute-capability parser. ASCII digits only ("².0" is not 2.0)."""
    if not isinstance(text, str):
        return None
    m = re.fullmatch(r"\s*([0-9]{1,3})\.([0-9]{1,3})\s*", text)
    return (int(m.group(1)), int(m.group(2))) if m else None


def arch_name(cc: str | None) -> str:
    parsed = parse_cc(cc)
    if parsed is None:
        return "unknown architecture"
    if parsed in ARCHITECTURES:
        return ARCHITECTURES[parsed][0]
    return "a newer architecture" if parsed > max(ARCHITECTURES) else "an unknown architecture"


def last_driver_branch(cc: str | None) -> int | None:
    """The newest driver branch that still drives a GPU of this capability; None: no known limit."""
    return LAST_DRIVER_BRANCH.get(arch_name(cc))


# The first and the last CUDA whose nvcc compiles for each capability (shared cuda-facts §3: clang's
# MinVersionForOffloadArch and MaxVersionForOffloadArch; the CUDA 13.0 release notes' "Deprecated
# Architectures" for Maxwell, Pascal and Volta; CMake MR 8031 for 3.5/3.7 removed in 12.0). A capability with
# no last CUDA is still a target of the newest toolkit.
FIRST_CUDA: dict[tuple[int, int], tuple[int, int]] = {
    (6, 0): (8, 0),
    (6, 1): (8, 0),
    (6, 2): (8, 0),
    (7, 0): (9, 0),
    (7, 2): (9, 1),
    (7, 5): (10, 0),
    (8, 0): (11, 0),
    (8, 6): (11, 1),
    (8, 7): (11, 4),
    (8, 9): (11, 8),
    (9, 0): (11, 8),
    (10, 0): (12, 8),
    (10, 3): (12, 9),
    (12, 0): (12, 8),
    (12, 1): (12, 9),
}
LAST_CUDA: dict[tuple[int, int], tuple[int, int]] = {
    (3, 0): (10, 2),
    (3, 2): (10, 2),
    (3, 5): (11, 8),
    (3, 7): (11, 8),
    (5, 0): (12, 9),
    (5, 2): (12, 9),
    (5, 3): (12, 9),
    (6, 0): (12, 9),
    (6, 1): (12, 9),
    (6, 2): (12, 9),
    (7, 0): (12, 9),
    (7, 2): (12, 9),
}
# Jetson's integrated GPUs (Tegra): their architectures are no stand-in for a discrete GPU's
INTEGRATED = frozenset({(3, 2), (5, 3), (6, 2), (7, 2), (8, 7), (10, 1), (11, 0)})
