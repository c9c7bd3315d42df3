"""Rules: pure functions from facts to findings, in the order their sections print."""

from __future__ import annotations

from cudadoctor.facts import Facts
from cudadoctor.report import Finding, ProbeOutcome
from cudadoctor.rules import (
    ckpt,  # noqa: F401  (its own evaluate, for `cudadoctor ckpt`; imported for the catalogue)
    containers,
    cuda_driver,
    driver,
    extensions,
    fit,  # noqa: F401  (its own evaluate, for `cudadoctor fit`; imported for the catalogue)
    fleet,  # noqa: F401  (its own evaluate, for `cudadoctor fleet`; imported for the catalogue)
    health,
    kernel_module,
    libraries,
    measurements,
    multi_gpu,
    paste,
    probe_failures,
    requirements,
    system,
    toolkit,
    torch_build,
    torch_compile,
    visible,
    watch,  # noqa: F401  (its own evaluate, for `cudadoctor watch`; imported for the catalogue)
    wsl,
)
from cudadoctor.rules.catalogue import CATALOGUE, SECTIONS
from cudadoctor.rules.requirements import Requirements

_FACT_RULES = (
    driver.evaluate,
    cuda_driver.evaluate,
    toolkit.evaluate,
    torch_build.evaluate,
    libraries.evaluate,
    torch_compile.evaluate,
    extensions.evaluate,
    visible.evaluate,
    measurements.evaluate,
    system.evaluate,
    wsl.evaluate,
    kernel_module.evaluate,
    containers.evaluate,
    health.evaluate,
    multi_gpu.evaluate,
    paste.evaluate,
)


def evaluate(facts: Facts, outcomes: list[ProbeOutcome], req: Requirements | None = None) -> list[Finding]:
    findings = probe_failures.evaluate(outcomes, facts)
    for rule in _FACT_RULES:
        findings.extend(rule(facts))
    findings.extend(torch_build.summarize(facts, findings))
    findings.extend(requirements.evaluate(facts, req))
    findings.extend(paste.ask_for(facts, findings))
    order = {s: i for i, s in enumerate(SECTIONS)}
    # stable: sections in report order, worst first inside a section
    findings.sort(key=lambda x: (order[x.section], -x.severity.rank))
    _one_story(findings)
    return findings


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


def _one_story(findings: list[Finding]) -> None:
    """A finding that follows from a root cause found below it points at it (`cause`), so the verdict and
    the reader start with the root cause; one that does not follow from it keeps its own place."""
    roots = [f for f in findings if f.code in BREAKS and f.severity.rank >= 3]
    for f in findings:
        if f.cause is not None or f.code not in RESTS_ON:
            continue
        root = next((r for r in roots if r is not f and BREAKS[r.code] & RESTS_ON[f.code]), None)
        if root is not None:
            f.cause = root.code


__all__ = ["CATALOGUE", "evaluate"]
