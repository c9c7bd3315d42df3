"""Which findings are root causes and which follow from them, by the layer each breaks or rests on: one
module that both rules/__init__ (linking a consequence to its cause) and torch_build (ranking the causes of
is_available() being False) read, so neither imports the other."""

from __future__ import annotations

from cudadoctor.model import Finding

# What a finding rests on and what a root cause breaks, by layer: "nvml" (the driver's management
# library: GPU counts, free memory), "cuda" (libcuda and cuInit: anything that runs on a GPU). A finding
# follows from a root cause only when the cause breaks a layer it rests on: libcuda missing (CD121) says
# nothing of the free memory NVML reads (CD502), but everything torch does on the GPU follows from it.
_NVML, _CUDA = "nvml", "cuda"
# Errors below torch that explain what rests on them: no driver, no GPU, a module not loaded …
BREAKS: dict[str, frozenset[str]] = {
    **dict.fromkeys(("CD101", "CD102", "CD103", "CD104", "CD107", "CD108", "CD109"), frozenset({_NVML, _CUDA})),
    **dict.fromkeys(("CD121", "CD122", "CD123", "CD124"), frozenset({_CUDA})),
}
# Errors that are what a broken layer looks like from higher up (torch, the measurements, the gate).
RESTS_ON: dict[str, frozenset[str]] = {
    **dict.fromkeys(("CD122", "CD210", "CD215", "CD404", "CD412", "CD505", "CD506"), frozenset({_CUDA})),
    **dict.fromkeys(("CD501", "CD502", "CD503"), frozenset({_NVML})),
}
ROOT_CAUSES = tuple(BREAKS)
CONSEQUENCES = tuple(RESTS_ON)
# Errors in packages beside torch (torchvision, CUDA extensions): real, but never why torch itself cannot
# use CUDA (torch.cuda.is_available() is False), so never named as its cause.
BESIDE_TORCH = ("CD222", "CD240", "CD241", "CD242", "CD244")


def one_story(findings: list[Finding]) -> None:
    """A finding that follows from a root cause found below it points at it (`cause`), so the verdict and
    the reader start with the root cause; one that does not follow from it keeps its own place."""
    roots = [f for f in findings if f.code in BREAKS and f.severity.rank >= 3]
    for f in findings:
        if f.cause is not None or f.code not in RESTS_ON:
            continue
        root = next((r for r in roots if r is not f and BREAKS[r.code] & RESTS_ON[f.code]), None)
        if root is not None:
            f.cause = root.code
