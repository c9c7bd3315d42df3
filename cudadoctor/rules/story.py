"""Which findings are root causes and which follow from them, as their catalogue entries declare it
(`entry(..., breaks=…, rests_on=…, beside_torch=…)`, by the layers of catalogue.LAYERS): read both by
rules/check (linking a consequence to its cause) and torch_build (ranking the causes of is_available()
being False), so neither imports the other.

A finding follows from a root cause only when the cause breaks a layer it rests on: libcuda missing (CD121
breaks CUDA) says nothing of the free memory NVML reads (CD502 rests on NVML), but everything torch does on
the GPU follows from it."""

from __future__ import annotations

from cudadoctor.model import Finding
from cudadoctor.rules.catalogue import CATALOGUE


def breaks(code: str) -> frozenset[str]:
    """The layers an error with this code breaks (empty: it is no root cause)."""
    e = CATALOGUE.get(code)
    return e.breaks if e is not None else frozenset()


def rests_on(code: str) -> frozenset[str]:
    """The layers whose failure a finding with this code is what it looks like from higher up."""
    e = CATALOGUE.get(code)
    return e.rests_on if e is not None else frozenset()


def beside_torch(code: str) -> bool:
    """An error in a package beside torch (torchvision, a CUDA extension): never why torch cannot use CUDA."""
    e = CATALOGUE.get(code)
    return e is not None and e.beside_torch


def one_story(findings: list[Finding]) -> None:
    """A finding that follows from a root cause found below it points at it (`cause`), so the verdict and
    the reader start with the root cause; one that does not follow from it keeps its own place."""
    roots = [f for f in findings if breaks(f.code) and f.severity.rank >= 3]
    for f in findings:
        if f.cause is not None or not rests_on(f.code):
            continue
        root = next((r for r in roots if r is not f and breaks(r.code) & rests_on(f.code)), None)
        if root is not None:
            f.cause = root.code
