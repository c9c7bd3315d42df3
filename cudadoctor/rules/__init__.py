"""Rules: pure functions from facts to findings, in the order their sections print."""

from __future__ import annotations

from cudadoctor.facts import Facts
from cudadoctor.report import Finding, ProbeOutcome
from cudadoctor.rules import (
    cuda_driver,
    doctor,
    driver,
    measurements,
    requirements,
    system,
    toolkit,
    torch_build,
    visible,
)
from cudadoctor.rules.catalogue import CATALOGUE, SECTIONS
from cudadoctor.rules.requirements import Requirements

_FACT_RULES = (
    driver.evaluate,
    cuda_driver.evaluate,
    toolkit.evaluate,
    torch_build.evaluate,
    visible.evaluate,
    measurements.evaluate,
    system.evaluate,
)


def evaluate(facts: Facts, outcomes: list[ProbeOutcome], req: Requirements | None = None) -> list[Finding]:
    findings = doctor.evaluate(outcomes)
    for rule in _FACT_RULES:
        findings.extend(rule(facts))
    findings.extend(torch_build.summarize(facts, findings))
    findings.extend(requirements.evaluate(facts, req))
    order = {s: i for i, s in enumerate(SECTIONS)}
    # stable: sections in report order, worst first inside a section
    findings.sort(key=lambda x: (order[x.section], -x.severity.rank))
    return findings


__all__ = ["CATALOGUE", "evaluate"]
