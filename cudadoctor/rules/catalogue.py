"""Every finding's stable code, severity, title and page; docs/findings.md is generated from here."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from cudadoctor.model import Finding, Remediation, Severity

SECTIONS = (
    "Doctor",
    "Driver",
    "CUDA driver library",
    "Toolkit",
    "PyTorch",
    "Visible devices",
    "Measurements",
    "Requirements",
    "System",
)


@dataclass(frozen=True)
class Entry:
    code: str
    name: str  # kebab-case slug, stable like the code
    severity: Severity
    section: str
    summary: str  # the catalogue's one-line title
    explanation: str  # the page: what it means and why it matters

    @property
    def docs(self) -> str:
        return f"docs/findings.md#{self.code.lower()}"

    def finding(
        self,
        title: str | None = None,
        why: str | None = None,
        fix: Iterable[Remediation] = (),
        severity: Severity | None = None,
        details: Iterable[str] = (),
    ) -> Finding:
        return Finding(
            code=self.code,
            severity=severity or self.severity,
            section=self.section,
            title=title or self.summary,
            why=why if why is not None else self.explanation,
            fix=list(fix),
            docs=self.docs,
            details=list(details),
        )


CATALOGUE: dict[str, Entry] = {}


def entry(code: str, name: str, severity: Severity, section: str, summary: str, explanation: str) -> Entry:
    if code in CATALOGUE:
        raise ValueError(f"duplicate finding code {code}")
    if section not in SECTIONS:
        raise ValueError(f"{code}: unknown section {section!r}")
    e = Entry(code, name, severity, section, summary, " ".join(explanation.split()))
    CATALOGUE[code] = e
    return e


def fix(when: str, *commands: str) -> Remediation:
    return Remediation(when=when, commands=list(commands))
