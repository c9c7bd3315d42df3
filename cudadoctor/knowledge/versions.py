"""Version encodings NVIDIA and PyTorch use (cuda-facts §2), as small pure helpers."""

from __future__ import annotations

import re


def cuda_int_to_str(value: int | None) -> str | None:
    """12020 -> "12.2" (major*1000 + minor*10), the encoding of NVML, cuDriverGetVersion and CUDA_VERSION."""
    if value is None or value <= 0:
        return None
    return f"{value // 1000}.{(value % 1000) // 10}"


def parse_version(text: str | None) -> tuple[int, ...] | None:
    """ "535.104.05" -> (535, 104, 5); "12.8" -> (12, 8). Non-numeric text gives None."""
    if not text:
        return None
    m = re.match(r"^\s*(\d+(?:\.\d+)*)", text)
    if not m:
        return None
    return tuple(int(p) for p in m.group(1).split("."))


def version_at_least(have: str | None, need: str) -> bool | None:
    """Compare as int tuples padded with zeros; None when `have` is unknown."""
    a, b = parse_version(have), parse_version(need)
    if a is None or b is None:
        return None
    width = max(len(a), len(b))
    return a + (0,) * (width - len(a)) >= b + (0,) * (width - len(b))


def cudnn_int_to_str(value: int | None) -> str | None:
    """cuDNN 9+: major*10000 + minor*100 + patch; up to 8: major*1000 + minor*100 + patch."""
    if value is None or value <= 0:
        return None
    if value >= 10000:
        return f"{value // 10000}.{(value % 10000) // 100}.{value % 100}"
    return f"{value // 1000}.{(value % 1000) // 100}.{value % 100}"
