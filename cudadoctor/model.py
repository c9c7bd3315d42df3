"""Findings, their severities and fixes, probe outcomes: what rules produce and renderers show."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class Severity(str, enum.Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"
    OK = "ok"

    @property
    def rank(self) -> int:
        """Higher is worse; used to sort and to pick the verdict."""
        return {"ok": 0, "info": 1, "warning": 2, "error": 3}[self.value]


@dataclass(frozen=True)
class Remediation:
    """One way to fix a finding: when it applies, and the commands to paste."""

    when: str
    commands: list[str] = field(default_factory=list)


@dataclass
class Finding:
    code: str
    severity: Severity
    section: str
    title: str
    why: str = ""
    fix: list[Remediation] = field(default_factory=list)
    docs: str = ""
    details: list[str] = field(default_factory=list)  # preformatted lines, e.g. a table


@dataclass
class ProbeOutcome:
    """How a probe ended: ok, crashed (it raised) or timeout; never raised to the user."""

    name: str
    status: str
    seconds: float
    error: str | None = None
    traceback: str | None = None

    @property
    def failed(self) -> bool:
        """Crashed or timed out; a probe skipped on request is not a failure."""
        return self.status in ("crashed", "timeout")
