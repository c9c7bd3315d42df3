"""CUDA toolkit -> minimum NVIDIA driver, and the minor-version-compatibility floors.

Sources:
- CUDA Toolkit Release Notes, "Table 3: CUDA Toolkit and Corresponding Driver Versions" and
  "CTK Version / Driver Range", https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/index.html
  (read from a copy of the 13.1 notes, Dec 2025; rows for 13.2/13.3 from later notes as quoted
  by third parties).
- CUDA minor version compatibility, Table 1,
  https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html
Each toolkit row keeps its GA minimum (the lowest of its updates); Windows is None where NVIDIA stopped
bundling a Windows driver (13.1+) or gives none.
"""

from __future__ import annotations

# (major, minor): (Linux x86_64 minimum, Windows minimum) for the GA release of that toolkit.
TOOLKIT_DRIVER_MINIMUM: dict[tuple[int, int], tuple[str, str | None]] = {
    (13, 3): ("610.43.02", None),
    (13, 2): ("595.45.04", None),
    (13, 1): ("590.44.01", None),
    (13, 0): ("580.65.06", None),
    (12, 9): ("575.51.03", "576.02"),
    (12, 8): ("570.26", "570.65"),
    (12, 6): ("560.28.03", "560.76"),
    (12, 5): ("555.42.02", "555.85"),
    (12, 4): ("550.54.14", "551.61"),
    (12, 3): ("545.23.06", "545.84"),
    (12, 2): ("535.54.03", "536.25"),
    (12, 1): ("530.30.02", "531.14"),
    (12, 0): ("525.60.13", "527.41"),
    (11, 8): ("520.61.05", "520.06"),
    (11, 7): ("515.43.04", "516.01"),
    (11, 6): ("510.39.01", "511.23"),
    (11, 5): ("495.29.05", "496.04"),
    (11, 4): ("470.42.01", "471.11"),
    (11, 3): ("465.19.01", "465.89"),
    (11, 2): ("460.27.03", "460.82"),
    (11, 1): ("455.23", "456.38"),
    (11, 0): ("450.36.06", "451.22"),
    (10, 2): ("440.33", "441.22"),
    (10, 1): ("418.39", "418.96"),
    (10, 0): ("410.48", "411.31"),
}

# Minor version compatibility: any toolkit of this major runs on a driver at or above the floor
# (limited features; PTX that needs JIT by an older driver can fail).
MINOR_COMPAT_FLOOR: dict[int, tuple[str, str | None]] = {
    13: ("580.65.06", None),
    12: ("525.60.13", "527.41"),
    11: ("450.80.02", "452.39"),
}


def full_minimum(major: int, minor: int, windows: bool = False) -> str | None:
    row = TOOLKIT_DRIVER_MINIMUM.get((major, minor))
    if row is None:
        return None
    return row[1] if windows else row[0]


def major_floor(major: int, windows: bool = False) -> str | None:
    row = MINOR_COMPAT_FLOOR.get(major)
    if row is None:
        return full_minimum(major, 0, windows)
    return row[1] if windows else row[0]


def max_cuda_for_driver(driver_version: str, windows: bool = False) -> tuple[int, int] | None:
    """The newest toolkit whose full minimum this driver meets; used when NVML gave no CUDA version."""
    from cudadoctor.knowledge.versions import version_at_least

    best = None
    for (major, minor), (linux, win) in TOOLKIT_DRIVER_MINIMUM.items():
        need = win if windows else linux
        if need and version_at_least(driver_version, need) and (best is None or (major, minor) > best):
            best = (major, minor)
    return best
