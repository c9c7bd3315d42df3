"""Every finding's stable code, severity, title and page; docs/findings.md is generated from here."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from cudadoctor.model import Finding, Fix, Severity, Table, msg

# Report order. Code ranges: CD0xx doctor, CD1xx driver/libcuda/toolkit/system (CD112-119, CD126-129,
# CD143-199 below torch: WSL, kernel module, containers, GPU health), CD2xx torch and its libraries,
# CD3xx visible devices, CD4xx measurements (CD226-228, the --full torch.compile check, in a section of its
# own), CD5xx requirements, CD6xx checkpoints, CD7xx training
# (watch), CD8xx fleet, CD9xx paste triage.
SECTIONS = (
    "Doctor",
    "Driver",
    "GPU health",
    "CUDA driver library",
    "Toolkit",
    "PyTorch",
    "CUDA libraries",
    "Visible devices",
    "Measurements",
    "torch.compile",
    "Multi-GPU",
    "Requirements",
    "Checkpoint",
    "Training",
    "Fleet",
    "Paste",
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
    fixes: tuple[Fix, ...] = ()  # the usual fixes, for `explain` and the docs (findings give this machine's)

    @property
    def docs(self) -> str:
        return f"docs/findings.md#{self.code.lower()}"

    def finding(
        self,
        title: str | None = None,
        why: str | None = None,
        fix: Iterable[Fix] = (),
        severity: Severity | None = None,
        tables: Iterable[Table] = (),
        cause: str | None = None,
    ) -> Finding:
        return Finding(
            code=self.code,
            severity=severity or self.severity,
            section=self.section,
            title=title or self.summary,
            why=why if why is not None else self.explanation,
            fix=list(fix),
            docs=self.docs,
            tables=list(tables),
            cause=cause,
        )


CATALOGUE: dict[str, Entry] = {}


def entry(
    code: str, name: str, severity: Severity, section: str, summary: str, explanation: str, fixes: Iterable[Fix] = ()
) -> Entry:
    if code in CATALOGUE:
        raise ValueError(f"duplicate finding code {code}")
    if section not in SECTIONS:
        raise ValueError(f"{code}: unknown section {section!r}")
    e = Entry(code, name, severity, section, summary, " ".join(explanation.split()), tuple(fixes))
    CATALOGUE[code] = e
    return e


def named(thing: str, value: object) -> str:
    """ "torch 2.5.1", or "torch" alone where the value is unknown: a title never shows None. A message
    (model.msg), so that a `thing` that is itself one ("NVIDIA driver") is translated where it is shown."""
    return thing if value is None or value == "" else msg("{thing} {value}", thing=thing, value=value)


def fix(when: str, *commands: str, lang: str = "") -> Fix:
    """`lang`: what the lines are (model.FIX_LANGUAGES); left out, model.language tells it from them."""
    return Fix(when=when, commands=list(commands), lang=lang)
