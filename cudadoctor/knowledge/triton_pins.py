"""Which Triton a torch release works with, for the fix when torch.compile cannot import Triton's internals.

On Linux torch's wheel pins its Triton exactly in its own metadata (`Requires-Dist: triton==…`), so the fix
reads the pin from the installed torch instead of a table. On Windows torch pins none; the community
`triton-windows` says which of its lines each torch minor works with: woct0rdho/triton-windows README.md at
66361c0 (2026-02-18), "Each PyTorch minor version is only guaranteed to work with a specific Triton minor
version", and "PyTorch 2.3 and older are not supported in this repo".
"""

from __future__ import annotations

# torch minor -> triton-windows minor
WINDOWS_TRITON_LINE: dict[str, str] = {
    "2.4": "3.1",
    "2.5": "3.1",
    "2.6": "3.2",
    "2.7": "3.3",
    "2.8": "3.4",
    "2.9": "3.5",
    "2.10": "3.6",
}


def windows_line(torch_version: str | None) -> str | None:
    """The triton-windows minor line for a torch version ("2.8.0+cu129" -> "3.4"), or None when unknown."""
    if not torch_version:
        return None
    release = ".".join(torch_version.split("+")[0].split(".")[:2])
    return WINDOWS_TRITON_LINE.get(release)
