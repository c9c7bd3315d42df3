"""Rules: pure functions from facts to findings, in the order their sections print."""

from __future__ import annotations

from cudadoctor.facts import Facts
from cudadoctor.model import Finding, ProbeOutcome
from cudadoctor.rules import (
    ckpt,  # noqa: F401  (its own evaluate, for `cudadoctor ckpt`; imported for the catalogue)
    containers,
    cuda_driver,
    doctor,
    driver,
    fit,  # noqa: F401  (its own evaluate, for `cudadoctor fit`; imported for the catalogue)
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
from cudadoctor.rules.story import BREAKS, CONSEQUENCES, RESTS_ON, ROOT_CAUSES, one_story  # noqa: F401

_FACT_RULES = (
    driver.evaluate,
    cuda_driver.evaluate,
    toolkit.evaluate,
    torch_build.evaluate,
    libraries.evaluate,
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
    one_story(findings)
    return findings


__all__ = ["CATALOGUE", "evaluate"]
