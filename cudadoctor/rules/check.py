"""The rules `cudadoctor check` (and triage, and each node of `fleet`) runs over a machine's facts, in report
order, with one story across them. Its own module so that rules/fleet.py can re-run it per node without
importing the rules package that imports fleet."""

from __future__ import annotations

from cudadoctor.facts import Facts
from cudadoctor.model import Finding, ProbeOutcome
from cudadoctor.rules import (
    containers,
    cuda_driver,
    driver,
    extensions,
    free_threaded,
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
    wsl,
)
from cudadoctor.rules.catalogue import SECTIONS
from cudadoctor.rules.paste.ask import ask_for
from cudadoctor.rules.requirements import Requirements
from cudadoctor.rules.story import one_story

_FACT_RULES = (
    driver.evaluate,
    cuda_driver.evaluate,
    toolkit.evaluate,
    torch_build.evaluate,
    libraries.evaluate,
    torch_compile.evaluate,
    extensions.evaluate,
    free_threaded.evaluate,
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
    findings.extend(ask_for(facts, findings))
    order = {s: i for i, s in enumerate(SECTIONS)}
    # stable: sections in report order, worst first inside a section
    findings.sort(key=lambda x: (order[x.section], -x.severity.rank))
    one_story(findings)
    return findings
