"""Rules: pure functions from facts to findings, in the order their sections print."""

from __future__ import annotations

from cudadoctor.facts import Facts
from cudadoctor.report import Finding, ProbeOutcome
from cudadoctor.rules import (
    ckpt,  # noqa: F401  (its own evaluate, for `cudadoctor ckpt`; imported for the catalogue)
    containers,
    cuda_driver,
    doctor,
    driver,
    extensions,
    fleet,  # noqa: F401  (its own evaluate, for `cudadoctor fleet`; imported for the catalogue)
    health,
    kernel_module,
    libraries,
    measurements,
    multi_gpu,
    paste,
    requirements,
    system,
    toolkit,
    torch_build,
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
    findings = doctor.evaluate(outcomes, facts)
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


# Errors below torch that explain everything above them: no driver, no GPU, a module not loaded …
ROOT_CAUSES = ("CD101", "CD102", "CD103", "CD104", "CD107", "CD108", "CD109", "CD121", "CD122", "CD123", "CD124")
# Errors that are what a root cause looks like from higher up (torch, the measurements, the gate).
CONSEQUENCES = ("CD122", "CD210", "CD215", "CD404", "CD412", "CD501", "CD502", "CD505", "CD506")
# Errors in packages beside torch (torchvision, CUDA extensions): real, but never why torch itself cannot
# use CUDA (torch.cuda.is_available() is False), so never named as its cause.
BESIDE_TORCH = ("CD222", "CD240", "CD241", "CD242", "CD244")


def _one_story(findings: list[Finding]) -> None:
    """A finding that follows from a root cause found below it points at it (`cause`), so the verdict and
    the reader start with the root cause."""
    root = next((f for f in findings if f.code in ROOT_CAUSES and f.severity.rank >= 3), None)
    if root is None:
        return
    for f in findings:
        if f is not root and f.cause is None and f.code in CONSEQUENCES:
            f.cause = root.code


__all__ = ["CATALOGUE", "evaluate"]
