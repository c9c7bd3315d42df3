"""Sizes as people write them (8GiB, 8G, 8192MiB, 0.5TB) and as the doctor prints them."""

from __future__ import annotations

import re

_UNITS = {
    "b": 1,
    "k": 1024,
    "kb": 1000,
    "kib": 1024,
    "m": 1024**2,
    "mb": 1000**2,
    "mib": 1024**2,
    "g": 1024**3,
    "gb": 1000**3,
    "gib": 1024**3,
    "t": 1024**4,
    "tb": 1000**4,
    "tib": 1024**4,
}


def parse_size(text: str) -> int:
    """Bytes from "8GiB", "8G" (binary, as nvidia-smi's MiB), "8GB" (decimal), "8192MiB", "0.5TB".

    A bare number is refused: "8" is 8 bytes to some and 8 GiB to others, and a gate that took it for
    bytes would pass every GPU. Raises ValueError with a message fit for a usage error.
    """
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?|\.\d+)\s*([a-zA-Z]*)\s*", text)
    if m and not m.group(2):
        n = m.group(1)
        raise ValueError(f"{text.strip()!r} has no unit: write {n}GiB, {n}GB or {n}MiB ({n}B for bytes)")
    if not m or m.group(2).lower() not in _UNITS:
        raise ValueError(f"{text!r} is not a size (examples: 8GiB, 8G, 8192MiB, 0.5TB)")
    value = float(m.group(1)) * _UNITS[m.group(2).lower()]
    return int(value)


def format_size(n: int | None) -> str:
    if n is None:
        return "N/A"
    for unit, size in (("TiB", 1024**4), ("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if abs(n) >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def exact_size(n: int) -> str:
    """A size as a person would type it back, exactly: 8GiB, 512MiB, 8GB, 1500000B (suggestions keep the
    user's units: --min-free 8GB stays 8GB, not 7629MiB)."""
    # the largest unit that divides it, binary or decimal: 40GB is 39062500KiB too, and a person typed 40GB
    units = sorted(
        [
            *((u, 1024**k) for k, u in enumerate(("KiB", "MiB", "GiB", "TiB"), 1)),
            *((u, 1000**k) for k, u in enumerate(("KB", "MB", "GB", "TB"), 1)),
        ],
        key=lambda us: -us[1],
    )
    for unit, size in units:
        if n and n % size == 0:
            return f"{n // size}{unit}"
    return f"{n}B"
