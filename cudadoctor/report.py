"""The report: facts, probe outcomes and findings, with a verdict and an exit code."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from typing import Any

from cudadoctor import __version__, exitcodes
from cudadoctor.config import Requirements
from cudadoctor.facts import Facts
from cudadoctor.model import Finding, ProbeOutcome, Severity
from cudadoctor.serial import FormatError, from_jsonable

# Bump on any change that breaks a reader of the JSON report; tests pin it.
SCHEMA_VERSION = 1


@dataclass
class Report:
    command: str
    facts: Facts
    probes: list[ProbeOutcome]
    findings: list[Finding]
    exit_code: int
    verdict: str
    requirements: Requirements | None = None  # the gate's requirements, when any were given
    schema_version: int = SCHEMA_VERSION
    tool: str = "cudadoctor"
    version: str = __version__
    created: str = field(default_factory=lambda: dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"))


def verdict(findings: list[Finding], outcomes: list[ProbeOutcome], fail_on: Severity = Severity.ERROR) -> str:
    errors = [f for f in findings if f.severity is Severity.ERROR]
    warnings = [f for f in findings if f.severity is Severity.WARNING]
    counts = f"{len(errors)} error{'s' * (len(errors) != 1)}, {len(warnings)} warning{'s' * (len(warnings) != 1)}"
    if errors:
        return f"PROBLEMS ({counts}): {errors[0].title}"
    if any(o.failed for o in outcomes):
        return "INCOMPLETE: the doctor could not finish every check"
    if warnings:
        label = "PROBLEMS" if fail_on is Severity.WARNING else "USABLE WITH WARNINGS"
        return f"{label} ({counts}): {warnings[0].title}"
    return "HEALTHY: no problems found"


def build(
    command: str,
    facts: Facts,
    outcomes: list[ProbeOutcome],
    findings: list[Finding],
    fail_on: Severity = Severity.ERROR,
) -> Report:
    return Report(
        command=command,
        facts=facts,
        probes=outcomes,
        findings=findings,
        exit_code=exitcodes.decide(findings, outcomes, fail_on),
        verdict=verdict(findings, outcomes, fail_on),
    )


def load_facts(text: str) -> tuple[Facts, list[ProbeOutcome]]:
    """Facts and probe outcomes from a saved JSON report; FormatError when it is not one of ours."""
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FormatError(f"not JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(data, dict) or data.get("tool") != "cudadoctor" or "facts" not in data:
        raise FormatError("not a cudadoctor JSON report (no tool/facts fields)")
    if data.get("schema_version") != SCHEMA_VERSION:
        raise FormatError(
            f"schema_version {data.get('schema_version')!r} is not {SCHEMA_VERSION}; re-create it with this cudadoctor"
        )
    facts = from_jsonable(Facts, data["facts"], "$.facts")
    outcomes = from_jsonable(list[ProbeOutcome], data.get("probes", []), "$.probes")
    return facts, outcomes
